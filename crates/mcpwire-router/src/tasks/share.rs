//! Tasks other replicas can see (a gateway replica set, `docs/design/scale-out.md` § 4).
//!
//! The replica running a task (its executor) holds it as always; with a [`TaskShare`] its
//! store also publishes every change (the `tasks/get` answer), proves the replica alive at
//! every [`TaskShare::interval`], and takes the `tasks/update` and `tasks/cancel` other
//! replicas relayed to it. A replica asked about a task it does not hold asks the share
//! ([`TaskShare::remote`]), which answers from the published state — or, when the executor
//! stopped proving itself alive while the task was running, answers it `failed`.
//!
//! The router knows nothing of where the shared state lives: the shell implements the trait
//! over its store.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpwire_model::{McpError, Raw, Reply};
use tokio::sync::Notify;

use super::TaskStore;
use crate::BoxFuture;

/// One task's state for other replicas.
#[derive(Debug, Clone)]
pub struct TaskSnapshot {
    /// The task id.
    pub id: String,
    /// Its `tasks/get` answer (SEP-2663 `DetailedTask`).
    pub detailed: Raw,
    /// Whether it is still running here (working or waiting for input).
    pub live: bool,
    /// How long to keep it readable after this change.
    pub ttl: Duration,
}

/// A request another replica relayed to the task's executor.
#[derive(Debug, Clone)]
pub enum TaskCommand {
    /// `tasks/cancel`.
    Cancel {
        /// The task.
        task_id: String,
    },
    /// `tasks/update` with the client's answers.
    Update {
        /// The task.
        task_id: String,
        /// `inputResponses`.
        responses: BTreeMap<String, Raw>,
    },
}

/// A `tasks/*` request for a task this router does not hold.
#[derive(Debug, Clone)]
pub struct RemoteTask {
    /// `tasks/get`, `tasks/update` or `tasks/cancel`.
    pub method: String,
    /// The task.
    pub task_id: String,
    /// `inputResponses` of a `tasks/update`.
    pub input_responses: Option<BTreeMap<String, Raw>>,
}

/// Where a replica set shares its tasks (implemented by the shell over its store).
pub trait TaskShare: Send + Sync + 'static {
    /// How often the executor proves itself alive and takes relayed requests; changes are
    /// published as they happen.
    fn interval(&self) -> Duration;

    /// Publishes the state of tasks held here (failures are logged, not returned: the next
    /// change or refresh publishes again). Publishing a running task also proves this
    /// executor alive (its first heartbeat may not have happened yet).
    fn publish<'a>(&'a self, tasks: &'a [TaskSnapshot]) -> BoxFuture<'a, ()>;

    /// Proves this replica alive and takes the requests relayed to it.
    fn heartbeat(&self) -> BoxFuture<'_, Vec<TaskCommand>>;

    /// Answers a request for a task held by another replica; `Ok(None)` when no replica
    /// published it (an unknown task, or one whose state expired).
    fn remote(&self, request: RemoteTask) -> BoxFuture<'_, Result<Option<Reply>, McpError>>;
}

/// What was last published of a task: its version, and how many refreshes ago.
struct Published {
    version: u64,
    age: u32,
}

/// The executor side: publishes changes as they happen (woken by `changed`), refreshes live
/// tasks before their published state expires, heartbeats and applies relayed requests —
/// until the store is dropped.
pub(crate) async fn sync_loop(
    store: Weak<TaskStore>,
    changed: Arc<Notify>,
    share: Arc<dyn TaskShare>,
) {
    let interval = share.interval().max(Duration::from_millis(10));
    let mut published: HashMap<String, Published> = HashMap::new();
    let mut next_beat = tokio::time::Instant::now();
    loop {
        let Some(held) = store.upgrade() else {
            return;
        };
        // Only a replica running tasks heartbeats (nobody relays to one that runs none, and
        // a task's first publication proves its executor alive): idle replicas cost the
        // store nothing.
        let running = held.has_live();
        let beat = running && tokio::time::Instant::now() >= next_beat;
        let snapshots = held.changed_snapshots(&mut published, interval, beat);
        drop(held);
        if !snapshots.is_empty() {
            share.publish(&snapshots).await;
        }
        if beat {
            let commands = share.heartbeat().await;
            next_beat = tokio::time::Instant::now() + interval;
            let Some(held) = store.upgrade() else {
                return;
            };
            for command in commands {
                held.apply(command);
            }
        }
        let wake = running.then_some(next_beat);
        tokio::select! {
            _ = changed.notified() => {}
            _ = sleep_until(wake) => {}
        }
    }
}

/// Sleeps until `at`, or forever when there is no `at`.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl TaskStore {
    /// Whether [`TaskStore::take_relayed`] has anything to do: the store is shared and runs
    /// a task (nobody relays to an executor running none).
    pub(crate) fn takes_relayed(&self) -> bool {
        self.share().is_some() && self.has_live()
    }

    /// Applies the requests other replicas relayed to this executor now rather than at its
    /// next heartbeat (a heartbeat of its own: one store write and one take).
    pub(crate) async fn take_relayed(&self) {
        let Some(share) = self.share().cloned() else {
            return;
        };
        for command in share.heartbeat().await {
            self.apply(command);
        }
    }

    /// Whether any task held here is still running.
    fn has_live(&self) -> bool {
        self.with_tasks(|tasks| tasks.values().any(|t| t.is_live()))
    }

    /// Snapshots of the tasks that changed since last published, and (on a heartbeat) of
    /// live tasks whose published state is halfway to expiring. Forgets tasks no longer
    /// held, so `published` is bounded by the store.
    fn changed_snapshots(
        &self,
        published: &mut HashMap<String, Published>,
        interval: Duration,
        beat: bool,
    ) -> Vec<TaskSnapshot> {
        let entries = self.with_tasks(|tasks| tasks.values().cloned().collect::<Vec<_>>());
        published.retain(|id, _| entries.iter().any(|e| &e.id == id));
        let mut out = Vec::new();
        for entry in entries {
            let version = entry.version();
            let live = entry.is_live();
            let ttl = entry.ttl();
            let refresh_after = (ttl.as_millis() / 2 / interval.as_millis().max(1)).max(1) as u32;
            let due = match published.get_mut(&entry.id) {
                Some(p) if p.version == version => {
                    if beat && live {
                        p.age += 1;
                    }
                    live && p.age >= refresh_after
                }
                _ => true,
            };
            if due {
                published.insert(entry.id.clone(), Published { version, age: 0 });
                out.push(TaskSnapshot {
                    id: entry.id.clone(),
                    detailed: entry.detailed(),
                    live,
                    ttl,
                });
            }
        }
        out
    }

    /// Applies a request another replica relayed (a task no longer held is ignored).
    fn apply(&self, command: TaskCommand) {
        let (id, update) = match command {
            TaskCommand::Cancel { task_id } => (task_id, None),
            TaskCommand::Update { task_id, responses } => (task_id, Some(responses)),
        };
        let Some(entry) = self.get(&id) else {
            tracing::debug!(task = %id, "relayed request for a task no longer held");
            return;
        };
        match update {
            Some(responses) => entry.update(responses),
            None => entry.cancel(),
        }
    }
}
