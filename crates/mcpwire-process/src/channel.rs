//! [`ChildChannel`]: the host's handle on the socket of one process generation — the
//! bounded outbound queue, the pending-request table, the active tool list, the asks in
//! flight — and [`PendingCall`], one request on its way. The I/O task (`crate::io`) owns the
//! socket itself.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use mcpwire_model::McpError;
use mcpwire_router::CallCtx;
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::handshake::Handshake;
use crate::pb::{self, Envelope, envelope::Msg};
use crate::pending::{Answered, Follow, Parked, PendingTable, Refused};
use crate::toollist::ToolList;

/// Requests that may wait to be written to the process; beyond this a new request is
/// refused (the process is not reading).
pub(crate) const QUEUED_REQUESTS: usize = 256;
/// Room in the outbound queue kept for messages that cancel or answer something; when even
/// that is full, such a message is dropped with a warning.
pub(crate) const QUEUED_CONTROL: usize = 256;
/// Asks from the process (sampling, roots) waiting for a client at once; more are refused.
pub(crate) const MAX_ASKS: usize = 64;

/// What a pending request receives.
#[derive(Debug)]
pub(crate) enum Answer {
    /// The reply envelope's message.
    Env(Msg),
    /// A raw sideband result.
    Raw {
        /// Its header.
        header: pb::RawHeader,
        /// Its payload.
        payload: bytes::Bytes,
    },
    /// The process, or the host, failed the request.
    Failed(String),
    /// The process answered a tool call with `create_task`: the task is being followed and
    /// its unsolicited status updates arrive on `pushed` (see `crate::task`).
    TaskCreated {
        /// The process's task id.
        task_id: String,
        /// Latest pushed status.
        pushed: watch::Receiver<TaskPush>,
    },
    /// The call asked the client something that, in 2026-07-28, must come back as an
    /// `input_required` result: the call ends and is re-run with the client's answer.
    InputRequired,
}

/// What reaches the follower of a process task outside its polls.
#[derive(Debug, Clone)]
pub(crate) enum TaskPush {
    /// Nothing yet.
    Nothing,
    /// The latest unsolicited status.
    Status(pb::TaskStatusResponse),
    /// An ask of the task must come back as an `input_required` result (2026-07-28).
    InputRequired,
}

type Table = PendingTable<CallCtx, oneshot::Sender<Answer>, watch::Sender<TaskPush>>;

/// What the current process generation holds right now (for monitoring and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProcessLoad {
    /// Requests sent and not answered — cancelled tool calls the process has not finished
    /// included — plus process-side tasks being followed.
    pub pending: usize,
    /// Messages waiting to be written to the process.
    pub queued: usize,
    /// Asks from the process (sampling, roots) waiting for a client.
    pub asks: usize,
}

/// The host's handle on one process generation. See the module docs.
pub(crate) struct ChildChannel {
    /// Generation number (for logs).
    pub gen_id: u64,
    out: mpsc::Sender<Envelope>,
    pending: Mutex<Table>,
    /// Registered tools and the active set.
    pub tools: Mutex<ToolList>,
    /// Tool definitions as the process sent them.
    pub defs: Vec<pb::ToolDefinition>,
    /// Middleware registrations (name, priority).
    pub middleware: Vec<(String, i32)>,
    ids: Arc<AtomicU64>,
    asks: AtomicUsize,
    /// Messages dropped because the process is not reading, and asks refused (for logs).
    dropped: AtomicU64,
    refused_asks: AtomicU64,
    /// Fires when the connection has ended.
    pub done: CancellationToken,
}

/// A request on its way; dropping it before the answer cancels it.
pub(crate) struct PendingCall {
    channel: Arc<ChildChannel>,
    id: String,
    rx: oneshot::Receiver<Answer>,
    finished: bool,
}

impl PendingCall {
    /// Waits for the answer.
    pub async fn wait(mut self) -> Answer {
        let answer = (&mut self.rx)
            .await
            .unwrap_or_else(|_| Answer::Failed("the tool process connection ended".into()));
        self.finished = true;
        answer
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        if !self.finished {
            // A task created for a call nobody waits for any more is cancelled too.
            if let Ok(Answer::TaskCreated { task_id, .. }) = self.rx.try_recv() {
                self.channel.unfollow_task(&task_id, false);
            }
            self.channel.cancel(&self.id);
        }
    }
}

/// A place among the asks in flight; freed when dropped.
pub(crate) struct AskSlot(Arc<ChildChannel>);

impl AskSlot {
    /// The channel the ask came from.
    pub(crate) fn channel(&self) -> &Arc<ChildChannel> {
        &self.0
    }
}

