//! Rate limits (issue 13, item 4; decisions in `docs/design/limits.md`).
//!
//! - [`RateLimits`]: GCRA limiters (`governor`) keyed per identity, per client IP and per
//!   tool, each map bounded and pruned — or, in a replica set, kept in the shared store;
//!   applied to every call by [`Limited`], a layer over any [`mcpwire_router::Backend`].
//! - [`TokioClock`]: the limiters' clock, tokio's (so tests run on a paused clock).
//!
//! Refusals are counted in the server's `mcpwire_server::limits::Rejections` (beside the
//! connection limits the listeners apply) and answered
//! [`mcpwire_model::McpError::RateLimited`]: HTTP 429 with `Retry-After`, gRPC
//! `RESOURCE_EXHAUSTED`, a JSON-RPC error elsewhere.

mod clock;
mod layer;
mod rate;

pub use clock::TokioClock;
pub use layer::{Limited, SharedRateLimits};
pub use mcpwire_server::limits::{RejectionCounts, Rejections};
pub use rate::{ANONYMOUS, Rate, RateLimits};

/// The default bound on the keys one limiter keeps (identities, IPs or tools).
pub const DEFAULT_MAX_KEYS: usize = 10_000;

#[cfg(test)]
mod tests;
