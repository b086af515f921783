//! Replica sets for the cluster tests: seal keys, clusters over a shared store (in memory,
//! or a `redis-server` of the test's own), and HTTP listeners in them.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_gateway::cluster::Cluster;
use mcpwire_server::Service;
use mcpwire_server::http::{HttpConfig, HttpServer};
use mcpwire_store::testing::RedisServer;
use mcpwire_store::{MemoryStore, RedisConfig, RedisStore, SealKeys, Store};
use tokio_util::sync::CancellationToken;

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

/// A replica: `service` in `cluster`, served over Streamable HTTP on a free loopback port;
/// its address (`host:port`).
pub async fn replica(service: Service, cluster: Arc<Cluster>) -> String {
    replica_with(service, cluster, HttpConfig::default()).await
}

/// [`replica`] with its own HTTP configuration.
pub async fn replica_with(service: Service, cluster: Arc<Cluster>, config: HttpConfig) -> String {
    let server = bind(service, cluster, config).await;
    let addr = server.local_addr().expect("addr").to_string();
    tokio::spawn(server.serve());
    addr
}

/// [`replica`] until `stop` is cancelled (then it drains for at most 100 ms).
pub async fn replica_until(
    service: Service,
    cluster: Arc<Cluster>,
    stop: CancellationToken,
) -> String {
    let server = bind(service, cluster, HttpConfig::default()).await;
    let addr = server.local_addr().expect("addr").to_string();
    tokio::spawn(server.serve_until(stop, Duration::from_millis(100)));
    addr
}

async fn bind(service: Service, cluster: Arc<Cluster>, config: HttpConfig) -> HttpServer {
    HttpServer::bind(
        mcpwire_gateway::cluster::in_cluster(service, cluster),
        config,
    )
    .await
    .expect("bind")
}
