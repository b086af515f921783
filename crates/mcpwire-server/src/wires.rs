//! Serving a [`Service`] (or a native [`Server`]) from a library, on every wire the CLI
//! serves and with the same options: [`Service::serve_http`], [`Service::serve_mcpb`],
//! [`Service::serve_grpc`], [`Service::serve_ws`], [`Service::serve`] for several at once
//! (any number of listeners of each wire), [`serve_listeners`] when listeners serve
//! different services (the gateway's views), and the [`Serve`] trait so an `Arc<Server>`
//! serves directly.
//!
//! A thin layer over the listeners (`http::HttpServer`, `mcpb::McpbServer`,
//! `proto_mcp::serve_grpc`, `proto_mcp::serve_ws`, `Service::serve_stdio`): it only binds,
//! reports the bound address on stderr (`mcpwire: listening on {scheme}://{addr}{path}`),
//! runs them, and ends them on shutdown. The one place serving starts: the CLI (`demo`,
//! `run`, `serve`) and library users come through here.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mcpwire_router::Server;
use tokio_util::sync::CancellationToken;

use crate::Service;
use crate::http::{HttpConfig, HttpServer};
use crate::mcpb::{McpbConfig, McpbServer, serve_health};
use crate::tls::TlsConfig;

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
    /// [`ServeConfig::shutdown`] does (by default SIGTERM or Ctrl-C).
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
    /// Serve `wss://`: TLS with this certificate (and optional client CA).
    pub tls: Option<TlsConfig>,
}

impl WsWire {
    /// WebSocket at `ws://addr/path`, at most 1024 connections at once.
    pub fn new(addr: impl Into<SocketAddr>, path: impl Into<String>) -> WsWire {
        WsWire {
            addr: addr.into(),
            path: path.into(),
            max_connections: 1024,
            tls: None,
        }
    }
}

/// How to serve gRPC proto-mcp (`buf.mcp.v1.MCPService`).
#[derive(Debug, Clone)]
pub struct GrpcWire {
    /// Address to listen on.
    pub addr: SocketAddr,
    /// Serve `grpcs://`: TLS (ALPN `h2`) with this certificate (and optional client CA).
    pub tls: Option<TlsConfig>,
}

impl GrpcWire {
    /// gRPC on `addr`, without TLS.
    pub fn new(addr: impl Into<SocketAddr>) -> GrpcWire {
        GrpcWire {
            addr: addr.into(),
            tls: None,
        }
    }
}

/// One listener: a wire and its options.
#[derive(Debug, Clone)]
pub enum Wire {
    /// One client over this process's stdin/stdout (JSON-RPC lines or proto-mcp frames).
    Stdio,
    /// Streamable HTTP.
    Http(HttpConfig),
    /// MCPB, the binary TCP framing.
    Mcpb(McpbWire),
    /// gRPC proto-mcp (`buf.mcp.v1.MCPService`).
    Grpc(GrpcWire),
    /// WebSocket.
    Ws(WsWire),
}

impl std::fmt::Display for Wire {
    /// The listener as a URL (`stdio`, `http://127.0.0.1:8000/mcp`, `mcpbs://…`), as it
    /// was asked for (port 0 stays 0).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |tls: &Option<TlsConfig>| if tls.is_some() { "s" } else { "" };
        match self {
            Wire::Stdio => f.write_str("stdio"),
            Wire::Http(c) => write!(f, "http{}://{}{}", s(&c.tls), c.bind, c.path),
            Wire::Mcpb(w) => write!(f, "mcpb{}://{}", s(&w.config.tls), w.addr),
            Wire::Grpc(g) => write!(f, "grpc{}://{}", s(&g.tls), g.addr),
            Wire::Ws(w) => write!(f, "ws{}://{}{}", s(&w.tls), w.addr, w.path),
        }
    }
}

/// The listeners to serve at once with [`Service::serve`], and what ends serving.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    /// The listeners, any number of each wire (stdio at most once).
    pub wires: Vec<Wire>,
    /// Cancelling it ends serving: MCPB, HTTP, gRPC and WebSocket drain (no new
    /// connection, calls already accepted are answered within their grace period; MCPB
    /// clients get the `shutdown` control frame, WebSocket ones a Close), stdio stops at
    /// once. `None`: the first SIGTERM or Ctrl-C does.
    pub shutdown: Option<CancellationToken>,
}

impl ServeConfig {
    /// No listener yet.
    pub fn new() -> ServeConfig {
        ServeConfig::default()
    }

    /// Adds a listener.
    pub fn wire(mut self, wire: Wire) -> ServeConfig {
        self.wires.push(wire);
        self
    }

    /// Adds stdio.
    pub fn stdio(self) -> ServeConfig {
        self.wire(Wire::Stdio)
    }

    /// Adds a Streamable HTTP listener.
    pub fn http(self, config: HttpConfig) -> ServeConfig {
        self.wire(Wire::Http(config))
    }

