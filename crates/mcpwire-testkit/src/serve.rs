//! Any wire served in-process: [`serve`] takes a [`Service`] (or a [`Router`], or a native
//! [`Server`]) and a listener description — the server's own [`Wire`], with the shortcuts
//! [`stdio`], [`http`], [`ws`], [`grpc`] and [`mcpb`] for loopback port 0 — and returns a
//! [`Served`] handle: the bound address, the client end of the stdio pipe, and a shutdown
//! (explicit and bounded, or on drop).
//!
//! The listeners are the product's own (`HttpServer`, `WsServer`, `GrpcMcp`, `McpbServer`,
//! `StdioConnection`), bound here rather than through `Service::serve` so the port the
//! system picked is known without reading stderr. stdio runs over an in-process pipe
//! ([`tokio::io::duplex`], [`PIPE_BYTES`] each way) instead of the process's stdin/stdout.
//!
//! A test on a tokio runtime calls [`serve`]; a blocking test (driving the server with the
//! [`crate::blocking`] clients) serves on a [`Host`], a runtime on threads of its own.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::Implementation;
use mcpwire_router::{Router, Server};
use mcpwire_server::http::{HttpConfig, HttpServer};
use mcpwire_server::mcpb::{McpbServer, serve_health};
use mcpwire_server::proto_mcp::grpc::GrpcMcp;
use mcpwire_server::proto_mcp::keep_tool_schemas;
use mcpwire_server::proto_mcp::ws::WsServer;
use mcpwire_server::stdio::StdioConnection;
use mcpwire_server::{GrpcWire, McpbWire, Service, Wire, WsWire};
use tokio::io::DuplexStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::raw::http::HttpClient;
use crate::raw::stdio::Stdio;

/// How long an explicit [`Served::shutdown`] may take (the listener's drain) before the
/// serving task is dropped.
pub const SHUTDOWN_WITHIN: Duration = Duration::from_secs(10);

/// How long listeners drain on shutdown (HTTP, WebSocket): short, as a test's calls are.
pub const DRAIN: Duration = Duration::from_secs(2);

/// The in-process stdio pipe's capacity each way.
pub const PIPE_BYTES: usize = 1 << 20;

/// What can be served: a [`Service`] as it is, a native [`Server`]
/// ([`Service::from_server`]: tasks on, default limits), or a [`Router`] (introducing
/// itself by its backend's name).
pub trait IntoService {
    /// The service.
    fn into_service(self) -> Service;
}

impl IntoService for Service {
    fn into_service(self) -> Service {
        self
    }
}

impl IntoService for Arc<Server> {
    fn into_service(self) -> Service {
        Service::from_server(self)
    }
}

impl IntoService for Router {
    fn into_service(self) -> Service {
        let name = self.info().name.clone();
        Service::new(self, Implementation::new(name, "1"), None)
    }
}

/// The loopback address with a port the system picks.
pub fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// stdio, over an in-process pipe.
pub fn stdio() -> Wire {
    Wire::Stdio
}

/// Streamable HTTP at `http://127.0.0.1:{port}/mcp`, default options.
pub fn http() -> Wire {
    Wire::Http(HttpConfig::default())
}

/// Streamable HTTP with `edit` applied to the default options (loopback port 0 stays
/// unless `edit` changes it).
pub fn http_with(edit: impl FnOnce(&mut HttpConfig)) -> Wire {
    let mut config = HttpConfig::default();
    edit(&mut config);
    Wire::Http(config)
}

/// WebSocket at `ws://127.0.0.1:{port}/mcp`.
pub fn ws() -> Wire {
    Wire::Ws(WsWire::new(loopback(), "/mcp"))
}

/// gRPC proto-mcp on `127.0.0.1:{port}` (without TLS: `grpcs://` is served by
/// `Service::serve` only).
pub fn grpc() -> Wire {
    Wire::Grpc(GrpcWire::new(loopback()))
}

/// MCPB on `127.0.0.1:{port}`, default options (authentication off).
pub fn mcpb() -> Wire {
    Wire::Mcpb(McpbWire::new(loopback()))
}

