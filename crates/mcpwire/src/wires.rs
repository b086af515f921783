//! Serving a [`Service`] (or a native [`Server`]) from a library, on every wire the CLI
//! serves and with the same options: [`Service::serve_http`], [`Service::serve_mcpb`],
//! [`Service::serve_grpc`], [`Service::serve_ws`], [`Service::serve`] for several at once,
//! and the [`Serve`] trait so an `Arc<Server>` serves directly.
//!
//! A thin layer over the listeners (`http::HttpServer`, `mcpb::McpbServer`,
//! `proto_mcp::serve_grpc`, `proto_mcp::serve_ws`, `Service::serve_stdio`): it only binds, reports
//! the bound address on stderr, and runs them.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use mcpwire_router::Server;
use tokio_util::sync::CancellationToken;

use crate::Service;
use crate::http::{HttpConfig, HttpServer};
use crate::mcpb::{McpbConfig, McpbServer, serve_health};

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
    /// Cancelling it shuts connections down gracefully. `None`: SIGTERM or Ctrl-C does, as
    /// in `mcpwire demo --transport mcpb`.
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

/// How to serve WebSocket (binary proto-mcp and text JSON-RPC messages).
#[derive(Debug, Clone)]
pub struct WsWire {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// The endpoint's path, e.g. `/mcp`.
    pub path: String,
    /// Connections served at once.
    pub max_connections: usize,
}

/// The wires to serve at once with [`Service::serve`]; each `None` (or `false`) is off.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    /// One client over this process's stdin/stdout (JSON-RPC lines or proto-mcp frames).
    pub stdio: bool,
    /// Streamable HTTP.
    pub http: Option<HttpConfig>,
    /// MCPB, the binary TCP framing.
    pub mcpb: Option<McpbWire>,
    /// gRPC proto-mcp (`buf.mcp.v1.MCPService`) on this address.
    pub grpc: Option<SocketAddr>,
    /// WebSocket.
    pub ws: Option<WsWire>,
}

type Serving = Pin<Box<dyn Future<Output = io::Result<()>> + Send>>;

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
        if !config.bind.ip().is_loopback() && config.guard.allowed_hosts.is_none() {
            tracing::warn!(
                "listening on {} but only loopback Host headers are accepted; set guard.allowed_hosts",
                config.bind.ip()
            );
        }
        let path = config.path.clone();
        let server = HttpServer::bind(self.clone(), config).await?;
        eprintln!(
            "mcpwire: listening on http://{}{path}",
            server.local_addr()?
        );
        server.serve().await
    }

    /// Serves MCPB on `addr` with the default options until SIGTERM or Ctrl-C, then shuts
    /// connections down gracefully.
    pub async fn serve_mcpb(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        self.serve_mcpb_with(McpbWire::new(addr)).await
    }

    /// Serves MCPB with every option of `mcpwire demo --transport mcpb`.
    pub async fn serve_mcpb_with(&self, wire: McpbWire) -> io::Result<()> {
        if wire.config.tokens.is_empty() {
            tracing::warn!("MCPB authentication is off: set tokens to require one");
        }
        let shutdown = match wire.shutdown {
            Some(token) => token,
            None => shutdown_on_signals()?,
        };
        let server = McpbServer::bind(self.clone(), wire.addr, wire.config, shutdown).await?;
        eprintln!("mcpwire: listening on mcpb://{}", server.local_addr()?);
        if let Some(at) = wire.health {
            let (bound, health) = serve_health(&server, at).await?;
            eprintln!("mcpwire: health checks on mcpb://{bound}");
            tokio::spawn(health);
        }
        server.serve().await
    }

    /// Serves the gRPC proto-mcp service on `addr` until the process ends.
    pub async fn serve_grpc(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        crate::proto_mcp::serve_grpc(self.clone(), addr.into()).await
    }

    /// Serves WebSocket at `ws://addr/path` until the process ends.
    pub async fn serve_ws(&self, wire: WsWire) -> io::Result<()> {
        crate::proto_mcp::serve_ws(self.clone(), wire.addr, &wire.path, wire.max_connections).await
    }

    /// Serves every wire of `config` at once; returns when the first of them ends (stdio
    /// ends when stdin closes) or fails to start. With no wire it returns at once.
    pub async fn serve(&self, config: ServeConfig) -> io::Result<()> {
        let mut wires: Vec<Serving> = Vec::new();
        if config.stdio {
            let s = self.clone();
            wires.push(Box::pin(async move { s.serve_stdio().await }));
        }
        if let Some(http) = config.http {
            let s = self.clone();
            wires.push(Box::pin(async move { s.serve_http_with(http).await }));
        }
        if let Some(mcpb) = config.mcpb {
            let s = self.clone();
            wires.push(Box::pin(async move { s.serve_mcpb_with(mcpb).await }));
        }
        if let Some(addr) = config.grpc {
            let s = self.clone();
            wires.push(Box::pin(async move { s.serve_grpc(addr).await }));
        }
        if let Some(ws) = config.ws {
            let s = self.clone();
            wires.push(Box::pin(async move { s.serve_ws(ws).await }));
        }
        if wires.is_empty() {
            return Ok(());
        }
        futures::future::select_all(wires).await.0
    }
}

/// A token cancelled by the first SIGTERM or Ctrl-C.
fn shutdown_on_signals() -> io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let signals = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down MCPB connections");
        signals.cancel();
    });
    Ok(token)
}

/// Serving straight from a native [`Server`]: `server.serve_stdio().await`. Each method
/// wraps the server in [`Service::from_server`] (tasks enabled, default limits) and serves
/// it; build a [`Service`] yourself to change limits first.
pub trait Serve {
    /// The service these methods serve.
    fn service(&self) -> Service;

    /// See [`Service::serve_stdio`].
    fn serve_stdio(&self) -> impl Future<Output = io::Result<()>> + Send {
        let s = self.service();
        async move { s.serve_stdio().await }
    }

    /// See [`Service::serve_http`].
    fn serve_http(
        &self,
        addr: impl Into<SocketAddr>,
    ) -> impl Future<Output = io::Result<()>> + Send {
        let (s, addr) = (self.service(), addr.into());
        async move { s.serve_http(addr).await }
    }

    /// See [`Service::serve_mcpb`].
    fn serve_mcpb(
        &self,
        addr: impl Into<SocketAddr>,
    ) -> impl Future<Output = io::Result<()>> + Send {
        let (s, addr) = (self.service(), addr.into());
        async move { s.serve_mcpb(addr).await }
    }

    /// See [`Service::serve_grpc`].
    fn serve_grpc(
        &self,
        addr: impl Into<SocketAddr>,
    ) -> impl Future<Output = io::Result<()>> + Send {
        let (s, addr) = (self.service(), addr.into());
        async move { s.serve_grpc(addr).await }
    }

    /// See [`Service::serve`].
    fn serve(&self, config: ServeConfig) -> impl Future<Output = io::Result<()>> + Send {
        let s = self.service();
        async move { s.serve(config).await }
    }
}

impl Serve for Arc<Server> {
    fn service(&self) -> Service {
        Service::from_server(self.clone())
    }
}
