//! The generic cell rate algorithm, as arithmetic: the in-memory store runs it directly and
//! the Redis store runs the same steps in a Lua script (`redis_store.rs`), so both decide
//! alike. State is one number per key, the theoretical arrival time (TAT).

use std::time::Duration;

/// A rate for GCRA: one request every `interval`, in bursts of up to `burst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcra {
    /// The emission interval: the period divided by the count.
    pub interval: Duration,
    /// Requests allowed at once (at least 1).
    pub burst: u32,
}

impl Gcra {
    /// `count` requests per `period`, in bursts of `burst`.
    pub fn new(count: u32, period: Duration, burst: u32) -> Gcra {
        Gcra {
            interval: (period / count.max(1)).max(Duration::from_micros(1)),
            burst: burst.max(1),
        }
    }

    /// The emission interval in microseconds (at least 1).
    pub fn interval_us(&self) -> u64 {
        (self.interval.as_micros() as u64).max(1)
    }

    /// How far ahead of now the TAT may run: `interval × (burst − 1)`, in microseconds.
    pub fn tolerance_us(&self) -> u64 {
        self.interval_us()
            .saturating_mul(u64::from(self.burst.max(1) - 1))
    }
}

/// One key to check against one limit ([`crate::Store::rate`] takes several, in order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateCheck {
    /// The key (the store adds its namespace).
    pub key: String,
    /// Its limit.
    pub limit: Gcra,
}

/// What a rate check decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateDecision {
    /// The request may go (and was counted).
    Allowed,
    /// Refused; the earliest moment it would be allowed.
    Refused {
        /// How long until then.
        retry_after: Duration,
    },
}

/// What checking several keys in order decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateOutcome {
    /// Every key allowed the request; each counted it.
    Allowed,
    /// The check at `index` refused it (the keys before it counted it, the ones after were
    /// not checked).
    Refused {
        /// Which check refused.
        index: usize,
        /// How long until that key would allow it.
        retry_after: Duration,
    },
}

/// One step: with the key's TAT (`None`: never seen or expired) at `now` (µs), the
/// decision and, when allowed, the new TAT to keep (until `new_tat − now` from now, when the
/// key is back to a full burst and may be forgotten).
pub fn step(limit: &Gcra, tat: Option<u64>, now: u64) -> (RateDecision, Option<u64>) {
    let tat = tat.unwrap_or(now).max(now);
    let tolerance = limit.tolerance_us();
    if tat - now > tolerance {
        let retry_after = Duration::from_micros(tat - tolerance - now);
        return (RateDecision::Refused { retry_after }, None);
    }
    (RateDecision::Allowed, Some(tat + limit.interval_us()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_per_interval() {
        let limit = Gcra::new(2, Duration::from_secs(1), 2); // 1 per 500 ms, bursts of 2
        let mut tat = None;
        let mut at = |now: u64| {
            let (d, next) = step(&limit, tat, now);
            if next.is_some() {
                tat = next;
            }
            d
        };
        assert_eq!(at(0), RateDecision::Allowed);
        assert_eq!(at(0), RateDecision::Allowed);
        assert_eq!(
            at(0),
            RateDecision::Refused {
                retry_after: Duration::from_millis(500)
            }
        );
        assert_eq!(
            at(200_000),
            RateDecision::Refused {
                retry_after: Duration::from_millis(300)
            }
        );
        assert_eq!(at(500_000), RateDecision::Allowed);
        assert!(matches!(at(500_000), RateDecision::Refused { .. }));
        // Long idle: back to a full burst.
        assert_eq!(at(10_000_000), RateDecision::Allowed);
        assert_eq!(at(10_000_000), RateDecision::Allowed);
        assert!(matches!(at(10_000_000), RateDecision::Refused { .. }));
    }
}
