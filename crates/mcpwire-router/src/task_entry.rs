//! One task: its status, its outcome, and the input it waits for.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use mcpwire_model::{ClientAsk, ErrorObject, McpError, Raw, Reply, Revision, to_raw};
use serde_json::{Map, Value};
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

/// Where a task is in its life (SEP-2663 `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(crate) fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

enum Outcome {
    Result(Raw),
    Error(ErrorObject),
}

struct PendingInput {
    ask: ClientAsk,
    answer: oneshot::Sender<Raw>,
}

struct State {
    status: Status,
    /// When the task last changed, for `lastUpdatedAt`.
    updated: SystemTime,
    /// The same moment on tokio's clock, for expiry (monotonic; tests pause and advance it).
    touched: Instant,
    message: Option<String>,
    outcome: Option<Outcome>,
    inputs: BTreeMap<String, PendingInput>,
    next_key: usize,
}

/// A task created for a `tools/call` that outlived its request.
pub(crate) struct TaskEntry {
    pub(crate) id: String,
    created: SystemTime,
    ttl: Duration,
    poll_interval: Duration,
    revision: Revision,
    cancel: CancellationToken,
    state: Mutex<State>,
    /// Bumped on every change, so a replica set can publish what changed.
    version: AtomicU64,
    /// Told on every change (the store's, shared by its tasks).
    changed: Arc<Notify>,
}

impl TaskEntry {
    pub(crate) fn new(
        id: String,
        revision: Revision,
        ttl: Duration,
        poll_interval: Duration,
        cancel: CancellationToken,
        changed: Arc<Notify>,
    ) -> TaskEntry {
        let now = SystemTime::now();
        TaskEntry {
            id,
            created: now,
            ttl,
            poll_interval,
            revision,
            cancel,
            state: Mutex::new(State {
                status: Status::Working,
                updated: now,
                touched: Instant::now(),
                message: None,
                outcome: None,
                inputs: BTreeMap::new(),
                next_key: 0,
            }),
            version: AtomicU64::new(1),
            changed,
        }
    }

    /// Records that the task changed now (times, version, the store's notification).
    fn changed_now(&self, s: &mut State) {
        s.updated = SystemTime::now();
        s.touched = Instant::now();
        self.version.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
    }

