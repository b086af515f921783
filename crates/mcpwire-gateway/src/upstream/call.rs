//! One downstream call forwarded on a [`Link`]: the upstream request, the upstream's asks
//! answered through the call's context, `input_required` rounds of a 2026-07-28 upstream
//! answered the same way and retried, cancellation passed on to that request only.
//!
//! A stateless (2026-07-28) downstream client cannot be asked in the middle of a call: its
//! call is answered `input_required` and it calls again with the answers. The upstream's
//! request is then *held* ([`Holder`]) with its open asks, and the retry resumes it by the
//! keys its answers carry, instead of starting the upstream's work over.

use std::sync::Arc;

use futures::stream::{AbortHandle, Abortable, FuturesUnordered};
use futures::{FutureExt, StreamExt};
use mcpwire_model::{ClientAsk, McpError, Raw, Reply};
use mcpwire_router::{BoxFuture, CallCtx};

use super::forward::undecorated;
use super::hold::Holder;
use super::link::{CallInbox, Link, ToCall};
use mcpwire_client::{
    Answer, ClientEra, ClientRequestId, InputRequired, PendingRequest, RequestOptions,
    ServerRequestId,
};

/// Most `input_required` rounds one call goes through with a 2026-07-28 upstream.
const MAX_ROUNDS: usize = 16;

/// A forwarded request: its method and params, and the options for the upstream.
#[derive(Clone)]
pub(crate) struct Forward {
    pub(crate) method: String,
    pub(crate) params: Option<Raw>,
    pub(crate) opts: RequestOptions,
}

/// Forgets a call on its link however the call ends (rounds here, `super::fast`'s calls).
pub(crate) struct Registered {
    pub(crate) link: Arc<Link>,
    pub(crate) id: ClientRequestId,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.link.unregister(self.id);
    }
}

/// What an ask of the upstream's became: its id, the key it was asked under, the ask, and
/// the downstream client's answer.
type Asked = (
    ServerRequestId,
    Option<String>,
    ClientAsk,
    Result<Raw, McpError>,
);
type AskFuture = BoxFuture<'static, Result<Asked, ()>>;

/// An ask of the upstream's waiting for the downstream client's answer.
pub(crate) struct Waiting {
    /// The upstream's request.
    pub(crate) id: ServerRequestId,
    /// The `inputRequests` key it was put to the client under.
    pub(crate) key: String,
    /// The ask.
    pub(crate) ask: ClientAsk,
}

/// A round waiting for its retry.
pub(crate) struct Held {
    pub(crate) round: Round,
    pub(crate) waiting: Vec<Waiting>,
}

/// One upstream request in flight for a downstream call.
pub(crate) struct Round {
    link: Arc<Link>,
    pending: PendingRequest,
    from_link: CallInbox,
    _registered: Registered,
    /// Names the round's asks under a stateless downstream client (`None`: by order).
    hold_id: Option<u64>,
    asked: u32,
}

/// Runs `fwd` on `link` for the downstream call `ctx` until its final answer; `resumed` is
/// a held round the call's answers resume.
pub(crate) async fn run(
    link: Arc<Link>,
    ctx: CallCtx,
    fwd: Forward,
    holder: &Arc<Holder<Held>>,
    resumed: Option<Held>,
) -> Result<Reply, McpError> {
    let mut params = fwd.params;
    let strip =
        link.client().negotiated().era == ClientEra::Stateless && !ctx.revision().is_stateless();
    let mut resumed = resumed;
    for _ in 0..MAX_ROUNDS {
        let answer = match resumed.take() {
            Some(held) => resume(held, &ctx, holder).await?,
            None => {
                let round =
                    Round::start(&link, &ctx, &fwd.method, params.clone(), &fwd.opts, holder)
                        .await?;
                round.drive(&ctx, holder, Vec::new()).await?
            }
        };
        let ir = match answer {
            Answer::Complete(raw) if strip => return Ok(Reply::Complete(undecorated(raw))),
            Answer::Complete(raw) => return Ok(Reply::Complete(raw)),
            Answer::InputRequired(ir) => ir,
        };
        let responses = answer_inputs(&ctx, &ir).await?;
        params = Some(
            ir.retry_params(params.as_deref(), responses)
                .map_err(McpError::BadPeerMessage)?,
        );
    }
    Err(McpError::BadPeerMessage(format!(
        "`{}` still asked for input after {MAX_ROUNDS} rounds",
        fwd.method
    )))
}

