//! The console's live calls: a bounded ring of recent tool calls, filled only while a
//! console page is watching (it asks for the ring at least every [`WATCH_WINDOW`]), so a
//! gateway nobody watches pays one clock read per call and keeps nothing.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::stats::{BackendStats, Figures, Point};

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
    /// Where it came in: the listeners serving its catalog, `console`, or the one
    /// listener that refused its credential.
    pub listener: String,
    /// The exposed tool name (empty for a refused credential).
    pub tool: String,
    /// The backend that owns the tool (empty when none does, or the call was refused
    /// before it was routed).
    pub backend: String,
    /// `ok`, `tool error`, or the refusal or error message (policy, rate limit, …).
    pub outcome: String,
    /// Whether it failed or was refused.
    pub failed: bool,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
}

/// The ring, the backends' figures and whether anybody watches them.
#[derive(Default)]
pub struct CallLog {
    calls: Mutex<VecDeque<CallRecord>>,
    stats: Mutex<BackendStats>,
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

    /// Adds a call, dropping the oldest past [`MAX_CALLS`], and counts it in its
    /// backend's figures.
    pub fn record(&self, call: CallRecord) {
        if !call.backend.is_empty()
            && let Ok(mut stats) = self.stats.lock()
        {
            stats.record(
                &call.backend,
                call.at_ms / 1000,
                call.duration_ms,
                call.failed,
            );
        }
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

impl CallLog {
    /// Every backend's figures over the last minute (of the time a page watched).
    pub fn figures(&self) -> HashMap<String, Figures> {
        self.stats
            .lock()
            .map(|s| s.figures(now_ms() / 1000))
            .unwrap_or_default()
    }
}

impl CallLog {
    /// Backend `backend`'s calls second by second over the last minute (of the time a
    /// page watched), oldest first; `None` when none of its calls was recorded.
    pub fn series(&self, backend: &str) -> Option<Vec<Point>> {
        self.stats
            .lock()
            .ok()
            .and_then(|s| s.series(backend, now_ms() / 1000))
    }
}

impl std::fmt::Debug for CallLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallLog").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(i: usize) -> CallRecord {
        CallRecord {
            at_ms: i as u64,
            identity: "anonymous".into(),
            listener: "http://127.0.0.1:1/mcp".into(),
            tool: format!("t{i}"),
            backend: "b".into(),
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
        assert_eq!(log.figures().len(), 1);
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
