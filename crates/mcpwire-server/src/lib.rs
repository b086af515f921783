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
// A build without some wires leaves parts of the shared driver unused; the full build (the
// default, and what CI lints) keeps every lint.
#![cfg_attr(
    not(all(
        feature = "http",
        feature = "mcpb",
        feature = "proto-mcp",
        feature = "tls",
        feature = "admin"
    )),
    allow(dead_code, unused_imports)
)]

#[cfg(feature = "admin")]
pub mod admin;

pub mod directory;
pub mod driver;
#[cfg(feature = "http")]
pub mod http;
pub mod identify;
pub mod limits;
#[cfg(feature = "mcpb")]
pub mod mcpb;
pub mod observe;
#[cfg(feature = "proto-mcp")]
pub mod proto_mcp;
#[cfg(feature = "proto-mcp")]
mod proto_schemas;
pub mod serve;
mod shutdown;
pub mod stdio;
pub mod tls;
pub mod wires;

#[cfg(feature = "http")]
pub use serve::HttpRoute;
pub use serve::{ListenerLoad, Service};
#[cfg(feature = "mcpb")]
pub use wires::McpbWire;
#[cfg(feature = "proto-mcp")]
pub use wires::{GrpcWire, WsWire};
pub use wires::{Serve, ServeConfig, Wire, serve_listeners};