impl Drop for AskSlot {
    fn drop(&mut self) {
        self.0.asks.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ChildChannel {
    /// A channel for a generation whose handshake completed, holding at most `max_pending`
    /// requests; the receiver is the outbound queue, for the I/O task.
    pub(crate) fn new(
        gen_id: u64,
        hs: Handshake,
        ids: Arc<AtomicU64>,
        max_pending: usize,
    ) -> (Arc<ChildChannel>, mpsc::Receiver<Envelope>) {
        let (out, rx) = mpsc::channel(QUEUED_REQUESTS + QUEUED_CONTROL);
        let names = hs.tools.iter().map(|t| t.name.clone());
        let channel = Arc::new(ChildChannel {
            gen_id,
            out,
            pending: Mutex::new(PendingTable::new(max_pending)),
            tools: Mutex::new(ToolList::new(names)),
            defs: hs.tools,
            middleware: hs.middleware,
            ids,
            asks: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            refused_asks: AtomicU64::new(0),
            done: CancellationToken::new(),
        });
        (channel, rx)
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh request id (`h{n}`, one counter per backend, never reused).
    pub(crate) fn next_id(&self) -> String {
        format!("h{}", self.ids.fetch_add(1, Ordering::Relaxed))
    }

    /// Sends a request built from its fresh id; `ctx` is kept for progress, logs and asks.
    /// Refused with [`McpError::LimitExceeded`] when the process is not reading or has too
    /// many requests unanswered, and with [`McpError::Internal`] once the connection ended.
    pub(crate) fn request(
        self: &Arc<Self>,
        build: impl FnOnce(&str) -> Msg,
        ctx: Option<CallCtx>,
        tool: bool,
    ) -> Result<PendingCall, McpError> {
        let not_reading = || {
            McpError::LimitExceeded(format!(
                "the tool process is not reading: {QUEUED_REQUESTS} messages are waiting to be \
                 written to it"
            ))
        };
        if self.out.capacity() <= QUEUED_CONTROL {
            return Err(not_reading());
        }
        let permit = self.out.try_reserve().map_err(|e| match e {
            mpsc::error::TrySendError::Full(()) => not_reading(),
            mpsc::error::TrySendError::Closed(()) => {
                McpError::Internal("the tool process connection ended".into())
            }
        })?;
        let id = self.next_id();
        let (tx, rx) = oneshot::channel();
        self.lock()
            .insert(id.clone(), tool, ctx, tx)
            .map_err(|refused| match refused {
                Refused::Closed(reason) => McpError::Internal(reason),
                Refused::Full(limit) => McpError::LimitExceeded(format!(
                    "the tool process has {limit} requests unanswered (cancelled calls it has \
                     not finished included); it may be hung"
                )),
            })?;
        permit.send(Envelope {
            msg: Some(build(&id)),
            request_id: id.clone(),
            namespace: String::new(),
        });
        Ok(PendingCall {
            channel: self.clone(),
            id,
            rx,
            finished: false,
        })
    }

    /// Queues a message that cancels or answers something (no answer expected). It uses the
    /// room kept for such messages; when even that is full the process has stopped reading,
    /// and the message is dropped with a warning.
    pub(crate) fn send_control(&self, env: Envelope) {
        if let Err(mpsc::error::TrySendError::Full(env)) = self.out.try_send(env)
            && let Some(n) = count_for_log(&self.dropped)
        {
            tracing::warn!(
                generation = self.gen_id,
                msg = ?env.msg,
                "the tool process is not reading; message dropped ({n} so far)"
            );
        }
    }

    /// Requests whose caller still waits for the answer.
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().waiting()
    }

    /// What the channel holds right now.
    pub(crate) fn load(&self) -> ProcessLoad {
        ProcessLoad {
            pending: self.lock().len(),
            queued: self.out.max_capacity() - self.out.capacity(),
            asks: self.asks.load(Ordering::Relaxed),
        }
    }

    /// Forgets a request whose caller went away; a tool call gets a `CancelRequest`.
    fn cancel(&self, id: &str) {
        if self.lock().forget(id) {
            self.send_control(cancel_request(id));
        }
    }

    /// Ends the connection: every pending request is failed with `reason`.
    pub(crate) fn close(&self, reason: &str) {
        let waiters = self.lock().close(reason);
        for w in waiters {
            let _ = w.send(Answer::Failed(reason.to_owned()));
        }
        self.done.cancel();
    }

    /// Delivers an answer to `id`; a tool result also retires every earlier tool call.
    pub(crate) fn deliver(&self, id: &str, answer: Answer) {
        let answered = self.lock().answer(id);
        match answered {
            Answered::Waiting(tx) => {
                let _ = tx.send(answer);
            }
            Answered::Cancelled => {}
            Answered::Unknown => tracing::debug!(id, "answer for an unknown request"),
        }
    }

    /// Whether `id` is a request still waiting for its answer.
    pub(crate) fn is_pending(&self, id: &str) -> bool {
        self.lock().is_pending(id)
    }

    /// The context of a pending request, or of a call now followed as a process-side task.
    pub(crate) fn ctx_of(&self, id: &str) -> Option<CallCtx> {
        self.lock().ctx_of(id)
    }

    /// The process answered call `call_id` with `create_task{task_id}`: the task is followed
    /// from now on (so status pushes that come right behind are not lost) and the caller gets
    /// [`Answer::TaskCreated`]. A task for a call nobody waits for any more is cancelled.
    pub(crate) fn task_created(&self, call_id: &str, task_id: String) {
        let (push, pushed) = watch::channel(TaskPush::Nothing);
        let follow = self.lock().follow_task(call_id, &task_id, push);
        match follow {
            Follow::NobodyWaits => self.unfollow_task(&task_id, false),
            Follow::BadTaskId(tx) => {
                let reason = format!(
                    "tool process answered a call with task id {task_id:?}, which is empty or in use"
                );
                let _ = tx.send(Answer::Failed(reason));
            }
            Follow::Following(tx) => {
                if let Err(Answer::TaskCreated { task_id, .. }) =
                    tx.send(Answer::TaskCreated { task_id, pushed })
                {
                    self.unfollow_task(&task_id, false);
                }
            }
        }
    }

    /// Stops following `task_id`; unless it ended, the process gets a `TaskCancelRequest`.
    pub(crate) fn unfollow_task(&self, task_id: &str, ended: bool) {
        let open = {
            let mut p = self.lock();
            p.unfollow(task_id);
            p.closed().is_none()
        };
        if !ended && open {
            self.send_control(Envelope {
                msg: Some(Msg::TaskCancel(pb::TaskCancelRequest {
                    task_id: task_id.to_owned(),
                })),
                request_id: self.next_id(),
                namespace: String::new(),
            });
        }
    }

    /// Hands an unsolicited status update to the follower of its task; false if none.
    pub(crate) fn push_task_status(&self, status: pb::TaskStatusResponse) -> bool {
        let p = self.lock();
        match p.task_push(&status.task_id) {
            Some(push) => {
                // `InputRequired` is final: a status the process pushes after learning its
                // ask must ride an `input_required` result never hides it.
                push.send_if_modified(|v| {
                    if matches!(v, TaskPush::InputRequired) {
                        return false;
                    }
                    *v = TaskPush::Status(status);
                    true
                });
                true
            }
            None => false,
        }
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.lock().closed().map(str::to_owned)
    }

    /// The call a message without a call id belongs to: id and context (see
    /// `crate::pending` for the rule).
    pub(crate) fn attributed(&self) -> Option<(String, CallCtx)> {
        self.lock().attributed()
    }

    /// Ends call `id` with [`Answer::InputRequired`] and cancels it in the process (which
    /// will not answer it, Q4); it stays queued until a later result retires it. For the call
    /// of a followed task, its follower is told instead (and cancels the task).
    pub(crate) fn input_required(&self, id: &str) {
        let tx = match self.lock().park(id) {
            Parked::Call(tx) => tx,
            Parked::Task(push) => {
                push.send_replace(TaskPush::InputRequired);
                return;
            }
            Parked::Unknown => return,
        };
        if let Some(tx) = tx {
            let _ = tx.send(Answer::InputRequired);
        }
        self.send_control(cancel_request(id));
    }

    /// Whether any tool call is queued in the process (cancelled ones included).
    pub(crate) fn tool_call_queued(&self) -> bool {
        self.lock().tool_call_queued()
    }

    /// A place for one more ask in flight, unless [`MAX_ASKS`] are (then the refusal is
    /// logged, sparsely).
    pub(crate) fn ask_slot(self: &Arc<Self>) -> Option<AskSlot> {
        let taken = self
            .asks
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_ASKS).then_some(n + 1)
            });
        if taken.is_err() {
            if let Some(n) = count_for_log(&self.refused_asks) {
                tracing::warn!(
                    generation = self.gen_id,
                    "tool process has {MAX_ASKS} asks waiting for a client; refused ({n} so far)"
                );
            }
            return None;
        }
        Some(AskSlot(self.clone()))
    }
}

/// Counts an event and says whether to log it: the 1st, 2nd, 4th, 8th… so a flood costs a
/// few log lines, each with the count so far.
pub(crate) fn count_for_log(counter: &AtomicU64) -> Option<u64> {
    let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
    n.is_power_of_two().then_some(n)
}

fn cancel_request(id: &str) -> Envelope {
    Envelope {
        msg: Some(Msg::Cancel(pb::CancelRequest {
            request_id: id.to_owned(),
        })),
        ..Envelope::default()
    }
}
