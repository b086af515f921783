//! [`StoreTasks`]: the router's [`TaskShare`] over the cluster store, so a task created on
//! one replica is answered by any (`docs/design/scale-out.md` § 4).
//!
//! Keys (all expiring):
//! - `t:{task}` — the task's last published `tasks/get` answer, its executor and whether it
//!   is still running; kept for the task's `ttlMs` after each change (running tasks are
//!   refreshed by their executor).
//! - `hb:{executor}` — the executor is alive; refreshed every `interval` while it runs tasks
//!   (and whenever it publishes a running one), expires after `alive_for`; a replica running
//!   no task writes nothing. A running task whose executor's key is gone is answered `failed` by
//!   whichever replica is asked (and recorded so), so no task stays `working` forever.
//! - `q:{executor}` — `tasks/update` and `tasks/cancel` relayed to the executor (at most
//!   [`MAX_RELAYED`] waiting), taken at its next heartbeat.
//!
//! An executor is one router's task store: a process serving several listeners has one per
//! listener, each with its own id.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::{McpError, Raw, Reply, Revision, to_raw};
use mcpwire_router::{BoxFuture, RemoteTask, TaskCommand, TaskShare, TaskSnapshot};
use mcpwire_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Relayed requests waiting for one executor, at most (older ones are dropped).
pub(crate) const MAX_RELAYED: usize = 1024;

/// What `t:{task}` holds.
#[derive(Serialize, Deserialize)]
struct Published {
    /// The executor's id.
    owner: String,
    /// Still running there.
    live: bool,
    /// The `tasks/get` answer.
    task: Raw,
}

/// What `q:{executor}` holds, one per entry: a cancel, or an update with its answers. (A
/// plain struct: an internally tagged enum would buffer the raw answers, which `RawValue`
/// cannot be read back from.)
#[derive(Serialize, Deserialize)]
struct Relayed {
    task: String,
    /// `inputResponses` of an update; `None`: a cancel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    responses: Option<BTreeMap<String, Raw>>,
}

impl Relayed {
    fn into_command(self) -> TaskCommand {
        match self.responses {
            Some(responses) => TaskCommand::Update {
                task_id: self.task,
                responses,
            },
            None => TaskCommand::Cancel { task_id: self.task },
        }
    }
}

/// One executor's share of the cluster's tasks.
pub(crate) struct StoreTasks {
    store: Arc<dyn Store>,
    /// This executor's id: 64 random bits, hex.
    executor: String,
    interval: Duration,
    alive_for: Duration,
}

impl StoreTasks {
    /// An executor with a fresh id, heartbeating every `interval`, presumed dead after
    /// `alive_for` without one.
    pub(crate) fn new(store: Arc<dyn Store>, interval: Duration, alive_for: Duration) -> Self {
        let mut id = [0u8; 8];
        if let Err(e) = getrandom::fill(&mut id) {
            panic!("the OS random number generator failed: {e}");
        }
        StoreTasks {
            store,
            executor: id.iter().map(|b| format!("{b:02x}")).collect(),
            interval,
            alive_for,
        }
    }

    async fn answer(&self, req: RemoteTask) -> Result<Option<Reply>, StoreError> {
        let key = format!("t:{}", req.task_id);
        let Some(bytes) = self.store.get(&key).await? else {
            return Ok(None);
        };
        let Ok(mut published) = serde_json::from_slice::<Published>(&bytes) else {
            return Err(StoreError::Protocol(format!(
                "{key} is not a published task"
            )));
        };
        if published.live && !self.alive(&published.owner).await? {
            // The executor died with the task running: it will never finish. Record it
            // failed so every replica answers the same from now on.
            published.task = failed(&published.task);
            published.live = false;
            let ttl = ttl_of(&published.task);
            let value = serde_json::to_vec(&published).unwrap_or_default();
            self.store.put(&key, &value, ttl).await?;
            tracing::warn!(task = %req.task_id, executor = %published.owner, "task failed: its executor stopped");
        }
        let ack = || Reply::Complete(to_raw(&serde_json::json!({})));
        Ok(Some(match req.method.as_str() {
            "tasks/get" => Reply::Complete(published.task),
            "tasks/cancel" => {
                if published.live {
                    let cancel = Relayed {
                        task: req.task_id,
                        responses: None,
                    };
                    self.relay(&published.owner, &cancel).await?;
                }
                ack()
            }
            _ => {
                // `tasks/update` (the store refused every other method before).
                // Checked by `remote` before: an update carries its answers.
                let responses = req.input_responses.unwrap_or_default();
                if published.live {
                    // What the executor will publish once it takes the update (within a
                    // heartbeat), published now so a `tasks/get` right after — on any
                    // replica — no longer lists the answered requests.
                    if let Some(task) = answered(&published.task, responses.keys()) {
                        published.task = task;
                        let value = serde_json::to_vec(&published).unwrap_or_default();
                        self.store
                            .put(&key, &value, ttl_of(&published.task))
                            .await?;
                    }
                    let relayed = Relayed {
                        task: req.task_id,
                        responses: Some(responses),
                    };
                    self.relay(&published.owner, &relayed).await?;
                }
                ack()
            }
        }))
    }

