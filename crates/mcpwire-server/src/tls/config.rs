//! What a listener's or a client's TLS is made of, as configuration: certificate, key and
//! CA files and how they are used. Always compiled, so configurations carry TLS settings
//! whatever the build; using them needs the `tls` feature (rustls), without which a
//! listener or a connection asked for TLS is refused with [`TlsError::Unavailable`].

use std::path::PathBuf;
use std::time::Duration;

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
}

/// How the client checks a TLS server and proves itself to it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientTls {
    /// Trust only the CAs of this PEM file (`None`: the system's and Mozilla's roots).
    pub ca: Option<PathBuf>,
    /// Present this certificate chain (PEM) when the server asks for one.
    pub cert: Option<PathBuf>,
    /// The private key of `cert` (PEM).
    pub key: Option<PathBuf>,
}

/// A TLS file that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file holds no usable PEM section of the kind expected.
    #[error("{path}: {what}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What was expected and not found, or why it did not parse.
        what: String,
    },
    /// rustls refused the combination (e.g. the key is not the certificate's).
    #[error("{0}")]
    Refused(String),
    /// This build has no TLS (mcpwire-server without its `tls` feature).
    #[error("TLS is not available: this build of mcpwire-server has no `tls` feature")]
    Unavailable,
}
