//! [`MemoryStore`]: the [`Store`] of one process (tests, a single replica), on tokio's clock
//! so expiry follows `tokio::time::pause`/`advance`. Bounded: past `max_entries` values (or
//! rate keys) expired ones are dropped first; a value that still does not fit is refused
//! ([`StoreError::Full`]) and rate keys that do not fit share one overflow bucket.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::time::Instant;

use crate::gcra::step;
use crate::pubsub::Hub;
use crate::{
    Gcra, LOG_MAX_ENTRIES, LogAppend, LogEntry, RateCheck, RateDecision, RateOutcome, Store,
    StoreError, Subscription,
};

/// The rate key that keys past the bound share.
const OVERFLOW: &str = "\0overflow";

/// An in-process store with a bound on its entries.
pub struct MemoryStore {
    inner: Mutex<Maps>,
    max_entries: usize,
    epoch: Instant,
    hub: Hub,
}

#[derive(Default)]
struct Maps {
    values: HashMap<String, (Vec<u8>, Instant)>,
    /// Rate key → (TAT in µs since the epoch, when it may be forgotten).
    rates: HashMap<String, (u64, Instant)>,
    /// Lists (message queues) and when each expires.
    lists: HashMap<String, (VecDeque<Vec<u8>>, Instant)>,
    /// Replay logs (sequence number, entry) and when each expires.
    logs: HashMap<String, (Log, Instant)>,
}

/// A replay log's entries: (sequence number, bytes), oldest first.
type Log = VecDeque<(u64, Vec<u8>)>;

