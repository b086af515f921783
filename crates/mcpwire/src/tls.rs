//! TLS for the `https://` URLs this process connects to (the MCP client's targets, a JWKS
//! URL): rustls with the ring provider, trusting the system's roots
//! (`rustls-native-certs`, which also reads `SSL_CERT_FILE` / `SSL_CERT_DIR`) plus the
//! Mozilla roots bundled in `webpki-roots` (for machines without a CA store).

use std::sync::{Arc, OnceLock};

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The client configuration, built once per process.
fn config() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let native = rustls_native_certs::load_native_certs();
            for e in &native.errors {
                tracing::debug!(error = %e, "a system certificate could not be loaded");
            }
            let (added, ignored) = roots.add_parsable_certificates(native.certs);
            tracing::debug!(added, ignored, "system root certificates");
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
}

/// Runs the TLS handshake for `host` over `tcp`; the error says what failed.
pub(crate) async fn connect(host: &str, tcp: TcpStream) -> Result<TlsStream<TcpStream>, String> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))?;
    TlsConnector::from(config()?)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake failed: {e}"))
}
