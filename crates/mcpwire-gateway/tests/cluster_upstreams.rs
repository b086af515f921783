//! HTTP upstream sessions re-attached on another replica (issue 14 item 2,
//! `docs/design/scale-out.md`): two gateway replicas sharing one cluster store, each with
//! the same HTTP upstream configured `shared = false` (an upstream session per downstream
//! session). A downstream session alternating between the replicas reaches one upstream
//! session — the upstream counts its calls per session and names the session — and an
//! upstream that forgot the session (404) gets a fresh `initialize`. In memory and over a
//! real `redis-server`.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_client::Target;
use mcpwire_gateway::cluster::Cluster;
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Router, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_server::http::HttpConfig;
use mcpwire_store::Store;
use mcpwire_store::testing::RedisServer;
use mcpwire_testkit::serve::{self, serve};
use mcpwire_testkit::wait::wait_until_async;
use serde_json::{Value, json};

use common::cluster::{http, memory, redis_store, replica_with};

/// A cluster over `store` sealing with key `n`, checking the session record on every
/// request.
fn cluster(store: Arc<dyn Store>, n: u8) -> Arc<Cluster> {
    Arc::new(common::cluster::cluster(store, &[n]).with_recheck(Duration::ZERO))
}

/// The upstream: a replica set of one (its own store, so the test can end its sessions)
/// whose tool `visit` answers which upstream session it runs in and how many times it ran
/// there. Its URL.
async fn upstream(store: Arc<dyn Store>) -> String {
    let visits: Arc<Mutex<HashMap<String, u64>>> = Arc::default();
    let visit = tool("visit", move |ctx: CallCtx, _: NoArgs| {
        let visits = visits.clone();
        async move {
            let sid = ctx
                .session()
                .and_then(|s| s.shared())
                .map(|c| c.sid.to_string())
                .ok_or_else(|| ToolError::new("no upstream session"))?;
            let mut visits = visits.lock().expect("visits");
            let n = visits.entry(sid.clone()).or_default();
            *n += 1;
            Ok::<_, ToolError>(json!({ "session": sid, "visits": *n }).to_string())
        }
    });
    let server = Server::builder(Implementation::new("upstream", "1"))
        .tool(visit)
        .build();
    let service =
        mcpwire_gateway::cluster::in_cluster(Service::from_server(server), cluster(store, 9));
    serve(service, serve::http()).await.detach()
}

/// A gateway replica in `cluster` in front of the upstream at `url`, one upstream session
/// per downstream session; its address.
async fn gateway(url: &str, cluster: Arc<Cluster>) -> String {
    gateway_with(url, cluster, HttpConfig::default()).await
}

async fn gateway_with(url: &str, cluster: Arc<Cluster>, http: HttpConfig) -> String {
    let mut config = UpstreamConfig::new("up", Target::Url(url.to_owned()));
    config.shared = false;
    let backend = UpstreamBackend::connect(config).await.expect("connect");
    let info = backend.server_info().clone();
    replica_with(
        Service::new(Router::new(backend), info, None),
        cluster,
        http,
    )
    .await
}

/// `tools/call visit` in session `sid` on `addr`: the result's JSON, or the error.
async fn visit(addr: &str, sid: &str, id: i64) -> Result<Value, Value> {
    let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                      "params":{"name":"visit","arguments":{}}});
    let answer = http(addr).post(Some(sid), &call).await.whole().await;
    assert_eq!(answer.status, 200, "visit on {addr}");
    let answer = answer.message();
    let result = &answer["result"];
    if result["isError"] == true || result.is_null() {
        return Err(answer);
    }
    let inner = result["content"][0]["text"].as_str().expect("text");
    Ok(serde_json::from_str(inner).expect("visit JSON"))
}

/// The upstream session a call ran in, and its visit count there.
fn ran(v: &Value) -> (String, u64) {
    (
        v["session"].as_str().expect("session").to_owned(),
        v["visits"].as_u64().expect("visits"),
    )
}

