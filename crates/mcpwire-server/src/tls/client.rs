//! TLS for the `https://` and `mcpbs://` addresses this process connects to (the MCP
//! client's targets, the gateway's upstreams, a JWKS URL): rustls with the ring provider.
//! By default it trusts the system's roots (`rustls-native-certs`, which also reads
//! `SSL_CERT_FILE` / `SSL_CERT_DIR`) plus the Mozilla roots bundled in `webpki-roots` (for
//! machines without a CA store); [`ClientTls::ca`] trusts one CA file instead, and
//! [`ClientTls::cert`]/[`ClientTls::key`] present a client certificate (mTLS).

use std::sync::{Arc, OnceLock};

use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::config::ClientTls;
use super::pem;

/// The system's and Mozilla's roots, read once per process.
fn default_roots() -> Arc<rustls::RootCertStore> {
    static ROOTS: OnceLock<Arc<rustls::RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            let native = rustls_native_certs::load_native_certs();
            for e in &native.errors {
                tracing::debug!(error = %e, "a system certificate could not be loaded");
            }
            let (added, ignored) = roots.add_parsable_certificates(native.certs);
            tracing::debug!(added, ignored, "system root certificates");
            Arc::new(roots)
        })
        .clone()
}

/// The client configuration `tls` describes, offering `alpn`.
fn config(tls: &ClientTls, alpn: &[&[u8]]) -> Result<Arc<rustls::ClientConfig>, String> {
    let roots = match &tls.ca {
        Some(path) => Arc::new(
            pem::roots(path, &pem::read(path).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())?,
        ),
        None => default_roots(),
    };
    let builder = rustls::ClientConfig::builder_with_provider(pem::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let mut config = match (&tls.cert, &tls.key) {
        (Some(cert), Some(key)) => {
            let chain = pem::read(cert).and_then(|b| pem::certificates(cert, &b));
            let key_der = pem::read(key).and_then(|b| pem::private_key(key, &b));
            builder
                .with_client_auth_cert(
                    chain.map_err(|e| e.to_string())?,
                    key_der.map_err(|e| e.to_string())?,
                )
                .map_err(|e| format!("client certificate {}: {e}", cert.display()))?
        }
        (None, None) => builder.with_no_client_auth(),
        _ => return Err("a client certificate needs both `cert` and `key`".into()),
    };
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Runs the TLS handshake for `host` over `tcp` as `tls` says, offering `alpn`; the error
/// says what failed.
pub async fn connect_with(
    host: &str,
    tcp: TcpStream,
    tls: &ClientTls,
    alpn: &[&[u8]],
) -> Result<TlsStream<TcpStream>, String> {
    let name = ServerName::try_from(host.to_owned())
        .map_err(|e| format!("{host:?} is not a valid TLS server name: {e}"))?;
    TlsConnector::from(config(tls, alpn)?)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("TLS handshake failed: {e}"))
}
