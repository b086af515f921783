//! Tasks a backend runs itself (an upstream server offering the tasks extension, behind a
//! gateway): the router passes the client's opt-in on, the backend's `CreateTaskResult`
//! back, and `tasks/*` for ids it does not hold to the backend — while tools whose tasks
//! the router runs keep getting the router's own tasks from the same router.
//!
//! Every test runs on tokio's paused clock.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_model::types::{ListChangedCapability, ServerCapabilities};
use mcpwire_model::{ClientAsk, McpError, Reply, to_raw};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, Router, TASKS_EXTENSION, TaskConfig,
    TaskSupport, ToolRouting,
};
use serde_json::{Value, json};

use common::{call, code};

/// What the backend saw: `tools/call NAME opt-in=BOOL` and `tasks/METHOD ID`.
type Seen = Arc<Mutex<Vec<String>>>;

/// A backend that creates and answers tasks of its own for `upstream_job` and
/// `asks_first`, and leaves `router_job`'s to the router.
struct TaskingBackend {
    info: BackendInfo,
    routing: HashMap<&'static str, Arc<ToolRouting>>,
    seen: Seen,
}

fn tasking_backend() -> (Arc<TaskingBackend>, Seen) {
    let routing = |task_support, backend_runs_tasks| {
        Arc::new(ToolRouting {
            task_support,
            backend_runs_tasks,
            header_params: Vec::new(),
        })
    };
    let seen = Seen::default();
    let backend = TaskingBackend {
        info: BackendInfo {
            name: "upstream".into(),
            capabilities: ServerCapabilities {
                tools: Some(ListChangedCapability::default()),
                extensions: Some(json!({ TASKS_EXTENSION: {} })),
                ..Default::default()
            },
        },
        routing: HashMap::from([
            ("upstream_job", routing(TaskSupport::Optional, true)),
            ("asks_first", routing(TaskSupport::Required, true)),
            ("router_job", routing(TaskSupport::Optional, false)),
        ]),
        seen: seen.clone(),
    };
    (Arc::new(backend), seen)
}

fn created(id: &str) -> Reply {
    Reply::Complete(to_raw(&json!({
        "resultType": "task", "taskId": id, "status": "working",
        "createdAt": "2026-11-26T00:00:00.000Z", "lastUpdatedAt": "2026-11-26T00:00:00.000Z",
        "ttlMs": 60000,
    })))
}

impl Backend for TaskingBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.routing.get(name).cloned()
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let seen = self.seen.clone();
        Box::pin(async move {
            match req {
                BackendRequest::CallTool { name, .. } => {
                    let opt_in = ctx
                        .client_capabilities()
                        .extensions
                        .as_ref()
                        .is_some_and(|e| e.get(TASKS_EXTENSION).is_some());
                    seen.lock()
                        .unwrap()
                        .push(format!("tools/call {name} opt-in={opt_in}"));
                    // The round trip to the server that runs the tool: the call waits.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    match name.as_str() {
                        "upstream_job" if opt_in => Ok(created("up-1")),
                        "upstream_job" => Ok(Reply::Complete(to_raw(
                            &json!({"content": [{"type": "text", "text": "in the request"}]}),
                        ))),
                        "asks_first" => {
                            let ask = ClientAsk {
                                method: "elicitation/create".into(),
                                params: Some(to_raw(&json!({
                                    "message": "your name?", "requestedSchema": {}
                                }))),
                            };
                            ctx.ask_as(Some("user_name"), ask).await?;
                            Ok(created("up-2"))
                        }
                        _ => {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(Reply::Complete(to_raw(
                                &json!({"content": [{"type": "text", "text": "router ran it"}]}),
                            )))
                        }
                    }
                }
                BackendRequest::Other { method, params } => {
                    let p: Value = serde_json::from_str(params.as_deref().unwrap().get()).unwrap();
                    let id = p["taskId"].as_str().unwrap_or_default().to_owned();
                    seen.lock().unwrap().push(format!("{method} {id}"));
                    match method.as_str() {
                        "tasks/get" => Ok(Reply::Complete(to_raw(
                            &json!({"taskId": id, "status": "working"}),
                        ))),
                        _ => Ok(Reply::Complete(to_raw(&json!({})))),
                    }
                }
                other => Err(McpError::MethodNotFound(format!("{other:?}"))),
            }
        })
    }
}

fn taken(seen: &Seen) -> Vec<String> {
    std::mem::take(&mut *seen.lock().unwrap())
}

