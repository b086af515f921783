//! Connection limits, and the counters of every refused request and connection (issue 13,
//! item 4; decisions in `docs/design/limits.md`). The rate limits themselves are the
//! gateway's (`mcpwire_gateway::limits`: `RateLimits`, the `Limited` layer).
//!
//! - [`ConnectionLimits`]: connections per client IP, taken by every network listener at
//!   accept time ([`ConnectionPermit`] gives the slot back on drop).
//! - [`Rejections`]: what was refused, as plain atomics the metrics can read.
//!
//! A refusal is [`mcpwire_model::McpError::RateLimited`]: HTTP 429 with `Retry-After`,
//! gRPC `RESOURCE_EXHAUSTED`, a JSON-RPC error elsewhere.

mod connections;

pub use connections::{ConnectionLimits, ConnectionPermit};

use std::sync::atomic::{AtomicU64, Ordering};

/// Requests and connections refused, by limit. Plain counters: the metrics endpoint reads
/// them with [`Rejections::snapshot`].
#[derive(Debug, Default)]
pub struct Rejections {
    /// Calls refused by the per-identity rate.
    pub identity: AtomicU64,
    /// Calls refused by the per-IP rate.
    pub ip: AtomicU64,
    /// Calls refused by the per-tool rate.
    pub tool: AtomicU64,
    /// Connections refused by the per-IP connection limit.
    pub connections: AtomicU64,
}

/// The counters of [`Rejections`] at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RejectionCounts {
    /// Calls refused by the per-identity rate.
    pub identity: u64,
    /// Calls refused by the per-IP rate.
    pub ip: u64,
    /// Calls refused by the per-tool rate.
    pub tool: u64,
    /// Connections refused by the per-IP connection limit.
    pub connections: u64,
}

impl Rejections {
    /// The counters now.
    pub fn snapshot(&self) -> RejectionCounts {
        RejectionCounts {
            identity: self.identity.load(Ordering::Relaxed),
            ip: self.ip.load(Ordering::Relaxed),
            tool: self.tool.load(Ordering::Relaxed),
            connections: self.connections.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests;