async fn one_upstream_session_across_replicas(gateways: Arc<dyn Store>, ups: Arc<dyn Store>) {
    let url = upstream(ups.clone()).await;
    let shared = cluster(gateways, 1);
    let a = gateway(&url, shared.clone()).await;
    let b = gateway(&url, shared).await;
    let replicas = [a.as_str(), b.as_str()];

    let sid = http(&a).initialize().await;
    let mut first = None;
    for i in 0..6 {
        let addr = replicas[i % 2];
        let v = visit(addr, &sid, i as i64 + 1).await.expect("visit");
        let (session, n) = ran(&v);
        let first = first.get_or_insert(session.clone());
        assert_eq!(
            &session, first,
            "call {i} (on {addr}) ran in the same upstream session"
        );
        assert_eq!(
            n,
            i as u64 + 1,
            "the upstream session's own count continues"
        );
    }

    // The upstream forgets that session (it expired there): each replica's next call is
    // refused by the upstream (404, not run), so it opens a new upstream session — the first
    // to do so initializes it and records it, the other re-attaches to it — and the call
    // runs there.
    let old = first.expect("a session");
    assert!(ups.remove(&format!("s:{old}")).await.expect("remove"));
    let v = visit(&a, &sid, 10)
        .await
        .expect("visit after the upstream forgot");
    let (renewed, n) = ran(&v);
    assert_ne!(renewed, old, "a new upstream session");
    assert_eq!(n, 1);
    let v = visit(&b, &sid, 11).await.expect("visit on B");
    assert_eq!(
        ran(&v),
        (renewed.clone(), 2),
        "B continues A's new upstream session"
    );
    let v = visit(&a, &sid, 12).await.expect("visit on A again");
    assert_eq!(ran(&v), (renewed.clone(), 3));

    // The downstream session ends (DELETE on B): its upstream session is deleted too.
    let gone = http(&b).delete(&sid).await;
    assert_eq!(gone.status, 200);
    let key = format!("s:{renewed}");
    let deleted = async || ups.get(&key).await.expect("get").is_none();
    let what = "the upstream session was deleted with its downstream session";
    wait_until_async(Duration::from_secs(3), what, deleted).await;

    // A second downstream session gets an upstream session of its own.
    let other = http(&b).initialize().await;
    let v = visit(&a, &other, 1).await.expect("visit");
    assert_eq!(ran(&v).1, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_session_follows_its_downstream_session_in_memory() {
    one_upstream_session_across_replicas(memory(), memory()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_upstream_session_follows_its_downstream_session_over_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    one_upstream_session_across_replicas(redis_store(&redis).await, memory()).await;
}

/// A replica that drops its copy of a downstream session (its table is full) while the
/// session goes on elsewhere keeps the upstream session: it is not deleted under the
/// replica now using it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_dropping_its_copy_keeps_the_upstream_session() {
    let url = upstream(memory()).await;
    let shared = cluster(memory(), 1);
    let one_session = HttpConfig {
        max_sessions: 1,
        ..HttpConfig::default()
    };
    let a = gateway_with(&url, shared.clone(), one_session).await;
    let b = gateway(&url, shared).await;

    let sid = http(&b).initialize().await;
    let (first, _) = ran(&visit(&a, &sid, 1).await.expect("visit on A"));
    assert_eq!(
        ran(&visit(&b, &sid, 2).await.expect("visit on B")),
        (first.clone(), 2)
    );
    // Another session on A evicts A's copy of the first (idle) one.
    let other = http(&a).initialize().await;
    assert_eq!(ran(&visit(&a, &other, 1).await.expect("visit")).1, 1);
    // Give A's upstream link the time to close (it would DELETE the upstream session if it
    // did not keep it), then continue on B: the same upstream session. An observation
    // window (what is tested is that nothing happens in it), so no condition to poll.
    for i in 0..20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let v = visit(&b, &sid, 10 + i).await.expect("visit on B");
        assert_eq!(ran(&v), (first.clone(), 3 + i as u64), "call {i} on B");
    }
}
