//! proto-mcp (`buf.mcp.v1`) listeners: WebSocket ([`WsWire`], `ws.rs`) and gRPC
//! ([`GrpcWire`], `grpc.rs`). Stdio detects proto-mcp frames by their first byte
//! (`crate::stdio`); every proto-mcp connection reads and writes with the service's tool
//! schemas (`crate::proto_schemas`).

use std::io;
use std::net::SocketAddr;

use crate::Service;
pub use crate::proto_schemas::{converter_with_registry, default_converter, keep_tool_schemas};
use crate::tls::TlsConfig;

pub mod grpc;
mod grpc_conn;
pub mod ws;

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

impl Service {
    /// Serves the gRPC proto-mcp service on `addr` until the process ends.
    pub async fn serve_grpc(&self, addr: impl Into<SocketAddr>) -> io::Result<()> {
        serve_grpc(self.clone(), &GrpcWire::new(addr)).await
    }

    /// Serves WebSocket at `ws://addr/path` (`wss://` with TLS) until the process ends.
    pub async fn serve_ws(&self, wire: WsWire) -> io::Result<()> {
        serve_ws(self.clone(), &wire).await
    }
}

/// Serves proto-mcp and JSON-RPC over WebSocket as `wire` says until the process ends.
pub async fn serve_ws(service: Service, wire: &WsWire) -> std::io::Result<()> {
    let never = tokio_util::sync::CancellationToken::new();
    serve_ws_until(service, wire, never).await
}

/// [`serve_ws`] until `shutdown` is cancelled, then drained: each connection answers the
/// calls it accepted and closes (within [`crate::http::SHUTDOWN_GRACE`]).
pub async fn serve_ws_until(
    service: Service,
    wire: &WsWire,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    keep_tool_schemas(service.router.clone(), service.proto.clone()).await;
    let path = &wire.path;
    let server = ws::WsServer::bind(
        service,
        wire.addr,
        path,
        wire.max_connections,
        wire.tls.as_ref(),
    )
    .await?;
    let scheme = server.scheme();
    crate::observe::announce(format_args!(
        "mcpwire: listening on {scheme}://{}{path}",
        server.local_addr()?
    ));
    server
        .serve_until(shutdown, crate::http::SHUTDOWN_GRACE)
        .await
}

/// Serves the gRPC `MCPService` as `wire` says until the process ends.
pub async fn serve_grpc(service: Service, wire: &GrpcWire) -> std::io::Result<()> {
    serve_grpc_until(service, wire, tokio_util::sync::CancellationToken::new()).await
}

/// Serves the gRPC `MCPService` as `wire` says until `shutdown` is cancelled, then drains
/// it: RPCs in flight are answered (within [`crate::http::SHUTDOWN_GRACE`]).
pub async fn serve_grpc_until(
    service: Service,
    wire: &GrpcWire,
    shutdown: tokio_util::sync::CancellationToken,
) -> std::io::Result<()> {
    keep_tool_schemas(service.router.clone(), service.proto.clone()).await;
    let listener =
        crate::tls::Incoming::bind(wire.addr, wire.tls.as_ref(), crate::tls::alpn::H2).await?;
    let scheme = if listener.is_tls() { "grpcs" } else { "grpc" };
    crate::observe::announce(format_args!(
        "mcpwire: listening on {scheme}://{}",
        listener.local_addr()?
    ));
    grpc::GrpcMcp::new(service)
        .serve_until(listener, shutdown, crate::http::SHUTDOWN_GRACE)
        .await
        .map_err(std::io::Error::other)
}