/// MCPB with `edit` applied to the default listener options.
pub fn mcpb_with(edit: impl FnOnce(&mut McpbWire)) -> Wire {
    let mut wire = McpbWire::new(loopback());
    edit(&mut wire);
    Wire::Mcpb(wire)
}

/// A served wire: where it listens, and its shutdown. Dropping it shuts the listener down
/// at once (connections already accepted may outlive it until their client leaves).
#[must_use = "the listener shuts down when its handle is dropped"]
pub struct Served {
    scheme: &'static str,
    addr: Option<SocketAddr>,
    path: String,
    health: Option<SocketAddr>,
    stdio: Option<DuplexStream>,
    shutdown: CancellationToken,
    task: Option<JoinHandle<io::Result<()>>>,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served").field("url", &self.url()).finish()
    }
}

/// Serves `service` on `wire` on the current tokio runtime until the handle is dropped or
/// shut down; panics if the listener cannot bind.
pub async fn serve(service: impl IntoService, wire: Wire) -> Served {
    let service = service.into_service();
    let shutdown = CancellationToken::new();
    let token = shutdown.clone();
    let mut served = Served {
        scheme: "stdio",
        addr: None,
        path: String::new(),
        health: None,
        stdio: None,
        shutdown,
        task: None,
    };
    let serving: futures::future::BoxFuture<'static, io::Result<()>> = match wire {
        Wire::Stdio => {
            keep_tool_schemas(service.router.clone(), service.proto.clone()).await;
            let (client, server) = tokio::io::duplex(PIPE_BYTES);
            served.stdio = Some(client);
            Box::pin(async move {
                let (r, w) = tokio::io::split(server);
                tokio::select! {
                    ended = StdioConnection::new(&service, r, w).run() => ended,
                    _ = token.cancelled() => Ok(()),
                }
            })
        }
        Wire::Http(config) => {
            served.scheme = if config.tls.is_some() {
                "https"
            } else {
                "http"
            };
            served.path = config.path.clone();
            let server = HttpServer::bind(service, config).await.expect("bind HTTP");
            served.addr = Some(server.local_addr().expect("addr"));
            Box::pin(server.serve_until(token, DRAIN))
        }
        Wire::Ws(w) => {
            keep_tool_schemas(service.router.clone(), service.proto.clone()).await;
            let server =
                WsServer::bind(service, w.addr, &w.path, w.max_connections, w.tls.as_ref())
                    .await
                    .expect("bind WebSocket");
            served.scheme = server.scheme();
            served.path = w.path;
            served.addr = Some(server.local_addr().expect("addr"));
            Box::pin(server.serve_until(token, DRAIN))
        }
        Wire::Grpc(g) => {
            assert!(g.tls.is_none(), "grpcs:// is served by Service::serve only");
            keep_tool_schemas(service.router.clone(), service.proto.clone()).await;
            let listener = tokio::net::TcpListener::bind(g.addr)
                .await
                .expect("bind gRPC");
            served.scheme = "grpc";
            served.addr = Some(listener.local_addr().expect("addr"));
            Box::pin(async move {
                // The gRPC listener's drain is the binary's; here it stops accepting.
                tokio::select! {
                    ended = GrpcMcp::new(service).serve(listener) => ended.map_err(io::Error::other),
                    _ = token.cancelled() => Ok(()),
                }
            })
        }
        Wire::Mcpb(m) => {
            let server = McpbServer::bind(service, m.addr, m.config, token)
                .await
                .expect("bind MCPB");
            served.scheme = server.scheme();
            served.addr = Some(server.local_addr().expect("addr"));
            if let Some(at) = m.health {
                let (bound, health) = serve_health(&server, at).await.expect("bind health");
                served.health = Some(bound);
                tokio::spawn(health);
            }
            Box::pin(server.serve())
        }
    };
    served.task = Some(tokio::spawn(serving));
    served
}

