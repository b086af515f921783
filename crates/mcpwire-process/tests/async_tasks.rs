//! Tool calls that run as tasks: a tool declaring `task_support` becomes an MCP task, and a
//! process that answers a call with `create_task` (envelope frames 19–23) is followed through
//! `task_status` polls or pushes to its `task_result`, cancelled with `task_cancel`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{
    CallEvent, ClientAsk, McpError, Method, Raw, Reply, RequestId, Revision, to_raw,
};
use mcpwire_router::{BoxFuture, CallCtx, McpCall, Peer, Router, TASKS_EXTENSION, TaskConfig};
use mcpwire_testkit::wait::{wait_for_async, wait_until_async};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

mod common;
use common::{call, call_with, is_error, start, text};

/// How long a task may take to reach a state before a test fails.
const WAIT: Duration = Duration::from_secs(30);

/// One progress notification: progress, total, message.
type Progress = (f64, Option<f64>, Option<String>);

/// A client that records the progress it is sent.
#[derive(Default)]
struct Recorder(Mutex<Vec<Progress>>);

impl Peer for Recorder {
    fn event(&self, event: CallEvent) {
        if let CallEvent::Progress(p) = event {
            let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
            seen.push((p.progress, p.total, p.message));
        }
    }

    fn ask(&self, _: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        Box::pin(async { Err(McpError::Internal("no client here".into())) })
    }
}

fn client_ctx(peer: Arc<Recorder>, cancel: CancellationToken) -> CallCtx {
    CallCtx::new(
        Revision::V2025_11_25,
        Arc::new(ClientCapabilities::default()),
        cancel,
        Some(peer),
    )
    .with_progress_token(Some(RequestId::Str("p".into())))
}

#[tokio::test]
async fn a_process_task_is_polled_to_its_result_with_progress() {
    let router = Router::new(start("async-task", |_| {}).await.expect("starts"));
    let peer = Arc::new(Recorder::default());
    let r = call_with(
        &router,
        "hello",
        client_ctx(peer.clone(), CancellationToken::new()),
    )
    .await;
    assert!(!is_error(&r), "{r}");
    assert_eq!(text(&r), "task t1: hello");
    let seen = peer.0.lock().expect("lock").clone();
    assert_eq!(
        seen,
        [
            (1.0, Some(3.0), Some("step 1".into())),
            (2.0, Some(3.0), Some("step 2".into())),
            (3.0, Some(3.0), None),
        ]
    );
    // Calls in flight each get their own task.
    let calls = (0..8).map(|i| {
        let router = router.clone();
        async move { (i, call(&router, &format!("n{i}")).await) }
    });
    for (i, r) in futures::future::join_all(calls).await {
        assert!(text(&r).ends_with(&format!(": n{i}")), "{r}");
    }
    assert_eq!(text(&call(&router, "cancelled?").await), "");
}

#[tokio::test]
async fn pushed_status_updates_complete_a_task_the_process_never_polls() {
    let router = Router::new(start("async-push", |_| {}).await.expect("starts"));
    let peer = Arc::new(Recorder::default());
    let ctx = client_ctx(peer.clone(), CancellationToken::new());
    let r = call_with(&router, "pushed", ctx).await;
    assert_eq!(text(&r), "task t1: pushed", "{r}");
    // Pushes are coalesced (latest wins), so "halfway" may be skipped; "done" is not.
    let seen = peer.0.lock().expect("lock").clone();
    assert_eq!(seen.last(), Some(&(2.0, Some(2.0), Some("done".into()))));
}

#[tokio::test]
async fn failed_and_unknown_task_states_are_tool_errors() {
    let router = Router::new(start("async-task", |_| {}).await.expect("starts"));
    let failed = call(&router, "fail").await;
    assert!(is_error(&failed) && text(&failed) == "it broke", "{failed}");
    let weird = call(&router, "weird").await;
    assert!(is_error(&weird), "{weird}");
    assert!(text(&weird).contains("unknown task state"), "{weird}");
    // The failed task ended by itself; the one in an unknown state is cancelled.
    assert_eq!(text(&call(&router, "cancelled?").await), "t2");
}

