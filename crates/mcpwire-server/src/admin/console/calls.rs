//! The console's live calls: a bounded ring of recent tool calls, filled only while a
//! console page is watching (it asks for the ring at least every [`WATCH_WINDOW`]), so a
//! gateway nobody watches pays one clock read per call and keeps nothing.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

/// Calls kept at most.
pub const MAX_CALLS: usize = 256;
/// How long after a page last read the ring calls are still recorded.
pub const WATCH_WINDOW: Duration = Duration::from_secs(10);

/// One finished tool call.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallRecord {
    /// When it ended, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Who called: `key:NAME`, a token's subject, or `anonymous`.
    pub identity: String,
    /// The exposed tool name.
    pub tool: String,
    /// `ok`, `tool error`, or the refusal or error message (policy, rate limit, …).
    pub outcome: String,
    /// Whether it failed or was refused.
    pub failed: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
}

/// The ring and whether anybody watches it.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Mutex<VecDeque<CallRecord>>,
    /// When a page last read the ring, ms since the epoch (0: never).
    watched_at: AtomicU64,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl CallLog {
    /// Whether a page read the ring within [`WATCH_WINDOW`]: calls are recorded only then.
    pub fn watched(&self) -> bool {
        let at = self.watched_at.load(Ordering::Relaxed);
        at != 0 && now_ms().saturating_sub(at) < WATCH_WINDOW.as_millis() as u64
    }

    /// Adds a call, dropping the oldest past [`MAX_CALLS`].
    pub fn record(&self, call: CallRecord) {
        if let Ok(mut calls) = self.calls.lock() {
            if calls.len() >= MAX_CALLS {
                calls.pop_front();
            }
            calls.push_back(call);
        }
    }

    /// The calls, newest first; the page reading them keeps the recording on.
    pub fn read(&self) -> Vec<CallRecord> {
        self.watched_at.store(now_ms(), Ordering::Relaxed);
        self.calls
            .lock()
            .map(|c| c.iter().rev().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(i: usize) -> CallRecord {
        CallRecord {
            at_ms: i as u64,
            identity: "anonymous".into(),
            tool: format!("t{i}"),
            outcome: "ok".into(),
            failed: false,
            duration_ms: 1.0,
        }
    }

    #[test]
    fn the_ring_stays_bounded() {
        let log = CallLog::default();
        for i in 0..MAX_CALLS * 20 {
            log.record(call(i));
        }
        let calls = log.read();
        assert_eq!(calls.len(), MAX_CALLS);
        assert_eq!(
            calls[0].tool,
            format!("t{}", MAX_CALLS * 20 - 1),
            "newest first"
        );
    }

    #[test]
    fn recording_starts_when_read() {
        let log = CallLog::default();
        assert!(!log.watched());
        log.read();
        assert!(log.watched());
    }
}