impl MemoryStore {
    /// An empty store holding at most `max_entries` values and as many rate keys.
    pub fn new(max_entries: usize) -> MemoryStore {
        MemoryStore {
            inner: Mutex::new(Maps::default()),
            max_entries: max_entries.max(2),
            epoch: Instant::now(),
            hub: Hub::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Maps> {
        // Every update is a single insert or remove: a poisoned map is still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Values and rate keys held now, expired ones included until they are swept.
    pub fn len(&self) -> (usize, usize) {
        let maps = self.lock();
        (maps.values.len(), maps.rates.len())
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == (0, 0)
    }

    fn get_now(&self, key: &str) -> Option<Vec<u8>> {
        let mut maps = self.lock();
        let now = Instant::now();
        match maps.values.get(key) {
            Some((v, until)) if *until > now => Some(v.clone()),
            Some(_) => {
                maps.values.remove(key);
                None
            }
            None => None,
        }
    }

    fn put_now(&self, key: &str, value: &[u8], ttl: Duration) -> Result<(), StoreError> {
        let mut maps = self.lock();
        let now = Instant::now();
        if !maps.values.contains_key(key) && maps.values.len() >= self.max_entries {
            maps.values.retain(|_, (_, until)| *until > now);
            if maps.values.len() >= self.max_entries {
                return Err(StoreError::Full {
                    max: self.max_entries,
                });
            }
        }
        maps.values
            .insert(key.to_owned(), (value.to_vec(), now + ttl));
        Ok(())
    }

    fn touch_now(&self, key: &str, ttl: Duration) -> bool {
        let mut maps = self.lock();
        let now = Instant::now();
        match maps.values.get_mut(key) {
            Some((_, until)) if *until > now => {
                *until = now + ttl;
                true
            }
            Some(_) => {
                maps.values.remove(key);
                false
            }
            None => false,
        }
    }

    fn push_now(
        &self,
        key: &str,
        value: &[u8],
        max_len: usize,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let mut maps = self.lock();
        let now = Instant::now();
        if !maps.lists.contains_key(key) && maps.lists.len() >= self.max_entries {
            maps.lists.retain(|_, (_, until)| *until > now);
            if maps.lists.len() >= self.max_entries {
                return Err(StoreError::Full {
                    max: self.max_entries,
                });
            }
        }
        let (list, until) = maps
            .lists
            .entry(key.to_owned())
            .or_insert_with(|| (VecDeque::new(), now));
        if *until <= now {
            list.clear();
        }
        list.push_back(value.to_vec());
        while list.len() > max_len.max(1) {
            list.pop_front();
        }
        *until = now + ttl;
        Ok(())
    }

    fn log_append_now(&self, entries: &[LogAppend]) -> Result<(), StoreError> {
        let mut maps = self.lock();
        let now = Instant::now();
        for e in entries {
            if !maps.logs.contains_key(&e.key) && maps.logs.len() >= self.max_entries {
                maps.logs.retain(|_, (_, until)| *until > now);
                if maps.logs.len() >= self.max_entries {
                    return Err(StoreError::Full {
                        max: self.max_entries,
                    });
                }
            }
            let (log, until) = maps
                .logs
                .entry(e.key.clone())
                .or_insert_with(|| (VecDeque::new(), now));
            if *until <= now {
                log.clear();
            }
            // As Redis refuses an id that is not greater than the stream's last one.
            if log.back().is_some_and(|(last, _)| *last >= e.seq) {
                return Err(StoreError::Protocol(format!(
                    "log {}: entry {} is not after the last one",
                    e.key, e.seq
                )));
            }
            log.push_back((e.seq, e.data.clone()));
            while log.len() > LOG_MAX_ENTRIES
                || log.front().is_some_and(|(seq, _)| *seq < e.keep_from)
            {
                log.pop_front();
            }
            *until = now + e.ttl;
        }
        Ok(())
    }

    fn log_read_now(&self, key: &str, after: u64, max: usize) -> Option<Vec<LogEntry>> {
        let maps = self.lock();
        let (log, until) = maps.logs.get(key)?;
        if *until <= Instant::now() {
            return None;
        }
        Some(
            log.iter()
                .filter(|(seq, _)| *seq > after)
                .take(max)
                .map(|(seq, data)| LogEntry {
                    seq: *seq,
                    data: data.clone(),
                })
                .collect(),
        )
    }

    fn take_now(&self, key: &str) -> Vec<Vec<u8>> {
        let mut maps = self.lock();
        match maps.lists.remove(key) {
            Some((list, until)) if until > Instant::now() => list.into(),
            _ => Vec::new(),
        }
    }

    fn rate_now(&self, key: &str, limit: &Gcra) -> RateDecision {
        let mut maps = self.lock();
        let now = Instant::now();
        let now_us = now.duration_since(self.epoch).as_micros() as u64;
        let mut slot = key;
        // One place is kept for the overflow bucket.
        let room = self.max_entries - 1;
        if !maps.rates.contains_key(key) && maps.rates.len() >= room {
            maps.rates.retain(|_, (_, until)| *until > now);
            if maps.rates.len() >= room {
                slot = OVERFLOW;
            }
        }
        let tat = maps
            .rates
            .get(slot)
            .filter(|(_, until)| *until > now)
            .map(|(tat, _)| *tat);
        let (decision, next) = step(limit, tat, now_us);
        if let Some(next) = next {
            let forget = now + Duration::from_micros(next - now_us);
            maps.rates.insert(slot.to_owned(), (next, forget));
        }
        decision
    }
}

impl Store for MemoryStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.get_now(key))))
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.put_now(key, value, ttl)))
    }

    fn touch<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(std::future::ready(Ok(self.touch_now(key, ttl))))
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        let removed = self.lock().values.remove(key).is_some();
        Box::pin(std::future::ready(Ok(removed)))
    }

    fn push<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        max_len: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.push_now(key, value, max_len, ttl)))
    }

    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<Vec<u8>>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.take_now(key))))
    }

    fn log_append<'a>(&'a self, entries: &'a [LogAppend]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(std::future::ready(self.log_append_now(entries)))
    }

    fn log_read<'a>(
        &'a self,
        key: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<Vec<LogEntry>>, StoreError>> {
        Box::pin(std::future::ready(Ok(self.log_read_now(key, after, max))))
    }

    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(std::future::ready(Ok(self.hub.publish(channel, payload))))
    }

    fn subscribe<'a>(
        &'a self,
        channels: &'a [String],
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        Box::pin(std::future::ready(Ok(self.hub.subscribe(channels))))
    }

    fn rate<'a>(
        &'a self,
        checks: &'a [RateCheck],
    ) -> BoxFuture<'a, Result<RateOutcome, StoreError>> {
        let mut outcome = RateOutcome::Allowed;
        for (index, check) in checks.iter().enumerate() {
            if let RateDecision::Refused { retry_after } = self.rate_now(&check.key, &check.limit) {
                outcome = RateOutcome::Refused { index, retry_after };
                break;
            }
        }
        Box::pin(std::future::ready(Ok(outcome)))
    }

    fn describe(&self) -> String {
        "memory".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn values_expire_and_touch_extends_them() {
        let s = MemoryStore::new(8);
        s.put("a", b"1", Duration::from_secs(10)).await.unwrap();
        tokio::time::advance(Duration::from_secs(9)).await;
        assert!(s.touch("a", Duration::from_secs(10)).await.unwrap());
        tokio::time::advance(Duration::from_secs(9)).await;
        assert_eq!(s.get("a").await.unwrap().as_deref(), Some(&b"1"[..]));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(s.get("a").await.unwrap(), None);
        assert!(!s.touch("a", Duration::from_secs(10)).await.unwrap());
        assert!(!s.remove("a").await.unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn the_bound_holds() {
        let s = MemoryStore::new(3);
        for k in ["a", "b", "c"] {
            s.put(k, b"x", Duration::from_secs(1)).await.unwrap();
        }
        assert_eq!(
            s.put("d", b"x", Duration::from_secs(1)).await,
            Err(StoreError::Full { max: 3 })
        );
        s.put("a", b"y", Duration::from_secs(1)).await.unwrap();
        tokio::time::advance(Duration::from_secs(2)).await;
        s.put("d", b"x", Duration::from_secs(1)).await.unwrap();
        assert_eq!(s.len().0, 1, "expired entries were swept");
        // Rate keys past the bound share the overflow bucket: memory stays bounded.
        let limit = Gcra::new(1, Duration::from_secs(3600), 1);
        for i in 0..100 {
            let _ = s.rate(&[check(&format!("k{i}"), limit)]).await.unwrap();
        }
        assert!(s.len().1 <= 3);
        assert!(matches!(
            s.rate(&[check("k99", limit)]).await.unwrap(),
            RateOutcome::Refused { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn lists_keep_their_newest_entries_until_they_expire() {
        let s = MemoryStore::new(8);
        for v in [b"1", b"2", b"3"] {
            s.push("q", v, 2, Duration::from_secs(5)).await.unwrap();
        }
        assert_eq!(
            s.take("q").await.unwrap(),
            vec![b"2".to_vec(), b"3".to_vec()]
        );
        assert!(s.take("q").await.unwrap().is_empty());
        s.push("q", b"4", 2, Duration::from_secs(5)).await.unwrap();
        tokio::time::advance(Duration::from_secs(6)).await;
        assert!(s.take("q").await.unwrap().is_empty(), "expired");
    }

    #[tokio::test(start_paused = true)]
    async fn logs_keep_what_their_writer_bounds_them_to_until_they_expire() {
        let s = MemoryStore::new(2);
        let entry = |key: &str, seq: u64, keep_from: u64| LogAppend {
            key: key.to_owned(),
            seq,
            data: seq.to_string().into_bytes(),
            keep_from,
            ttl: Duration::from_secs(5),
        };
        assert_eq!(s.log_read("l", 0, 10).await.unwrap(), None);
        let batch: Vec<LogAppend> = (1..=5)
            .map(|n| entry("l", n, n.saturating_sub(2)))
            .collect();
        s.log_append(&batch).await.unwrap();
        let seqs = |v: Option<Vec<LogEntry>>| v.unwrap().iter().map(|e| e.seq).collect::<Vec<_>>();
        assert_eq!(seqs(s.log_read("l", 0, 10).await.unwrap()), vec![3, 4, 5]);
        assert!(crate::log_gap(
            1,
            &s.log_read("l", 1, 10).await.unwrap().unwrap()
        ));
        assert_eq!(seqs(s.log_read("l", 3, 1).await.unwrap()), vec![4]);
        assert_eq!(
            seqs(s.log_read("l", 5, 10).await.unwrap()),
            Vec::<u64>::new()
        );
        assert!(
            s.log_append(&[entry("l", 5, 0)]).await.is_err(),
            "not after the last"
        );
        // The store's own bound on entries, whatever the writer asks to keep.
        let many: Vec<LogAppend> = (6..6 + LOG_MAX_ENTRIES as u64 + 10)
            .map(|n| entry("l", n, 0))
            .collect();
        s.log_append(&many).await.unwrap();
        assert_eq!(
            s.log_read("l", 0, usize::MAX).await.unwrap().unwrap().len(),
            LOG_MAX_ENTRIES
        );
        // And on logs: a third one does not fit until the others expire.
        s.log_append(&[entry("m", 1, 0)]).await.unwrap();
        assert!(matches!(
            s.log_append(&[entry("n", 1, 0)]).await,
            Err(StoreError::Full { .. })
        ));
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(s.log_read("l", 0, 10).await.unwrap(), None, "expired");
        s.log_append(&[entry("n", 1, 0)]).await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn published_messages_reach_the_subscribers_of_their_channel() {
        let s = MemoryStore::new(8);
        let mut mine = s
            .subscribe(&["a".to_owned(), "all".to_owned()])
            .await
            .unwrap();
        let mut other = s.subscribe(&["b".to_owned()]).await.unwrap();
        s.publish("a", b"1").await.unwrap();
        s.publish("b", b"2").await.unwrap();
        s.publish("all", b"3").await.unwrap();
        assert_eq!(mine.recv().await.unwrap(), b"1");
        assert_eq!(mine.recv().await.unwrap(), b"3");
        assert_eq!(other.recv().await.unwrap(), b"2");
        // A subscriber that does not read loses what is past its bound, and no more.
        for i in 0..crate::SUBSCRIPTION_BOUND + 10 {
            s.publish("b", i.to_string().as_bytes()).await.unwrap();
            tokio::task::yield_now().await;
        }
        drop(mine);
        let mut got = 0;
        while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(50), other.recv()).await
        {
            got += 1;
        }
        assert!(got <= crate::SUBSCRIPTION_BOUND, "bounded: {got}");
    }

    #[tokio::test(start_paused = true)]
    async fn rates_follow_the_clock() {
        let s = MemoryStore::new(8);
        let limit = Gcra::new(1, Duration::from_secs(1), 1);
        let roomy = Gcra::new(100, Duration::from_secs(1), 100);
        let both = [check("wide", roomy), check("k", limit)];
        assert_eq!(s.rate(&both).await.unwrap(), RateOutcome::Allowed);
        assert!(matches!(
            s.rate(&both).await.unwrap(),
            RateOutcome::Refused { index: 1, .. }
        ));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(
            s.rate(&[check("k", limit)]).await.unwrap(),
            RateOutcome::Allowed
        );
    }

    fn check(key: &str, limit: Gcra) -> RateCheck {
        RateCheck {
            key: key.to_owned(),
            limit,
        }
    }
}
