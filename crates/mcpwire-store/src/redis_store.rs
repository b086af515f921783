//! [`RedisStore`]: the [`Store`] in Redis 7 / Valkey, shared by every replica.
//!
//! One multiplexed connection per process (redis-rs `ConnectionManager`: every request of
//! every task is pipelined on it, and it reconnects with backoff after a failure), a
//! connect timeout and a response timeout, and an outer deadline on every operation so a
//! stalled server costs a caller at most [`RedisConfig::op_timeout`]. While Redis is down
//! operations fail at once with [`StoreError::Unavailable`] (the manager reconnects in the
//! background); once it is back they succeed again, with no restart.
//!
//! Every key is namespaced by [`RedisConfig::prefix`] and written with an expiry. Rate
//! checks run GCRA in one Lua script (EVALSHA, loaded again after a server restart), on
//! the server's clock, so replicas with skewed clocks still share one budget.

use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError, Script};

use crate::pubsub::offer;
use crate::{
    LOG_MAX_ENTRIES, LogAppend, LogEntry, RateCheck, RateOutcome, Store, StoreError, Subscription,
};

/// GCRA as in `gcra.rs`, atomically, over every key in order: ARGV holds an interval and
/// a tolerance (µs) per key. Returns `{0, 0}` (allowed by all) or `{i, retry_after_µs}`
/// for the first key (1-based) that refused; the keys before it counted the request. On
/// the server's clock. Numbers are doubles in Lua: µs since the epoch stay exact (< 2^53)
/// and are written with `%.0f` (the default formatting would round them).
const GCRA_LUA: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
for i = 1, #KEYS do
  local interval = tonumber(ARGV[2 * i - 1])
  local tolerance = tonumber(ARGV[2 * i])
  local tat = tonumber(redis.call('GET', KEYS[i]) or now)
  if tat < now then tat = now end
  if tat - now > tolerance then
    return {i, tat - tolerance - now}
  end
  local new = tat + interval
  local ttl = math.max(1, math.ceil((new - now) / 1000))
  redis.call('SET', KEYS[i], string.format('%.0f', new), 'PX', ttl)
end
return {0, 0}
";

/// How to reach Redis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://[user:password@]host:port[/db]` (or `rediss://` is refused: TLS is not built in).
    pub url: String,
    /// Prepended to every key (`mcpwire:` by default), so several gateways share a server.
    pub prefix: String,
    /// How long one connection attempt may take.
    pub connect_timeout: Duration,
    /// How long one operation may take, waiting for a reconnect included.
    pub op_timeout: Duration,
}

impl RedisConfig {
    /// Defaults for `url`: prefix `mcpwire:`, 2 s to connect, 1 s per operation.
    pub fn new(url: impl Into<String>) -> RedisConfig {
        RedisConfig {
            url: url.into(),
            prefix: "mcpwire:".into(),
            connect_timeout: Duration::from_secs(2),
            op_timeout: Duration::from_secs(1),
        }
    }
}

/// A store in Redis. Cheap to share (`Arc<dyn Store>`); one connection per instance.
pub struct RedisStore {
    conn: ConnectionManager,
    /// For subscriptions: each has a connection of its own (a subscribed connection can
    /// run no other command).
    client: Client,
    config: RedisConfig,
    describe: String,
    gcra: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("server", &self.describe)
            .field("prefix", &self.config.prefix)
            .finish()
    }
}

impl RedisStore {
    /// Connects (once, within `connect_timeout`): a server that cannot be reached now is an
    /// error, so a misconfigured gateway does not start. Later outages are survived.
    pub async fn connect(config: RedisConfig) -> Result<RedisStore, StoreError> {
        if !config.url.starts_with("redis://") {
            return Err(StoreError::Config(format!(
                "`{}`: expected a redis:// URL (TLS is not built in)",
                redact(&config.url)
            )));
        }
        let client = Client::open(config.url.as_str())
            .map_err(|e| StoreError::Config(format!("`{}`: {e}", redact(&config.url))))?;
        let info = client.get_connection_info();
        let describe = format!("redis://{}/{}", info.addr(), info.redis_settings().db());
        let manager = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.op_timeout))
            // Reconnect attempts per failure, 100 ms growing to at most 2 s apart; a request
            // made meanwhile fails at once instead of queueing behind them.
            .set_number_of_retries(3)
            .set_min_delay(Duration::from_millis(100))
            .set_max_delay(Duration::from_secs(2));
        let connecting = ConnectionManager::new_with_config(client.clone(), manager);
        let conn = match tokio::time::timeout(config.connect_timeout, connecting).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(unavailable(&describe, &e)),
            Err(_) => {
                return Err(StoreError::Unavailable {
                    store: describe,
                    reason: "no connection within the connect timeout".into(),
                });
            }
        };
        Ok(RedisStore {
            conn,
            client,
            config,
            describe,
            gcra: Script::new(GCRA_LUA),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.config.prefix)
    }

    /// Runs one command with the operation deadline.
    async fn run<T: redis::FromRedisValue>(&self, cmd: redis::Cmd) -> Result<T, StoreError> {
        self.deadline(|mut conn| {
            let cmd = cmd.clone();
            async move { cmd.query_async::<T>(&mut conn).await }
        })
        .await
    }

    /// Runs `op` on the connection within [`RedisConfig::op_timeout`]. A connection that
    /// broke since its last use (the server restarted while this replica was quiet) fails
    /// the first attempt and starts a reconnect: the operation is tried once more on the new
    /// connection, so the first request after an outage does not fail needlessly. (A rate
    /// check retried that way may count twice, once.)
    async fn deadline<T, F, Fut>(&self, op: F) -> Result<T, StoreError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, RedisError>>,
    {
        let attempts = async {
            match op(self.conn.clone()).await {
                Err(e) if e.is_connection_dropped() || e.is_io_error() => {
                    tracing::debug!(store = %self.describe, error = %e, "store connection broke; retrying once");
                    op(self.conn.clone()).await
                }
                other => other,
            }
        };
        match tokio::time::timeout(self.config.op_timeout, attempts).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(classify(&self.describe, &e)),
            Err(_) => Err(StoreError::Unavailable {
                store: self.describe.clone(),
                reason: format!("no answer within {:?}", self.config.op_timeout),
            }),
        }
    }
}

