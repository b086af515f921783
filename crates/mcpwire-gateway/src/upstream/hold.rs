//! [`Holder`]: upstream requests held for a stateless (2026-07-28) downstream client
//! between its `input_required` answer and its retry — the upstream asked something in the
//! middle of a call, the client answers in a new request, and the upstream request waits
//! for it instead of being started over. Bounded in number and time: a held request is
//! cancelled upstream when its deadline passes; past the bound requests are not held (the
//! retry then runs the upstream request again).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcpwire_router::CallCtx;

/// What the keys of held rounds' asks start with.
const PREFIX: &str = "mcpwire-upstream-";

/// Held rounds by id (`T`: what a held round is, `call.rs`'s `Held`).
pub(crate) struct Holder<T> {
    held: Mutex<HashMap<u64, T>>,
    next: AtomicU64,
    max: usize,
    deadline: Duration,
}

impl<T: Send + 'static> Holder<T> {
    /// At most `max` rounds held, each at most `deadline`.
    pub(crate) fn new(max: usize, deadline: Duration) -> Arc<Holder<T>> {
        Arc::new(Holder {
            held: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
            max,
            deadline,
        })
    }

    /// A new round id.
    pub(crate) fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The key of ask `n` of round `id`.
    pub(crate) fn key(id: u64, n: u32) -> String {
        format!("{PREFIX}{id}-{n}")
    }

    /// Whether another round may be held.
    pub(crate) fn has_room(&self) -> bool {
        self.held.lock().is_ok_and(|h| h.len() < self.max)
    }

    /// Rounds held now.
    pub(crate) fn len(&self) -> usize {
        self.held.lock().map_or(0, |h| h.len())
    }

    /// Holds round `id` until [`Holder::resume`] takes it or its deadline passes (then it
    /// is dropped, which cancels its upstream request).
    pub(crate) fn hold(self: &Arc<Self>, id: u64, held: T) {
        let Ok(mut map) = self.held.lock() else {
            return;
        };
        map.insert(id, held);
        let weak: Weak<Holder<T>> = Arc::downgrade(self);
        let deadline = self.deadline;
        tokio::spawn(async move {
            tokio::time::sleep(deadline).await;
            let expired = weak
                .upgrade()
                .and_then(|h| h.held.lock().ok().and_then(|mut m| m.remove(&id)));
            if expired.is_some() {
                tracing::debug!(round = id, "a held upstream request expired");
            }
        });
    }

    /// The held round the retry `ctx` answers (by the keys of its answers), taken.
    pub(crate) fn resume(&self, ctx: &CallCtx) -> Option<T> {
        if !ctx.revision().is_stateless() {
            return None;
        }
        let keys = ctx.answered_keys();
        let mut map = self.held.lock().ok()?;
        keys.iter()
            .filter_map(|k| {
                k.strip_prefix(PREFIX)?
                    .split_once('-')?
                    .0
                    .parse::<u64>()
                    .ok()
            })
            .find_map(|id| map.remove(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_round() {
        let k = Holder::<()>::key(42, 3);
        assert_eq!(k, "mcpwire-upstream-42-3");
        let id = k
            .strip_prefix(PREFIX)
            .and_then(|r| r.split_once('-'))
            .map(|(id, _)| id.parse::<u64>().unwrap());
        assert_eq!(id, Some(42));
    }
}
