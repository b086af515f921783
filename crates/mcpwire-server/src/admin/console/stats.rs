//! Per-backend figures of the live calls: calls per second, error rate and latency
//! percentiles over the last minute. Each backend keeps a ring of [`SLOTS`] one-second
//! slots, each a fixed histogram of [`BUCKETS`] latency buckets, so memory is bounded
//! (at most [`MAX_BACKENDS`] backends) whatever the traffic. Filled only while a page
//! watches, like the live calls.

use std::collections::HashMap;

use serde::Serialize;

/// One-second slots kept per backend: the last minute.
pub const SLOTS: usize = 60;
/// Latency buckets per slot: bucket `i` holds calls up to `BASE_MS · 2^(i/4)`.
pub const BUCKETS: usize = 100;
/// Backends tracked at most; calls of further backends are not counted.
pub const MAX_BACKENDS: usize = 256;
/// The first bucket's upper bound, in milliseconds (the last is ≈ 335 s).
const BASE_MS: f64 = 0.01;
/// Seconds the calls-per-second figure averages over.
const RATE_WINDOW: u64 = 10;

#[derive(Clone)]
struct Slot {
    /// The second (since the epoch) this slot counts; 0: unused.
    second: u64,
    calls: u32,
    errors: u32,
    buckets: [u32; BUCKETS],
}

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            second: 0,
            calls: 0,
            errors: 0,
            buckets: [0; BUCKETS],
        }
    }
}

/// One backend's ring.
#[derive(Default)]
struct Ring {
    slots: Vec<Slot>,
}

/// The figures of one backend, as the page shows them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Figures {
    /// Calls per second over the last 10 s.
    pub calls_per_s: f64,
    /// Calls over the last minute.
    pub calls: u64,
    /// Failed or refused calls over the last minute.
    pub errors: u64,
    /// `errors / calls` over the last minute (0 without calls).
    pub error_rate: f64,
    /// Latency percentiles over the last minute, in ms (a bucket's upper bound, within
    /// 19 %); `None` without calls.
    pub p50_ms: Option<f64>,
    /// 90th percentile.
    pub p90_ms: Option<f64>,
    /// 99th percentile.
    pub p99_ms: Option<f64>,
}

/// The bucket of a call that took `ms`.
fn bucket(ms: f64) -> usize {
    if ms <= BASE_MS || ms.is_nan() {
        return 0;
    }
    let i = ((ms / BASE_MS).log2() * 4.0).ceil();
    (i as usize).min(BUCKETS - 1)
}

/// Bucket `i`'s upper bound in ms.
fn upper(i: usize) -> f64 {
    BASE_MS * 2f64.powf(i as f64 / 4.0)
}

/// The `q` quantile of the calls counted in `buckets`: the upper bound of the bucket
/// holding it; `None` without calls.
fn quantile<N: Copy + Into<u64>>(buckets: &[N], q: f64) -> Option<f64> {
    let total: u64 = buckets.iter().map(|n| (*n).into()).sum();
    if total == 0 {
        return None;
    }
    let want = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    buckets.iter().enumerate().find_map(|(i, n)| {
        seen += (*n).into();
        (seen >= want).then(|| upper(i))
    })
}

/// One second of a backend's calls, as its charts draw it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Point {
    /// The second, since the Unix epoch.
    pub second: u64,
    /// Calls that ended in it.
    pub calls: u32,
    /// Of which failed or were refused.
    pub errors: u32,
    /// Their median latency in ms (a bucket's upper bound); `None` without calls.
    pub p50_ms: Option<f64>,
    /// Their 99th percentile.
    pub p99_ms: Option<f64>,
}

impl Ring {
    /// The last [`SLOTS`] seconds up to `now`, oldest first; a second without calls is
    /// all zeros.
    fn series(&self, now: u64) -> Vec<Point> {
        let first = now.saturating_sub(SLOTS as u64 - 1);
        (first..=now)
            .map(|second| {
                let slot = self
                    .slots
                    .get((second % SLOTS as u64) as usize)
                    .filter(|s| s.second == second && second != 0);
                match slot {
                    Some(s) => Point {
                        second,
                        calls: s.calls,
                        errors: s.errors,
                        p50_ms: quantile(&s.buckets, 0.50),
                        p99_ms: quantile(&s.buckets, 0.99),
                    },
                    None => Point {
                        second,
                        calls: 0,
                        errors: 0,
                        p50_ms: None,
                        p99_ms: None,
                    },
                }
            })
            .collect()
    }

    fn record(&mut self, second: u64, ms: f64, failed: bool) {
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); SLOTS];
        }
        let slot = &mut self.slots[(second % SLOTS as u64) as usize];
        if slot.second != second {
            *slot = Slot {
                second,
                ..Slot::default()
            };
        }
        slot.calls = slot.calls.saturating_add(1);
        slot.errors = slot.errors.saturating_add(u32::from(failed));
        let b = &mut slot.buckets[bucket(ms)];
        *b = b.saturating_add(1);
    }

    fn figures(&self, now: u64) -> Figures {
        let live = |s: &&Slot| s.second != 0 && s.second + (SLOTS as u64) > now;
        let mut merged = [0u64; BUCKETS];
        let (mut calls, mut errors, mut recent) = (0u64, 0u64, 0u64);
        for s in self.slots.iter().filter(live) {
            calls += u64::from(s.calls);
            errors += u64::from(s.errors);
            if s.second + RATE_WINDOW > now {
                recent += u64::from(s.calls);
            }
            for (m, b) in merged.iter_mut().zip(s.buckets.iter()) {
                *m += u64::from(*b);
            }
        }
        let quantile = |q: f64| quantile(&merged, q);
        Figures {
            calls_per_s: recent as f64 / RATE_WINDOW as f64,
            calls,
            errors,
            error_rate: if calls == 0 {
                0.0
            } else {
                errors as f64 / calls as f64
            },
            p50_ms: quantile(0.50),
            p90_ms: quantile(0.90),
            p99_ms: quantile(0.99),
        }
    }
}

