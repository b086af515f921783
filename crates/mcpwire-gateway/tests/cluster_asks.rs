//! Asks across replicas (issue 14 item 4, `docs/design/scale-out.md`): a call running on
//! replica A asks the client (elicitation); the client POSTs its answer to replica B — as a
//! round-robin balancer would — and B relays it to A through the store, where the call gets
//! it and finishes. A `notifications/cancelled` POSTed to B cancels a call running on A.
//! Both with an in-memory store (two listeners of one process) and with a real
//! `redis-server` (two clusters, as two processes would have).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::cluster::{http, memory, redis_store};
use mcpwire_gateway::cluster::Cluster;
use mcpwire_model::ClientAsk;
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_store::Store;
use mcpwire_store::testing::RedisServer;
use mcpwire_testkit::wait::wait_until_async;
use serde_json::json;
use tokio::sync::mpsc;

/// `confirm` elicits a yes/no and answers with what the user said; `wait` runs until it is
/// cancelled and reports that on `cancelled`.
fn server(cancelled: mpsc::Sender<()>) -> Arc<Server> {
    let confirm = tool("confirm", |ctx: CallCtx, _: NoArgs| async move {
        let params = json!({"message": "Delete it?",
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}});
        let ask = ClientAsk {
            method: "elicitation/create".into(),
            params: Some(mcpwire_model::to_raw(&params)),
        };
        let answer = ctx
            .ask(ask)
            .await
            .map_err(|e| ToolError::new(e.to_string()))?;
        Ok::<_, ToolError>(format!("user said {}", answer.get()))
    });
    let wait = tool("wait", move |ctx: CallCtx, _: NoArgs| {
        let cancelled = cancelled.clone();
        async move {
            ctx.cancelled().await;
            let _ = cancelled.send(()).await;
            Ok::<_, ToolError>("cancelled".to_owned())
        }
    });
    Server::builder(Implementation::new("asks", "1"))
        .tool(confirm)
        .tool(wait)
        .build()
}

/// A replica over `cluster`; its address.
async fn replica(cluster: Arc<Cluster>, cancelled: mpsc::Sender<()>) -> String {
    common::cluster::replica(Service::from_server(server(cancelled)), cluster).await
}

/// A cluster over `store` (every replica seals with the same key).
fn cluster(store: Arc<dyn Store>) -> Cluster {
    common::cluster::cluster(store, &[7])
}

/// A session opened on `addr` declaring elicitation; its id.
async fn open(addr: &str) -> String {
    http(addr).initialize_with(json!({"elicitation":{}})).await
}

/// The elicitation asked on `a` is answered through `b`; the call on `a` gets the answer.
/// Then a call on `a` is cancelled through `b`.
async fn answered_and_cancelled_through_the_other_replica(
    a: &str,
    b: &str,
    cancelled: &mut mpsc::Receiver<()>,
) {
    let sid = open(a).await;
    for round in 0..3 {
        let call = json!({"jsonrpc":"2.0","id": 10 + round,"method":"tools/call",
                          "params":{"name":"confirm","arguments":{}}});
        let mut stream = http(a).post(Some(&sid), &call).await;
        let ask = stream.next_message().await;
        assert_eq!(ask["method"], "elicitation/create", "{ask}");
        let ask_id = ask["id"].clone();
        assert!(ask_id.is_string(), "a replica's ask id names it: {ask_id}");
        let answer = json!({"jsonrpc":"2.0","id": ask_id,
                            "result":{"action":"accept","content":{"ok": round % 2 == 0}}});
        let relayed = http(b).post(Some(&sid), &answer).await;
        assert_eq!(
            relayed.status, 202,
            "the answer was taken on the other replica"
        );
        let result = stream.next_message().await;
        assert_eq!(result["id"], 10 + round, "{result}");
        let text = result["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("a tool result: {result}"));
        assert!(
            text.contains(&format!("\"ok\":{}", round % 2 == 0)),
            "the call on A got B's answer: {text}"
        );
    }

    let call = json!({"jsonrpc":"2.0","id": 20,"method":"tools/call",
                      "params":{"name":"wait","arguments":{}}});
    let a_owned = a.to_owned();
    let sid_owned = sid.clone();
    let running = tokio::spawn(async move {
        http(&a_owned)
            .post(Some(&sid_owned), &call)
            .await
            .bytes()
            .await
    });
    // The call must be running on A before it is cancelled: retry the (idempotent)
    // cancellation until the tool reports it, bounded.
    let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled",
                        "params":{"requestId": 20, "reason": "user"}});
    let mut seen = false;
    for _ in 0..50 {
        assert_eq!(http(b).post(Some(&sid), &cancel).await.status, 202);
        if tokio::time::timeout(Duration::from_millis(200), cancelled.recv())
            .await
            .is_ok()
        {
            seen = true;
            break;
        }
    }
    assert!(seen, "the call on A was cancelled through B");
    // The cancelled request's stream ends without an answer.
    let body = tokio::time::timeout(Duration::from_secs(20), running)
        .await
        .expect("the cancelled call's stream ended")
        .expect("task");
    assert!(
        !String::from_utf8_lossy(&body).contains("\"id\":20"),
        "a cancelled request is not answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_are_answered_through_another_replica_in_memory() {
    let (tx, mut cancelled) = mpsc::channel(4);
    let shared = Arc::new(cluster(memory()));
    let a = replica(shared.clone(), tx.clone()).await;
    let b = replica(shared, tx).await;
    answered_and_cancelled_through_the_other_replica(&a, &b, &mut cancelled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_are_answered_through_another_replica_over_redis() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let connect = || async { Arc::new(cluster(redis_store(&redis).await)) };
    let (tx, mut cancelled) = mpsc::channel(4);
    let a = replica(connect().await, tx.clone()).await;
    let b = replica(connect().await, tx).await;
    answered_and_cancelled_through_the_other_replica(&a, &b, &mut cancelled).await;
    // And the other way round, in a new session.
    answered_and_cancelled_through_the_other_replica(&b, &a, &mut cancelled).await;
}

/// `DELETE` on one replica ends the session on a replica holding it at once (published on
/// the relay channel), not at that replica's next record check — an hour away here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_session_ends_on_the_replicas_holding_it() {
    let (tx, _cancelled) = mpsc::channel(4);
    let store = memory();
    let hourly = || Arc::new(cluster(store.clone()).with_recheck(Duration::from_secs(3600)));
    let a = replica(hourly(), tx.clone()).await;
    let b = replica(hourly(), tx).await;
    let sid = open(&a).await;
    let list = |id: i64| json!({"jsonrpc":"2.0","id": id,"method":"tools/list"});
    assert_eq!(
        http(&b).post(Some(&sid), &list(1)).await.status,
        200,
        "B holds it now"
    );

    let deleted = http(&a).delete(&sid).await;
    assert_eq!(deleted.status, 200);

    // Bounded: the message crosses in well under a second; B never re-checks by itself.
    let mut i = 10;
    let ended = async || {
        i += 1;
        http(&b).post(Some(&sid), &list(i)).await.status == 404
    };
    let what = "B ended the session deleted on A";
    wait_until_async(Duration::from_secs(3), what, ended).await;
}
