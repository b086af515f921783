//! The tasks extension through the `Router`: when calls become tasks, `tasks/get|update|
//! cancel`, input inside tasks, gating, limits and expiry.
//!
//! Every test runs on tokio's paused clock: the tools' sleeps and the polls' waits advance
//! it only when nothing else can run, so timings (task TTLs included) are exact.

mod common;

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::Implementation;
use mcpwire_model::{ClientAsk, Revision, to_raw};
use mcpwire_router::{
    CallCtx, NoArgs, Router, Server, TASKS_EXTENSION, TaskConfig, TaskSupport, ToolError, tool,
};
use serde_json::{Value, json};

use common::{call, code};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Millis {
    ms: u64,
}

fn server() -> Arc<Server> {
    Server::builder(Implementation::new("t", "1"))
        .tool(tool("sync", |_c: CallCtx, _: NoArgs| async move {
            Ok::<_, ToolError>("now")
        }))
        .tool(
            tool("sleep", |_c: CallCtx, a: Millis| async move {
                if a.ms > 0 {
                    tokio::time::sleep(Duration::from_millis(a.ms)).await;
                }
                Ok::<_, ToolError>(format!("slept {}", a.ms))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("required", |_c: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Ok::<_, ToolError>("done")
            })
            .task_support(TaskSupport::Required),
        )
        .tool(
            tool("fails", |_c: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                Err::<String, _>(ToolError::new("it broke"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("panics", |_c: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                if true {
                    panic!("boom");
                }
                Ok::<_, ToolError>("unreachable")
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("asks", |c: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                c.progress(1.0, None, Some("asking".into()));
                let ask = |k: &'static str| ClientAsk {
                    method: "elicitation/create".into(),
                    params: Some(to_raw(&json!({"message": k, "requestedSchema": {}}))),
                };
                let (a, b) = tokio::join!(c.ask(ask("a")), c.ask(ask("b")));
                Ok::<_, ToolError>(format!("{}|{}", a?.get(), b?.get()))
            })
            .task_support(TaskSupport::Optional),
        )
        .build()
}

fn router(config: TaskConfig) -> Router {
    Router::new(server()).with_tasks(config)
}

async fn wait_for(r: &Router, id: &str, status: &str) -> Value {
    for _ in 0..500 {
        let t = call(r, true, "tasks/get", json!({ "taskId": id }))
            .await
            .unwrap();
        if t["status"] == status {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("task {id} never reached {status}");
}

#[tokio::test(start_paused = true)]
async fn advertises_the_extension() {
    let r = router(TaskConfig::default());
    assert!(r.info().capabilities.extensions.as_ref().unwrap()[TASKS_EXTENSION].is_object());
    assert!(
        Router::new(server())
            .info()
            .capabilities
            .extensions
            .is_none()
    );
}

#[tokio::test(start_paused = true)]
async fn quick_calls_stay_in_their_request() {
    let r = router(TaskConfig::default());
    let v = call(&r, true, "tools/call", json!({"name": "sync"}))
        .await
        .unwrap();
    assert!(v.get("taskId").is_none());
    assert_eq!(v["content"][0]["text"], "now");
    let v = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 0}}),
    )
    .await
    .unwrap();
    assert!(v.get("taskId").is_none(), "{v}");
}

#[tokio::test(start_paused = true)]
async fn slow_calls_become_tasks_and_inline_their_result() {
    let r = router(TaskConfig::default());
    let created = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 30}}),
    )
    .await
    .unwrap();
    assert_eq!(created["resultType"], "task");
    assert_eq!(created["status"], "working");
    for k in ["createdAt", "lastUpdatedAt"] {
        assert!(created[k].as_str().unwrap().ends_with('Z'), "{created}");
    }
    assert!(created["ttlMs"].as_u64().unwrap() > 0);
    assert!(created["pollIntervalMs"].as_u64().unwrap() > 0);
    assert!(created.get("result").is_none());
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32);
    let now = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(now["taskId"], id.as_str());
    let done = wait_for(&r, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 30");
    assert!(done.get("error").is_none());
}

#[tokio::test(start_paused = true)]
async fn tool_errors_complete_and_panics_fail() {
    let r = router(TaskConfig::default());
    let t = call(&r, true, "tools/call", json!({"name": "fails"}))
        .await
        .unwrap();
    let done = wait_for(&r, t["taskId"].as_str().unwrap(), "completed").await;
    assert_eq!(done["result"]["isError"], true);
    let t = call(&r, true, "tools/call", json!({"name": "panics"}))
        .await
        .unwrap();
    let failed = wait_for(&r, t["taskId"].as_str().unwrap(), "failed").await;
    assert_eq!(failed["error"]["code"], -32603);
    assert!(failed.get("result").is_none());
}

