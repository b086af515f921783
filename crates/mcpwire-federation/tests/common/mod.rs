//! Members for the federation tests: small native servers, a backend that counts what it
//! is asked, and one that can be made to fail.

#![allow(dead_code, unused_imports)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_model::types::{
    GetPromptResult, Implementation, PromptMessage, ResourceContents, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, McpError, Reply, to_raw};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, PromptDef, ResourceDef, Server,
    TemplateDef, ToolError, ToolRouting, tool,
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

pub use mcpwire_testkit::peers::root;
pub use mcpwire_testkit::router::{call, call_with, list_all, text, tool_names};

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

/// The venv's Python with the official `mcp` client and the `protomcp` SDK: `None` (skip)
/// locally when missing, a failure under CI (`scripts/test.sh` installs it).
pub fn venv_python() -> Option<PathBuf> {
    mcpwire_testkit::peers::venv_python("mcp, protomcp")
}

/// `*delete*` tools hidden from everyone but the subject `alice` (the search tests' policy).
pub fn no_deletes_but_for_alice() -> mcpwire_federation::Policy {
    use mcpwire_federation::{Callers, Effect, Glob, Policy, PolicyRule, Targets};
    let g = |p: &str| Glob::new(p).expect("glob");
    Policy {
        default: Effect::Allow,
        rules: vec![
            PolicyRule {
                effect: Effect::Allow,
                callers: Callers {
                    subjects: vec![g("alice")],
                    ..Callers::default()
                },
                targets: Targets::default(),
            },
            PolicyRule {
                effect: Effect::Deny,
                callers: Callers::default(),
                targets: Targets {
                    tools: Some(vec![g("*delete*")]),
                    ..Targets::default()
                },
            },
        ],
    }
}
