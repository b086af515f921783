//! GCRA rate limits per identity, per client IP and per tool, with bounded key maps.

use std::hash::{BuildHasher, Hash};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use governor::clock::Clock;
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};
use mcpwire_model::McpError;
use mcpwire_router::Identity;
use mcpwire_store::{Gcra, RateCheck, RateOutcome, Store};

use super::{Rejections, TokioClock};

/// A rate: `count` requests per `period`, in bursts of up to `burst` (GCRA: one request is
/// replenished every `period / count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests per period.
    pub count: NonZeroU32,
    /// The period.
    pub period: Duration,
    /// Requests allowed at once (default: `count`).
    pub burst: NonZeroU32,
}

impl Rate {
    /// `count` per `period`, bursts of `count`.
    pub fn new(count: NonZeroU32, period: Duration) -> Rate {
        Rate {
            count,
            period,
            burst: count,
        }
    }

    /// Parses `N/s`, `N/min` or `N/h` (also `N/sec`, `N/second`, `N/minute`, `N/hour`).
    pub fn parse(text: &str) -> Result<Rate, String> {
        let (n, unit) = text
            .split_once('/')
            .ok_or_else(|| format!("`{text}`: expected a rate like `100/min`"))?;
        let count: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("`{text}`: `{n}` is not a whole number"))?;
        let count = NonZeroU32::new(count).ok_or_else(|| format!("`{text}`: a rate of 0"))?;
        let period = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            other => return Err(format!("`{text}`: unknown unit `{other}` (s, min or h)")),
        };
        Ok(Rate::new(count, period))
    }

    /// The same rate for the shared store's GCRA.
    fn gcra(&self) -> Gcra {
        Gcra::new(self.count.get(), self.period, self.burst.get())
    }

    fn quota(&self) -> Quota {
        let per_one = self.period / self.count.get();
        Quota::with_period(per_one.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(self.count))
            .allow_burst(self.burst)
    }
}

/// One keyed GCRA limiter whose map holds at most `max_keys` keys: past that it first drops
/// keys whose state is back to full, and keys that still do not fit share one overflow
/// bucket (so rotating keys cannot grow memory, and costs only the overflow bucket).
struct Keyed<K: Hash + Eq + Clone> {
    /// The rule it enforces (a reload keeps a limiter whose rule is unchanged).
    rate: Rate,
    limiter: RateLimiter<Slot<K>, KeyStore<K>, TokioClock, NoOpMiddleware<Nanos>>,
    clock: TokioClock,
    max_keys: usize,
    /// When the map was last pruned (nanoseconds of `clock`), so a full map is pruned at
    /// most once per replenish interval rather than on every new key.
    last_prune: AtomicU64,
    prune_every: Duration,
}

/// A limiter's buckets by key, in a map hashed with foldhash seeded per map (as the
/// sessions' request-id tables: `mcpwire_session::IdMap`) rather than SipHash — a quarter
/// of the cost of a check.
type KeyStore<K> = HashMapStateStore<Slot<K>, foldhash::fast::RandomState>;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Slot<K> {
    Key(K),
    Overflow,
}

impl<K: Hash + Eq + Clone> Keyed<K> {
    fn new(rate: Rate, max_keys: usize, clock: TokioClock) -> Keyed<K> {
        Keyed {
            rate,
            limiter: RateLimiter::new(rate.quota(), KeyStore::<K>::default(), clock),
            clock,
            // One place is kept for the overflow bucket.
            max_keys: max_keys.max(2) - 1,
            last_prune: AtomicU64::new(0),
            prune_every: rate.quota().replenish_interval(),
        }
    }