/// A `tools/call` the upstream runs only as a 2025-11-25 task (`super::routes`): `fwd`
/// carries the `task` parameter; the task's result is then fetched with `tasks/result`,
/// which waits for the task's end, on the same link — asks the task sends meanwhile are
/// answered through the call, as a plain call's are. A call cancelled meanwhile cancels
/// the task. An upstream answering plainly is answered as it answered.
pub(crate) async fn run_as_task(
    link: Arc<Link>,
    ctx: CallCtx,
    fwd: Forward,
    holder: &Arc<Holder<Held>>,
) -> Result<Reply, McpError> {
    let opts = RequestOptions {
        progress: false,
        meta: None,
        ..fwd.opts.clone()
    };
    let created = run(link.clone(), ctx.clone(), fwd, holder, None).await?;
    let Some(task_id) = created_task(&created) else {
        return Ok(created);
    };
    let result = Forward {
        method: "tasks/result".into(),
        params: Some(mcpwire_model::to_raw(
            &serde_json::json!({ "taskId": task_id }),
        )),
        opts,
    };
    match run(link.clone(), ctx, result, holder, None).await {
        Err(McpError::Cancelled) => {
            tokio::spawn(async move {
                let cancel = serde_json::json!({ "taskId": task_id });
                if let Err(e) = link.client().request("tasks/cancel", cancel).await {
                    tracing::debug!("cancelling the upstream's task {task_id}: {e}");
                }
            });
            Err(McpError::Cancelled)
        }
        other => other,
    }
}

