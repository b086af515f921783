//! [`Store`]: the shared state every replica of a gateway reads and writes — small values
//! with a time to live, and atomic rate checks. Every value expires: nothing is kept
//! forever, whichever store holds it.

use std::time::Duration;

use futures::future::BoxFuture;

use crate::{RateCheck, RateOutcome, StoreError};

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