#[tokio::test(start_paused = true)]
async fn the_backends_task_is_passed_through_and_so_are_its_task_requests() {
    let (backend, seen) = tasking_backend();
    let r = Router::new(backend).with_tasks(TaskConfig::default());
    let t = call(&r, true, "tools/call", json!({"name": "upstream_job"}))
        .await
        .unwrap();
    assert_eq!(t["resultType"], "task");
    assert_eq!(t["taskId"], "up-1", "the backend's own result: {t}");
    assert_eq!(taken(&seen), ["tools/call upstream_job opt-in=true"]);

    let got = call(&r, true, "tasks/get", json!({"taskId": "up-1"}))
        .await
        .unwrap();
    assert_eq!(got, json!({"taskId": "up-1", "status": "working"}));
    let ack = call(
        &r,
        true,
        "tasks/update",
        json!({"taskId": "up-1", "inputResponses": {}}),
    )
    .await
    .unwrap();
    assert_eq!(ack, json!({}));
    let ack = call(&r, true, "tasks/cancel", json!({"taskId": "up-1"}))
        .await
        .unwrap();
    assert_eq!(ack, json!({}));
    assert_eq!(
        taken(&seen),
        ["tasks/get up-1", "tasks/update up-1", "tasks/cancel up-1"]
    );
}

#[tokio::test(start_paused = true)]
async fn input_asked_before_the_backends_task_exists_is_input_required() {
    let (backend, seen) = tasking_backend();
    let r = Router::new(backend).with_tasks(TaskConfig::default());
    let round1 = call(&r, true, "tools/call", json!({"name": "asks_first"}))
        .await
        .unwrap();
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    assert!(round1.get("taskId").is_none(), "no task yet: {round1}");
    assert_eq!(
        round1["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let round2 = call(
        &r,
        true,
        "tools/call",
        json!({
            "name": "asks_first",
            "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": round1["requestState"],
        }),
    )
    .await
    .unwrap();
    assert_eq!(round2["resultType"], "task");
    assert_eq!(round2["taskId"], "up-2");
    assert_eq!(
        taken(&seen),
        [
            "tools/call asks_first opt-in=true",
            "tools/call asks_first opt-in=true"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn tools_whose_tasks_the_router_runs_still_get_the_routers_tasks() {
    let (backend, seen) = tasking_backend();
    let r = Router::new(backend).with_tasks(TaskConfig::default());
    let t = call(&r, true, "tools/call", json!({"name": "router_job"}))
        .await
        .unwrap();
    let id = t["taskId"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "the router's own id: {t}");
    tokio::time::sleep(Duration::from_millis(60)).await;
    let done = call(&r, true, "tasks/get", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(done["status"], "completed");
    assert_eq!(done["result"]["content"][0]["text"], "router ran it");
    assert_eq!(
        taken(&seen),
        ["tools/call router_job opt-in=true"],
        "the router answered tasks/get itself"
    );
}

#[tokio::test(start_paused = true)]
async fn gating_holds_before_anything_reaches_the_backend() {
    let (backend, seen) = tasking_backend();
    let r = Router::new(backend).with_tasks(TaskConfig::default());
    for m in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let e = call(
            &r,
            false,
            m,
            json!({"taskId": "up-1", "inputResponses": {}}),
        )
        .await
        .unwrap_err();
        assert_eq!(code(e), -32021, "{m}");
    }
    let e = call(&r, false, "tools/call", json!({"name": "asks_first"}))
        .await
        .unwrap_err();
    assert_eq!(code(e), -32021);
    let e = call(&r, true, "tasks/list", json!({})).await.unwrap_err();
    assert_eq!(code(e), -32601);
    assert!(taken(&seen).is_empty());

    let v = call(&r, false, "tools/call", json!({"name": "upstream_job"}))
        .await
        .unwrap();
    assert_eq!(v["content"][0]["text"], "in the request");
    assert_eq!(taken(&seen), ["tools/call upstream_job opt-in=false"]);
}

#[tokio::test(start_paused = true)]
async fn a_router_without_tasks_passes_everything_to_the_backend() {
    let (backend, seen) = tasking_backend();
    let r = Router::new(backend);
    let t = call(&r, true, "tools/call", json!({"name": "upstream_job"}))
        .await
        .unwrap();
    assert_eq!(t["taskId"], "up-1");
    call(&r, true, "tasks/get", json!({"taskId": "up-1"}))
        .await
        .unwrap();
    assert_eq!(
        taken(&seen),
        ["tools/call upstream_job opt-in=true", "tasks/get up-1"]
    );
}
