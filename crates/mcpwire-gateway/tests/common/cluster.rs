//! Replica sets for the cluster tests: seal keys, clusters over a shared store (in memory,
//! or a `redis-server` of the test's own), HTTP listeners in them (testkit's), and their
//! raw HTTP client (testkit's).

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use mcpwire_gateway::cluster::Cluster;
use mcpwire_server::http::HttpConfig;
use mcpwire_server::{Service, Wire};
use mcpwire_store::testing::RedisServer;
use mcpwire_store::{
    LogAppend, LogEntry, MemoryStore, RateCheck, RateOutcome, RedisConfig, RedisStore, SealKeys,
    Store, StoreError, Subscription,
};
use mcpwire_testkit::raw::http::HttpClient;
use mcpwire_testkit::serve::serve;

/// Seal keys `[n; 32]` for each `n` of `list`: the first seals, every one opens.
pub fn keys(list: &[u8]) -> SealKeys {
    let raw: Vec<[u8; 32]> = list.iter().map(|n| [*n; 32]).collect();
    SealKeys::new(&raw).expect("keys")
}

/// A cluster over `store` sealing with [`keys`]`(list)` (chain `with_*` to tune it).
pub fn cluster(store: Arc<dyn Store>, list: &[u8]) -> Cluster {
    Cluster::new(store, keys(list))
}

/// An in-memory store: what replicas of one process share.
pub fn memory() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new(10_000))
}

/// A store on `redis` over a connection of its own, as a replica in its own process has.
pub async fn redis_store(redis: &RedisServer) -> Arc<dyn Store> {
    let store = RedisStore::connect(RedisConfig::new(redis.url()))
        .await
        .expect("redis");
    Arc::new(store)
}

/// A replica: `service` in `cluster`, served over Streamable HTTP on a free loopback port
/// until the runtime ends; its address (`host:port`).
pub async fn replica(service: Service, cluster: Arc<Cluster>) -> String {
    replica_with(service, cluster, HttpConfig::default()).await
}

/// [`replica`] with its own HTTP configuration.
pub async fn replica_with(service: Service, cluster: Arc<Cluster>, config: HttpConfig) -> String {
    let service = mcpwire_gateway::cluster::in_cluster(service, cluster);
    let served = serve(service, Wire::Http(config)).await;
    let addr = served.host_port();
    served.detach();
    addr
}

/// The raw HTTP client of the replica at `addr` (`host:port`), opening sessions at
/// 2025-06-18.
pub fn http(addr: &str) -> HttpClient {
    HttpClient::new(addr).with_revision("2025-06-18")
}

/// A store that remembers the log entries appended through it: what a test waits for
/// before it reads what a replica logged (instead of sleeping).
pub struct Watched {
    inner: Arc<dyn Store>,
    appended: std::sync::Mutex<Vec<(u64, Vec<u8>)>>,
}

impl Watched {
    /// `inner`, watched.
    pub fn new(inner: Arc<dyn Store>) -> Arc<Watched> {
        Arc::new(Watched {
            inner,
            appended: std::sync::Mutex::default(),
        })
    }

    /// Whether a log entry numbered after `seq` whose bytes contain `text` was appended.
    pub fn appended_after(&self, seq: u64, text: &str) -> bool {
        let appended = self.appended.lock().expect("lock");
        appended
            .iter()
            .any(|(n, data)| *n > seq && String::from_utf8_lossy(data).contains(text))
    }
}

impl Store for Watched {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
        self.inner.get(key)
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.put(key, value, ttl)
    }

    fn touch<'a>(&'a self, key: &'a str, ttl: Duration) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.touch(key, ttl)
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        self.inner.remove(key)
    }

    fn push<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        max_len: usize,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.push(key, value, max_len, ttl)
    }

    fn take<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Vec<Vec<u8>>, StoreError>> {
        self.inner.take(key)
    }

    fn log_append<'a>(&'a self, entries: &'a [LogAppend]) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.inner.log_append(entries).await?;
            let mut appended = self.appended.lock().expect("lock");
            appended.extend(entries.iter().map(|e| (e.seq, e.data.clone())));
            Ok(())
        })
    }

    fn log_read<'a>(
        &'a self,
        key: &'a str,
        after: u64,
        max: usize,
    ) -> BoxFuture<'a, Result<Option<Vec<LogEntry>>, StoreError>> {
        self.inner.log_read(key, after, max)
    }

    fn publish<'a>(
        &'a self,
        channel: &'a str,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<usize, StoreError>> {
        self.inner.publish(channel, payload)
    }

    fn subscribe<'a>(
        &'a self,
        channels: &'a [String],
    ) -> BoxFuture<'a, Result<Subscription, StoreError>> {
        self.inner.subscribe(channels)
    }

    fn rate<'a>(
        &'a self,
        checks: &'a [RateCheck],
    ) -> BoxFuture<'a, Result<RateOutcome, StoreError>> {
        self.inner.rate(checks)
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}
