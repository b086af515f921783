//! PEM files → what rustls takes: a certificate chain, a private key, a set of trusted CAs.
//! Every error names the file and what is wrong with it.

use std::path::Path;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use super::TlsError;

/// The bytes of `path`.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Every `CERTIFICATE` section of `pem` (read from `path`), in order; at least one.
pub(crate) fn certificates(
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            what: format!("not a PEM certificate file: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_owned(),
            what: "no `BEGIN CERTIFICATE` section".into(),
        });
    }
    Ok(certs)
}

/// The first private key of `pem` (PKCS#8, PKCS#1 or SEC1), read from `path`.
pub(crate) fn private_key(path: &Path, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| TlsError::Pem {
        path: path.to_owned(),
        what: format!("no private key (`BEGIN PRIVATE KEY`, RSA or EC): {e}"),
    })
}

/// The certificates of `pem` (read from `path`) as a trust store.
pub(crate) fn roots(path: &Path, pem: &[u8]) -> Result<rustls::RootCertStore, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in certificates(path, pem)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            what: format!("not a usable CA certificate: {e}"),
        })?;
    }
    Ok(roots)
}

/// The crypto provider of every TLS configuration here (ring: builds without cmake).
pub fn provider() -> std::sync::Arc<rustls::crypto::CryptoProvider> {
    std::sync::Arc::new(rustls::crypto::ring::default_provider())
}
