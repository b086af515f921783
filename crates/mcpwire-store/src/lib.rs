//! Shared state for running several replicas of one gateway (issue 14, `docs/design/scale-out.md`).
//!
//! - [`Store`]: small values with a time to live and atomic rate checks, behind one trait;
//!   [`MemoryStore`] keeps them in the process, [`RedisStore`] (feature `redis`, on by
//!   default) in Redis 7 / Valkey, shared by every replica.
//!   They also carry messages between replicas ([`Store::publish`], [`Subscription`]) and
//!   keep the replay logs of resumable streams ([`Store::log_append`], [`LogAppend`]).
//! - [`SealKeys`]: authenticated encryption of small state into an opaque token (the
//!   `Mcp-Session-Id` of a replica set), with key rotation.
//! - [`Gcra`]: the rate algorithm both stores run, as arithmetic.
//!
//! Nothing here knows MCP: the gateway (`mcpwire`) decides what is sealed and stored.

mod error;
mod gcra;
mod log;
mod memory;
mod pubsub;
#[cfg(feature = "redis")]
mod redis_store;
mod seal;
mod store;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::StoreError;
pub use gcra::{Gcra, RateCheck, RateDecision, RateOutcome, step as gcra_step};
pub use log::{LOG_MAX_ENTRIES, LogAppend, LogEntry, log_gap};
pub use memory::MemoryStore;
pub use pubsub::{SUBSCRIPTION_BOUND, Subscription};
#[cfg(feature = "redis")]
pub use redis_store::{RedisConfig, RedisStore};
pub use seal::{KEY_LEN, KeyError, SealError, SealKeys};
pub use store::Store;
