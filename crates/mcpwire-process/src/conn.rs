//! One tool-process connection ("generation"): the handshake, the pending table and the
//! I/O task that owns the socket.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use mcpwire_model::{LogEntry, McpError};
use mcpwire_router::CallCtx;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use crate::codec::{EnvelopeCodec, ProcFrame};
use crate::pb::{self, Envelope, envelope::Msg};
use crate::toollist::ToolList;

/// Middleware registrations accepted from one process.
const MAX_MIDDLEWARE: usize = 64;

/// What the host does with things the connection cannot handle alone.
pub(crate) trait Hooks: Send + Sync + 'static {
    /// The active tool list of `conn` changed.
    fn tools_changed(&self, conn: &Arc<Conn>);
    /// The process said a resource changed.
    fn resource_changed(&self, uri: String);
    /// A log message not attributable to a call.
    fn log(&self, entry: LogEntry);
}

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
        payload: Bytes,
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

struct Entry {
    tx: Option<oneshot::Sender<Answer>>,
    ctx: Option<CallCtx>,
    tool: bool,
    /// Ended by `input_required`: its ask was answered with an error and it was cancelled,
    /// so later asks are not attributed to it.
    parked: bool,
}

#[derive(Default)]
struct Pending {
    map: HashMap<String, Entry>,
    /// Tool-call ids in send order: the SDK runs them one at a time in this order.
    fifo: VecDeque<String>,
    /// Process-side async tasks being followed, by the process's task id.
    tasks: HashMap<String, Followed>,
    closed: Option<String>,
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

/// A process-side async task (frames 19–23) a call is waiting on.
struct Followed {
    /// The id of the call the process answered with `create_task`.
    call_id: String,
    ctx: CallCtx,
    /// Unsolicited status updates (latest only).
    push: watch::Sender<TaskPush>,
}

/// The result of a successful handshake.
pub(crate) struct Handshake {
    pub tools: Vec<pb::ToolDefinition>,
    pub middleware: Vec<(String, i32)>,
}

/// One live connection to a tool process.
pub(crate) struct Conn {
    /// Generation number (for logs).
    pub gen_id: u64,
    out: mpsc::UnboundedSender<Envelope>,
    pending: Mutex<Pending>,
    /// Registered tools and the active set.
    pub tools: Mutex<ToolList>,
    /// Tool definitions as the process sent them.
    pub defs: Vec<pb::ToolDefinition>,
    /// Middleware registrations (name, priority).
    pub middleware: Vec<(String, i32)>,
    ids: Arc<AtomicU64>,
    /// Fires when the connection has ended.
    pub done: CancellationToken,
}

/// A request on its way; dropping it before the answer cancels it.
pub(crate) struct PendingCall {
    conn: Arc<Conn>,
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
                self.conn.unfollow_task(&task_id, false);
            }
            self.conn.cancel(&self.id);
        }
    }
}

async fn next_frame(
    reader: &mut FramedRead<OwnedReadHalf, EnvelopeCodec>,
) -> Result<ProcFrame, String> {
    match reader.next().await {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("the tool process closed the connection".into()),
    }
}

/// Runs the handshake on a fresh stream: list tools, acknowledge middleware registrations,
/// wait for the completion signal. Nothing else is written before it completes (Q7).
pub(crate) async fn handshake(
    reader: &mut FramedRead<OwnedReadHalf, EnvelopeCodec>,
    writer: &mut FramedWrite<OwnedWriteHalf, EnvelopeCodec>,
    ids: &AtomicU64,
) -> Result<Handshake, String> {
    let id = format!("h{}", ids.fetch_add(1, Ordering::Relaxed));
    let req = Envelope {
        msg: Some(Msg::ListTools(pb::ListToolsRequest {})),
        request_id: id.clone(),
        namespace: String::new(),
    };
    writer.send(&req).await.map_err(|e| e.to_string())?;
    let mut tools = None;
    let mut middleware = Vec::new();
    loop {
        let ProcFrame::Env(env) = next_frame(reader).await? else {
            tracing::warn!(
                "tool process sent a raw, oversize or garbled frame during the handshake"
            );
            continue;
        };
        match env.msg {
            Some(Msg::ToolList(l)) if env.request_id == id || tools.is_none() => {
                tools = Some(l.tools)
            }
            Some(Msg::RegisterMiddleware(m)) => {
                if middleware.len() == MAX_MIDDLEWARE {
                    return Err(format!(
                        "tool process registered more than {MAX_MIDDLEWARE} middleware"
                    ));
                }
                middleware.push((m.name, m.priority));
                let ack = Envelope {
                    msg: Some(Msg::RegisterMiddlewareResponse(
                        pb::RegisterMiddlewareResponse { success: true },
                    )),
                    ..Envelope::default()
                };
                writer.send(&ack).await.map_err(|e| e.to_string())?;
            }
            Some(Msg::ReloadResponse(r)) => {
                if !r.success {
                    return Err(format!("tool process failed to start: {}", r.error));
                }
                let tools =
                    tools.ok_or("tool process completed its handshake without a tool list")?;
                return Ok(Handshake { tools, middleware });
            }
            other => tracing::debug!(?other, "ignored during the handshake"),
        }
    }
}