    /// `Ok` when `key` may go now, else how long until it may.
    fn check(&self, key: K) -> Result<(), Duration> {
        let slot = self.slot(key);
        self.limiter
            .check_key(&slot)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    fn slot(&self, key: K) -> Slot<K> {
        let slot = Slot::Key(key);
        if self.limiter.len() < self.max_keys {
            return slot;
        }
        let now: u64 = self.clock.now().into();
        let last = self.last_prune.load(Ordering::Relaxed);
        if now.saturating_sub(last) >= self.prune_every.as_nanos() as u64 {
            self.last_prune.store(now, Ordering::Relaxed);
            self.limiter.retain_recent();
            self.limiter.shrink_to_fit();
        }
        // A known key keeps its own state; a new one fits only below the bound (the
        // overflow bucket takes one place).
        if self.limiter.len() < self.max_keys {
            slot
        } else {
            Slot::Overflow
        }
    }

    fn len(&self) -> usize {
        self.limiter.len()
    }

    /// Whether it enforces `rate` with at most `max_keys` keys (see [`Keyed::new`]).
    fn enforces(&self, rate: Rate, max_keys: usize) -> bool {
        self.rate == rate && self.max_keys == max_keys.max(2) - 1
    }
}

/// `old` when it already enforces `rate` with `max_keys` (its buckets kept), else a new
/// limiter (`None`: no such limit).
fn kept<K: Hash + Eq + Clone>(
    old: &Option<Arc<Keyed<K>>>,
    rate: Option<Rate>,
    max_keys: usize,
    clock: TokioClock,
) -> Option<Arc<Keyed<K>>> {
    let rate = rate?;
    match old {
        Some(k) if k.enforces(rate, max_keys) => Some(k.clone()),
        _ => Some(Arc::new(Keyed::new(rate, max_keys, clock))),
    }
}

/// The call rate limits of one gateway: each is optional; a call must pass every one that
/// is configured. Kept in this process ([`RateLimits::new`]), or in a store every replica
/// shares ([`RateLimits::in_store`]) so a limit holds across replicas.
pub struct RateLimits {
    identity: Option<Arc<Keyed<NameKey>>>,
    ip: Option<Arc<Keyed<IpAddr>>>,
    tool: Option<Arc<Keyed<NameKey>>>,
    stored: Option<StoredRates>,
    rejections: std::sync::Arc<Rejections>,
}

/// The limits kept in a shared store: one atomic step per call checks every one.
struct StoredRates {
    store: Arc<dyn Store>,
    identity: Option<Gcra>,
    ip: Option<Gcra>,
    tool: Option<Gcra>,
}

impl std::fmt::Debug for RateLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimits")
            .field("identity", &self.identity.is_some())
            .field("ip", &self.ip.is_some())
            .field("tool", &self.tool.is_some())
            .field("store", &self.stored.as_ref().map(|s| s.store.describe()))
            .finish()
    }
}

/// The key of the anonymous caller (stdio, listeners without `[auth]`): they share one
/// per-identity bucket, and are told apart by the per-IP limit on the network.
pub const ANONYMOUS: &str = "anonymous";

impl RateLimits {
    /// Limits per identity, per IP and per tool (any may be absent), each map holding at
    /// most `max_keys` keys, counting refusals in `rejections`.
    pub fn new(
        identity: Option<Rate>,
        ip: Option<Rate>,
        tool: Option<Rate>,
        max_keys: usize,
        rejections: std::sync::Arc<Rejections>,
    ) -> RateLimits {
        let clock = TokioClock::new();
        RateLimits {
            identity: identity.map(|r| Arc::new(Keyed::new(r, max_keys, clock))),
            ip: ip.map(|r| Arc::new(Keyed::new(r, max_keys, clock))),
            tool: tool.map(|r| Arc::new(Keyed::new(r, max_keys, clock))),
            stored: None,
            rejections,
        }
    }

    /// These limits changed to `identity`, `ip`, `tool` and `max_keys` (a reload of
    /// `[limits]`): a limit whose rule is unchanged keeps its limiter and so every caller's
    /// bucket; a changed or new one starts full; in a shared store the buckets live in the
    /// store and are kept by key.
    pub fn renewed(
        &self,
        identity: Option<Rate>,
        ip: Option<Rate>,
        tool: Option<Rate>,
        max_keys: usize,
    ) -> RateLimits {
        if let Some(stored) = &self.stored {
            return RateLimits::in_store(
                identity,
                ip,
                tool,
                stored.store.clone(),
                self.rejections.clone(),
            );
        }
        let clock = TokioClock::new();
        RateLimits {
            identity: kept(&self.identity, identity, max_keys, clock),
            ip: kept(&self.ip, ip, max_keys, clock),
            tool: kept(&self.tool, tool, max_keys, clock),
            stored: None,
            rejections: self.rejections.clone(),
        }
    }

    /// Limits per identity, per IP and per tool kept in `store` (GCRA, atomic in the
    /// store, on its clock): every replica sharing the store shares each budget. Checked
    /// with [`RateLimits::check_stored`]; the store bounds its keys (each expires once its
    /// bucket is full again).
    pub fn in_store(
        identity: Option<Rate>,
        ip: Option<Rate>,
        tool: Option<Rate>,
        store: Arc<dyn Store>,
        rejections: Arc<Rejections>,
    ) -> RateLimits {
        RateLimits {
            identity: None,
            ip: None,
            tool: None,
            stored: Some(StoredRates {
                store,
                identity: identity.map(|r| r.gcra()),
                ip: ip.map(|r| r.gcra()),
                tool: tool.map(|r| r.gcra()),
            }),
            rejections,
        }
    }

    /// Whether the limits are kept in a shared store (check them with
    /// [`RateLimits::check_stored`]; [`RateLimits::check`] passes everything).
    pub fn is_stored(&self) -> bool {
        self.stored.is_some()
    }

