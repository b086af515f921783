//! A listener's TLS settings ([`TlsConfig`]) and the rustls server configuration they make,
//! built from the files' bytes as read at one moment ([`Files`]) so a reload can tell
//! whether anything changed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls::server::WebPkiClientVerifier;

use super::pem::{self, TlsError};

/// Whether clients must present a certificate signed by [`TlsConfig::client_ca`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client without a valid certificate is refused during the handshake.
    #[default]
    Required,
    /// A client may present none; one it presents must be valid.
    Optional,
}

/// How a listener terminates TLS: its certificate and key (PEM files, re-read every
/// `reload_every`; a changed pair serves new handshakes) and optionally the CA its clients'
/// certificates must be signed by (mTLS).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The leaf's private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// Client certificates must be signed by one of these CAs (PEM); `None`: none asked for.
    pub client_ca: Option<PathBuf>,
    /// With `client_ca`: whether a client certificate is required or optional.
    pub client_auth: ClientAuth,
    /// How often the files are checked for changes.
    pub reload_every: Duration,
}

/// The default [`TlsConfig::reload_every`].
pub const DEFAULT_RELOAD_EVERY: Duration = Duration::from_secs(10);

impl TlsConfig {
    /// TLS with this certificate and key, no client certificates, checked for changes
    /// every 10 s.
    pub fn new(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsConfig {
        TlsConfig {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
            client_auth: ClientAuth::Required,
            reload_every: DEFAULT_RELOAD_EVERY,
        }
    }

    /// The files as they are now.
    pub(crate) fn read(&self) -> Result<Files, TlsError> {
        Ok(Files {
            cert: pem::read(&self.cert)?,
            key: pem::read(&self.key)?,
            client_ca: self.client_ca.as_deref().map(pem::read).transpose()?,
        })
    }

    /// The rustls configuration of `files`, offering `alpn` (most preferred first).
    pub(crate) fn build(
        &self,
        files: &Files,
        alpn: &[&[u8]],
    ) -> Result<rustls::ServerConfig, TlsError> {
        let certs = pem::certificates(&self.cert, &files.cert)?;
        let key = pem::private_key(&self.key, &files.key)?;
        let provider = pem::provider();
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Refused(e.to_string()))?;
        let builder = match (&self.client_ca, &files.client_ca) {
            (Some(path), Some(pem)) => {
                let roots = Arc::new(pem::roots(path, pem)?);
                let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider);
                let verifier = match self.client_auth {
                    ClientAuth::Required => verifier,
                    ClientAuth::Optional => verifier.allow_unauthenticated(),
                };
                let verifier = verifier.build().map_err(|e| TlsError::Pem {
                    path: path.clone(),
                    what: format!("not usable to verify clients: {e}"),
                })?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(certs, key).map_err(|e| {
            TlsError::Refused(format!(
                "{} and {}: {e}",
                self.cert.display(),
                self.key.display()
            ))
        })?;
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(config)
    }
}

/// The bytes of a listener's TLS files as read at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Files {
    cert: Vec<u8>,
    key: Vec<u8>,
    client_ca: Option<Vec<u8>>,
}