    /// Refreshes this executor's heartbeat key; whether that worked.
    async fn prove_alive(&self) -> bool {
        let hb = format!("hb:{}", self.executor);
        match self.store.put(&hb, b"1", self.alive_for).await {
            Ok(()) => true,
            Err(e) => {
                mcpwire_server::observe::store_error("task");
                tracing::warn!(error = %e, "task heartbeat failed");
                false
            }
        }
    }

    async fn alive(&self, executor: &str) -> Result<bool, StoreError> {
        if executor == self.executor {
            return Ok(true);
        }
        Ok(self.store.get(&format!("hb:{executor}")).await?.is_some())
    }

    async fn relay(&self, executor: &str, what: &Relayed) -> Result<(), StoreError> {
        let value = serde_json::to_vec(what).unwrap_or_default();
        // Kept a little longer than an executor lives without a heartbeat: a queue nobody
        // takes disappears with its executor.
        let ttl = self.alive_for * 2;
        self.store
            .push(&format!("q:{executor}"), &value, MAX_RELAYED, ttl)
            .await
    }
}

impl TaskShare for StoreTasks {
    fn interval(&self) -> Duration {
        self.interval
    }

    fn publish<'a>(&'a self, tasks: &'a [TaskSnapshot]) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if tasks.iter().any(|t| t.live) {
                self.prove_alive().await;
            }
            for t in tasks {
                let published = Published {
                    owner: self.executor.clone(),
                    live: t.live,
                    task: t.detailed.clone(),
                };
                let value = serde_json::to_vec(&published).unwrap_or_default();
                let ttl = t.ttl.max(Duration::from_secs(1));
                if let Err(e) = self.store.put(&format!("t:{}", t.id), &value, ttl).await {
                    mcpwire_server::observe::store_error("task");
                    tracing::warn!(task = %t.id, error = %e, "could not publish a task's state");
                }
            }
        })
    }

    fn heartbeat(&self) -> BoxFuture<'_, Vec<TaskCommand>> {
        Box::pin(async move {
            if !self.prove_alive().await {
                return Vec::new();
            }
            let taken = match self.store.take(&format!("q:{}", self.executor)).await {
                Ok(t) => t,
                Err(e) => {
                    tracing::warn!(error = %e, "could not take relayed task requests");
                    return Vec::new();
                }
            };
            taken
                .iter()
                .filter_map(|bytes| match serde_json::from_slice::<Relayed>(bytes) {
                    Ok(r) => Some(r.into_command()),
                    Err(e) => {
                        tracing::warn!(error = %e, "dropped an unreadable relayed task request");
                        None
                    }
                })
                .collect()
        })
    }

    fn remote(&self, request: RemoteTask) -> BoxFuture<'_, Result<Option<Reply>, McpError>> {
        Box::pin(async move {
            if request.method == "tasks/update" && request.input_responses.is_none() {
                return Err(McpError::InvalidParams(
                    "tasks/update needs an inputResponses object".into(),
                ));
            }
            self.answer(request).await.map_err(|e| {
                mcpwire_server::observe::store_error("task");
                tracing::warn!(error = %e, "could not read a shared task");
                McpError::Unavailable("shared task state is unavailable; try again shortly".into())
            })
        })
    }
}

