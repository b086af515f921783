//! mcpwire: one fast MCP runtime and gateway serving tools over every wire from one core.
//!
//! **Is:** the shell around the sans-IO core — the driver core every connection loop is built
//! from, the wires (stdio, Streamable HTTP, WebSocket and gRPC proto-mcp, MCPB), and the MCP
//! clients (stdio, Streamable HTTP over http or https) behind `mcpwire list`/`call`. Tokio
//! lives here and nowhere below.
//!
//! **Is not:** protocol logic (that is `mcpwire-session`), byte layouts (`mcpwire-wire`) or
//! tools (`mcpwire-router`).
//!
//! Writing a server: `use mcpwire::prelude::*;` (see [`prelude`]) brings the `#[server]`,
//! `#[tool]`, `#[prompt]` and `#[resource]` macros and everything they need; the crates
//! below are re-exported as [`model`] and [`router`] for the rest.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod admin;
pub mod auth;
pub mod client;
pub mod cluster;
mod consents;
mod driver;
mod fetch;
pub mod gateway;
#[doc = include_str!("guide.md")]
pub mod guide {}
pub mod http;
pub mod identify;
pub mod limits;
pub mod mcpb;
pub mod observe;
pub mod prelude;
pub mod proto_mcp;
mod relay;
pub mod serve;
pub mod stdio;
pub mod tls;
pub mod upstream;
pub mod wires;

pub use serve::Service;
pub use wires::{GrpcWire, McpbWire, Serve, ServeConfig, Wire, WsWire, serve_listeners};

pub use mcpwire_model as model;
pub use mcpwire_router as router;
pub use mcpwire_router::{schemars, serde};

/// What the code the macros generate calls.
#[doc(hidden)]
pub use mcpwire_router::__private;
