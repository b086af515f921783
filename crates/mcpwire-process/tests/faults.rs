//! Fault tests: a scripted tool process (`protomcp-test-peer`) misbehaves in every way the
//! host must survive — garbage frames, oversize declared lengths, no handshake, log floods,
//! exits mid-call, oversize raw results, decompression bombs.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::{McpError, Method, Reply, to_raw};
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig, StartError};
use mcpwire_router::{CallCtx, McpCall, Router};
use serde_json::{Value, json};

const PEER: &str = env!("CARGO_BIN_EXE_protomcp-test-peer");

async fn start(
    mode: &str,
    tweak: impl FnOnce(&mut ProcessConfig),
) -> Result<Arc<ProcessBackend>, StartError> {
    let mut cfg = ProcessConfig::new(Launch {
        file: "peer-arg".into(),
        runtime: Some(format!("{PEER} {mode}")),
    });
    tweak(&mut cfg);
    ProcessBackend::start(cfg).await
}

/// Calls `echo` and returns the tool result as the client sees it (a tool failure is an
/// `isError` result; bounded: a hang fails the test).
async fn call(router: &Router, text: &str) -> Value {
    let fut = router.call(McpCall {
        method: Method::parse("tools/call"),
        params: Some(to_raw(
            &json!({"name": "echo", "arguments": {"text": text}}),
        )),
        ctx: CallCtx::detached(),
    });
    match tokio::time::timeout(Duration::from_secs(30), fut).await {
        Ok(Ok(Reply::Complete(raw))) => serde_json::from_str(raw.get()).expect("result is JSON"),
        Ok(Err(McpError::ToolFailed { message, .. })) => {
            json!({"isError": true, "content": [{"type": "text", "text": message}]})
        }
        other => panic!("unexpected answer: {other:?}"),
    }
}

fn text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

fn is_error(v: &Value) -> bool {
    v["isError"] == json!(true)
}

#[tokio::test]
async fn many_calls_in_flight_are_correlated() {
    let backend = start("echo", |_| {}).await.expect("starts");
    assert_eq!(backend.tool_names(), ["echo"]);
    let router = Router::new(backend);
    let calls = (0..64).map(|i| {
        let router = router.clone();
        async move { (i, call(&router, &format!("msg {i}")).await) }
    });
    for (i, r) in futures::future::join_all(calls).await {
        assert!(!is_error(&r), "{r}");
        assert_eq!(text(&r), format!("msg {i}"));
    }
}

#[tokio::test]
async fn garbage_frame_is_skipped_and_the_stream_stays_in_sync() {
    let router = Router::new(start("garbage", |_| {}).await.expect("starts"));
    for i in 0..3 {
        let r = call(&router, &format!("after garbage {i}")).await;
        assert_eq!(text(&r), format!("after garbage {i}"));
    }
}

#[tokio::test]
async fn oversize_declared_length_fails_the_call_without_allocating() {
    let router = Router::new(
        start("oversize", |c| c.max_envelope = 1 << 20)
            .await
            .expect("starts"),
    );
    let r = call(&router, "x").await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("limit"), "{r}");
}

#[tokio::test]
async fn a_process_that_never_completes_the_handshake_is_an_error() {
    let err = start("no-handshake", |c| {
        c.handshake_timeout = Duration::from_millis(500)
    })
    .await
    .expect_err("must not start");
    assert!(err.to_string().contains("handshake"), "{err}");
}

#[tokio::test]
async fn a_file_that_is_not_runnable_is_an_error() {
    let cfg = ProcessConfig::new(Launch {
        file: "/nonexistent/tool".into(),
        runtime: None,
    });
    let err = ProcessBackend::start(cfg)
        .await
        .expect_err("must not start");
    assert!(err.to_string().contains("/nonexistent/tool"), "{err}");
}

#[tokio::test]
async fn a_log_flood_does_not_stop_the_answer() {
    let router = Router::new(start("log-flood", |_| {}).await.expect("starts"));
    let r = call(&router, "after the flood").await;
    assert_eq!(text(&r), "after the flood");
}

