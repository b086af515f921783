//! Fixtures shared by mcpwire's tests and benchmarks: nothing here runs in a product.
//!
//! - [`jwt`]: fresh signing keys of every algorithm the authentication layer verifies, the
//!   JWKS publishing them, and tokens signed with them.

#![forbid(unsafe_code)]

pub mod jwt;
