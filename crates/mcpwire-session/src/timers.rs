//! One ordered set of deadlines; the earliest is the session's next timeout.

use std::collections::BTreeSet;
use std::time::Instant;

/// What a deadline is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TimerKey {
    /// A request's run-time limit.
    Request(u64),
    /// An ask's answer deadline.
    Ask(u64),
    /// Client: the whole negotiation's deadline.
    Handshake,
    /// Client: how long the `server/discover` probe waits before falling back.
    Probe(u64),
    /// Client: how long a server→client request waits for the owner's answer.
    ServerRequest(u64),
}

/// Deadlines ordered by time; bounded by the maps whose entries own them.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    set: BTreeSet<(Instant, TimerKey)>,
}

impl Timers {
    pub(crate) fn insert(&mut self, at: Instant, key: TimerKey) {
        self.set.insert((at, key));
    }

    pub(crate) fn remove(&mut self, at: Instant, key: TimerKey) {
        self.set.remove(&(at, key));
    }

    pub(crate) fn next(&self) -> Option<Instant> {
        self.set.first().map(|(t, _)| *t)
    }

    /// Removes and returns the first deadline at or before `now`.
    pub(crate) fn pop_expired(&mut self, now: Instant) -> Option<TimerKey> {
        match self.set.first() {
            Some(&(t, key)) if t <= now => {
                self.set.pop_first();
                Some(key)
            }
            _ => None,
        }
    }
}
