//! Sessions that move between replicas (issue 14, `docs/design/scale-out.md`): two HTTP
//! listeners sharing one cluster — an in-memory store, and a real `redis-server` — serve one
//! session with requests alternating between them. A sealed id opens only with a listed
//! key (rotation: the newest seals, every listed key opens), only unchanged, only for the
//! identity that opened it, and only while its record lives (`DELETE` on one replica ends
//! it on the other). Redis going down fails requests with a retryable 503, and coming back
//! heals without restarting anything.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::cluster::{http, memory, redis_store};
use mcpwire_gateway::auth::{ApiKeyConfig, ApiKeySecret, AuthConfig, Authenticator};
use mcpwire_gateway::cluster::Cluster;
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_store::Store;
use mcpwire_store::testing::RedisServer;
use mcpwire_testkit::raw::http::Answer;
use mcpwire_testkit::wait::wait_for_async;
use serde_json::{Value, json};

const ALICE: &str = "alice-0123456789abcdef0123";
const BOB: &str = "bob-0123456789abcdef012345";

/// `whoami`: the caller, and what the session agreed in its handshake.
fn server() -> Arc<Server> {
    let whoami = tool("whoami", |ctx: CallCtx, _: NoArgs| async move {
        Ok::<_, ToolError>(
            json!({
                "subject": ctx.identity().map(|i| i.subject().to_owned()),
                "revision": ctx.revision().as_str(),
                "sampling": ctx.client_capabilities().sampling.is_some(),
            })
            .to_string(),
        )
    });
    Server::builder(Implementation::new("replica", "1"))
        .tool(whoami)
        .build()
}

fn authenticator() -> Arc<Authenticator> {
    let key = |name: &str, secret: &str| ApiKeyConfig {
        name: name.into(),
        secret: ApiKeySecret::Plain(secret.into()),
        scopes: None,
    };
    Arc::new(
        Authenticator::new(AuthConfig {
            api_keys: vec![key("alice", ALICE), key("bob", BOB)],
            ..AuthConfig::default()
        })
        .expect("auth config"),
    )
}

/// A replica: an HTTP listener over the same server, in `cluster`; its address.
async fn replica(cluster: Arc<Cluster>, auth: bool) -> String {
    let mut service = Service::from_server(server());
    if auth {
        service = service.with_auth(authenticator());
    }
    common::cluster::replica(service, cluster).await
}

/// A cluster over `store` sealing with `keys` (see `common::cluster::keys`), checking the
/// session record on every request.
fn cluster(store: Arc<dyn Store>, keys: &[u8]) -> Arc<Cluster> {
    Arc::new(common::cluster::cluster(store, keys).with_recheck(Duration::ZERO))
}

fn bearer(secret: Option<&str>) -> Option<String> {
    secret.map(|s| format!("Bearer {s}"))
}

/// `initialize` (declaring sampling) on `addr` as `who`; the answer.
async fn initialize(addr: &str, who: Option<&str>) -> Answer {
    let auth = bearer(who);
    let mut h = Vec::new();
    if let Some(a) = &auth {
        h.push(("authorization", a.as_str()));
    }
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities":{"sampling":{}},
        "clientInfo":{"name":"t","version":"1"}}});
    http(addr).post_with(None, &init, &h).await.whole().await
}

/// `tools/call whoami` in session `sid` on `addr` as `who`.
async fn whoami(addr: &str, sid: &str, who: Option<&str>, id: i64) -> Answer {
    let auth = bearer(who);
    let mut h = Vec::new();
    if let Some(a) = &auth {
        h.push(("authorization", a.as_str()));
    }
    let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
                      "params":{"name":"whoami","arguments":{}}});
    http(addr)
        .post_with(Some(sid), &call, &h)
        .await
        .whole()
        .await
}

/// The `whoami` JSON of a successful call.
fn seen(a: &Answer) -> Value {
    assert_eq!(a.status, 200, "{}", a.body);
    let answer = a.message();
    let inner = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool result: {answer}"));
    serde_json::from_str(inner).expect("whoami JSON")
}

