//! The `POST` handler's side of the seam (`docs/design/gateway.md` § The seam; the state
//! it shares with the session's task is [`SessionSeam`]): relays a stateful session's plain
//! call itself and writes its plain answer, or hands the call to the session.

use std::time::Instant;

use axum::http::StatusCode;
use axum::response::Response;
use mcpwire_model::{McpError, Outbound, RequestId};
use mcpwire_relay::{CallSlot, RelayExchange, Taken};
use mcpwire_router::{RelayDecision, RouteParts};
use mcpwire_wire::json_frame::PlainFrame;

use super::reply;
use super::seam::SessionSeam;
use super::session::{Adopted, RequestStream, SessionHandle};
use crate::driver::calls::sleep_until;
use crate::driver::now;
use crate::driver::relayed::{RelayedCall, observe_refusal};
use crate::observe::{CallMetrics, TraceParent, WireLabel, outgoing_trace, relayed_span};

/// How [`relay`] ended.
pub(crate) enum Seamed {
    /// Not taken: the session takes the call.
    Declined,
    /// Answered here.
    Answered(Response),
    /// Handed to the session: its answer comes on this stream.
    Session(RequestStream),
    /// Ended without an answer: cancelled by the client, or the session ended.
    Ended,
}

/// A call of the seam, until it ends: when its handler goes away first (the client left),
/// the call is taken out of the table and forgotten — not cancelled: a disconnection is
/// not a cancellation (its request upstream is dropped with the handler; the upstream runs
/// the call on, as the general path's would, and nobody reads its answer).
struct Running<'a> {
    seam: &'a SessionSeam,
    id: &'a RequestId,
    call: Option<RelayedCall>,
}

impl Running<'_> {
    /// The call, no longer this handler's to end.
    fn release(&mut self) -> Option<RelayedCall> {
        self.call.take()
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            if self.seam.finish(self.id) {
                call.forget();
            } else {
                // Ended by a cancellation or the session's end (the upstream was told).
                call.cancel();
            }
        }
    }
}

/// Relays `frame` (a plain `tools/call` for `session`, whose span is a child of `trace`)
/// through the seam, when it may (see the module docs).
pub(crate) async fn relay(
    session: &SessionHandle,
    frame: &PlainFrame,
    trace: Option<&TraceParent>,
) -> Seamed {
    let seam = &*session.seam;
    let id = frame.request_id();
    let Some(call) = frame.call() else {
        return Seamed::Declined;
    };
    let Some((revision, slot)) = seam.admit(id) else {
        return Seamed::Declined;
    };
    let wire = WireLabel::Http;
    let route = match seam.router().relay_route(call.tool(), &seam.caller()) {
        RelayDecision::Relay(route) => route,
        RelayDecision::Refuse(error) => {
            seam.withdraw(id);
            let error = observe_refusal(wire, call.tool(), trace, error);
            // Boxed, as the handover below: rare, and each request's future would carry it.
            return match Box::pin(session.refused(id.clone(), error)).await {
                Ok(stream) => Seamed::Session(stream),
                Err(_) => Seamed::Ended,
            };
        }
        RelayDecision::General => {
            seam.withdraw(id);
            return Seamed::Declined;
        }
    };
    let parts = route.into_parts();
    let Ok(renamed) = parts.renamed(&call) else {
        seam.withdraw(id);
        return Seamed::Declined;
    };
    let RouteParts { relay, member, .. } = &parts;
    let started = now();
    let mut posted_span = None;
    let headers = || {
        let span = relayed_span(wire, call.tool(), trace);
        let headers = span.in_scope(outgoing_trace);
        posted_span = Some(span);
        headers
    };
    let Ok((up, exchange)) = relay.send_to_slot(renamed.as_ref().unwrap_or(&call), &slot, headers)
    else {
        seam.withdraw(id);
        return Seamed::Declined;
    };
    let span = posted_span.unwrap_or_else(|| relayed_span(wire, call.tool(), trace));
    if let Some(member) = member {
        span.record("backend", &**member);
    }
    let metrics = CallMetrics::start_tool_call(wire, call.tool());
    let mut running = Running {
        seam,
        id,
        call: Some(RelayedCall::new(relay.clone(), up, metrics, span)),
    };
    if !seam.sent(id, relay, up) {
        return Seamed::Ended;
    }
    let deadline = seam.request_timeout().map(|t| started + t);
    match wait(&slot, exchange, deadline).await {
        Waited::Answer(line, rest) => {
            if let Some(rest) = rest {
                // An answer that came as an event: the rest of its stream is read on its own,
                // so the upstream connection is used again.
                tokio::spawn(rest);
            }
            let Some(call) = running.release() else {
                return Seamed::Ended;
            };
            if !seam.finish(id) {
                // Cancelled as it was answered: the answer is not written.
                call.cancel();
                return Seamed::Ended;
            }
            call.answered(&line);
            Seamed::Answered(reply::json_line(line))
        }
        Waited::Ended => Seamed::Ended,
        Waited::TimedOut => {
            let Some(call) = running.release() else {
                return Seamed::Ended;
            };
            if !seam.finish(id) {
                call.cancel();
                return Seamed::Ended;
            }
            // As the session answers a call past its request timeout.
            call.cancel();
            let msg = Outbound::Error {
                id: Some(id.clone()),
                error: McpError::Timeout.to_wire(revision),
            };
            Seamed::Answered(reply::json(StatusCode::OK, &msg))
        }
        Waited::Other(exchange) => {
            // Out of the table first: a cancellation from now on is the session's.
            if !seam.finish(id) {
                return Seamed::Ended;
            }
            if let Some(exchange) = exchange
                && !slot.settled()
            {
                // Its request goes on whatever this handler does next — unless the call is
                // over upstream (timed out: the request is abandoned, as the general path
                // abandons it).
                tokio::spawn(exchange);
            }
            let Some(call) = running.release() else {
                return Seamed::Ended;
            };
            let adopted = Adopted::new((id.clone(), started), call, slot);
            match Box::pin(session.adopt(adopted)).await {
                Ok(stream) => Seamed::Session(stream),
                Err(_) => Seamed::Ended,
            }
        }
    }
}

/// What [`wait`] found.
enum Waited {
    /// The answer, and the request if it is still running (the rest of an event stream).
    Answer(axum::body::Bytes, Option<RelayExchange>),
    /// Something else came first: the session takes the call; the request, if still
    /// running, goes with it.
    Other(Option<RelayExchange>),
    Ended,
    TimedOut,
}

/// Runs the call's request (when this handler runs it) until its slot holds something.
async fn wait(
    slot: &CallSlot,
    mut exchange: Option<RelayExchange>,
    deadline: Option<Instant>,
) -> Waited {
    loop {
        match slot.take_answer() {
            Taken::Answer(line) => return Waited::Answer(line, exchange),
            Taken::Other => return Waited::Other(exchange),
            Taken::Ended => return Waited::Ended,
            Taken::Nothing => {}
        }
        tokio::select! {
            biased;
            _ = slot.arrived() => {}
            () = run(&mut exchange) => exchange = None,
            () = sleep_until(deadline) => return Waited::TimedOut,
        }
    }
}

/// Runs `exchange` to its end, if there is one; never completes otherwise.
async fn run(exchange: &mut Option<RelayExchange>) {
    match exchange {
        Some(e) => e.await,
        None => std::future::pending().await,
    }
}
