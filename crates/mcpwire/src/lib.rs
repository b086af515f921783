//! mcpwire: one fast MCP runtime and gateway serving tools over every wire from one core.
//!
//! **Is:** the shell around the sans-IO core — the driver core every connection loop is built
//! from, the wires (stdio, Streamable HTTP, WebSocket and gRPC proto-mcp, MCPB), and the MCP
//! clients (stdio, Streamable HTTP over http or https) behind `mcpwire list`/`call`. Tokio
//! lives here and nowhere below.
//!
//! **Is not:** protocol logic (that is `mcpwire-session`), byte layouts (`mcpwire-wire`) or
//! tools (`mcpwire-router`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod client;
mod driver;
pub mod http;
pub mod mcpb;
pub mod proto_mcp;
pub mod serve;
pub mod stdio;

pub use serve::Service;