#[tokio::test]
async fn cancelling_the_call_cancels_the_process_task() {
    let router = Router::new(start("async-task", |_| {}).await.expect("starts"));
    let peer = Arc::new(Recorder::default());
    let cancel = CancellationToken::new();
    let waiting = call_with(&router, "hang", client_ctx(peer.clone(), cancel.clone()));
    let canceller = async {
        // Cancel once the task has reported that it is waiting.
        let reported = async || !peer.0.lock().expect("lock").is_empty();
        wait_until_async(WAIT, "the task reported waiting", reported).await;
        cancel.cancel();
    };
    let (r, ()) = tokio::join!(waiting, canceller);
    assert!(is_error(&r), "{r}");
    assert_eq!(text(&call(&router, "cancelled?").await), "t1");
}

/// Calls `method` as a 2026-07-28 client that declared the tasks extension.
async fn task_client(router: &Router, method: &str, params: Value) -> Value {
    let caps = ClientCapabilities {
        extensions: Some(json!({ TASKS_EXTENSION: {} })),
        ..Default::default()
    };
    let ctx = CallCtx::new(
        Revision::V2026_07_28,
        Arc::new(caps),
        CancellationToken::new(),
        None,
    );
    let fut = router.call(McpCall::new(
        Method::parse(method),
        Some(to_raw(&params)),
        ctx,
    ));
    match tokio::time::timeout(Duration::from_secs(30), fut).await {
        Ok(Ok(Reply::Complete(raw))) | Ok(Ok(Reply::InputRequired(raw))) => {
            serde_json::from_str(raw.get()).expect("JSON")
        }
        other => panic!("{method}: {other:?}"),
    }
}

/// Polls `tasks/get` until the task is no longer working (bounded by [`WAIT`]).
async fn settle(router: &Router, id: &str) -> Value {
    wait_for_async(WAIT, &format!("task {id} settles"), async || {
        let got = task_client(router, "tasks/get", json!({ "taskId": id })).await;
        (got["status"] != "working").then_some(got)
    })
    .await
}

async fn create(router: &Router, text: &str) -> String {
    let args = json!({"name": "echo", "arguments": {"text": text}});
    let created = task_client(router, "tools/call", args).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("task id").to_owned()
}

#[tokio::test]
async fn a_tool_declaring_task_support_runs_as_an_mcp_task() {
    let router = Router::new(start("slow-task", |_| {}).await.expect("starts"))
        .with_tasks(TaskConfig::default());
    let id = create(&router, "as a task").await;
    let done = settle(&router, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "as a task");
}

#[tokio::test]
async fn a_process_task_is_an_mcp_task_and_tasks_cancel_reaches_the_process() {
    let router = Router::new(start("async-task", |_| {}).await.expect("starts"))
        .with_tasks(TaskConfig::default());
    let id = create(&router, "mapped").await;
    let done = settle(&router, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "task t1: mapped");

    let hung = create(&router, "hang").await;
    wait_until_async(WAIT, "the task reports waiting", async || {
        let seen = task_client(&router, "tasks/get", json!({ "taskId": hung })).await;
        seen["statusMessage"] == "waiting"
    })
    .await;
    task_client(&router, "tasks/cancel", json!({ "taskId": hung })).await;
    assert_eq!(settle(&router, &hung).await["status"], "cancelled");
    // The cancel reached the process (bounded wait: the ack may precede the frame).
    let gone = wait_for_async(
        Duration::from_secs(3),
        "the cancel reaches the process",
        async || {
            let gone = text(&call(&router, "cancelled?").await);
            (!gone.is_empty()).then_some(gone)
        },
    )
    .await;
    assert_eq!(gone, "t2");
}
