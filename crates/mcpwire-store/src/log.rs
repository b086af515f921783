//! Replay logs: the numbered entries of one resumable stream, so another replica can
//! replay what a client missed ([`crate::Store::log_append`], [`crate::Store::log_read`]).
//!
//! A log is written by one writer (the replica running the stream), with sequence numbers
//! it picks (1, 2, 3, … per log), and bounded by that writer: each append says from which
//! sequence number entries are kept (`keep_from`), so the writer's own bounds on entries
//! and bytes hold in the store too. Every log expires `ttl` after its last append. In Redis
//! a log is a stream (`XADD … MINID` with the explicit id `0-{seq}`, `XRANGE` to read).

use std::time::Duration;

/// Entries a store keeps per log whatever `keep_from` says (a writer that forgets to trim
/// cannot grow a log past this).
pub const LOG_MAX_ENTRIES: usize = 4096;

/// One entry appended to a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogAppend {
    /// The log (a store key).
    pub key: String,
    /// Its sequence number: greater than every earlier one of the same log.
    pub seq: u64,
    /// Its bytes.
    pub data: Vec<u8>,
    /// Entries before this sequence number are dropped (the writer's bound).
    pub keep_from: u64,
    /// How long the log lives after this append.
    pub ttl: Duration,
}

/// One entry read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Its sequence number.
    pub seq: u64,
    /// Its bytes.
    pub data: Vec<u8>,
}

/// Whether the entries read after `after` start with a gap (some were dropped to the
/// bound before they could be read).
pub fn log_gap(after: u64, entries: &[LogEntry]) -> bool {
    entries
        .first()
        .is_some_and(|e| e.seq > after.saturating_add(1))
}
