//! `--tls-cert`, `--tls-key`, `--tls-client-ca`, `--tls-client-auth`: TLS for the listener of
//! `demo|run|dev --transport …` and for every TLS `--listen` URL of `serve`; `--ca`,
//! `--client-cert`, `--client-key`: how `list` and `call` check a TLS server.

use std::path::PathBuf;

use mcpwire::tls::ClientTls;
use mcpwire_gateway::TlsOptions;

/// How `list` and `call` check an `https://` or `mcpbs://` server and prove themselves.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ClientTlsArgs {
    /// Trust only the CA certificates of this PEM file (default: the system's roots; also
    /// `SSL_CERT_FILE`).
    #[arg(long, value_name = "FILE")]
    ca: Option<PathBuf>,
    /// Present this client certificate (PEM) to servers that ask for one (mTLS).
    #[arg(long, value_name = "FILE", requires = "client_key")]
    client_cert: Option<PathBuf>,
    /// The private key of --client-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    client_key: Option<PathBuf>,
}

impl ClientTlsArgs {
    /// The client's TLS settings.
    pub fn client(&self) -> ClientTls {
        ClientTls {
            ca: self.ca.clone(),
            cert: self.client_cert.clone(),
            key: self.client_key.clone(),
        }
    }
}

/// TLS options shared by every serving command.
#[derive(clap::Args, Debug, Clone, Default)]
#[command(next_help_heading = "TLS")]
pub struct TlsArgs {
    /// Serve TLS with this certificate chain (PEM, leaf first; re-read when it changes).
    /// With --transport it makes the listener https://, wss://, grpcs:// or mcpbs://; with
    /// `serve`, it is the certificate of every https://, wss://, grpcs:// and mcpbs:// --listen.
    #[arg(long = "tls-cert", value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long = "tls-key", value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Require client certificates signed by a CA of this file (PEM): mutual TLS.
    #[arg(long = "tls-client-ca", value_name = "FILE", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// With --tls-client-ca: whether a client certificate is required or optional.
    #[arg(long = "tls-client-auth", value_parser = ["required", "optional"], requires = "tls_client_ca")]
    tls_client_auth: Option<String>,
}

impl TlsArgs {
    /// The listener's `tls` these flags describe, if any.
    pub fn options(&self) -> Option<TlsOptions> {
        let (cert, key) = (self.tls_cert.clone()?, self.tls_key.clone()?);
        Some(TlsOptions {
            cert,
            key,
            client_ca: self.tls_client_ca.clone(),
            client_auth: self.tls_client_auth.clone(),
            reload_secs: None,
        })
    }

    /// Whether any TLS flag was given.
    pub fn given(&self) -> bool {
        self.tls_cert.is_some()
    }
}
