//! [`Service::serve_http`] and its variants: how a library or the CLI serves Streamable
//! HTTP (bind, announce the address, serve until shut down).

use std::io;
use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;

use super::{HttpConfig, HttpServer};
use crate::Service;

impl Service {
    /// Serves Streamable HTTP at `http://addr/mcp` with the default options (loopback
    /// `Origin`/`Host` only) until the process ends. Prefer a multi-thread runtime: every
    /// session is a task.
    pub async fn serve_http(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        let config = HttpConfig {
            bind: addr.into(),
            ..HttpConfig::default()
        };
        self.serve_http_with(config).await
    }

    /// Serves Streamable HTTP with every option of `mcpwire demo --transport http`.
    pub async fn serve_http_with(&self, config: HttpConfig) -> io::Result<()> {
        self.serve_http_until(config, CancellationToken::new())
            .await
    }

    /// Serves Streamable HTTP until `shutdown` is cancelled, then drains it: requests
    /// already read are answered (within [`super::SHUTDOWN_GRACE`]).
    pub async fn serve_http_until(
        &self,
        config: HttpConfig,
        shutdown: CancellationToken,
    ) -> io::Result<()> {
        if !config.bind.ip().is_loopback() && config.guard.allowed_hosts.is_none() {
            tracing::warn!(
                "listening on {} but only loopback Host headers are accepted; allow others with \
                 allowed_hosts (--allowed-hosts)",
                config.bind.ip()
            );
        }
        let path = config.path.clone();
        let scheme = if config.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let server = HttpServer::bind(self.clone(), config).await?;
        crate::observe::announce(format_args!(
            "mcpwire: listening on {scheme}://{}{path}",
            server.local_addr()?
        ));
        server.serve_until(shutdown, super::SHUTDOWN_GRACE).await
    }
}
