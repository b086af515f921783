//! The forwarding fast path: a `tools/call` of a stateful downstream session on an upstream
//! session that is up now and speaks a handshake era goes out without the machinery the
//! general path needs for what such a call cannot meet — no wait for a link, no
//! `input_required` rounds, no hold for a stateless client's retry, no round with an inbox.
//! What it sends upstream and what the downstream client gets back are the general path's
//! (`super::call`), byte for byte; progress, logs and the upstream's asks for the call are
//! routed through its context as they are there (`Link::register_fast`).
//!
//! Eligible ([`eligible`]): a downstream session in a handshake era (2025-06-18,
//! 2025-11-25), a link for it open and up (`Sessions::ready`, or the shared one), that link
//! in a handshake era (2026-07-28 upstreams answer with `input_required`, which the general
//! path turns into rounds). Everything else takes the general path.

use std::sync::Arc;

use mcpwire_model::{McpError, Raw, Reply};
use mcpwire_router::CallCtx;

use super::call::Registered;
use super::link::Link;
use mcpwire_client::{Answer, ClientEra, RequestOptions};

/// Whether a call in `ctx` may take the fast path on `link`.
pub(crate) fn eligible(ctx: &CallCtx, link: &Link) -> bool {
    !ctx.revision().is_stateless()
        && matches!(link.client().negotiated().era, ClientEra::Handshake(_))
}

/// What went wrong that the general path handles instead: the upstream no longer holds
/// the session (HTTP 404) — it opens a new one and runs the call there.
pub(crate) enum Fallback {
    /// The call ended (answered, failed or cancelled).
    Done(Result<Reply, McpError>),
    /// The upstream session is gone before the request ran; run it the general way.
    SessionGone(McpError),
}

/// Sends `tools/call` with `params` on `link` for the downstream call `ctx`, with `opts`,
/// and waits for its answer (or the call's cancellation).
pub(crate) async fn call(
    link: Arc<Link>,
    ctx: CallCtx,
    params: Option<Raw>,
    opts: RequestOptions,
) -> Fallback {
    link.sending();
    let pending = match link.client().send("tools/call", params, opts).await {
        Ok(p) => p,
        Err(e) => {
            link.send_failed();
            return Fallback::Done(Err(e.to_mcp()));
        }
    };
    let id = pending.id();
    link.register_fast(id, ctx.clone());
    let _registered = Registered {
        link: link.clone(),
        id,
    };
    let mut pending = pending;
    tokio::select! {
        answer = &mut pending => {
            // Progress and logs the upstream sent before its answer go first.
            link.flush().await;
            match answer {
                Ok(Answer::Complete(raw)) => Fallback::Done(Ok(Reply::Complete(raw))),
                // A handshake-era session never reads a result as `input_required`.
                Ok(Answer::InputRequired(_)) => Fallback::Done(Err(McpError::BadPeerMessage(
                    "a handshake-era upstream answered `input_required`".into(),
                ))),
                Err(e) => {
                    let e = e.to_mcp();
                    match e {
                        McpError::Unavailable(_) if link.client().wire_session_gone() => {
                            Fallback::SessionGone(e)
                        }
                        e => Fallback::Done(Err(e)),
                    }
                }
            }
        }
        _ = ctx.cancelled() => {
            pending.cancel("the downstream client cancelled");
            Fallback::Done(Err(McpError::Cancelled))
        }
    }
}