/// Every backend's ring.
#[derive(Default)]
pub struct BackendStats {
    rings: HashMap<String, Ring>,
}

impl BackendStats {
    /// Counts a call of `backend` that ended at `second` (since the epoch) after `ms`.
    /// A backend past [`MAX_BACKENDS`] is not counted.
    pub fn record(&mut self, backend: &str, second: u64, ms: f64, failed: bool) {
        if let Some(r) = self.rings.get_mut(backend) {
            r.record(second, ms, failed);
        } else if self.rings.len() < MAX_BACKENDS {
            let mut r = Ring::default();
            r.record(second, ms, failed);
            self.rings.insert(backend.to_owned(), r);
        }
    }

    /// Every tracked backend's figures at `now` (seconds since the epoch).
    pub fn figures(&self, now: u64) -> HashMap<String, Figures> {
        self.rings
            .iter()
            .map(|(name, r)| (name.clone(), r.figures(now)))
            .collect()
    }

    /// Backend `backend`'s calls per second over the last minute up to `now` (seconds
    /// since the epoch), oldest first ([`SLOTS`] points); `None` when it is not tracked.
    pub fn series(&self, backend: &str, now: u64) -> Option<Vec<Point>> {
        self.rings.get(backend).map(|r| r.series(now))
    }

    /// Backends tracked.
    pub fn len(&self) -> usize {
        self.rings.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.rings.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_spread() {
        let mut s = BackendStats::default();
        for i in 1..=100 {
            s.record("b", 1000, i as f64, i > 95);
        }
        let f = &s.figures(1000)["b"];
        assert_eq!((f.calls, f.errors), (100, 5));
        assert!((f.error_rate - 0.05).abs() < 1e-9);
        assert_eq!(f.calls_per_s, 10.0);
        let p50 = f.p50_ms.expect("p50");
        let p99 = f.p99_ms.expect("p99");
        assert!((50.0..=50.0 * 1.19).contains(&p50), "{p50}");
        assert!((99.0..=99.0 * 1.19).contains(&p99), "{p99}");
        assert!(f.p90_ms.expect("p90") <= p99);
    }

    #[test]
    fn only_the_last_minute_counts() {
        let mut s = BackendStats::default();
        s.record("b", 1000, 5.0, false);
        s.record("b", 1030, 5.0, true);
        assert_eq!(s.figures(1030)["b"].calls, 2);
        assert_eq!(s.figures(1059)["b"].calls, 2);
        let later = &s.figures(1075)["b"];
        assert_eq!((later.calls, later.errors), (1, 1));
        assert_eq!(later.calls_per_s, 0.0);
        // A slot reused a minute later starts over.
        s.record("b", 1060, 5.0, false);
        assert_eq!(s.figures(1060)["b"].calls, 2);
    }

    #[test]
    fn a_backends_series_is_its_last_minute_second_by_second() {
        let mut s = BackendStats::default();
        for ms in [1.0, 2.0, 4.0] {
            s.record("b", 1000, ms, false);
        }
        s.record("b", 1001, 50.0, true);
        s.record("b", 930, 9.0, false);
        let points = s.series("b", 1001).expect("tracked");
        assert_eq!(points.len(), SLOTS);
        assert_eq!((points[0].second, points[SLOTS - 1].second), (942, 1001));
        let at = |sec: u64| &points[(sec - 942) as usize];
        assert_eq!((at(1000).calls, at(1000).errors), (3, 0));
        let p50 = at(1000).p50_ms.expect("a median");
        assert!((2.0..=2.0 * 1.19).contains(&p50), "{p50}");
        assert_eq!((at(1001).calls, at(1001).errors), (1, 1));
        assert_eq!(at(999).calls, 0);
        assert_eq!(at(999).p99_ms, None);
        assert_eq!(points.iter().map(|p| p.calls).sum::<u32>(), 4, "930 is out");
        // A slot written a minute ago is not this second's.
        assert_eq!(s.series("b", 1060).expect("tracked")[SLOTS - 1].calls, 0);
        assert!(s.series("other", 1001).is_none());
    }

    #[test]
    fn the_backends_stay_bounded() {
        let mut s = BackendStats::default();
        for i in 0..MAX_BACKENDS * 4 {
            for t in 0..(SLOTS as u64 * 3) {
                s.record(&format!("b{i}"), 1000 + t, 1.0e9, false);
            }
        }
        assert_eq!(s.len(), MAX_BACKENDS);
        assert!(s.rings.values().all(|r| r.slots.len() == SLOTS));
        assert_eq!(bucket(1.0e12), BUCKETS - 1);
        assert_eq!(bucket(0.0), 0);
    }
}
