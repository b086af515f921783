//! Tasks in a replica set (issue 14 item 3, `docs/design/scale-out.md` § 4): a task created
//! on one replica is polled, answered and cancelled through another; a task whose replica
//! stopped is answered `failed` within the executor timeout — never `working` forever.
//! Two HTTP listeners in one cluster (an in-memory store shared in this process), a
//! 2026-07-28 client declaring the tasks extension per replica.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcpwire_gateway::cluster::Cluster;
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Server, TaskSupport, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_store::Store;
use mcpwire_testkit::serve::{self, Served, serve};
use serde_json::json;
use tokio::sync::Notify;

use common::cluster::memory;
use common::tasks::{EndsOnCancel, STEP, client, request, wait_for};

/// `job` becomes a task and finishes once `release` is notified; `wait` becomes a task and
/// runs until cancelled (then notifies `cancelled`).
fn server(release: Arc<Notify>, cancelled: Arc<Notify>) -> Arc<Server> {
    Server::builder(Implementation::new("tasks", "1"))
        .tool(
            tool("job", move |ctx: CallCtx, _: NoArgs| {
                let release = release.clone();
                async move {
                    ctx.run_as_task().await;
                    release.notified().await;
                    Ok::<_, ToolError>("job done")
                }
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("wait", move |ctx: CallCtx, _: NoArgs| {
                let cancelled = cancelled.clone();
                async move {
                    ctx.run_as_task().await;
                    let _ends = EndsOnCancel(ctx.clone(), cancelled);
                    ctx.cancelled().await;
                    Ok::<_, ToolError>("cancelled")
                }
            })
            .task_support(TaskSupport::Optional),
        )
        .build()
}

fn cluster(store: Arc<dyn Store>) -> Arc<Cluster> {
    Arc::new(
        common::cluster::cluster(store, &[7])
            .with_task_timing(Duration::from_millis(50), Duration::from_millis(300)),
    )
}

/// A replica over `server` in `cluster`: its listener, shut down to stop the replica.
async fn replica(server: Arc<Server>, cluster: Arc<Cluster>) -> Served {
    let service = mcpwire_gateway::cluster::in_cluster(Service::from_server(server), cluster);
    serve(service, serve::http()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_created_on_one_replica_is_answered_and_cancelled_by_another() {
    let (release, cancelled) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let shared = cluster(memory());
    let a = replica(server(release.clone(), cancelled.clone()), shared.clone()).await;
    let b = replica(server(release.clone(), cancelled.clone()), shared.clone()).await;
    let (on_a, on_b) = (client(&a.url()).await, client(&b.url()).await);

    let created = request(&on_a, "tools/call", json!({"name": "job"})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    // Published before the client learned the id: the other replica knows it at once.
    let there = request(&on_b, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(there["status"], "working", "{there}");
    assert_eq!(there["taskId"], id.as_str());
    release.notify_one();
    let done = wait_for(&on_b, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "job done", "{done}");

    // Cancelled through B, running on A.
    let created = request(&on_a, "tools/call", json!({"name": "wait"})).await;
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let ack = request(&on_b, "tasks/cancel", json!({"taskId": id})).await;
    assert!(ack.get("status").is_none(), "an empty ack: {ack}");
    // The executor takes relayed requests before answering `tasks/get` about a running
    // task: asked right away, it no longer says `working`.
    let at_once = request(&on_a, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(at_once["status"], "cancelled", "{at_once}");
    tokio::time::timeout(STEP, cancelled.notified())
        .await
        .expect("the tool on A saw the cancellation relayed from B");
    wait_for(&on_b, &id, "cancelled").await;
    wait_for(&on_a, &id, "cancelled").await;

    // An id no replica published is unknown everywhere.
    let unknown = tokio::time::timeout(STEP, on_b.request("tasks/get", json!({"taskId": "nope"})))
        .await
        .expect("answered");
    assert!(unknown.is_err(), "{unknown:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_whose_replica_stopped_fails_instead_of_working_forever() {
    let (release, cancelled) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let store = memory();
    let a = replica(
        server(release.clone(), cancelled.clone()),
        cluster(store.clone()),
    )
    .await;
    let b = replica(
        server(release.clone(), cancelled.clone()),
        cluster(store.clone()),
    )
    .await;
    let on_b = client(&b.url()).await;
    let id = {
        let on_a = client(&a.url()).await;
        let created = request(&on_a, "tools/call", json!({"name": "job"})).await;
        let id = created["taskId"].as_str().expect("taskId").to_owned();
        on_a.close().await.ok();
        id
    };
    assert_eq!(
        request(&on_b, "tasks/get", json!({"taskId": id})).await["status"],
        "working"
    );

    // Replica A stops (its listener and task store go; the tool never finishes): within
    // the executor timeout its task is answered failed, with an error saying why.
    a.shutdown().await.expect("replica A stops");
    let failed = wait_for(&on_b, &id, "failed").await;
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped"), "{failed}");
    assert!(failed.get("result").is_none(), "{failed}");
    // Every replica now answers the same.
    let again = request(&on_b, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(again["status"], "failed");

    // A crashed replica leaves exactly this behind: a running task and no heartbeat.
    let orphan = json!({"owner": "0123456789abcdef", "live": true, "task": {
        "taskId": "orphan", "status": "working", "ttlMs": 60000, "pollIntervalMs": 250,
        "createdAt": "2026-11-26T00:00:00.000Z", "lastUpdatedAt": "2026-11-26T00:00:00.000Z"}});
    store
        .put(
            "t:orphan",
            orphan.to_string().as_bytes(),
            Duration::from_secs(60),
        )
        .await
        .unwrap();
    let failed = request(&on_b, "tasks/get", json!({"taskId": "orphan"})).await;
    assert_eq!(failed["status"], "failed", "{failed}");
}
