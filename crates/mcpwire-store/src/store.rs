//! [`Store`]: the shared state every replica of a gateway reads and writes — small values
//! with a time to live, and atomic rate checks. Every value expires: nothing is kept
//! forever, whichever store holds it.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::{LogAppend, LogEntry, RateCheck, RateOutcome, StoreError, Subscription};

/// Shared state with expiry. Object-safe (`Arc<dyn Store>`); every operation is one round
/// trip at most and fails with [`StoreError::Unavailable`] rather than waiting forever.
pub trait Store: Send + Sync + 'static {
    /// The value under `key`, if it is there and has not expired.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>>;

    /// Sets `key` to `value` for `ttl` (replacing any value and expiry).
    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Gives `key` a new time to live from now; whether it was there.
    fn touch<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Removes `key`; whether it was there.
    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Appends `value` to the list under `key`, keeping its newest `max_len` entries, and
    /// gives the list `ttl` to live (a queue of messages for one reader).
    fn push<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        max_len: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes every entry of the list under `key`, oldest first, leaving it empty (atomic:
    /// an entry pushed meanwhile is taken now or next time, never lost or taken twice).
    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<Vec<u8>>, StoreError>>;

    /// Appends entries to replay logs (several logs in one round trip, in order; see
    /// [`crate::LogAppend`]): each log keeps its entries from `keep_from` on (at most
    /// [`crate::LOG_MAX_ENTRIES`]) and lives `ttl` after its last append.
    fn log_append<'a>(&'a self, entries: &'a [LogAppend]) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The entries of the log under `key` after sequence number `after`, oldest first, at
    /// most `max`; `None` when there is no such log (never written, or expired).
    fn log_read<'a>(
        &'a self,
        key: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<Vec<LogEntry>>, StoreError>>;

    /// Publishes `payload` on `channel` to every replica subscribed to it now (at most
    /// once, not kept for later subscribers); how many subscriptions it reached.
    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, StoreError>>;

    /// Subscribes to `channels`: what is published on them from now on, bounded (see
    /// [`Subscription`]). A store that loses its connection reconnects and subscribes again
    /// by itself; what was published meanwhile is lost. Needs a tokio runtime.
    fn subscribe<'a>(
        &'a self,
        channels: &'a [String],
    ) -> BoxFuture<'a, Result<Subscription, StoreError>>;

    /// GCRA checks of several keys, in order, as one atomic step across every client of the
    /// store: the first refusal stops, and the keys before it count the request (as
    /// separate limits checked one after the other would). A key expires once its bucket is
    /// full again.
    fn rate<'a>(
        &'a self,
        checks: &'a [RateCheck],
    ) -> BoxFuture<'a, Result<RateOutcome, StoreError>>;

    /// What the store is, for logs (an address without credentials).
    fn describe(&self) -> String;
}
