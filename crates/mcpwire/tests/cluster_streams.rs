//! Streams across replicas (issue 14 item 4, `docs/design/scale-out.md` § "Streams across
//! replicas"): a call's SSE stream on replica A, its connection lost, resumed with
//! `Last-Event-ID` on replica B — what was missed is replayed from the store's log, then
//! the stream goes on as A writes it, to the response. With an in-memory store (two
//! clusters of one process sharing it) and over a real `redis-server`.

mod common;

use std::sync::Arc;

use common::http::{Events, get, open, post};
use mcpwire::Service;
use mcpwire::cluster::Cluster;
use mcpwire::http::{HttpConfig, HttpServer};
use mcpwire::model::types::Implementation;
use mcpwire::router::{CallCtx, NoArgs, Server, ToolError, tool};
use mcpwire_store::testing::RedisServer;
use mcpwire_store::{MemoryStore, RedisConfig, RedisStore, SealKeys, Store};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// `steps` reports progress 1, waits for `release`, reports progress 2 and answers.
fn server(release: Arc<Notify>) -> Arc<Server> {
    let steps = tool("steps", move |ctx: CallCtx, _: NoArgs| {
        let release = release.clone();
        async move {
            ctx.progress(1.0, Some(2.0), Some("one".into()));
            release.notified().await;
            ctx.progress(2.0, Some(2.0), Some("two".into()));
            Ok::<_, ToolError>("done".to_owned())
        }
    });
    Server::builder(Implementation::new("streams", "1"))
        .tool(steps)
        .build()
}

async fn replica(store: Arc<dyn Store>, release: Arc<Notify>) -> String {
    let keys = SealKeys::new(&[[9u8; 32]]).expect("keys");
    let cluster = Arc::new(Cluster::new(store, keys));
    let service = Service::from_server(server(release)).in_cluster(cluster);
    let server = HttpServer::bind(service, HttpConfig::default())
        .await
        .expect("bind");
    let addr = server.local_addr().expect("addr").to_string();
    tokio::spawn(server.serve());
    addr
}

fn call(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id": id,"method":"tools/call",
           "params":{"name":"steps","arguments":{},"_meta":{"progressToken": id}}})
}

/// The event's id and its data.
async fn event(events: &mut Events) -> (String, Option<Value>) {
    let (id, data) = events.event().await.expect("an event");
    (id.expect("an event id"), data)
}

async fn resumed_on_the_other_replica(a: &str, b: &str, release: &Notify) {
    let sid = open(a, json!({})).await;

    // Lost before the call went on: B replays what A logged after the client's last event.
    let mut stream = Events::new(post(a, Some(&sid), call(1)).await);
    let (priming, data) = event(&mut stream).await;
    assert!(priming.starts_with('p') && priming.ends_with("-0") && data.is_none());
    let (first, data) = event(&mut stream).await;
    assert_eq!(data.expect("progress")["params"]["message"], "one");
    drop(stream);
    release.notify_one();
    let resumed = get(b, &sid, Some(&first)).await;
    assert_eq!(resumed.status(), 200);
    let mut resumed = Events::new(resumed);
    let prefix = first.trim_end_matches(char::is_numeric).to_owned();
    let (id, data) = event(&mut resumed).await;
    assert_eq!(id, format!("{prefix}2"));
    assert_eq!(data.expect("progress")["params"]["message"], "two");
    let (id, data) = event(&mut resumed).await;
    assert_eq!(id, format!("{prefix}3"));
    let answer = data.expect("the response");
    assert_eq!(answer["id"], 1);
    assert_eq!(answer["result"]["content"][0]["text"], "done");
    assert!(
        resumed.event().await.is_none(),
        "the stream ends after its response"
    );

    // Resumed while the call still runs: B follows what A logs next, to the response.
    let mut stream = Events::new(post(a, Some(&sid), call(2)).await);
    let _priming = event(&mut stream).await;
    let (first, _) = event(&mut stream).await;
    drop(stream);
    let mut resumed = Events::new(get(b, &sid, Some(&first)).await);
    release.notify_one();
    let (_, data) = event(&mut resumed).await;
    assert_eq!(data.expect("progress")["params"]["message"], "two");
    let (_, data) = event(&mut resumed).await;
    assert_eq!(data.expect("the response")["id"], 2);
    assert!(resumed.event().await.is_none());

    // A stream no replica logged is unknown: 400, as in one process.
    let unknown = get(b, &sid, Some("p1-0")).await;
    assert_eq!(unknown.status(), 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_replica_in_memory() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(1000));
    let release = Arc::new(Notify::new());
    let a = replica(store.clone(), release.clone()).await;
    let b = replica(store, release.clone()).await;
    resumed_on_the_other_replica(&a, &b, &release).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_replica_over_redis() {
    let Some(server) = RedisServer::start() else {
        return;
    };
    let connect = || async {
        let store = RedisStore::connect(RedisConfig::new(server.url()))
            .await
            .expect("redis");
        Arc::new(store) as Arc<dyn Store>
    };
    let release = Arc::new(Notify::new());
    let a = replica(connect().await, release.clone()).await;
    let b = replica(connect().await, release.clone()).await;
    resumed_on_the_other_replica(&a, &b, &release).await;
    resumed_on_the_other_replica(&b, &a, &release).await;
}
