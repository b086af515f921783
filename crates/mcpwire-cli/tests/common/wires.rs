//! The network wires' clients for the CLI's tests: testkit's raw clients, blocking
//! (WebSocket, MCPB, gRPC unary), and the JSON-RPC conversation over any of them.

#![allow(unused_imports)]

pub use mcpwire_testkit::blocking::grpc::{
    GrpcError, call as grpc_call, call_over as grpc_call_over, call_with as grpc_call_with,
};
pub use mcpwire_testkit::blocking::{Conversation, Mcpb, Peer, Stdio, Ws};