impl Conn {
    /// Starts the I/O task for a connection whose handshake completed.
    pub(crate) fn start(
        gen_id: u64,
        stream: (
            FramedRead<OwnedReadHalf, EnvelopeCodec>,
            FramedWrite<OwnedWriteHalf, EnvelopeCodec>,
        ),
        hs: Handshake,
        ids: Arc<AtomicU64>,
        hooks: Weak<dyn Hooks>,
    ) -> Arc<Conn> {
        let (out, rx) = mpsc::unbounded_channel();
        let names = hs.tools.iter().map(|t| t.name.clone());
        let conn = Arc::new(Conn {
            gen_id,
            out,
            pending: Mutex::new(Pending::default()),
            tools: Mutex::new(ToolList::new(names)),
            defs: hs.tools,
            middleware: hs.middleware,
            ids,
            done: CancellationToken::new(),
        });
        crate::io::spawn_io(&conn, stream, rx, hooks);
        conn
    }

    /// Splits a fresh stream into a framed reader and writer.
    pub(crate) fn framed(
        stream: UnixStream,
        max_envelope: usize,
        max_raw: u64,
    ) -> (
        FramedRead<OwnedReadHalf, EnvelopeCodec>,
        FramedWrite<OwnedWriteHalf, EnvelopeCodec>,
    ) {
        let (r, w) = stream.into_split();
        (
            FramedRead::new(r, EnvelopeCodec::new(max_envelope, max_raw)),
            FramedWrite::new(w, EnvelopeCodec::new(max_envelope, max_raw)),
        )
    }

    /// Sends a request built from its fresh id; `ctx` is kept for progress, logs and asks.
    pub(crate) fn request(
        self: &Arc<Self>,
        build: impl FnOnce(&str) -> Msg,
        ctx: Option<CallCtx>,
        tool: bool,
    ) -> Result<PendingCall, McpError> {
        let id = format!("h{}", self.ids.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let mut p = self.lock();
            if let Some(reason) = &p.closed {
                return Err(McpError::Internal(reason.clone()));
            }
            p.map.insert(
                id.clone(),
                Entry {
                    tx: Some(tx),
                    ctx,
                    tool,
                    parked: false,
                },
            );
            if tool {
                p.fifo.push_back(id.clone());
            }
        }
        let env = Envelope {
            msg: Some(build(&id)),
            request_id: id.clone(),
            namespace: String::new(),
        };
        let _ = self.out.send(env);
        Ok(PendingCall {
            conn: self.clone(),
            id,
            rx,
            finished: false,
        })
    }

    /// Sends an envelope that expects no answer.
    pub(crate) fn send(&self, env: Envelope) {
        let _ = self.out.send(env);
    }