    /// Adds an MCPB listener.
    pub fn mcpb(self, wire: McpbWire) -> ServeConfig {
        self.wire(Wire::Mcpb(wire))
    }

    /// Adds a gRPC proto-mcp listener (without TLS) on `addr`.
    pub fn grpc(self, addr: impl Into<SocketAddr>) -> ServeConfig {
        self.wire(Wire::Grpc(GrpcWire::new(addr)))
    }

    /// Adds a WebSocket listener.
    pub fn ws(self, wire: WsWire) -> ServeConfig {
        self.wire(Wire::Ws(wire))
    }

    /// Ends serving when `token` is cancelled instead of on SIGTERM or Ctrl-C.
    pub fn shutdown_on(mut self, token: CancellationToken) -> ServeConfig {
        self.shutdown = Some(token);
        self
    }
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
        self.serve_http_until(config, CancellationToken::new())
            .await
    }

    /// Serves Streamable HTTP until `shutdown` is cancelled, then drains it: requests
    /// already read are answered (within [`crate::http::SHUTDOWN_GRACE`]).
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
        server
            .serve_until(shutdown, crate::http::SHUTDOWN_GRACE)
            .await
    }

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
            None => shutdown_on_signals()?,
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

    /// Serves the gRPC proto-mcp service on `addr` until the process ends.
    pub async fn serve_grpc(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        crate::proto_mcp::serve_grpc(self.clone(), &GrpcWire::new(addr)).await
    }

    /// Serves WebSocket at `ws://addr/path` (`wss://` with TLS) until the process ends.
    pub async fn serve_ws(&self, wire: WsWire) -> io::Result<()> {
        crate::proto_mcp::serve_ws(self.clone(), &wire).await
    }

    /// Serves every listener of `config` at once (see [`serve_listeners`]).
    pub async fn serve(&self, config: ServeConfig) -> io::Result<()> {
        let listeners = config.wires.into_iter().map(|w| (self.clone(), w));
        serve_listeners(listeners.collect(), config.shutdown).await
    }
}

/// Serves each listener with its own service, all at once. Returns when the first listener
/// ends (stdio ends when stdin closes) or fails (the error names the listener), or on
/// shutdown: when `shutdown` is cancelled (`None`: on the first SIGTERM or Ctrl-C) MCPB,
/// HTTP, gRPC and WebSocket listeners drain (calls already accepted are answered, within
/// 30 s by default), stdio stops, and it returns once the draining listeners are done. With no listener it returns at once; stdio may be served only once.
pub async fn serve_listeners(
    listeners: Vec<(Service, Wire)>,
    shutdown: Option<CancellationToken>,
) -> io::Result<()> {
    if listeners.is_empty() {
        return Ok(());
    }
    if listeners
        .iter()
        .filter(|(_, w)| matches!(w, Wire::Stdio))
        .count()
        > 1
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "stdio can be listened on only once",
        ));
    }
    let shutdown = match shutdown {
        Some(token) => token,
        None => shutdown_on_signals()?,
    };
    let mut running = FuturesUnordered::new();
    let mut draining = FuturesUnordered::new();
    for (service, wire) in listeners {
        let label = wire.to_string();
        let serving: Serving = match wire {
            Wire::Stdio => Box::pin(async move { service.serve_stdio().await }),
            Wire::Http(http) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    service.serve_http_until(http, shutdown).await
                }));
                continue;
            }
            Wire::Grpc(grpc) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    crate::proto_mcp::serve_grpc_until(service, &grpc, shutdown).await
                }));
                continue;
            }
            Wire::Ws(ws) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    crate::proto_mcp::serve_ws_until(service, &ws, shutdown).await
                }));
                continue;
            }
            Wire::Mcpb(mut mcpb) => {
                match &mcpb.shutdown {
                    None => mcpb.shutdown = Some(shutdown.clone()),
                    Some(own) => {
                        let (all, own) = (shutdown.clone(), own.clone());
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = all.cancelled() => own.cancel(),
                                _ = own.cancelled() => {}
                            }
                        });
                    }
                }
                draining.push(labelled(label, async move {
                    service.serve_mcpb_with(mcpb).await
                }));
                continue;
            }
        };
        running.push(labelled(label, serving));
    }
    tokio::select! {
        biased;
        _ = shutdown.cancelled() => {}
        Some(ended) = running.next(), if !running.is_empty() => return ended,
        Some(ended) = draining.next(), if !draining.is_empty() => {
            if !shutdown.is_cancelled() {
                return ended;
            }
            ended?;
        }
    }
    drop(running);
    while let Some(ended) = draining.next().await {
        ended?;
    }
    Ok(())
}

/// `serving`, its error prefixed with the listener it concerns.
fn labelled(
    label: String,
    serving: impl Future<Output = io::Result<()>> + Send + 'static,
) -> Serving {
    Box::pin(async move {
        serving
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("{label}: {e}")))
    })
}

/// A token cancelled by the first SIGTERM or Ctrl-C.
pub fn shutdown_on_signals() -> io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let signals = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down");
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
