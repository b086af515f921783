//! The rustls server configuration a listener's [`TlsConfig`] makes, built from the files'
//! bytes as read at one moment ([`Files`]) so a reload can tell whether anything changed.

use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;

use super::TlsError;
use super::config::{ClientAuth, TlsConfig};
use super::pem;

impl TlsConfig {
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