    /// Requests outstanding (answers not yet received), cancelled tool calls excluded.
    pub(crate) fn in_flight(&self) -> usize {
        self.lock().map.values().filter(|e| e.tx.is_some()).count()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Forgets a request whose caller went away; a tool call gets a `CancelRequest`.
    fn cancel(&self, id: &str) {
        let tool = {
            let mut p = self.lock();
            match p.map.get_mut(id) {
                Some(e) if e.tool => {
                    // Kept (without a receiver) until a later result proves it finished.
                    e.tx = None;
                    e.ctx = None;
                    true
                }
                Some(_) => {
                    p.map.remove(id);
                    false
                }
                None => false,
            }
        };
        if tool && self.lock().closed.is_none() {
            self.send(Envelope {
                msg: Some(Msg::Cancel(pb::CancelRequest {
                    request_id: id.to_owned(),
                })),
                ..Envelope::default()
            });
        }
    }

    /// Ends the connection: every pending request is failed with `reason`.
    pub(crate) fn close(&self, reason: &str) {
        let entries: Vec<Entry> = {
            let mut p = self.lock();
            if p.closed.is_none() {
                p.closed = Some(reason.to_owned());
            }
            p.fifo.clear();
            p.tasks.clear();
            p.map.drain().map(|(_, e)| e).collect()
        };
        for e in entries {
            if let Some(tx) = e.tx {
                let _ = tx.send(Answer::Failed(reason.to_owned()));
            }
        }
        self.done.cancel();
    }

    /// Delivers an answer to `id`; a tool result also retires every earlier tool call.
    pub(crate) fn deliver(&self, id: &str, answer: Answer) {
        let tx = {
            let mut p = self.lock();
            let Some(entry) = p.map.remove(id) else {
                tracing::debug!(id, "answer for an unknown or cancelled request");
                return;
            };
            if entry.tool
                && let Some(pos) = p.fifo.iter().position(|f| f == id)
            {
                for old in p.fifo.drain(..=pos).collect::<Vec<_>>() {
                    if old != id {
                        p.map.remove(&old);
                    }
                }
            }
            entry.tx
        };
        if let Some(tx) = tx {
            let _ = tx.send(answer);
        }
    }

    /// Whether `id` is a request still waiting for its answer.
    pub(crate) fn is_pending(&self, id: &str) -> bool {
        self.lock().map.contains_key(id)
    }

    /// The context of a pending request, or of a call now followed as a process-side task
    /// (its progress token stays the call's id).
    pub(crate) fn ctx_of(&self, id: &str) -> Option<CallCtx> {
        let p = self.lock();
        match p.map.get(id) {
            Some(e) => e.ctx.clone(),
            None => p
                .tasks
                .values()
                .find(|t| t.call_id == id)
                .map(|t| t.ctx.clone()),
        }
    }

    /// The process answered call `call_id` with `create_task{task_id}`: the task is followed
    /// from now on (so status pushes that come right behind are not lost) and the caller gets
    /// [`Answer::TaskCreated`]. A task for a call nobody waits for any more is cancelled.
    pub(crate) fn task_created(&self, call_id: &str, task_id: String) {
        let delivered = {
            let mut p = self.lock();
            let waiting = p.map.get(call_id).filter(|e| e.tx.is_some());
            let Some(ctx) = waiting.and_then(|e| e.ctx.clone()) else {
                drop(p);
                self.unfollow_task(&task_id, false);
                return;
            };
            if task_id.is_empty() || p.tasks.contains_key(&task_id) {
                Err(format!(
                    "tool process answered a call with task id {task_id:?}, which is empty or in use"
                ))
            } else {
                let (push, pushed) = watch::channel(TaskPush::Nothing);
                let followed = Followed {
                    call_id: call_id.to_owned(),
                    ctx,
                    push,
                };
                p.tasks.insert(task_id.clone(), followed);
                Ok(pushed)
            }
        };
        let answer = match delivered {
            Ok(pushed) => Answer::TaskCreated { task_id, pushed },
            Err(reason) => Answer::Failed(reason),
        };
        self.deliver(call_id, answer);
    }

    /// Stops following `task_id`; unless it ended, the process gets a `TaskCancelRequest`.
    pub(crate) fn unfollow_task(&self, task_id: &str, ended: bool) {
        let open = {
            let mut p = self.lock();
            p.tasks.remove(task_id);
            p.closed.is_none()
        };
        if !ended && open {
            let id = format!("h{}", self.ids.fetch_add(1, Ordering::Relaxed));
            self.send(Envelope {
                msg: Some(Msg::TaskCancel(pb::TaskCancelRequest {
                    task_id: task_id.to_owned(),
                })),
                request_id: id,
                namespace: String::new(),
            });
        }
    }

    /// Hands an unsolicited status update to the follower of its task; false if none.
    pub(crate) fn push_task_status(&self, status: pb::TaskStatusResponse) -> bool {
        let p = self.lock();
        match p.tasks.get(&status.task_id) {
            Some(t) => {
                t.push.send_replace(TaskPush::Status(status));
                true
            }
            None => false,
        }
    }

    /// Why the connection ended, once it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.lock().closed.clone()
    }

    /// The context of the tool call the process is running (the head of the queue), unless
    /// it was cancelled (then nobody can be attributed).
    pub(crate) fn running_ctx(&self) -> Option<CallCtx> {
        self.running().map(|(_, ctx)| ctx)
    }

    /// The id and context of the running tool call (see [`Conn::running_ctx`]); with no
    /// call queued, the call of the only process task being followed.
    pub(crate) fn running(&self) -> Option<(String, CallCtx)> {
        let p = self.lock();
        let head = p
            .fifo
            .iter()
            .find(|id| p.map.get(*id).is_some_and(|e| !e.parked));
        match head {
            Some(head) => p
                .map
                .get(head)
                .and_then(|e| e.ctx.clone())
                .map(|c| (head.clone(), c)),
            None if p.fifo.is_empty() && p.tasks.len() == 1 => p
                .tasks
                .values()
                .next()
                .map(|t| (t.call_id.clone(), t.ctx.clone())),
            None => None,
        }
    }

    /// Ends call `id` with [`Answer::InputRequired`] and cancels it in the process (which
    /// will not answer it, Q4); it stays queued until a later result retires it.
    pub(crate) fn input_required(&self, id: &str) {
        let tx = {
            let mut p = self.lock();
            match p.map.get_mut(id) {
                Some(e) => {
                    e.ctx = None;
                    e.parked = true;
                    e.tx.take()
                }
                None => {
                    // A followed task's call: its follower ends (and cancels the task).
                    if let Some(t) = p.tasks.values().find(|t| t.call_id == id) {
                        t.push.send_replace(TaskPush::InputRequired);
                    }
                    return;
                }
            }
        };
        if let Some(tx) = tx {
            let _ = tx.send(Answer::InputRequired);
        }
        self.send(Envelope {
            msg: Some(Msg::Cancel(pb::CancelRequest {
                request_id: id.to_owned(),
            })),
            ..Envelope::default()
        });
    }

    pub(crate) fn tool_call_outstanding(&self) -> bool {
        !self.lock().fifo.is_empty()
    }
}
