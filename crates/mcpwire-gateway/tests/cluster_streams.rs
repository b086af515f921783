//! Streams across replicas (issue 14 item 4, `docs/design/scale-out.md` § "Streams across
//! replicas"): a call's SSE stream on replica A, its connection lost, resumed with
//! `Last-Event-ID` on replica B — what was missed is replayed from the store's log, then
//! the stream goes on as A writes it, to the response. List changes and resource updates
//! happening on A reach a client whose `GET` stream is on B (subscribed through A, before
//! or after B took the session), and B's standalone stream, lost, resumes on A with what it
//! missed. With an in-memory store (two clusters of one process sharing it) and over a
//! real `redis-server`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::cluster::{Watched, http, memory, redis_store};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, ResourceDef, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_store::Store;
use mcpwire_store::testing::RedisServer;
use mcpwire_testkit::raw::http::Exchange;
use mcpwire_testkit::wait::wait_until_async;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How long a replica may take to log what crosses the store.
const WAIT: Duration = Duration::from_secs(5);

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
        .resource(ResourceDef::text("test://r", "r", "text/plain", "r"))
        .build()
}

async fn replica(store: Arc<dyn Store>, release: Arc<Notify>) -> String {
    replica_of(store, server(release)).await
}

async fn replica_of(store: Arc<dyn Store>, server: Arc<Server>) -> String {
    let cluster = Arc::new(common::cluster::cluster(store, &[9]));
    common::cluster::replica(Service::from_server(server), cluster).await
}

fn call(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id": id,"method":"tools/call",
           "params":{"name":"steps","arguments":{},"_meta":{"progressToken": id}}})
}

/// The event's id and its data.
async fn event(events: &mut Exchange) -> (String, Option<Value>) {
    let (id, data) = events.event().await.expect("an event");
    (id.expect("an event id"), data)
}

