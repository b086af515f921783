//! Members for the federation tests: small native servers, a backend that counts what it
//! is asked, and one that can be made to fail.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_model::types::{
    GetPromptResult, Implementation, PromptMessage, ResourceContents, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, McpError, Method, Reply, to_raw};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, McpCall, PromptDef, ResourceDef,
    Router, Server, TemplateDef, ToolError, ToolRouting, tool,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Text {
    pub text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Nothing {}

/// A native server called `name` whose `tools` each answer `"{name}:{tool}:{text}"`, with
/// a `summarize` prompt (its `topic` completes to `{name}-topic`), the resource
/// `file:///readme` reading `"{name} readme"` and the template `{name}://items/{id}`.
pub fn server(name: &str, tools: &[&str]) -> Arc<Server> {
    let mut b = Server::builder(Implementation::new(name, "1"));
    for t in tools {
        let label = format!("{name}:{t}");
        b = b.tool(
            tool(t.to_string(), move |_: CallCtx, a: Text| {
                let label = label.clone();
                async move { Ok::<_, ToolError>(format!("{label}:{}", a.text)) }
            })
            .description(format!("{t} of {name}")),
        );
    }
    let who = name.to_owned();
    let topic = format!("{name}-topic");
    b.prompt(
        PromptDef::new("summarize", move |_, args| {
            let who = who.clone();
            async move {
                Ok(GetPromptResult {
                    description: None,
                    messages: vec![PromptMessage::user(format!(
                        "{who} summarizes {}",
                        args.get("topic").cloned().unwrap_or_default()
                    ))],
                })
            }
        })
        .argument("topic", "what to summarize", true)
        .complete("topic", move |typed, _| {
            vec![topic.clone()]
                .into_iter()
                .filter(|t| t.starts_with(typed))
                .collect()
        }),
    )
    .resource(ResourceDef::text(
        "file:///readme",
        "readme",
        "text/plain",
        format!("{name} readme"),
    ))
    .template({
        let who = name.to_owned();
        TemplateDef::new(
            format!("{name}://items/{{id}}"),
            "item",
            move |_, uri, vars| {
                let text = format!("{who} item {}", vars.get("id").cloned().unwrap_or_default());
                async move { Ok(vec![ResourceContents::text(uri, "text/plain", text)]) }
            },
        )
        .complete("id", |typed, _| {
            vec![format!("{typed}1"), format!("{typed}2")]
        })
    })
    .build()
}

/// Sends `method` with `params` through `router` (a detached context).
pub async fn call(router: &Router, method: &str, params: Value) -> Result<Value, McpError> {
    call_with(router, method, params, CallCtx::detached()).await
}

/// Sends `method` with `params` through `router` under `ctx`.
pub async fn call_with(
    router: &Router,
    method: &str,
    params: Value,
    ctx: CallCtx,
) -> Result<Value, McpError> {
    let reply = router
        .call(McpCall {
            method: Method::parse(method),
            params: Some(to_raw(&params)),
            ctx,
        })
        .await?;
    match reply {
        Reply::Complete(raw) | Reply::InputRequired(raw) => {
            Ok(serde_json::from_str(raw.get()).expect("json"))
        }
    }
}

/// Every item name (or URI) of a list, following cursors.
pub async fn list_all(router: &Router, method: &str, field: &str, key: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut params = json!({});
    for _ in 0..100 {
        let page = call(router, method, params).await.expect("list");
        names.extend(
            page[field]
                .as_array()
                .expect("list")
                .iter()
                .map(|t| t[key].as_str().expect("key").to_owned()),
        );
        match page.get("nextCursor") {
            Some(c) => params = json!({ "cursor": c }),
            None => return names,
        }
    }
    panic!("more than 100 pages");
}

/// Exposed tool names, in order.
pub async fn tool_names(router: &Router) -> Vec<String> {
    list_all(router, "tools/list", "tools", "name").await
}

/// The text of a tool result's first content.
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The next event within `secs` seconds (a bound, never a timing assertion).
pub async fn next_event(rx: &mut broadcast::Receiver<BackendEvent>, secs: u64) -> BackendEvent {
    tokio::time::timeout(Duration::from_secs(secs), rx.recv())
        .await
        .expect("an event in time")
        .expect("event")
}

/// A backend wrapping another, counting the requests it gets by kind, and able to fail
/// every request while `failing` is set.
pub struct Probe {
    pub inner: Arc<dyn Backend>,
    pub lists: AtomicUsize,
    pub calls: AtomicUsize,
    pub failing: AtomicBool,
    pub seen: Mutex<Vec<String>>,
}

impl Probe {
    pub fn new(inner: Arc<dyn Backend>) -> Arc<Probe> {
        Arc::new(Probe {
            inner,
            lists: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
            failing: AtomicBool::new(false),
            seen: Mutex::new(Vec::new()),
        })
    }

    pub fn lists(&self) -> usize {
        self.lists.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    pub fn fail(&self, yes: bool) {
        self.failing.store(yes, Ordering::SeqCst);
    }
}

impl Backend for Probe {
    fn info(&self) -> &BackendInfo {
        self.inner.info()
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let listing = matches!(
            req,
            BackendRequest::ListTools { .. }
                | BackendRequest::ListPrompts { .. }
                | BackendRequest::ListResources { .. }
                | BackendRequest::ListResourceTemplates { .. }
        );
        if listing {
            self.lists.fetch_add(1, Ordering::SeqCst);
        } else {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.seen.lock().unwrap().push(format!("{req:?}"));
        }
        if self.failing.load(Ordering::SeqCst) {
            return Box::pin(std::future::ready(Err(McpError::Unavailable(
                "probe is down".into(),
            ))));
        }
        self.inner.call(ctx, req)
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.inner.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        self.inner.events()
    }
}

/// A backend that creates tasks of its own (as an upstream server would): a `slow` tool
/// answers a task, `tasks/get` reports it finished.
pub struct TaskMaker {
    info: BackendInfo,
    pub asked: Mutex<Vec<String>>,
}

impl TaskMaker {
    pub fn new() -> Arc<TaskMaker> {
        let caps = ServerCapabilities {
            tools: Some(Default::default()),
            extensions: Some(json!({ mcpwire_router::TASKS_EXTENSION: {} })),
            ..ServerCapabilities::default()
        };
        Arc::new(TaskMaker {
            info: BackendInfo {
                name: "tasks".into(),
                capabilities: caps,
            },
            asked: Mutex::new(Vec::new()),
        })
    }
}

impl Backend for TaskMaker {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn call(
        &self,
        _ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let reply = match req {
            BackendRequest::ListTools { .. } => Ok(json!({"tools": [
                {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}
            ]})),
            BackendRequest::CallTool { .. } => Ok(json!({
                "resultType": "task", "taskId": "t-1", "status": "working",
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"
            })),
            BackendRequest::Other { method, params } if method.as_str() == "tasks/get" => {
                let p: Value =
                    serde_json::from_str(params.as_ref().map_or("{}", |p| p.get())).unwrap();
                let id = p["taskId"].as_str().unwrap_or_default().to_owned();
                self.asked.lock().unwrap().push(id.clone());
                if id == "t-1" {
                    Ok(json!({"taskId": id, "status": "completed"}))
                } else {
                    Err(McpError::InvalidParams(format!("unknown task {id}")))
                }
            }
            other => Err(McpError::MethodNotFound(format!("{other:?}"))),
        };
        Box::pin(std::future::ready(
            reply.map(|v| Reply::Complete(to_raw(&v))),
        ))
    }
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// The venv's Python with the official `mcp` client and the `protomcp` SDK: `None` (skip)
/// locally when missing, a failure under CI (`scripts/test.sh` installs it).
pub fn venv_python() -> Option<PathBuf> {
    let python = root().join("target/venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", "import mcp, protomcp"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("the Python venv with mcp and protomcp (target/venv) is missing under CI");
    }
    eprintln!("SKIPPED: the Python venv is not installed (run scripts/test.sh)");
    None
}