#[tokio::test(start_paused = true)]
async fn input_inside_a_task_is_asked_and_answered_by_key() {
    let r = router(TaskConfig::default());
    let t = call(&r, true, "tools/call", json!({"name": "asks"}))
        .await
        .unwrap();
    let id = t["taskId"].as_str().unwrap().to_owned();
    let mut waiting = wait_for(&r, &id, "input_required").await;
    for _ in 0..100 {
        if waiting["inputRequests"].as_object().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        waiting = call(&r, true, "tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
    }
    let keys: Vec<String> = waiting["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys.len(), 2, "{waiting}");
    assert_eq!(
        waiting["inputRequests"][&keys[0]]["method"],
        "elicitation/create"
    );
    assert_eq!(waiting["statusMessage"], "asking");
    let ack = call(
        &r,
        true,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {(keys[0].clone()): {"action": "accept"}, "stray": {}}}),
    )
    .await
    .unwrap();
    assert_eq!(ack, json!({}));
    let partial = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(partial["status"], "input_required");
    let left: Vec<&String> = partial["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(left, vec![&keys[1]]);
    call(
        &r,
        true,
        "tasks/update",
        json!({"taskId": id, "inputResponses": {(keys[1].clone()): {"action": "decline"}}}),
    )
    .await
    .unwrap();
    let done = wait_for(&r, &id, "completed").await;
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("accept") && text.contains("decline"),
        "{text}"
    );
    let bad = call(&r, true, "tasks/update", json!({"taskId": id}))
        .await
        .unwrap_err();
    assert_eq!(code(bad), -32602);
}

#[tokio::test(start_paused = true)]
async fn cancel_is_acked_idempotent_and_unknown_ids_are_invalid() {
    let r = router(TaskConfig::default());
    let t = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}}),
    )
    .await
    .unwrap();
    let id = t["taskId"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        let ack = call(&r, true, "tasks/cancel", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(ack, json!({}));
    }
    let got = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(got["status"], "cancelled");
    for m in ["tasks/get", "tasks/cancel"] {
        let e = call(&r, true, m, json!({"taskId": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(code(e), -32602);
    }
    for m in ["tasks/result", "tasks/list"] {
        let e = call(&r, true, m, json!({"taskId": id})).await.unwrap_err();
        assert_eq!(code(e), -32601);
    }
}

#[tokio::test(start_paused = true)]
async fn without_the_extension() {
    let r = router(TaskConfig::default());
    let v = call(
        &r,
        false,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 5}}),
    )
    .await
    .unwrap();
    assert_eq!(v["content"][0]["text"], "slept 5");
    let e = call(&r, false, "tools/call", json!({"name": "required"}))
        .await
        .unwrap_err();
    let wire = e.to_wire(Revision::V2026_07_28);
    assert_eq!(wire.code, -32021);
    let data: Value = serde_json::from_str(wire.data.unwrap().get()).unwrap();
    assert!(data["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let e = call(&r, false, m, json!({"taskId": "x", "inputResponses": {}}))
            .await
            .unwrap_err();
        assert_eq!(code(e), -32021, "{m}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_full_store_runs_calls_in_their_request() {
    let r = router(TaskConfig {
        max_tasks: 1,
        ..TaskConfig::default()
    });
    let first = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60000}}),
    )
    .await
    .unwrap();
    assert_eq!(first["resultType"], "task");
    let second = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 5}}),
    )
    .await
    .unwrap();
    assert_eq!(second["content"][0]["text"], "slept 5");
    call(&r, true, "tasks/cancel", json!({"taskId": first["taskId"]}))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn finished_tasks_expire_after_their_ttl() {
    let r = router(TaskConfig {
        ttl: Duration::from_millis(50),
        max_tasks: 1,
        ..TaskConfig::default()
    });
    let t = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    )
    .await
    .unwrap();
    let id = t["taskId"].as_str().unwrap().to_owned();
    wait_for(&r, &id, "completed").await;
    // Paused time: the task finished at most a poll (5 ms) ago; 40 ms on it is still kept.
    tokio::time::advance(Duration::from_millis(40)).await;
    let kept = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(kept["status"], "completed");
    tokio::time::advance(Duration::from_millis(10)).await;
    let e = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap_err();
    assert_eq!(code(e), -32602);
    // The expired task no longer counts against the limit.
    let again = call(
        &r,
        true,
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 1}}),
    )
    .await
    .unwrap();
    assert_eq!(again["resultType"], "task");
}
