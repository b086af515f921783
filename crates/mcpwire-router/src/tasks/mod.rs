//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for 2026-07-28.
//!
//! A `tools/call` to a tool that supports tasks, from a client that declares the extension,
//! starts like any call. If the tool finishes before its first real wait (or within
//! [`TaskConfig::escalate_after`], unless it calls [`crate::CallCtx::run_as_task`] first),
//! the client gets the plain result, and asks made so far are answered the 2026-07-28 way
//! (`input_required`). Otherwise the server creates a task,
//! answers a flat `CreateTaskResult`, and the call goes on in the background: its asks
//! become the task's `inputRequests` (answered by `tasks/update`), its progress messages
//! its `statusMessage`, and its result or error is inlined by `tasks/get`.
//!
//! The store is bounded ([`TaskConfig::max_tasks`]); finished tasks are forgotten
//! [`TaskConfig::ttl`] after their last change. When the store is full the call simply
//! runs to completion in its request, which the extension allows.

mod share;

use std::collections::{BTreeMap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::FutureExt;
use mcpwire_model::types::{ClientCapabilities, ServerCapabilities};
use mcpwire_model::{McpError, Raw, Reply, Revision, to_raw};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub(crate) use crate::task_entry::TaskEntry;
pub use share::{RemoteTask, TaskCommand, TaskShare, TaskSnapshot};

use crate::{BoxFuture, CallCtx};

/// The extension's identifier in `capabilities.extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a tool may run as a task (`execution.taskSupport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TaskSupport {
    /// Always answered in the request (the default).
    #[default]
    Forbidden,
    /// Runs as a task when the client supports tasks and the work takes time.
    Optional,
    /// Only for clients that support tasks; others get −32021.
    Required,
}

impl TaskSupport {
    /// The `execution.taskSupport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// Limits and timings of the task store.
#[derive(Debug, Clone)]
pub struct TaskConfig {
    /// How long a finished task stays readable after its last change (`ttlMs`).
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// Tasks held at once (running or finished and not yet expired).
    pub max_tasks: usize,
    /// How long a call may run in its request before it becomes a task; zero means
    /// "as soon as it waits for anything".
    pub escalate_after: Duration,
}

impl Default for TaskConfig {
    fn default() -> TaskConfig {
        TaskConfig {
            ttl: Duration::from_secs(600),
            poll_interval: Duration::from_millis(250),
            max_tasks: 10_000,
            escalate_after: Duration::ZERO,
        }
    }
}

/// Whether `caps` declare the tasks extension.
pub(crate) fn client_supports_tasks(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// −32021 naming the tasks extension.
pub(crate) fn missing_extension() -> McpError {
    crate::input::missing_capability(
        &format!("extensions[\"{TASKS_EXTENSION}\"]"),
        serde_json::json!({ "extensions": { TASKS_EXTENSION: {} } }),
    )
}

/// The tasks of one router (shared by its clones).
pub(crate) struct TaskStore {
    config: TaskConfig,
    tasks: Mutex<HashMap<String, Arc<TaskEntry>>>,
    /// Told whenever a task changes (what a [`TaskShare`] publishes).
    changed: Arc<Notify>,
    /// Where a replica set shares its tasks, once set.
    share: OnceLock<Arc<dyn TaskShare>>,
}

impl TaskStore {
    pub(crate) fn new(config: TaskConfig) -> TaskStore {
        TaskStore {
            config,
            tasks: Mutex::new(HashMap::new()),
            changed: Arc::new(Notify::new()),
            share: OnceLock::new(),
        }
    }

    /// Shares this store's tasks through `share` (once: false if already shared), starting
    /// the loop that publishes changes and takes relayed requests while the store lives.
    pub(crate) fn set_share(self: &Arc<Self>, share: Arc<dyn TaskShare>) -> bool {
        if self.share.set(share.clone()).is_err() {
            return false;
        }
        tokio::spawn(share::sync_loop(
            Arc::downgrade(self),
            self.changed.clone(),
            share,
        ));
        true
    }

    pub(crate) fn share(&self) -> Option<&Arc<dyn TaskShare>> {
        self.share.get()
    }

    pub(crate) fn config(&self) -> &TaskConfig {
        &self.config
    }

    fn with_tasks<T>(&self, f: impl FnOnce(&mut HashMap<String, Arc<TaskEntry>>) -> T) -> T {
        let mut guard = match self.tasks.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Creates a task, or `None` when the store is full of live tasks.
    fn create(&self, revision: Revision, cancel: CancellationToken) -> Option<Arc<TaskEntry>> {
        let id = new_task_id()?;
        let entry = Arc::new(TaskEntry::new(
            id.clone(),
            revision,
            self.config.ttl,
            self.config.poll_interval,
            cancel,
            self.changed.clone(),
        ));
        self.with_tasks(|tasks| {
            if tasks.len() >= self.config.max_tasks {
                let now = tokio::time::Instant::now();
                tasks.retain(|_, t| !t.expired(now));
            }
            if tasks.len() >= self.config.max_tasks {
                return None;
            }
            tasks.insert(id, entry.clone());
            Some(entry)
        })
        .inspect(|_| self.changed.notify_one())
    }

    fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        self.with_tasks(|tasks| {
            let entry = tasks.get(id)?.clone();
            if entry.expired(tokio::time::Instant::now()) {
                tasks.remove(id);
                return None;
            }
            Some(entry)
        })
    }

    /// Answers `tasks/get`, `tasks/update`, `tasks/cancel` for the tasks it holds (and
    /// refuses the methods the extension removed, and clients that did not declare it).
    pub(crate) fn handle(
        &self,
        method: &str,
        params: Option<&RawValue>,
        ctx: &CallCtx,
    ) -> StoreAnswer {
        if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
            || !ctx.revision().is_stateless()
        {
            return StoreAnswer::Answered(Err(McpError::MethodNotFound(method.to_owned())));
        }
        if !client_supports_tasks(ctx.client_capabilities()) {
            return StoreAnswer::Answered(Err(missing_extension()));
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "taskId")]
            task_id: String,
            #[serde(rename = "inputResponses", default)]
            input_responses: Option<BTreeMap<String, Raw>>,
        }
        let p: Params = match serde_json::from_str(params.map_or("{}", RawValue::get)) {
            Ok(p) => p,
            Err(e) => return StoreAnswer::Answered(Err(McpError::InvalidParams(e.to_string()))),
        };
        let Some(entry) = self.get(&p.task_id) else {
            return StoreAnswer::NotHeld {
                unknown: McpError::InvalidParams(format!("unknown task: {}", p.task_id)),
                remote: RemoteTask {
                    method: method.to_owned(),
                    task_id: p.task_id,
                    input_responses: p.input_responses,
                },
            };
        };
        let ack = || Reply::Complete(to_raw(&serde_json::json!({})));
        StoreAnswer::Answered(match method {
            "tasks/get" => Ok(Reply::Complete(entry.detailed())),
            "tasks/update" => match p.input_responses {
                Some(responses) => {
                    entry.update(responses);
                    Ok(ack())
                }
                None => Err(McpError::InvalidParams(
                    "tasks/update needs an inputResponses object".into(),
                )),
            },
            _ => {
                entry.cancel();
                Ok(ack())
            }
        })
    }
}

