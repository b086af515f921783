//! One downstream call forwarded on a [`Link`]: the upstream request, the upstream's asks
//! answered through the call's context, `input_required` rounds of a 2026-07-28 upstream
//! answered the same way and retried, cancellation passed on to that request only.

use std::sync::Arc;

use futures::stream::{AbortHandle, Abortable, FuturesUnordered};
use futures::{FutureExt, StreamExt};
use mcpwire_model::{ClientAsk, McpError, Raw, Reply};
use mcpwire_router::{BoxFuture, CallCtx};

use super::forward::undecorated;
use super::link::{Link, ToCall};
use crate::client::{
    Answer, ClientEra, InputRequired, PendingRequest, RequestOptions, ServerRequestId,
};

/// Most `input_required` rounds one call goes through with a 2026-07-28 upstream.
const MAX_ROUNDS: usize = 16;

/// A forwarded request: its method and params, and the options for the upstream.
pub(crate) struct Forward {
    pub(crate) method: String,
    pub(crate) params: Option<Raw>,
    pub(crate) opts: RequestOptions,
}

/// Forgets a call on its link however the call ends.
struct Registered {
    link: Arc<Link>,
    id: crate::client::ClientRequestId,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.link.unregister(self.id);
    }
}

type AskFuture = BoxFuture<'static, Result<(ServerRequestId, Result<Raw, McpError>), ()>>;

/// Runs `fwd` on `link` for the downstream call `ctx` until its final answer.
pub(crate) async fn run(link: Arc<Link>, ctx: CallCtx, fwd: Forward) -> Result<Reply, McpError> {
    let mut params = fwd.params;
    let strip =
        link.client().negotiated().era == ClientEra::Stateless && !ctx.revision().is_stateless();
    for _ in 0..MAX_ROUNDS {
        let answer = one_round(&link, &ctx, &fwd.method, params.clone(), fwd.opts.clone()).await?;
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

/// Sends one request and waits for its answer, answering the upstream's asks meanwhile.
async fn one_round(
    link: &Arc<Link>,
    ctx: &CallCtx,
    method: &str,
    params: Option<Raw>,
    opts: RequestOptions,
) -> Result<Answer, McpError> {
    link.sending();
    let mut pending = match link.client().send(method, params, opts).await {
        Ok(p) => p,
        Err(e) => {
            link.send_failed();
            return Err(e.to_mcp());
        }
    };
    let id = pending.id();
    let mut from_link = link.register(id, ctx.clone());
    let _registered = Registered {
        link: link.clone(),
        id,
    };
    let mut asks: FuturesUnordered<AskFuture> = FuturesUnordered::new();
    let mut aborts: Vec<(ServerRequestId, AbortHandle)> = Vec::new();
    loop {
        tokio::select! {
            answer = &mut pending => {
                tracing::debug!(method, "upstream answered; flushing");
                link.flush().await;
                tracing::debug!(method, "flushed");
                return answer.map_err(|e| e.to_mcp());
            }
            Some(msg) = from_link.recv() => match msg {
                ToCall::Ask(req) => {
                    let (handle, reg) = AbortHandle::new_pair();
                    aborts.push((req.id, handle));
                    asks.push(ask(ctx.clone(), req.id, req.method.as_str().to_owned(), req.params, reg));
                }
                ToCall::Withdrawn(sid) => {
                    if let Some(i) = aborts.iter().position(|(s, _)| *s == sid) {
                        aborts.swap_remove(i).1.abort();
                    }
                }
            },
            Some(done) = asks.next(), if !asks.is_empty() => {
                let Ok((sid, result)) = done else { continue };
                aborts.retain(|(s, _)| *s != sid);
                link.answered(sid);
                if matches!(result, Err(McpError::InputRequired)) {
                    // A stateless downstream: the ask is now part of its input_required
                    // answer; the upstream's request is given up (held in a later step).
                    pending.cancel("the downstream client answers in a later request");
                    return Err(McpError::InputRequired);
                }
                let _ = link.client().answer(sid, result).await;
            }
            _ = ctx.cancelled() => {
                cancel(pending);
                return Err(McpError::Cancelled);
            }
        }
    }
}

fn cancel(pending: PendingRequest) {
    pending.cancel("the downstream client cancelled");
}

/// Asks the downstream client what the upstream asked, through the call's context.
fn ask(
    ctx: CallCtx,
    id: ServerRequestId,
    method: String,
    params: Option<Raw>,
    reg: futures::stream::AbortRegistration,
) -> AskFuture {
    let fut = async move {
        let ask = ClientAsk {
            method: method.into(),
            params,
        };
        (id, ctx.ask(ask).await)
    };
    Abortable::new(fut, reg).map(|r| r.map_err(|_| ())).boxed()
}
