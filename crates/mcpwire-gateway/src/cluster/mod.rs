//! Running several replicas of one gateway behind a load balancer (issue 14; decisions in
//! `docs/design/scale-out.md`): [`Cluster`] is the shared store every replica uses and the
//! keys sealing session ids. A [`Service`] without one behaves exactly as a single
//! process always has (random session ids, sessions in memory, local rate limits).
//!
//! - `directory.rs`: the [`mcpwire_server::directory::SessionDirectory`] the HTTP listener uses, over
//!   the pieces below (the listener knows only that trait).
//! - `session_id.rs`: what a sealed `Mcp-Session-Id` holds, sealing and opening it, and the
//!   identity binding.
//! - `relay.rs`: a client's answer to an ask (and its cancellations) POSTed to another
//!   replica than the one running the request, relayed there through the store.
//! - `streams.rs`: the replay logs of resumable SSE streams in the store, so
//!   `Last-Event-ID` resumes a stream on any replica.
//! - `tasks.rs`: tasks any replica answers (the router's `TaskShare` over the store), with
//!   executor heartbeats.
//! - Session records: one store key per live session (`s:{sid}`), written when `initialize`
//!   succeeds, expiring after the session's idle time unless a replica serving it refreshes
//!   it, removed by `DELETE`. A replica rebuilds a session it has never seen only while its
//!   record exists, so a deleted or expired session stays ended on every replica.
//! - `upstreams.rs`: backends' records per session (`up:{sid}`: upstream sessions to
//!   re-attach on another replica), living and ending with the session's record.

mod directory;
mod relay;
mod session_id;
mod streams;
mod tasks;
mod upstreams;

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::ClientCapabilities;
use mcpwire_server::Service;
use mcpwire_store::{MemoryStore, SealKeys, Store, StoreError};

/// The environment variable holding session keys when the configuration lists none:
/// base64 keys separated by commas, newest first.
pub const SESSION_KEYS_ENV: &str = "MCPWIRE_SESSION_KEYS";

/// How often a replica re-checks a session it holds, by default ([`Cluster::with_recheck`]).
pub const DEFAULT_RECHECK: Duration = Duration::from_secs(5);

/// How often a replica running tasks proves itself alive and takes relayed requests.
pub const TASK_HEARTBEAT: Duration = Duration::from_millis(250);

/// How long without a heartbeat before a replica's running tasks are answered `failed`.
pub const TASK_EXECUTOR_TIMEOUT: Duration = Duration::from_secs(3);

/// The record a session's capabilities are not in (they are sealed in its id).
const SEALED: &[u8] = b"1";

/// Resource subscriptions kept in the store per session, at most (more stay on the replica
/// that took them).
const MAX_SHARED_SUBSCRIPTIONS: usize = 1024;
/// Bytes of a session's subscription record, at most.
const MAX_SUBSCRIPTION_BYTES: usize = 256 << 10;

/// `service` as one replica of `cluster`: sealed session ids any replica continues, session
/// records in the shared store (the cluster is its HTTP listeners' session directory), the
/// `requestState` key every replica shares, and its tasks answered by any replica.
pub fn in_cluster(mut service: Service, cluster: Arc<Cluster>) -> Service {
    service.router = service.router.with_state_key(cluster.state_key());
    service.router.share_tasks(cluster.task_share());
    service.with_directory(cluster)
}

/// What several replicas share: the store and the session keys.
pub struct Cluster {
    store: Arc<dyn Store>,
    keys: SealKeys,
    recheck: Duration,
    /// Task heartbeat interval and executor timeout.
    task_timing: (Duration, Duration),
    /// Client messages relayed to the replica holding their request.
    relay: relay::ReplicaRelay,
    /// Replay logs of resumable streams.
    streams: streams::StreamLogs,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("store", &self.store.describe())
            .field("keys", &self.keys)
            .field("recheck", &self.recheck)
            .field("task_timing", &self.task_timing)
            .finish()
    }
}

/// Where a cluster keeps its shared state (`[cluster] store`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// In this process only (`"memory"`): sealed ids without a second replica — for one
    /// replica, and tests.
    Memory,
    /// Redis 7 / Valkey at this `redis://` URL, shared by every replica.
    Redis(String),
}

impl StoreSpec {
    /// `memory` or a `redis://` URL.
    pub fn parse(text: &str) -> Result<StoreSpec, String> {
        match text {
            "memory" => Ok(StoreSpec::Memory),
            url if url.starts_with("redis://") => Ok(StoreSpec::Redis(url.to_owned())),
            other => Err(format!(
                "`{}`: expected \"memory\" or a redis:// URL",
                other.split('@').next_back().unwrap_or(other)
            )),
        }
    }
}