    /// [`RateLimits::check`] against the shared store: one round trip for every limit.
    /// While the store cannot be reached calls are refused as unavailable (retryable):
    /// a limit that cannot be checked is not silently lifted.
    pub async fn check_stored(
        &self,
        identity: Option<&Identity>,
        ip: Option<IpAddr>,
        tool: Option<&str>,
    ) -> Result<(), McpError> {
        let Some(stored) = &self.stored else {
            return Ok(());
        };
        let mut checks = Vec::with_capacity(3);
        let mut which: Vec<(&str, &AtomicU64)> = Vec::with_capacity(3);
        if let (Some(limit), Some(ip)) = (stored.ip, ip) {
            checks.push(RateCheck {
                key: format!("rl:ip:{ip}"),
                limit,
            });
            which.push(("ip", &self.rejections.ip));
        }
        if let Some(limit) = stored.identity {
            let subject = identity.map_or(ANONYMOUS, Identity::subject);
            checks.push(RateCheck {
                key: format!("rl:id:{}", bounded_key(subject)),
                limit,
            });
            which.push(("identity", &self.rejections.identity));
        }
        if let (Some(limit), Some(tool)) = (stored.tool, tool) {
            checks.push(RateCheck {
                key: format!("rl:tool:{}", bounded_key(tool)),
                limit,
            });
            which.push(("tool", &self.rejections.tool));
        }
        match stored.store.rate(&checks).await {
            Ok(RateOutcome::Allowed) => Ok(()),
            Ok(RateOutcome::Refused { index, retry_after }) => {
                let (limit, counter) = which[index.min(which.len() - 1)];
                Err(self.refuse(limit, counter, retry_after))
            }
            Err(e) => {
                mcpwire_server::observe::store_error("rate");
                tracing::warn!(error = %e, "rate limits could not be checked");
                Err(McpError::Unavailable(
                    "rate limits cannot be checked right now; try again shortly".into(),
                ))
            }
        }
    }

    /// Whether a call by `identity` from `ip` (of `tool`, for `tools/call`) may go now;
    /// else the refusal, naming the limit and when to retry. Checked in the order
    /// IP, identity, tool; a refused call does not use up the later limits.
    pub fn check(
        &self,
        identity: Option<&Identity>,
        ip: Option<IpAddr>,
        tool: Option<&str>,
    ) -> Result<(), McpError> {
        if let (Some(limiter), Some(ip)) = (&self.ip, ip) {
            limiter
                .check(ip)
                .map_err(|wait| self.refuse("ip", &self.rejections.ip, wait))?;
        }
        if let Some(limiter) = &self.identity {
            let key = name_key(identity.map_or(ANONYMOUS, Identity::subject));
            limiter
                .check(key)
                .map_err(|wait| self.refuse("identity", &self.rejections.identity, wait))?;
        }
        if let (Some(limiter), Some(tool)) = (&self.tool, tool) {
            limiter
                .check(name_key(tool))
                .map_err(|wait| self.refuse("tool", &self.rejections.tool, wait))?;
        }
        Ok(())
    }

    /// Keys held now by the identity, IP and tool maps (for tests and metrics).
    pub fn keys_held(&self) -> (usize, usize, usize) {
        (
            self.identity.as_ref().map_or(0, |k| k.len()),
            self.ip.as_ref().map_or(0, |k| k.len()),
            self.tool.as_ref().map_or(0, |k| k.len()),
        )
    }

    fn refuse(&self, limit: &str, counter: &AtomicU64, wait: Duration) -> McpError {
        counter.fetch_add(1, Ordering::Relaxed);
        McpError::RateLimited {
            limit: limit.to_owned(),
            retry_after_secs: retry_after_secs(wait),
        }
    }
}

/// The key of a subject or tool name in a limiter's map: its 64-bit hash, seeded once per
/// process — no copy of the name per call, and the same key across reloads. Two names
/// share a bucket only if their hashes collide (about 1 in 10^11 with the keys' bound at
/// its default, and not something a client can aim at without the seed).
type NameKey = u64;

fn name_key(name: &str) -> NameKey {
    static SEED: std::sync::LazyLock<foldhash::quality::RandomState> =
        std::sync::LazyLock::new(foldhash::quality::RandomState::default);
    SEED.hash_one(name)
}

/// A store key part from caller-chosen text: as it is when short, else its SHA-256 (so a
/// subject or tool name cannot make keys of any length).
fn bounded_key(text: &str) -> String {
    use sha2::Digest;
    if text.len() <= 128 {
        return text.to_owned();
    }
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Whole seconds to wait, rounded up, at least 1 (`Retry-After` has no fractions).
fn retry_after_secs(wait: Duration) -> u64 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    secs.max(1)
}