/// What the store made of a `tasks/*` request.
pub(crate) enum StoreAnswer {
    /// Answered (or refused) by the store.
    Answered(Result<Reply, McpError>),
    /// A well-formed request for a task id the store does not hold: another replica's
    /// (through the [`TaskShare`]), the backend's when it runs tasks itself; otherwise
    /// `unknown` is the answer.
    NotHeld {
        /// The error when nobody holds it.
        unknown: McpError,
        /// The request, for the share.
        remote: RemoteTask,
    },
}

/// Whether server capabilities offer the tasks extension — for a backend's own
/// capabilities: it runs tasks itself, and `tasks/*` for ids the router does not hold are
/// its.
pub fn offers_tasks_extension(caps: &ServerCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// 128 random bits, hex.
fn new_task_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Runs a task-eligible call: in the request until it first waits (or for
/// `escalate_after`), then as a task. `finish` turns an in-request outcome into the reply.
pub(crate) fn run_call(
    store: Arc<TaskStore>,
    ctx: CallCtx,
    request_cancel: CancellationToken,
    task_cancel: CancellationToken,
    fut: BoxFuture<'static, Result<Reply, McpError>>,
    finish: impl FnOnce(Result<Reply, McpError>) -> Result<Reply, McpError> + Send + 'static,
) -> BoxFuture<'static, Result<Reply, McpError>> {
    Box::pin(async move {
        let mut fut = fut;
        let wait = store.config().escalate_after;
        let early = if wait.is_zero() {
            (&mut fut).now_or_never()
        } else {
            tokio::select! {
                r = &mut fut => Some(r),
                _ = tokio::time::sleep(wait) => None,
                _ = ctx.task_wanted() => None,
                _ = request_cancel.cancelled() => return Err(McpError::Cancelled),
            }
        };
        if let Some(r) = early {
            return finish(r);
        }
        let Some(entry) = store.create(ctx.revision(), task_cancel.clone()) else {
            // Full: the call finishes in its request.
            tokio::select! {
                r = fut => return finish(r),
                _ = request_cancel.cancelled() => return Err(McpError::Cancelled),
            }
        };
        ctx.attach_task(entry.clone());
        let created = entry.create_result();
        if let Some(share) = store.share() {
            // Published before the client learns the id: its next `tasks/get` may reach
            // another replica.
            let snapshot = TaskSnapshot {
                id: entry.id.clone(),
                detailed: entry.detailed(),
                live: true,
                ttl: entry.ttl(),
            };
            share.publish(std::slice::from_ref(&snapshot)).await;
        }
        tracing::debug!(task = %entry.id, "call continues as a task");
        tokio::spawn(async move {
            let r = tokio::select! {
                r = AssertUnwindSafe(fut).catch_unwind() => r.unwrap_or_else(|_| {
                    Err(McpError::Internal("the tool panicked".into()))
                }),
                _ = task_cancel.cancelled() => Err(McpError::Cancelled),
            };
            entry.finish(r);
        });
        Ok(Reply::Complete(created))
    })
}