impl Served {
    /// The bound address (panics for stdio).
    pub fn addr(&self) -> SocketAddr {
        self.addr.expect("a network listener")
    }

    /// `127.0.0.1:{port}`.
    pub fn host_port(&self) -> String {
        self.addr().to_string()
    }

    /// The listener as a URL: `http://127.0.0.1:{port}/mcp`, `ws://…/mcp`, `grpc://…`,
    /// `mcpb://…`, or `stdio`.
    pub fn url(&self) -> String {
        match self.addr {
            None => "stdio".to_owned(),
            Some(a) => format!("{}://{a}{}", self.scheme, self.path),
        }
    }

    /// The dedicated MCPB health port's address, when it was asked for.
    pub fn health_addr(&self) -> Option<SocketAddr> {
        self.health
    }

    /// The client end of the stdio pipe (once; panics for other wires).
    pub fn take_pipe(&mut self) -> DuplexStream {
        self.stdio
            .take()
            .expect("a stdio listener whose pipe was not taken")
    }

    /// A stdio client over the pipe (once; panics for other wires).
    pub fn stdio(&mut self) -> Stdio {
        Stdio::over(self.take_pipe())
    }

    /// A raw HTTP client of this listener's endpoint.
    pub fn http(&self) -> HttpClient {
        HttpClient::new(&format!("{}{}", self.host_port(), self.path))
    }

    /// Lets the listener serve until the runtime ends, the handle gone; its URL.
    pub fn detach(mut self) -> String {
        let url = self.url();
        // The handle's own token: the listener keeps the one it serves until.
        self.shutdown = CancellationToken::new();
        drop(self.task.take());
        url
    }

    /// Whether the listener stopped serving (it failed, or stdio's client closed).
    pub fn is_finished(&self) -> bool {
        self.task.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits (at most [`SHUTDOWN_WITHIN`]) for serving to end by itself — stdio once its
    /// client closed the input and every accepted call was answered — and returns how it
    /// ended; `TimedOut` if it did not.
    pub async fn ended(mut self) -> io::Result<()> {
        let Some(task) = self.task.take() else {
            return Ok(());
        };
        let abort = task.abort_handle();
        match tokio::time::timeout(SHUTDOWN_WITHIN, task).await {
            Ok(Ok(ended)) => ended,
            Ok(Err(e)) => Err(io::Error::other(e)),
            Err(_) => {
                abort.abort();
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("serving did not end within {SHUTDOWN_WITHIN:?}"),
                ))
            }
        }
    }

    /// Shuts the listener down — network listeners drain (calls already accepted are
    /// answered, within [`DRAIN`]), stdio stops — and waits for it (at most
    /// [`SHUTDOWN_WITHIN`], then it is dropped); how serving ended.
    pub async fn shutdown(self) -> io::Result<()> {
        self.shutdown.cancel();
        self.ended().await
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// A tokio runtime on threads of its own (two workers) for blocking tests: servers (and
/// whatever they need, e.g. a backend that spawns a process) run on it while the test's
/// thread drives them with the [`crate::blocking`] clients. Dropping it stops everything
/// still running on it (within a second).
pub struct Host {
    rt: Option<tokio::runtime::Runtime>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").finish_non_exhaustive()
    }
}

impl Default for Host {
    fn default() -> Self {
        Host::new()
    }
}

impl Host {
    /// A new runtime.
    pub fn new() -> Host {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("testkit-host")
            .enable_all()
            .build()
            .expect("a runtime");
        Host { rt: Some(rt) }
    }

    /// Runs `f` to its end on this runtime (building a service that needs one, say).
    pub fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.rt.as_ref().expect("running").block_on(f)
    }

    /// [`serve`] on this runtime.
    pub fn serve(&self, service: impl IntoService, wire: Wire) -> Served {
        self.block_on(serve(service, wire))
    }

    /// A handle to spawn on this runtime.
    pub fn handle(&self) -> tokio::runtime::Handle {
        self.rt.as_ref().expect("running").handle().clone()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_timeout(Duration::from_secs(1));
        }
    }
}