/// `[cluster]`, checked: the store, the session keys (newest first, as base64) and how
/// often a replica re-checks a session it holds.
#[derive(Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// The shared store.
    pub store: StoreSpec,
    /// Session keys, newest first (base64 of 32 bytes each); empty: from
    /// [`SESSION_KEYS_ENV`].
    pub session_keys: Vec<String>,
    /// Key prefix in the store.
    pub prefix: String,
    /// How often a replica holding a session checks that its record still exists (ended on
    /// another replica) and extends it.
    pub recheck: Duration,
}

impl std::fmt::Debug for ClusterConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterConfig")
            .field("store", &self.store)
            .field("session_keys", &self.session_keys.len())
            .field("prefix", &self.prefix)
            .field("recheck", &self.recheck)
            .finish()
    }
}

impl ClusterConfig {
    /// A cluster over `store` with keys from the environment.
    pub fn new(store: StoreSpec) -> ClusterConfig {
        ClusterConfig {
            store,
            session_keys: Vec::new(),
            prefix: "mcpwire:".into(),
            recheck: DEFAULT_RECHECK,
        }
    }
}

/// Why a cluster could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// No key, or a key that is not 32 bytes of base64.
    #[error("session keys: {0}")]
    Keys(#[from] mcpwire_store::KeyError),
    /// The store could not be reached or is misconfigured.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl Cluster {
    /// A cluster over `store`, sealing with `keys`.
    pub fn new(store: Arc<dyn Store>, keys: SealKeys) -> Cluster {
        Cluster {
            relay: relay::ReplicaRelay::new(store.clone()),
            streams: streams::StreamLogs::new(store.clone(), Arc::from(relay::random_name())),
            store,
            keys,
            recheck: DEFAULT_RECHECK,
            task_timing: (TASK_HEARTBEAT, TASK_EXECUTOR_TIMEOUT),
        }
    }

    /// How often a replica running tasks heartbeats, and how long without one before its
    /// running tasks are answered `failed` (defaults: [`TASK_HEARTBEAT`],
    /// [`TASK_EXECUTOR_TIMEOUT`]).
    pub fn with_task_timing(mut self, heartbeat: Duration, timeout: Duration) -> Cluster {
        self.task_timing = (heartbeat, timeout.max(heartbeat * 2));
        self
    }

    /// A fresh executor's share of the cluster's tasks (one per router task store).
    pub fn task_share(&self) -> Arc<dyn mcpwire_router::TaskShare> {
        let (heartbeat, timeout) = self.task_timing;
        Arc::new(tasks::StoreTasks::new(
            self.store.clone(),
            heartbeat,
            timeout,
        ))
    }

    /// How often a replica re-checks a session it holds (zero: on every request).
    pub fn with_recheck(mut self, recheck: Duration) -> Cluster {
        self.recheck = recheck;
        self
    }

    /// Connects to the configured store (Redis: once, now — an unreachable server is an
    /// error) with keys from the configuration or [`SESSION_KEYS_ENV`].
    pub async fn connect(config: &ClusterConfig) -> Result<Cluster, ClusterError> {
        let keys = if config.session_keys.is_empty() {
            let env = std::env::var(SESSION_KEYS_ENV).unwrap_or_default();
            let listed: Vec<&str> = env.split(',').filter(|k| !k.trim().is_empty()).collect();
            SealKeys::from_base64(&listed)?
        } else {
            SealKeys::from_base64(&config.session_keys)?
        };
        let store: Arc<dyn Store> = match &config.store {
            StoreSpec::Memory => Arc::new(MemoryStore::new(1_000_000)),
            StoreSpec::Redis(url) => {
                let mut redis = mcpwire_store::RedisConfig::new(url.clone());
                redis.prefix = config.prefix.clone();
                Arc::new(mcpwire_store::RedisStore::connect(redis).await?)
            }
        };
        tracing::info!(store = %store.describe(), keys = keys.len(), "cluster store connected");
        Ok(Cluster::new(store, keys).with_recheck(config.recheck))
    }

    /// The shared store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The HMAC key of 2026-07-28 `requestState`, the same on every replica (derived from
    /// the newest session key), so an `input_required` round trip may finish on any replica.
    pub fn state_key(&self) -> mcpwire_router::StateKey {
        mcpwire_router::StateKey::from_bytes(self.keys.derive("mcpwire requestState v1"))
    }

    /// Records session `sid` as live for `ttl`, with its capabilities when they did not fit
    /// in its id.
    async fn register(
        &self,
        sid: &str,
        spilled: Option<&ClientCapabilities>,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let value = match spilled {
            Some(caps) => serde_json::to_vec(caps).unwrap_or_default(),
            None => SEALED.to_vec(),
        };
        self.store.put(&record_key(sid), &value, ttl).await
    }

    /// Whether session `sid` is live (`None`: ended or expired), extending it by `ttl`;
    /// with the capabilities kept in its record when `want_caps`.
    async fn revive_record(
        &self,
        sid: &str,
        ttl: Duration,
        want_caps: bool,
    ) -> Result<Option<Option<ClientCapabilities>>, StoreError> {
        let key = record_key(sid);
        if !want_caps {
            let live = self.store.touch(&key, ttl).await?;
            if live {
                // Its subscriptions live as long (no record when it has none).
                self.store.touch(&subscriptions_key(sid), ttl).await?;
                self.store
                    .touch(&upstreams::upstreams_key(sid), ttl)
                    .await?;
            }
            return Ok(live.then_some(None));
        }
        let Some(value) = self.store.get(&key).await? else {
            return Ok(None);
        };
        self.store.touch(&key, ttl).await?;
        let caps = serde_json::from_slice(&value).map_err(|_| {
            StoreError::Protocol(format!("session record {key} holds no capabilities"))
        })?;
        Ok(Some(Some(caps)))
    }

    /// Removes session `sid`'s records, for every replica; whether it was live.
    async fn remove_records(&self, sid: &str) -> Result<bool, StoreError> {
        let live = self.store.remove(&record_key(sid)).await?;
        self.store.remove(&subscriptions_key(sid)).await?;
        self.store.remove(&upstreams::upstreams_key(sid)).await?;
        Ok(live)
    }

    /// Records in the store that session `sid` subscribed to (`on`) or unsubscribed from
    /// `uri`, for a replica rebuilding it later; `ttl`: the session's idle time (extended
    /// with its record). Not atomic across replicas: one client's subscribes are sent one
    /// after the other. Past the bounds the subscription is not shared (an error).
    async fn record_subscription(
        &self,
        sid: &str,
        uri: &str,
        on: bool,
        ttl: Duration,
    ) -> Result<(), StoreError> {
        let mut uris = self.recorded_subscriptions(sid).await?;
        uris.retain(|u| u != uri);
        if on {
            uris.push(uri.to_owned());
        }
        let key = subscriptions_key(sid);
        if uris.is_empty() {
            self.store.remove(&key).await?;
            return Ok(());
        }
        let value = serde_json::to_vec(&uris).unwrap_or_default();
        if uris.len() > MAX_SHARED_SUBSCRIPTIONS || value.len() > MAX_SUBSCRIPTION_BYTES {
            return Err(StoreError::Full {
                max: MAX_SHARED_SUBSCRIPTIONS,
            });
        }
        self.store.put(&key, &value, ttl).await
    }

    /// The resource subscriptions recorded for session `sid`.
    async fn recorded_subscriptions(&self, sid: &str) -> Result<Vec<String>, StoreError> {
        let Some(value) = self.store.get(&subscriptions_key(sid)).await? else {
            return Ok(Vec::new());
        };
        Ok(serde_json::from_slice(&value).unwrap_or_default())
    }
}