async fn delete(addr: &str, sid: &str, who: Option<&str>) -> Answer {
    let auth = bearer(who);
    let mut h = vec![
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    if let Some(a) = &auth {
        h.push(("authorization", a.as_str()));
    }
    http(addr).send("DELETE", &h, b"").await.whole().await
}

/// Alternates `rounds` calls between the replicas; each sees the same session.
async fn alternate(replicas: &[&str], sid: &str, who: Option<&str>, rounds: i64) {
    for i in 0..rounds {
        let addr = replicas[i as usize % replicas.len()];
        let me = seen(&whoami(addr, sid, who, i + 1).await);
        assert_eq!(me["revision"], "2025-06-18", "round {i} on {addr}");
        assert_eq!(me["sampling"], true, "the client's capabilities moved too");
        let subject = who.map(|_| "key:alice");
        assert_eq!(me["subject"], json!(subject));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_moves_between_replicas_and_stays_bound_to_its_caller() {
    let shared = cluster(memory(), &[1]);
    let a = replica(shared.clone(), true).await;
    let b = replica(shared.clone(), true).await;
    let init = initialize(&a, Some(ALICE)).await;
    assert_eq!(init.status, 200, "{}", init.body);
    let sid = init.session().expect("a session id").to_owned();
    assert!(sid.len() > 64, "sealed, not a bare random id: {sid}");
    alternate(&[&a, &b], &sid, Some(ALICE), 6).await;

    // Another identity presenting the id: the session does not exist for it, on either
    // replica — and without a credential neither.
    for addr in [&a, &b] {
        assert_eq!(whoami(addr, &sid, Some(BOB), 50).await.status, 404);
        assert_eq!(whoami(addr, &sid, None, 51).await.status, 401);
    }
    // A tampered id is unknown.
    let mut forged = sid.clone().into_bytes();
    let mid = forged.len() / 2;
    forged[mid] = if forged[mid] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    for addr in [&a, &b] {
        let r = whoami(addr, &forged, Some(ALICE), 52).await;
        assert_eq!(r.status, 404, "{}", r.body);
    }
    // Still fine for its owner.
    alternate(&[&b, &a], &sid, Some(ALICE), 2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_on_one_replica_ends_the_session_on_every_replica() {
    let shared = cluster(memory(), &[1]);
    let a = replica(shared.clone(), false).await;
    let b = replica(shared.clone(), false).await;
    let sid = initialize(&a, None).await.session().expect("id").to_owned();
    alternate(&[&a, &b], &sid, None, 2).await; // both replicas now hold it
    assert_eq!(delete(&a, &sid, None).await.status, 200);
    assert_eq!(whoami(&b, &sid, None, 9).await.status, 404);
    assert_eq!(whoami(&a, &sid, None, 10).await.status, 404);
    assert_eq!(delete(&b, &sid, None).await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotated_keys_keep_old_sessions_and_seal_new_ones_with_the_newest() {
    let store = memory();
    let old = replica(cluster(store.clone(), &[1]), false).await;
    let rotated = replica(cluster(store.clone(), &[2, 1]), false).await;
    let retired = replica(cluster(store.clone(), &[2]), false).await;

    let before = initialize(&old, None)
        .await
        .session()
        .expect("id")
        .to_owned();
    alternate(&[&old, &rotated], &before, None, 2).await;
    assert_eq!(
        whoami(&retired, &before, None, 5).await.status,
        404,
        "its key was retired"
    );

    let after = initialize(&rotated, None)
        .await
        .session()
        .expect("id")
        .to_owned();
    alternate(&[&rotated, &retired], &after, None, 2).await;
    assert_eq!(
        whoami(&old, &after, None, 6).await.status,
        404,
        "sealed with the new key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_sessions_through_redis_and_survive_its_restart() {
    let Some(mut redis) = RedisServer::start() else {
        return;
    };
    // Each replica has its own connection, as separate processes would.
    let a = replica(cluster(redis_store(&redis).await, &[1]), true).await;
    let b = replica(cluster(redis_store(&redis).await, &[1]), true).await;
    let sid = initialize(&a, Some(ALICE))
        .await
        .session()
        .expect("id")
        .to_owned();
    alternate(&[&a, &b], &sid, Some(ALICE), 4).await;
    assert_eq!(whoami(&b, &sid, Some(BOB), 20).await.status, 404);

    redis.stop();
    // Down: a new session cannot be recorded — a clear, retryable refusal.
    let refused = initialize(&b, Some(ALICE)).await;
    assert_eq!(refused.status, 503, "{}", refused.body);
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert!(refused.body.contains("try again"), "{}", refused.body);
    assert!(
        !refused.body.contains("redis://"),
        "no internals: {}",
        refused.body
    );

    redis.start_again().expect("restart");
    // Back (empty: nothing was persisted, so the old session is gone and the client
    // starts a new one, as after any 404): no replica was restarted. Bounded wait for
    // the reconnect.
    let back = async || {
        let r = initialize(&b, Some(ALICE)).await;
        if r.status != 200 {
            assert_eq!(r.status, 503, "{}", r.body);
        }
        (r.status == 200).then(|| r.session().map(str::to_owned))
    };
    let what = "initialize succeeds once Redis is back";
    let fresh = wait_for_async(Duration::from_secs(10), what, back).await;
    let fresh = fresh.expect("a session id");
    alternate(&[&a, &b], &fresh, Some(ALICE), 4).await;
    assert_eq!(
        whoami(&a, &sid, Some(ALICE), 30).await.status,
        404,
        "lost with the data"
    );
}

/// Redis's `total_commands_processed` (one `INFO stats`, which itself counts once).
async fn commands_processed(redis: &RedisServer) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(redis.addr())
        .await
        .expect("redis");
    tcp.write_all(b"INFO stats\r\n").await.expect("write");
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    // A bulk string: `$LEN\r\n…\r\n`; read until the counter's line is complete.
    loop {
        let n = tcp.read(&mut buf).await.expect("read");
        assert!(n > 0, "redis closed the connection");
        text.extend_from_slice(&buf[..n]);
        let s = String::from_utf8_lossy(&text);
        if let Some(v) = s
            .lines()
            .find_map(|l| l.strip_prefix("total_commands_processed:"))
            .filter(|_| s.contains("total_commands_processed:") && s.ends_with("\r\n"))
        {
            return v.trim().parse().expect("a count");
        }
    }
}

/// A self-contained 2026-07-28 `tools/call whoami` on `addr`.
async fn stateless_whoami(addr: &str, id: i64) -> Answer {
    let call = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{
        "name":"whoami","arguments":{},
        "_meta":{
            "io.modelcontextprotocol/protocolVersion":"2026-07-28",
            "io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},
            "io.modelcontextprotocol/clientCapabilities":{}}}});
    http(addr)
        .post_stateless_request(&call, json!({}), &[])
        .await
        .whole()
        .await
}

/// Issue 14: "stateless 2026-07-28 requests must not touch Redis except for rate limits".
/// Without `[limits]`, 100 of them add no command to Redis's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_requests_leave_the_store_alone() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let a = replica(cluster(redis_store(&redis).await, &[1]), false).await;
    let me = seen(&stateless_whoami(&a, 1).await);
    assert_eq!(me["revision"], "2026-07-28");

    let before = commands_processed(&redis).await;
    for i in 0..100 {
        let _ = seen(&stateless_whoami(&a, 1000 + i).await);
    }
    let during = commands_processed(&redis).await - before;
    // The second `INFO` counts itself: one command, none from the calls.
    assert!(
        during <= 1,
        "100 stateless calls issued {during} Redis commands"
    );

    // The count does see a replica's store traffic: a stateful session checks its record.
    let sid = initialize(&a, None).await.session().expect("id").to_owned();
    let before = commands_processed(&redis).await;
    let _ = seen(&whoami(&a, &sid, None, 1).await);
    let stateful = commands_processed(&redis).await - before;
    assert!(stateful > 1, "a stateful call issued {stateful} commands");
}
