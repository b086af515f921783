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
#[cfg(any(feature = "mcpb", feature = "http"))]
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mcpwire_router::Server;
use tokio_util::sync::CancellationToken;

use crate::Service;
#[cfg(feature = "http")]
use crate::http::HttpConfig;
#[cfg(feature = "mcpb")]
pub use crate::mcpb::McpbWire;
#[cfg(feature = "proto-mcp")]
pub use crate::proto_mcp::{GrpcWire, WsWire};
pub use crate::shutdown::shutdown_on_signals;
use crate::tls::TlsConfig;

/// One listener: a wire and its options.
// Built once per listener: the size of the HTTP variant does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Wire {
    /// One client over this process's stdin/stdout (JSON-RPC lines or proto-mcp frames).
    Stdio,
    /// Streamable HTTP (feature `http`).
    #[cfg(feature = "http")]
    Http(HttpConfig),
    /// MCPB, the binary TCP framing (feature `mcpb`).
    #[cfg(feature = "mcpb")]
    Mcpb(McpbWire),
    /// gRPC proto-mcp (`buf.mcp.v1.MCPService`; feature `proto-mcp`).
    #[cfg(feature = "proto-mcp")]
    Grpc(GrpcWire),
    /// WebSocket (feature `proto-mcp`).
    #[cfg(feature = "proto-mcp")]
    Ws(WsWire),
}

impl std::fmt::Display for Wire {
    /// The listener as a URL (`stdio`, `http://127.0.0.1:8000/mcp`, `mcpbs://…`), as it
    /// was asked for (port 0 stays 0).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[allow(unused_variables)]
        let s = |tls: &Option<TlsConfig>| if tls.is_some() { "s" } else { "" };
        match self {
            Wire::Stdio => f.write_str("stdio"),
            #[cfg(feature = "http")]
            Wire::Http(c) => write!(f, "http{}://{}{}", s(&c.tls), c.bind, c.path),
            #[cfg(feature = "mcpb")]
            Wire::Mcpb(w) => write!(f, "mcpb{}://{}", s(&w.config.tls), w.addr),
            #[cfg(feature = "proto-mcp")]
            Wire::Grpc(g) => write!(f, "grpc{}://{}", s(&g.tls), g.addr),
            #[cfg(feature = "proto-mcp")]
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
    #[cfg(feature = "http")]
    pub fn http(self, config: HttpConfig) -> ServeConfig {
        self.wire(Wire::Http(config))
    }

    /// Adds an MCPB listener.
    #[cfg(feature = "mcpb")]
    pub fn mcpb(self, wire: McpbWire) -> ServeConfig {
        self.wire(Wire::Mcpb(wire))
    }

    /// Adds a gRPC proto-mcp listener (without TLS) on `addr`.
    #[cfg(feature = "proto-mcp")]
    pub fn grpc(self, addr: impl Into<SocketAddr>) -> ServeConfig {
        self.wire(Wire::Grpc(GrpcWire::new(addr)))
    }

    /// Adds a WebSocket listener.
    #[cfg(feature = "proto-mcp")]
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
    let mut draining: FuturesUnordered<Serving> = FuturesUnordered::new();
    for (service, wire) in listeners {
        let label = wire.to_string();
        let serving: Serving = match wire {
            Wire::Stdio => Box::pin(async move { service.serve_stdio().await }),
            #[cfg(feature = "http")]
            Wire::Http(http) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    service.serve_http_until(http, shutdown).await
                }));
                continue;
            }
            #[cfg(feature = "proto-mcp")]
            Wire::Grpc(grpc) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    crate::proto_mcp::serve_grpc_until(service, &grpc, shutdown).await
                }));
                continue;
            }
            #[cfg(feature = "proto-mcp")]
            Wire::Ws(ws) => {
                let shutdown = shutdown.clone();
                draining.push(labelled(label, async move {
                    crate::proto_mcp::serve_ws_until(service, &ws, shutdown).await
                }));
                continue;
            }
            #[cfg(feature = "mcpb")]
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
    #[cfg(feature = "http")]
    fn serve_http(
        &self,
        addr: impl Into<SocketAddr>,
    ) -> impl Future<Output = io::Result<()>> + Send {
        let (s, addr) = (self.service(), addr.into());
        async move { s.serve_http(addr).await }
    }

    /// See [`Service::serve_mcpb`].
    #[cfg(feature = "mcpb")]
    fn serve_mcpb(
        &self,
        addr: impl Into<SocketAddr>,
    ) -> impl Future<Output = io::Result<()>> + Send {
        let (s, addr) = (self.service(), addr.into());
        async move { s.serve_mcpb(addr).await }
    }

    /// See [`Service::serve_grpc`].
    #[cfg(feature = "proto-mcp")]
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
