//! Fixtures shared by mcpwire's tests and benchmarks: nothing here runs in a product.
//!
//! - [`wait`]: waiting for a condition (polled, with a deadline) instead of a fixed sleep,
//!   blocking or on tokio's clock.
//! - [`jwt`] (feature `jwt`): fresh signing keys of every algorithm the authentication layer
//!   verifies, the JWKS publishing them, and tokens signed with them.

#![forbid(unsafe_code)]

#[cfg(feature = "jwt")]
pub mod jwt;
pub mod wait;
