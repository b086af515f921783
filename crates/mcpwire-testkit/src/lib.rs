//! The test harness of mcpwire: nothing here runs in a product.
//!
//! - [`wait`]: waiting for a condition (polled, with a deadline) instead of a fixed sleep,
//!   blocking or on tokio's clock.
//! - [`peers`]: the workspace root, the Python venv, and skipping (locally) or failing
//!   (under CI) when a peer is missing.
//! - [`spawn`]: a binary started as a listening server, its addresses read from the
//!   `listening on` lines it prints (the smoke tier: tests of the binary itself).
//! - [`serve`] (feature `wires`): any wire — stdio over in-process pipes, Streamable HTTP,
//!   WebSocket, gRPC, MCPB on loopback port 0 — served in-process from a
//!   `mcpwire_server::Service` (or a router, or a native server), with a handle that shuts
//!   it down; on the test's runtime or on a [`serve::Host`] of its own for blocking tests.
//! - [`raw`] (feature `wires`): one client per wire speaking bytes, so a test controls every
//!   header and frame (malformed input included): HTTP, stdio lines, WebSocket frames, MCPB
//!   frames, gRPC unary calls; and [`raw::Conversation`], a JSON-RPC exchange over any of
//!   the message wires. [`blocking`] wraps the same clients for tests without a runtime.
//! - [`router`] (feature `router`): a method called through a router as a listener would
//!   call it, its answer as JSON.
//! - [`pki`] (feature `pki`): a certificate authority made on the spot, its server and client
//!   certificates as PEM files, and rustls client configurations trusting it.
//! - [`jwt`] (feature `jwt`): fresh signing keys of every algorithm the authentication layer
//!   verifies, the JWKS publishing them, and tokens signed with them.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "wires")]
pub mod blocking;
#[cfg(feature = "jwt")]
pub mod jwt;
pub mod peers;
#[cfg(feature = "pki")]
pub mod pki;
#[cfg(feature = "wires")]
pub mod raw;
#[cfg(feature = "router")]
pub mod router;
#[cfg(feature = "wires")]
pub mod serve;
pub mod spawn;
pub mod wait;
