//! mcpwire: one fast MCP runtime and gateway serving tools over every wire from one core.
//!
//! This crate is a facade: it re-exports the crates that do the work, and its features
//! choose what you compile.
//!
//! - Always: writing and serving tools — [`prelude`] (`use mcpwire::prelude::*;`: the
//!   `#[server]`, `#[tool]`, `#[prompt]` and `#[resource]` macros and what they need), the
//!   message [`model`], the [`router`] and its `Backend` trait, and the wires of
//!   `mcpwire-server` ([`stdio`], [`http`], [`mcpb`], [`proto_mcp`], [`wires`]).
//! - Feature `client`: [`client`], the MCP client (stdio, Streamable HTTP, MCPB, OAuth).
//! - Feature `gateway`: [`gateway`] (what `mcpwire serve` runs), [`upstream`] (upstream MCP
//!   servers as backends), [`auth`] (API keys and JWTs for the listeners), [`cluster`]
//!   (replicas sharing a store).
//!
//! The guide is [`guide`]; the map of the crates is `docs/ARCHITECTURE.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[doc = include_str!("guide.md")]
pub mod guide {}
pub mod prelude;

pub use mcpwire_model as model;
pub use mcpwire_router as router;
pub use mcpwire_router::{schemars, serde};
#[cfg(feature = "admin")]
pub use mcpwire_server::admin;
#[cfg(feature = "proto-mcp")]
pub use mcpwire_server::{GrpcWire, WsWire, proto_mcp};
#[cfg(feature = "http")]
pub use mcpwire_server::{HttpRoute, http};
#[cfg(feature = "mcpb")]
pub use mcpwire_server::{McpbWire, mcpb};
pub use mcpwire_server::{
    Serve, ServeConfig, Service, Wire, directory, identify, limits, observe, serve,
    serve_listeners, stdio, tls, wires,
};

#[cfg(feature = "client")]
pub use mcpwire_client as client;
#[cfg(feature = "gateway")]
pub use mcpwire_gateway as gateway;
#[cfg(feature = "gateway")]
pub use mcpwire_gateway::{auth, cluster, upstream};

/// What the code the macros generate calls.
#[doc(hidden)]
pub use mcpwire_router::__private;
