//! mcpwire-server: serving MCP over every wire from one core — the tokio shell around the
//! sans-IO session.
//!
//! **Is:** the driver core every connection loop is built from (`driver`), the wires
//! (stdio, Streamable HTTP, WebSocket and gRPC proto-mcp, MCPB) and [`serve_listeners`] to
//! run several at once, [`Service`] (what a listener serves: a router and its session
//! config), TLS for listeners, observability (metrics names, request spans, the admin
//! listener), and the pieces the gateway plugs in (authentication, connection limits,
//! replica sets, the relay tables). Tokio lives here and in the client and gateway crates,
//! nowhere below.
//!
//! **Is not:** protocol logic (`mcpwire-session`), byte layouts (`mcpwire-wire`), tools and
//! backends (`mcpwire-router`), the MCP client (`mcpwire-client`) or the gateway
//! (`mcpwire-gateway`). Tool authors use it through the `mcpwire` facade
//! (`use mcpwire::prelude::*`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admin;

pub mod directory;
pub mod driver;
pub mod http;
pub mod identify;
pub mod limits;
pub mod mcpb;
pub mod observe;
pub mod proto_mcp;
pub mod relay;
pub mod serve;
pub mod stdio;
pub mod tls;
pub mod wires;

pub use serve::{HttpRoute, Service};
pub use wires::{GrpcWire, McpbWire, Serve, ServeConfig, Wire, WsWire, serve_listeners};