impl Store for RedisStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("GET");
            cmd.arg(self.key(key));
            self.run(cmd).await
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("SET");
            cmd.arg(self.key(key)).arg(value).arg("PX").arg(millis(ttl));
            self.run::<()>(cmd).await
        })
    }

    fn touch<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("PEXPIRE");
            cmd.arg(self.key(key)).arg(millis(ttl));
            Ok(self.run::<i64>(cmd).await? == 1)
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("DEL");
            cmd.arg(self.key(key));
            Ok(self.run::<i64>(cmd).await? > 0)
        })
    }

    fn push<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        max_len: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.key(key);
            let keep = -(max_len.max(1) as i64);
            self.deadline(|mut conn| {
                let mut pipe = redis::pipe();
                pipe.atomic()
                    .cmd("RPUSH")
                    .arg(&key)
                    .arg(value)
                    .ignore()
                    .cmd("LTRIM")
                    .arg(&key)
                    .arg(keep)
                    .arg(-1)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&key)
                    .arg(millis(ttl))
                    .ignore();
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await
        })
    }

    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<Vec<u8>>, StoreError>> {
        Box::pin(async move {
            let key = self.key(key);
            let (entries,): (Vec<Vec<u8>>,) = self
                .deadline(|mut conn| {
                    let mut pipe = redis::pipe();
                    pipe.atomic()
                        .cmd("LRANGE")
                        .arg(&key)
                        .arg(0)
                        .arg(-1)
                        .cmd("DEL")
                        .arg(&key)
                        .ignore();
                    async move { pipe.query_async(&mut conn).await }
                })
                .await?;
            Ok(entries)
        })
    }

    fn log_append<'a>(&'a self, entries: &'a [LogAppend]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if entries.is_empty() {
                return Ok(());
            }
            self.deadline(|mut conn| {
                // One round trip for the batch; each log a stream with explicit ids `0-{seq}`,
                // trimmed to the writer's bound (MINID; ids are dense, so the store's own
                // bound on entries is a MINID too).
                let mut pipe = redis::pipe();
                for e in entries {
                    let key = self.key(&e.key);
                    let floor = e
                        .keep_from
                        .max((e.seq + 1).saturating_sub(LOG_MAX_ENTRIES as u64));
                    pipe.cmd("XADD")
                        .arg(&key)
                        .arg("MINID")
                        .arg(format!("0-{floor}"))
                        .arg(format!("0-{}", e.seq))
                        .arg("d")
                        .arg(&e.data)
                        .ignore()
                        .cmd("PEXPIRE")
                        .arg(&key)
                        .arg(millis(e.ttl))
                        .ignore();
                }
                async move { pipe.query_async::<()>(&mut conn).await }
            })
            .await
        })
    }

    fn log_read<'a>(
        &'a self,
        key: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<Vec<LogEntry>>, StoreError>> {
        Box::pin(async move {
            let key = self.key(key);
            let (exists, entries): (bool, Vec<StreamEntry>) = self
                .deadline(|mut conn| {
                    let mut pipe = redis::pipe();
                    pipe.cmd("EXISTS")
                        .arg(&key)
                        .cmd("XRANGE")
                        .arg(&key)
                        .arg(format!("(0-{after}"))
                        .arg("+")
                        .arg("COUNT")
                        .arg(max.clamp(1, LOG_MAX_ENTRIES));
                    async move { pipe.query_async(&mut conn).await }
                })
                .await?;
            if !exists {
                return Ok(None);
            }
            let mut out = Vec::with_capacity(entries.len());
            for (id, mut fields) in entries {
                let seq = id
                    .strip_prefix("0-")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| StoreError::Protocol(format!("log {key}: entry id {id}")))?;
                if fields.len() < 2 {
                    return Err(StoreError::Protocol(format!(
                        "log {key}: entry {id} has no data"
                    )));
                }
                out.push(LogEntry {
                    seq,
                    data: fields.swap_remove(1),
                });
            }
            Ok(Some(out))
        })
    }

    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        Box::pin(async move {
            let mut cmd = redis::cmd("PUBLISH");
            cmd.arg(self.key(channel)).arg(payload);
            Ok(self.run::<i64>(cmd).await?.max(0) as usize)
        })
    }

    fn subscribe<'a>(
        &'a self,
        channels: &'a [String],
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        Box::pin(async move {
            let channels: Vec<String> = channels.iter().map(|c| self.key(c)).collect();
            // The first connection is made now, so a caller learns of a server it cannot
            // reach; later ones by the task, with backoff, for as long as it is wanted.
            let first = self.listen(&channels).await?;
            let (tx, sub) = Subscription::channel();
            let client = self.client.clone();
            let config = self.config.clone();
            let describe = self.describe.clone();
            tokio::spawn(async move {
                let mut pubsub = Some(first);
                let mut backoff = Duration::from_millis(100);
                loop {
                    if let Some(mut conn) = pubsub.take() {
                        backoff = Duration::from_millis(100);
                        let mut messages = conn.on_message();
                        loop {
                            tokio::select! {
                                () = tx.closed() => return,
                                m = messages.next() => match m {
                                    Some(m) => {
                                        if !offer(&tx, m.get_payload_bytes().to_vec()) {
                                            return;
                                        }
                                    }
                                    None => break,
                                },
                            }
                        }
                        tracing::warn!(store = %describe, "subscription connection lost; reconnecting");
                    }
                    tokio::select! {
                        () = tx.closed() => return,
                        () = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    match subscribe_on(&client, &config, &channels).await {
                        Ok(conn) => {
                            tracing::info!(store = %describe, "subscription restored");
                            pubsub = Some(conn);
                        }
                        Err(e) => {
                            tracing::debug!(store = %describe, error = %e, "could not subscribe yet");
                        }
                    }
                }
            });
            Ok(sub)
        })
    }

    fn rate<'a>(
        &'a self,
        checks: &'a [RateCheck],
    ) -> BoxFuture<'a, Result<RateOutcome, StoreError>> {
        Box::pin(async move {
            if checks.is_empty() {
                return Ok(RateOutcome::Allowed);
            }
            let (index, wait_us): (i64, i64) = self
                .deadline(|mut conn| {
                    let mut invocation = self.gcra.prepare_invoke();
                    for c in checks {
                        invocation
                            .key(self.key(&c.key))
                            .arg(c.limit.interval_us())
                            .arg(c.limit.tolerance_us());
                    }
                    async move { invocation.invoke_async(&mut conn).await }
                })
                .await?;
            match (index, wait_us) {
                (0, _) => Ok(RateOutcome::Allowed),
                (i, w) if i >= 1 && (i as usize) <= checks.len() && w >= 0 => {
                    Ok(RateOutcome::Refused {
                        index: i as usize - 1,
                        retry_after: Duration::from_micros(w as u64),
                    })
                }
                other => Err(StoreError::Protocol(format!(
                    "rate script answered {other:?}"
                ))),
            }
        })
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }
}

