//! [`McpbWire`]: how a library or the CLI serves MCPB (listener options, a health port,
//! what ends it), and [`Service::serve_mcpb`].

use std::io;
use std::net::SocketAddr;

use tokio_util::sync::CancellationToken;

use super::{McpbConfig, McpbServer, serve_health};
use crate::Service;

/// How to serve MCPB: the listener's options, an optional health-check port and what
/// starts a graceful shutdown.
#[derive(Debug, Clone)]
pub struct McpbWire {
    /// Address to listen on (port 0 picks a free one).
    pub addr: SocketAddr,
    /// Authentication, session, ping and shutdown settings.
    pub config: McpbConfig,
    /// Also answer health checks (only) on this address.
    pub health: Option<SocketAddr>,
    /// Cancelling it shuts connections down gracefully. `None`: the shutdown of
    /// [`crate::ServeConfig::shutdown`] does (by default SIGTERM or Ctrl-C).
    pub shutdown: Option<CancellationToken>,
}

impl McpbWire {
    /// MCPB on `addr` with the default options (no authentication, shutdown on SIGTERM or
    /// Ctrl-C).
    pub fn new(addr: impl Into<SocketAddr>) -> McpbWire {
        McpbWire {
            addr: addr.into(),
            config: McpbConfig::default(),
            health: None,
            shutdown: None,
        }
    }
}

impl Service {
    /// Serves MCPB on `addr` with the default options until SIGTERM or Ctrl-C, then shuts
    /// connections down gracefully.
    pub async fn serve_mcpb(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        self.serve_mcpb_with(McpbWire::new(addr)).await
    }

    /// Serves MCPB with every option of `mcpwire demo --transport mcpb`; without a shutdown
    /// token of its own, until SIGTERM or Ctrl-C.
    pub async fn serve_mcpb_with(&self, wire: McpbWire) -> io::Result<()> {
        if wire.config.tokens.is_empty() {
            tracing::warn!("MCPB authentication is off: set tokens (--mcpb-token) to require one");
        }
        let shutdown = match wire.shutdown {
            Some(token) => token,
            None => crate::shutdown::shutdown_on_signals()?,
        };
        let server = McpbServer::bind(self.clone(), wire.addr, wire.config, shutdown).await?;
        crate::observe::announce(format_args!(
            "mcpwire: listening on {}://{}",
            server.scheme(),
            server.local_addr()?
        ));
        if let Some(at) = wire.health {
            let (bound, health) = serve_health(&server, at)
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("health port {at}: {e}")))?;
            crate::observe::announce(format_args!("mcpwire: health checks on mcpb://{bound}"));
            tokio::spawn(health);
        }
        server.serve().await
    }
}
