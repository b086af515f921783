//! The network wires' clients for the CLI's tests: testkit's raw clients, blocking
//! (WebSocket, MCPB, gRPC unary), and the JSON-RPC conversation over any of them.

#![allow(dead_code, unused_imports)]

use std::sync::Arc;

pub use mcpwire_testkit::blocking::grpc::GrpcError;
pub use mcpwire_testkit::blocking::{Conversation, Mcpb, Peer, Stdio, Ws};

/// Calls `buf.mcp.v1.MCPService/{rpc}` at `addr` with `request`.
pub fn grpc_call<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
) -> Result<R, GrpcError> {
    grpc_call_over(addr, rpc, request, &[], None)
}

/// [`grpc_call`] with request metadata (e.g. `authorization`).
pub fn grpc_call_with<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
) -> Result<R, GrpcError> {
    grpc_call_over(addr, rpc, request, metadata, None)
}

/// [`grpc_call_with`], over TLS with `tls` when given.
pub fn grpc_call_over<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<R, GrpcError> {
    mcpwire_testkit::blocking::grpc::call_with(addr, rpc, request, metadata, tls)
}