impl RedisStore {
    /// A subscribed connection to `channels` (already prefixed), within the connect timeout.
    async fn listen(&self, channels: &[String]) -> Result<redis::aio::PubSub, StoreError> {
        subscribe_on(&self.client, &self.config, channels)
            .await
            .map_err(|e| unavailable(&self.describe, &e))
    }
}

/// Opens a connection of its own and subscribes it to `channels`.
async fn subscribe_on(
    client: &Client,
    config: &RedisConfig,
    channels: &[String],
) -> Result<redis::aio::PubSub, RedisError> {
    let connect = async {
        let mut pubsub = client.get_async_pubsub().await?;
        pubsub.subscribe(channels).await?;
        Ok(pubsub)
    };
    match tokio::time::timeout(config.connect_timeout, connect).await {
        Ok(r) => r,
        Err(_) => Err(RedisError::from(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "no subscription within the connect timeout",
        ))),
    }
}

/// One `XRANGE` entry: its id and its fields and values, flat.
type StreamEntry = (String, Vec<Vec<u8>>);

fn millis(ttl: Duration) -> u64 {
    (ttl.as_millis() as u64).max(1)
}

/// Connection-level failures are `Unavailable` (retry later); anything the server itself
/// refused is a protocol fault.
fn classify(store: &str, e: &RedisError) -> StoreError {
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
    {
        return unavailable(store, e);
    }
    match e.kind() {
        // A server still loading its data, or a replica told to refuse writes: transient.
        redis::ErrorKind::Server(_) if e.to_string().contains("LOADING") => unavailable(store, e),
        _ => StoreError::Protocol(e.to_string()),
    }
}

fn unavailable(store: &str, e: &RedisError) -> StoreError {
    StoreError::Unavailable {
        store: store.to_owned(),
        reason: e.to_string(),
    }
}

/// The URL without a password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(redact("redis://u:secret@h:1/0"), "redis://***@h:1/0");
        assert_eq!(redact("redis://h:1"), "redis://h:1");
    }
}
