//! Tasks through the gateway: an upstream that offers the tasks extension runs its own
//! tasks; the gateway passes the client's opt-in up, the upstream's `CreateTaskResult`
//! down, and `tasks/get|cancel` for its ids back to it — served alone (the task ids are the
//! upstream's) and federated with a native backend (the ids are `up.{id}`, and the native
//! backend's tasks are still the gateway router's own).
//!
//! Everything runs over Streamable HTTP in this process: the upstream server, the gateway's
//! listener and a 2026-07-28 client declaring the extension.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcpwire_client::{Client, ClientError, Target};
use mcpwire_gateway::{
    BackendSource, BackendSpec, Gateway, GatewayConfig, ListenerSpec, Natives, UpstreamSpec,
};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Router, Server, TaskConfig, TaskSupport, ToolError, tool};
use mcpwire_server::Service;
use serde_json::json;

use common::tasks::{EndsOnCancel, STEP, client, request, wait_for};
use mcpwire_testkit::serve::{self, serve};
use tokio::sync::Notify;

/// An upstream running tasks itself: `wait` becomes a task at once and runs until it is
/// cancelled (then notifies `cancelled`); `job` becomes a task and finishes.
fn tasking_upstream(cancelled: Arc<Notify>) -> Service {
    let server = Server::builder(Implementation::new("tasker", "1"))
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
        .tool(
            tool("job", |ctx: CallCtx, _: NoArgs| async move {
                ctx.run_as_task().await;
                Ok::<_, ToolError>(format!("done as a task: {}", ctx.is_task()))
            })
            .task_support(TaskSupport::Required),
        )
        .build();
    let info = server.server_info().clone();
    Service::new(
        Router::new(server).with_tasks(TaskConfig::default()),
        info,
        None,
    )
}

/// A native backend whose `slow` tool the gateway's own router makes a task of.
fn natives() -> Natives {
    Natives::new().with("alpha", || {
        Server::builder(Implementation::new("alpha", "1"))
            .tool(
                tool("slow", |_: CallCtx, _: NoArgs| async move {
                    // A deliberately slow tool (what the router makes a task of), not a wait.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok::<_, ToolError>("alpha finished")
                })
                .task_support(TaskSupport::Optional),
            )
            .build()
    })
}

/// A gateway over `config`, its first listener's service served over HTTP; its URL and
/// the gateway (kept alive by the caller).
async fn gateway(config: GatewayConfig) -> (String, Gateway) {
    let g = Gateway::start(config, natives()).await.expect("starts");
    let service = g.service(0).expect("a listener").clone();
    let url = serve(service, serve::http()).await.detach();
    (url, g)
}

/// Creates, polls and cancels upstream tasks through the gateway at `url`, whose tools
/// are `{prefix}wait` and `{prefix}job` and whose task ids are the upstream's `own` ids
/// as `exposed` shows them.
async fn upstream_tasks_pass_through(
    url: &str,
    upstream: &Client,
    prefix: &str,
    own: impl Fn(&str) -> String,
    cancelled: &Notify,
) {
    let c = client(url).await;
    let created = request(&c, "tools/call", json!({"name": format!("{prefix}job")})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let done = wait_for(&c, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"], "done as a task: true",
        "the upstream ran it as its own task: {done}"
    );
    // The upstream holds the task under its own id.
    let there = request(upstream, "tasks/get", json!({"taskId": own(&id)})).await;
    assert_eq!(there["status"], "completed", "{there}");

    let created = request(&c, "tools/call", json!({"name": format!("{prefix}wait")})).await;
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    let working = request(&c, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(working["status"], "working", "{working}");
    assert_eq!(working["taskId"], id.as_str());
    let ack = request(&c, "tasks/cancel", json!({"taskId": id})).await;
    for key in ["taskId", "status", "result", "error"] {
        assert!(ack.get(key).is_none(), "an empty ack: {ack}");
    }
    tokio::time::timeout(STEP, cancelled.notified())
        .await
        .expect("the upstream's tool saw the cancellation");
    wait_for(&c, &id, "cancelled").await;
    let there = request(upstream, "tasks/get", json!({"taskId": own(&id)})).await;
    assert_eq!(there["status"], "cancelled");
    c.close().await.ok();
}

#[tokio::test]
async fn an_upstreams_own_tasks_are_created_polled_and_cancelled_through_the_gateway() {
    let cancelled = Arc::new(Notify::new());
    let up_url_served = serve(tasking_upstream(cancelled.clone()), serve::http()).await;
    let up_url = up_url_served.url();
    let upstream = client(&up_url).await;
    let spec = UpstreamSpec::new(Target::Url(up_url.clone()));
    let config = GatewayConfig::new(
        vec![ListenerSpec::parse("http://127.0.0.1:0/mcp").expect("listener")],
        vec![BackendSpec::new("up", BackendSource::Upstream(spec))],
    );
    let (url, _g) = gateway(config).await;
    upstream_tasks_pass_through(&url, &upstream, "", |id| id.to_owned(), &cancelled).await;
}

#[tokio::test]
async fn federated_the_ids_name_the_member_and_native_tasks_stay_the_gateways() {
    let cancelled = Arc::new(Notify::new());
    let up_url_served = serve(tasking_upstream(cancelled.clone()), serve::http()).await;
    let up_url = up_url_served.url();
    let upstream = client(&up_url).await;
    let text = format!(
        "[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\
         [backends.up]\nurl = \"{up_url}\"\n[backends.alpha]\nnative = \"alpha\"\n"
    );
    let config = GatewayConfig::from_toml(std::path::Path::new("mcpwire.toml"), &text)
        .expect("valid configuration");
    let (url, g) = gateway(config).await;
    assert!(g.federation().is_some());
    let own = |id: &str| {
        id.strip_prefix("up.")
            .unwrap_or_else(|| panic!("{id} names the member"))
            .to_owned()
    };
    upstream_tasks_pass_through(&url, &upstream, "up_", own, &cancelled).await;

    // The native member's task is the gateway router's own.
    let c = client(&url).await;
    let created = request(&c, "tools/call", json!({"name": "alpha_slow"})).await;
    let id = created["taskId"].as_str().expect("taskId").to_owned();
    assert!(!id.contains('.'), "not a member's id: {id}");
    let done = wait_for(&c, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "alpha finished");
    let e = c
        .request("tasks/get", json!({"taskId": "up.nope"}))
        .await
        .expect_err("unknown upstream task");
    match e {
        ClientError::Rpc { error, .. } => assert_eq!(error.code, -32602, "{error:?}"),
        other => panic!("an unknown task is invalid params: {other}"),
    }
}