fn record_key(sid: &str) -> String {
    format!("s:{sid}")
}

fn subscriptions_key(sid: &str) -> String {
    format!("sub:{sid}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's shared subscriptions: added, removed, and bounded.
    #[tokio::test]
    async fn subscription_records_are_bounded() {
        let keys = SealKeys::new(&[[1u8; 32]]).expect("keys");
        let cluster = Cluster::new(Arc::new(MemoryStore::new(16)), keys);
        let ttl = Duration::from_secs(60);
        cluster
            .record_subscription("s", "a://1", true, ttl)
            .await
            .unwrap();
        cluster
            .record_subscription("s", "a://2", true, ttl)
            .await
            .unwrap();
        cluster
            .record_subscription("s", "a://1", true, ttl)
            .await
            .unwrap();
        assert_eq!(
            cluster.recorded_subscriptions("s").await.unwrap(),
            ["a://2", "a://1"]
        );
        cluster
            .record_subscription("s", "a://2", false, ttl)
            .await
            .unwrap();
        assert_eq!(
            cluster.recorded_subscriptions("s").await.unwrap(),
            ["a://1"]
        );
        for i in 1..MAX_SHARED_SUBSCRIPTIONS {
            let uri = format!("b://{i}");
            cluster
                .record_subscription("s", &uri, true, ttl)
                .await
                .unwrap();
        }
        assert!(matches!(
            cluster
                .record_subscription("s", "c://over", true, ttl)
                .await,
            Err(StoreError::Full { .. })
        ));
        let long = "d://".to_owned() + &"x".repeat(MAX_SUBSCRIPTION_BYTES);
        assert!(
            cluster
                .record_subscription("t", &long, true, ttl)
                .await
                .is_err()
        );
        assert!(cluster.remove_records("s").await.is_ok());
        assert!(
            cluster
                .recorded_subscriptions("s")
                .await
                .unwrap()
                .is_empty()
        );
    }
}