    /// How many changes the task has seen (for publishing only what changed).
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Relaxed)
    }

    /// Whether the task is still running (working or waiting for input).
    pub(crate) fn is_live(&self) -> bool {
        self.with_state(|s| !s.status.is_terminal())
    }

    /// How long the task stays readable after its last change.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Whether the task may be forgotten: finished and not touched for its TTL.
    pub(crate) fn expired(&self, now: Instant) -> bool {
        self.with_state(|s| {
            s.status.is_terminal() && now.saturating_duration_since(s.touched) >= self.ttl
        })
    }

    /// Asks the client through `tasks/get` → `inputRequests` and `tasks/update`.
    pub(crate) async fn ask(&self, key: Option<&str>, ask: ClientAsk) -> Result<Raw, McpError> {
        let (tx, rx) = oneshot::channel();
        self.with_state(|s| {
            if s.status.is_terminal() {
                return Err(McpError::Cancelled);
            }
            let mut k = match key {
                Some(k) => k.to_owned(),
                None => format!("input-{}", s.next_key),
            };
            s.next_key += 1;
            while s.inputs.contains_key(&k) {
                k = format!("{k}-{}", s.next_key);
                s.next_key += 1;
            }
            s.inputs.insert(k, PendingInput { ask, answer: tx });
            s.status = Status::InputRequired;
            self.changed_now(s);
            Ok(())
        })?;
        tokio::select! {
            answer = rx => answer.map_err(|_| McpError::Cancelled),
            _ = self.cancel.cancelled() => Err(McpError::Cancelled),
        }
    }

    /// Records a progress message as the task's `statusMessage`.
    pub(crate) fn progress(&self, message: Option<String>) {
        if let Some(m) = message {
            self.with_state(|s| {
                if !s.status.is_terminal() {
                    s.message = Some(m);
                    self.changed_now(s);
                }
            });
        }
    }

    /// Delivers `tasks/update` answers; unknown keys are ignored.
    pub(crate) fn update(&self, responses: BTreeMap<String, Raw>) {
        self.with_state(|s| {
            for (key, answer) in responses {
                if let Some(p) = s.inputs.remove(&key) {
                    let _ = p.answer.send(answer);
                }
            }
            if s.inputs.is_empty() && s.status == Status::InputRequired {
                s.status = Status::Working;
            }
            self.changed_now(s);
        });
    }

    /// `tasks/cancel`: stops the work; a finished task is left as it is.
    pub(crate) fn cancel(&self) {
        let cancelled = self.with_state(|s| {
            if s.status.is_terminal() {
                return false;
            }
            s.status = Status::Cancelled;
            s.inputs.clear();
            self.changed_now(s);
            true
        });
        if cancelled {
            self.cancel.cancel();
        }
    }

    /// Records how the work ended (ignored once the task is cancelled).
    pub(crate) fn finish(&self, result: Result<Reply, McpError>) {
        self.with_state(|s| {
            if s.status.is_terminal() {
                return;
            }
            let (status, outcome) = match result {
                Ok(Reply::Complete(raw)) => (Status::Completed, Outcome::Result(raw)),
                Ok(Reply::InputRequired(_)) | Err(McpError::InputRequired) => (
                    Status::Failed,
                    Outcome::Error(
                        McpError::Internal("the tool asked for input outside the task".into())
                            .to_wire(self.revision),
                    ),
                ),
                Err(McpError::Cancelled) => {
                    s.status = Status::Cancelled;
                    s.inputs.clear();
                    self.changed_now(s);
                    return;
                }
                Err(e) if e.is_tool_result_error(self.revision) => {
                    (Status::Completed, Outcome::Result(e.to_tool_result()))
                }
                Err(e) => (Status::Failed, Outcome::Error(e.to_wire(self.revision))),
            };
            s.status = status;
            s.outcome = Some(outcome);
            s.inputs.clear();
            self.changed_now(s);
        });
    }

    fn envelope(&self, s: &State) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("taskId".into(), Value::from(self.id.clone()));
        m.insert("status".into(), Value::from(s.status.as_str()));
        if let Some(msg) = &s.message {
            m.insert("statusMessage".into(), Value::from(msg.clone()));
        }
        m.insert("createdAt".into(), Value::from(timestamp(self.created)));
        m.insert("lastUpdatedAt".into(), Value::from(timestamp(s.updated)));
        m.insert("ttlMs".into(), Value::from(millis(self.ttl)));
        m.insert(
            "pollIntervalMs".into(),
            Value::from(millis(self.poll_interval)),
        );
        m
    }

    /// The flat `CreateTaskResult` answered to the `tools/call` that created the task.
    pub(crate) fn create_result(&self) -> Raw {
        self.with_state(|s| {
            let mut m = self.envelope(s);
            m.insert("resultType".into(), Value::from("task"));
            to_raw(&m)
        })
    }

    /// The `tasks/get` answer (SEP-2663 `DetailedTask`).
    pub(crate) fn detailed(&self) -> Raw {
        self.with_state(|s| {
            let mut m = self.envelope(s);
            match &s.outcome {
                Some(Outcome::Result(r)) => {
                    m.insert("result".into(), to_value(r));
                }
                Some(Outcome::Error(e)) => {
                    m.insert("error".into(), serde_json::to_value(e).unwrap_or_default());
                }
                None => {}
            }
            if !s.inputs.is_empty() {
                let requests: Map<String, Value> = s
                    .inputs
                    .iter()
                    .map(|(k, p)| {
                        let mut r = Map::new();
                        r.insert("method".into(), Value::from(p.ask.method.clone()));
                        if let Some(params) = &p.ask.params {
                            r.insert("params".into(), to_value(params));
                        }
                        (k.clone(), Value::Object(r))
                    })
                    .collect();
                m.insert("inputRequests".into(), Value::Object(requests));
            }
            to_raw(&m)
        })
    }
}

fn to_value(raw: &Raw) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// RFC 3339 UTC with milliseconds, e.g. `2026-11-26T01:02:03.456Z`.
fn timestamp(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