async fn resumed_on_the_other_replica(a: &str, b: &str, release: &Notify) {
    let sid = http(a).initialize().await;

    // Lost before the call went on: B replays what A logged after the client's last event.
    let mut stream = http(a).post(Some(&sid), &call(1)).await;
    let (priming, data) = event(&mut stream).await;
    assert!(priming.starts_with('p') && priming.ends_with("-0") && data.is_none());
    let (first, data) = event(&mut stream).await;
    assert_eq!(data.expect("progress")["params"]["message"], "one");
    drop(stream);
    release.notify_one();
    let mut resumed = http(b).get(&sid, Some(&first)).await;
    assert_eq!(resumed.status, 200);
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
    let mut stream = http(a).post(Some(&sid), &call(2)).await;
    let _priming = event(&mut stream).await;
    let (first, _) = event(&mut stream).await;
    drop(stream);
    let mut resumed = http(b).get(&sid, Some(&first)).await;
    release.notify_one();
    let (_, data) = event(&mut resumed).await;
    assert_eq!(data.expect("progress")["params"]["message"], "two");
    let (_, data) = event(&mut resumed).await;
    assert_eq!(data.expect("the response")["id"], 2);
    assert!(resumed.event().await.is_none());

    // A stream no replica logged is unknown: 400, as in one process.
    let unknown = http(b).get(&sid, Some("p1-0")).await;
    assert_eq!(unknown.status, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_replica_in_memory() {
    let store = memory();
    let release = Arc::new(Notify::new());
    let a = replica(store.clone(), release.clone()).await;
    let b = replica(store, release.clone()).await;
    resumed_on_the_other_replica(&a, &b, &release).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_on_another_replica_over_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let release = Arc::new(Notify::new());
    let a = replica(redis_store(&redis).await, release.clone()).await;
    let b = replica(redis_store(&redis).await, release.clone()).await;
    resumed_on_the_other_replica(&a, &b, &release).await;
    resumed_on_the_other_replica(&b, &a, &release).await;
}

/// The next message of a standalone stream that is not a keep-alive.
async fn notification(events: &mut Exchange) -> (String, Value) {
    loop {
        let (id, data) = event(events).await;
        if let Some(data) = data {
            return (id, data);
        }
    }
}

fn subscribe(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id": id,"method":"resources/subscribe","params":{"uri":"test://r"}})
}

/// Changes on replica A (`server_a`) reach the client's `GET` stream on B.
async fn changes_reach_every_replica(store_a: Arc<dyn Store>, store_b: Arc<dyn Store>) {
    let server_a = server(Arc::new(Notify::new()));
    let a = replica_of(store_a, server_a.clone()).await;
    let watched_b = Watched::new(store_b);
    let b = replica_of(watched_b.clone(), server(Arc::new(Notify::new()))).await;

    // B holds the session (its GET stream) before the client subscribes through A.
    let sid = http(&a).initialize().await;
    let mut on_b = http(&b).get(&sid, None).await;
    let (priming, _) = event(&mut on_b).await;
    assert!(priming.starts_with('g'), "{priming}");
    assert_eq!(http(&a).post(Some(&sid), &subscribe(1)).await.status, 200);
    // Bounded: the subscription crosses through the store in well under a second; the
    // update is sent again until B's stream has it.
    let mut seen = None;
    for _ in 0..50 {
        server_a.notify_resource_updated("test://r");
        if let Ok(n) = tokio::time::timeout(
            std::time::Duration::from_millis(200),
            notification(&mut on_b),
        )
        .await
        {
            seen = Some(n);
            break;
        }
    }
    let (_, update) = seen.expect("the update on A reached the stream on B");
    assert_eq!(update["method"], "notifications/resources/updated");
    assert_eq!(update["params"]["uri"], "test://r");

    server_a.add_tool(tool("new", |_c: CallCtx, _: NoArgs| async {
        Ok::<_, ToolError>("new")
    }));
    let (last, changed) = loop {
        let (id, n) = notification(&mut on_b).await;
        if n["method"] != "notifications/resources/updated" {
            break (id, n);
        }
    };
    assert_eq!(changed["method"], "notifications/tools/list_changed");

    // B's stream lost: what B logged meanwhile is replayed on A, then A's own stream goes on.
    drop(on_b);
    server_a.notify_resource_updated("test://r");
    // Resumed once B logged the update it missed (an event after `last` in its stream's log).
    let seq = last.rsplit_once('-').and_then(|(_, n)| n.parse().ok());
    let seq = seq.expect("a stream event id");
    let logged = async || watched_b.appended_after(seq, "notifications/resources/updated");
    wait_until_async(WAIT, "B logged the update it missed", logged).await;
    let mut on_a = http(&a).get(&sid, Some(&last)).await;
    let (replayed, missed) = notification(&mut on_a).await;
    assert_eq!(missed["method"], "notifications/resources/updated");
    assert_eq!(
        replayed.rsplit_once('-').map(|(p, _)| p),
        last.rsplit_once('-').map(|(p, _)| p),
        "replayed under B's stream"
    );
    server_a.notify_resource_updated("test://r");
    let (own, _) = notification(&mut on_a).await;
    assert_ne!(
        own.rsplit_once('-').map(|(p, _)| p),
        last.rsplit_once('-').map(|(p, _)| p),
        "then A's own stream"
    );

    // A 2026-07-28 client's `subscriptions/listen` stream on B hears A's changes too.
    let listen = json!({"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{
        "notifications":{"toolsListChanged": true, "resourceSubscriptions": ["test://r"]},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    let mut listening = http(&b)
        .post_stateless_request(&listen, json!({}), &[])
        .await;
    let (_, ack) = notification(&mut listening).await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    server_a.notify_resource_updated("test://r");
    let (_, update) = notification(&mut listening).await;
    assert_eq!(
        update["method"], "notifications/resources/updated",
        "{update}"
    );
    drop(listening);

    // Subscribed through A before B ever saw the session: B rebuilds it with the
    // subscription from the store.
    let sid = http(&a).initialize().await;
    assert_eq!(http(&a).post(Some(&sid), &subscribe(1)).await.status, 200);
    let mut on_b = http(&b).get(&sid, None).await;
    let _priming = event(&mut on_b).await;
    server_a.notify_resource_updated("test://r");
    let (_, update) = notification(&mut on_b).await;
    assert_eq!(update["method"], "notifications/resources/updated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_clients_on_every_replica_in_memory() {
    let store = memory();
    changes_reach_every_replica(store.clone(), store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_clients_on_every_replica_over_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    changes_reach_every_replica(redis_store(&redis).await, redis_store(&redis).await).await;
}