#[tokio::test]
async fn exit_mid_call_answers_restarts_and_then_reports_a_crash_loop() {
    let router = Router::new(start("exit", |_| {}).await.expect("starts"));
    let first = call(&router, "x").await;
    assert!(
        is_error(&first) && text(&first).contains("exited"),
        "{first}"
    );
    // Every restarted process exits on its call too: after a few restarts the host stops
    // trying and answers with the crash-loop reason at once.
    let mut saw_loop = false;
    for _ in 0..10 {
        let r = call(&router, "x").await;
        assert!(is_error(&r), "{r}");
        if text(&r).contains("failed 5 times") {
            saw_loop = true;
            break;
        }
    }
    assert!(saw_loop, "no crash-loop report");
}

#[tokio::test]
async fn raw_result_over_the_limit_is_refused_and_the_stream_continues() {
    let router = Router::new(
        start("raw-big", |c| c.max_raw = 1 << 20)
            .await
            .expect("starts"),
    );
    for _ in 0..2 {
        let r = call(&router, "x").await;
        assert!(is_error(&r), "{r}");
        assert!(text(&r).contains("over the"), "{r}");
    }
}

#[tokio::test]
async fn raw_result_within_the_limit_arrives_whole() {
    let router = Router::new(start("raw-big", |_| {}).await.expect("starts"));
    let r = call(&router, "x").await;
    assert_eq!(text(&r), "z".repeat(2 << 20));
}

#[tokio::test]
async fn a_zstd_result_that_understates_its_size_is_refused() {
    let router = Router::new(start("raw-bomb", |_| {}).await.expect("starts"));
    let r = call(&router, "x").await;
    assert!(is_error(&r), "{r}");
    assert!(text(&r).contains("header says"), "{r}");
}

#[tokio::test]
async fn chunked_results_are_reassembled_or_refused_over_the_limit() {
    let router = Router::new(start("chunked", |_| {}).await.expect("starts"));
    for i in 0..2 {
        let r = call(&router, &format!("part {i} ")).await;
        assert_eq!(text(&r), format!("part {i} {}", "c".repeat(300_000)));
    }
    let router = Router::new(
        start("chunked", |c| c.max_raw = 100_000)
            .await
            .expect("starts"),
    );
    for _ in 0..2 {
        let r = call(&router, "x").await;
        assert!(is_error(&r) && text(&r).contains("over the"), "{r}");
    }
}

#[tokio::test]
async fn a_tool_declaring_task_support_runs_as_an_mcp_task() {
    use mcpwire_model::Revision;
    use mcpwire_model::types::ClientCapabilities;
    use mcpwire_router::{TASKS_EXTENSION, TaskConfig};
    use tokio_util::sync::CancellationToken;

    let router = Router::new(start("slow-task", |_| {}).await.expect("starts"))
        .with_tasks(TaskConfig::default());
    let caps = Arc::new(ClientCapabilities {
        extensions: Some(json!({ TASKS_EXTENSION: {} })),
        ..Default::default()
    });
    let call = |method: &str, params: Value| {
        let ctx = CallCtx::new(
            Revision::V2026_07_28,
            caps.clone(),
            CancellationToken::new(),
            None,
        );
        router.call(McpCall {
            method: Method::parse(method),
            params: Some(to_raw(&params)),
            ctx,
        })
    };
    let as_json = |r: Result<Reply, McpError>| -> Value {
        match r {
            Ok(Reply::Complete(raw)) | Ok(Reply::InputRequired(raw)) => {
                serde_json::from_str(raw.get()).expect("JSON")
            }
            Err(e) => panic!("{e}"),
        }
    };
    let created = as_json(
        call(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "as a task"}}),
        )
        .await,
    );
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().expect("task id").to_owned();
    let mut done = Value::Null;
    for _ in 0..600 {
        done = as_json(call("tasks/get", json!({ "taskId": id })).await);
        if done["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "as a task");
}