/// The id of the task a `CreateTaskResult` (`{"task": {"taskId": …}}`) names.
fn created_task(reply: &Reply) -> Option<String> {
    let Reply::Complete(raw) = reply else {
        return None;
    };
    #[derive(serde::Deserialize)]
    struct Created {
        task: Task,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Task {
        task_id: String,
    }
    serde_json::from_str::<Created>(raw.get())
        .ok()
        .map(|c| c.task.task_id)
}

/// A held round resumed by the downstream client's retry: its open asks answered from the
/// retry's answers, then driven on.
async fn resume(held: Held, ctx: &CallCtx, holder: &Arc<Holder<Held>>) -> Result<Answer, McpError> {
    let Held { round, waiting } = held;
    round.link.reattach(round._registered.id, ctx.clone());
    let mut still = Vec::new();
    for w in waiting {
        match ctx.ask_as(Some(&w.key), w.ask.clone()).await {
            Err(McpError::InputRequired) => still.push(w),
            result => {
                round.link.answered(w.id);
                let _ = round.link.client().answer(w.id, result).await;
            }
        }
    }
    round.drive(ctx, holder, still).await
}

/// The downstream client's answers to an upstream `input_required` result, by key: asked
/// as real requests (2025-11-25 downstream) or as `input_required` of the gateway's own
/// (2026-07-28 downstream: the first time `McpError::InputRequired`, the answers on retry).
async fn answer_inputs(ctx: &CallCtx, ir: &InputRequired) -> Result<Vec<(String, Raw)>, McpError> {
    let asks = ir.input_requests.iter().map(|r| {
        let ask = ClientAsk {
            method: r.method.as_str().to_owned().into(),
            params: r.params.clone(),
        };
        let key = r.key.clone();
        async move { ctx.ask_as(Some(&key), ask).await.map(|raw| (key, raw)) }
    });
    let answers = futures::future::join_all(asks).await;
    // Every ask is recorded before the first missing answer is reported.
    if answers
        .iter()
        .any(|a| matches!(a, Err(McpError::InputRequired)))
    {
        return Err(McpError::InputRequired);
    }
    answers.into_iter().collect()
}

impl Round {
    /// The link the round's request went on.
    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// Sends the request and registers the call on the link.
    async fn start(
        link: &Arc<Link>,
        ctx: &CallCtx,
        method: &str,
        params: Option<Raw>,
        opts: &RequestOptions,
        holder: &Holder<Held>,
    ) -> Result<Round, McpError> {
        link.sending();
        let pending = match link.client().send(method, params, opts.clone()).await {
            Ok(p) => p,
            Err(e) => {
                link.send_failed();
                return Err(e.to_mcp());
            }
        };
        let id = pending.id();
        let from_link = link.register(id, ctx.clone());
        Ok(Round {
            link: link.clone(),
            pending,
            from_link,
            _registered: Registered {
                link: link.clone(),
                id,
            },
            hold_id: ctx.revision().is_stateless().then(|| holder.next_id()),
            asked: 0,
        })
    }

    /// Waits for the answer, answering the upstream's asks meanwhile. Under a stateless
    /// downstream client an ask that needs its input holds the round (`waiting`: asks
    /// already put to it and not yet answered) and answers `InputRequired`.
    async fn drive(
        mut self,
        ctx: &CallCtx,
        holder: &Arc<Holder<Held>>,
        mut waiting: Vec<Waiting>,
    ) -> Result<Answer, McpError> {
        let mut asks: FuturesUnordered<AskFuture> = FuturesUnordered::new();
        let mut aborts: Vec<(ServerRequestId, AbortHandle)> = Vec::new();
        loop {
            if !waiting.is_empty() && asks.is_empty() {
                return self.hold(holder, waiting);
            }
            tokio::select! {
                answer = &mut self.pending => {
                    self.link.flush().await;
                    return answer.map_err(|e| e.to_mcp());
                }
                Some(msg) = self.from_link.next() => match msg {
                    ToCall::Ask(req) => {
                        let (handle, reg) = AbortHandle::new_pair();
                        aborts.push((req.id, handle));
                        let ask = ClientAsk { method: req.method.as_str().to_owned().into(), params: req.params };
                        let key = self.key(holder);
                        asks.push(ask_downstream(ctx.clone(), req.id, key, ask, reg));
                    }
                    ToCall::Withdrawn(sid) => {
                        if let Some(i) = aborts.iter().position(|(s, _)| *s == sid) {
                            aborts.swap_remove(i).1.abort();
                        }
                        waiting.retain(|w| w.id != sid);
                    }
                },
                Some(done) = asks.next(), if !asks.is_empty() => {
                    let Ok((sid, key, ask, result)) = done else { continue };
                    aborts.retain(|(s, _)| *s != sid);
                    match (result, key) {
                        (Err(McpError::InputRequired), Some(key)) => {
                            waiting.push(Waiting { id: sid, key, ask });
                        }
                        (Err(McpError::InputRequired), None) => {
                            // No room to hold: the upstream's request is given up; the retry
                            // runs it again and answers its asks by order.
                            self.link.answered(sid);
                            self.pending.cancel("the downstream client answers in a later request");
                            return Err(McpError::InputRequired);
                        }
                        (result, _) => {
                            self.link.answered(sid);
                            let _ = self.link.client().answer(sid, result).await;
                        }
                    }
                }
                _ = ctx.cancelled() => {
                    self.pending.cancel("the downstream client cancelled");
                    return Err(McpError::Cancelled);
                }
            }
        }
    }

    /// The key of the round's next ask under a stateless client: unique, naming the round
    /// (`None` when the round cannot be held: asks are then keyed by order).
    fn key(&mut self, holder: &Holder<Held>) -> Option<String> {
        let id = self.hold_id?;
        if !holder.has_room() {
            return None;
        }
        self.asked += 1;
        Some(Holder::<Held>::key(id, self.asked))
    }

    /// Keeps the round until the downstream client's retry (or the deadline).
    fn hold(self, holder: &Arc<Holder<Held>>, waiting: Vec<Waiting>) -> Result<Answer, McpError> {
        let Some(id) = self.hold_id else {
            return Err(McpError::Internal("a round without a hold id".into()));
        };
        holder.hold(
            id,
            Held {
                round: self,
                waiting,
            },
        );
        Err(McpError::InputRequired)
    }
}

/// Asks the downstream client what the upstream asked, through the call's context.
fn ask_downstream(
    ctx: CallCtx,
    id: ServerRequestId,
    key: Option<String>,
    ask: ClientAsk,
    reg: futures::stream::AbortRegistration,
) -> AskFuture {
    let fut = async move {
        let result = ctx.ask_as(key.as_deref(), ask.clone()).await;
        (id, key, ask, result)
    };
    Abortable::new(fut, reg).map(|r| r.map_err(|_| ())).boxed()
}