/// `task` (a `tasks/get` answer) as failed because its executor stopped.
fn failed(task: &Raw) -> Raw {
    let mut v: Value =
        serde_json::from_str(task.get()).unwrap_or_else(|_| Value::Object(Default::default()));
    if let Some(m) = v.as_object_mut() {
        let message = "the replica running this task stopped; run the tool again";
        m.insert("status".into(), Value::from("failed"));
        m.insert("statusMessage".into(), Value::from(message));
        m.remove("inputRequests");
        m.remove("result");
        let error = McpError::Internal(message.into()).to_wire(Revision::STATELESS);
        m.insert(
            "error".into(),
            serde_json::to_value(error).unwrap_or_default(),
        );
    }
    to_raw(&v)
}

/// `task` (a `tasks/get` answer) without the input requests `keys` answer: `working` once
/// none is left. `None` when it asked none of them.
fn answered<'k>(task: &Raw, keys: impl Iterator<Item = &'k String>) -> Option<Raw> {
    let mut v: Value = serde_json::from_str(task.get()).ok()?;
    let m = v.as_object_mut()?;
    let requests = m.get_mut("inputRequests")?.as_object_mut()?;
    let before = requests.len();
    for k in keys {
        requests.remove(k);
    }
    if requests.len() == before {
        return None;
    }
    if requests.is_empty() {
        m.remove("inputRequests");
        if m.get("status").and_then(Value::as_str) == Some("input_required") {
            m.insert("status".into(), Value::from("working"));
        }
    }
    Some(to_raw(&v))
}

/// How long to keep a task's state: its `ttlMs`, else 10 minutes.
fn ttl_of(task: &Raw) -> Duration {
    serde_json::from_str::<Value>(task.get())
        .ok()
        .and_then(|v| v.get("ttlMs").and_then(Value::as_u64))
        .map_or(Duration::from_secs(600), Duration::from_millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relayed_requests_read_back_with_their_raw_answers() {
        let mut responses = BTreeMap::new();
        responses.insert(
            "confirm".to_owned(),
            to_raw(&serde_json::json!({"action": "accept"})),
        );
        let update = Relayed {
            task: "t1".into(),
            responses: Some(responses),
        };
        let bytes = serde_json::to_vec(&update).unwrap();
        let back: Relayed = serde_json::from_slice(&bytes).unwrap();
        match back.into_command() {
            TaskCommand::Update { task_id, responses } => {
                assert_eq!(task_id, "t1");
                assert_eq!(responses["confirm"].get(), r#"{"action":"accept"}"#);
            }
            other => panic!("{other:?}"),
        }
        let cancel = serde_json::to_vec(&Relayed {
            task: "t2".into(),
            responses: None,
        })
        .unwrap();
        let back: Relayed = serde_json::from_slice(&cancel).unwrap();
        assert!(matches!(back.into_command(), TaskCommand::Cancel { task_id } if task_id == "t2"));
    }

    #[test]
    fn answered_requests_leave_the_published_task_at_once() {
        let waiting = to_raw(
            &serde_json::json!({"taskId": "t", "status": "input_required",
            "inputRequests": {"a": {}, "b": {}}}),
        );
        let keys = ["a".to_owned(), "zzz".to_owned()];
        let partly: Value =
            serde_json::from_str(answered(&waiting, keys.iter()).unwrap().get()).unwrap();
        assert_eq!(partly["status"], "input_required");
        assert_eq!(partly["inputRequests"], serde_json::json!({"b": {}}));
        let all = ["a".to_owned(), "b".to_owned()];
        let done: Value =
            serde_json::from_str(answered(&waiting, all.iter()).unwrap().get()).unwrap();
        assert_eq!(done["status"], "working");
        assert!(done.get("inputRequests").is_none());
        assert!(answered(&waiting, ["x".to_owned()].iter()).is_none());
    }

    #[test]
    fn a_dead_executors_task_reads_failed() {
        let working = to_raw(
            &serde_json::json!({"taskId": "t", "status": "input_required",
            "inputRequests": {"a": {}}, "ttlMs": 5000}),
        );
        let f: Value = serde_json::from_str(failed(&working).get()).unwrap();
        assert_eq!(f["status"], "failed");
        assert!(f.get("inputRequests").is_none());
        assert_eq!(f["error"]["code"], -32603);
        assert_eq!(ttl_of(&working), Duration::from_secs(5));
    }
}
