//! [`RelayedCalls`]: a session's calls relayed to an upstream as raw frames
//! (`mcpwire_relay`), which [`Calls`](super::Calls) counts with the calls it runs — so the
//! in-flight bound, drain on end of input and cancellation hold for them as for any call.
//!
//! A relayed call is accounted in the session (`ServerSession::accept_relayed`) and kept
//! here under its dispatch id with the relay it went to and its upstream id: a
//! cancellation (the client's, or the request timeout) tells the relay, which tells the
//! upstream. What comes back ([`Arrived`]) is taken in order: an answer's bytes are written
//! as they are (once the session agrees the call is still on), an outcome is answered by
//! the session as the general path's would be, a log is the session's to filter and send,
//! and an ask is put to the client on the call's behalf, its answer handed back upstream.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::BytesMut;
use mcpwire_model::{BackendEvent, CallEvent, McpError, Raw, Reply, RequestId};
use mcpwire_router::{RelayCaller, RelayDecision, RouteParts, Router};
use mcpwire_session::{AskId, DispatchId, IdMap, ServerSession};

use super::now;
use mcpwire_wire::json_frame::PlainCall;

use crate::observe::{
    CallMetrics, TraceParent, WireLabel, finish_span, finish_span_as, relayed_outcome, relayed_span,
};
use mcpwire_relay::{AnswerAsk, Arrived, CallSlot, Relay, RelayInbox};
use tracing::Span;

/// The relayed calls of one session.
#[derive(Default)]
pub(crate) struct RelayedCalls {
    /// Calls in flight.
    calls: IdMap<DispatchId, RelayedCall>,
    /// Asks put to the client for relayed calls, and how to answer the upstream.
    asks: IdMap<AskId, AnswerAsk>,
    /// What comes back for this session's relayed calls (made on the first).
    inbox: Option<Arc<RelayInbox>>,
    /// The inbox handed out before any call was relayed (to the seam's slots), taken as
    /// [`RelayedCalls::inbox`] once one is: until then nothing waits on it.
    spare: Option<Arc<RelayInbox>>,
    /// Answers' bytes taken from the inbox and not yet written.
    bytes: BytesMut,
    /// Items taken from the inbox (kept for its allocation).
    items: VecDeque<Arrived>,
}

/// One relayed call in flight: where it went, and what observes it as the general path's
/// call would be observed (its metrics when they are on, its `request` span).
pub(crate) struct RelayedCall {
    relay: Arc<Relay>,
    /// Its id on the upstream connection.
    up: u64,
    metrics: Option<CallMetrics>,
    span: Span,
}

/// What observes a relayed call as the general path's call would be observed: its metrics
/// when they are on, its `request` span.
struct Observed {
    metrics: Option<CallMetrics>,
    span: Span,
}

fn observed(metrics: Option<CallMetrics>, span: Span) -> Observed {
    Observed { metrics, span }
}

impl Observed {
    /// The call ended with `outcome` (`None`: cancelled), answered by the session.
    fn ended(self, outcome: Option<&Result<Reply, McpError>>) {
        if let Some(m) = self.metrics {
            m.finish(outcome);
        }
        self.span.in_scope(|| finish_span(&self.span, outcome));
    }
}

impl RelayedCall {
    /// Call `up` on `relay`'s connection, observed by `metrics` and `span` (both started
    /// as the call was relayed: [`CallMetrics::start_tool_call`], [`relayed_span`]).
    pub(crate) fn new(
        relay: Arc<Relay>,
        up: u64,
        metrics: Option<CallMetrics>,
        span: Span,
    ) -> RelayedCall {
        RelayedCall {
            relay,
            up,
            metrics,
            span,
        }
    }

    /// The call's answer `line` was written: recorded as the general path records it.
    pub(crate) fn answered(self, line: &[u8]) {
        if self.metrics.is_none() && self.span.is_disabled() {
            return;
        }
        // Read once, for both.
        let outcome = relayed_outcome(line);
        if let Some(m) = self.metrics {
            m.finish_relayed(outcome);
        }
        self.span.in_scope(|| finish_span_as(&self.span, outcome));
    }

    /// The call ended with `outcome` (`None`: cancelled), answered by the session.
    pub(crate) fn ended(self, outcome: Option<&Result<Reply, McpError>>) {
        observed(self.metrics, self.span).ended(outcome);
    }

    /// The call ended without its answer (cancelled, timed out, or its session ended):
    /// the upstream is told, and the call recorded as cancelled.
    pub(crate) fn cancel(self) {
        self.relay.cancel(self.up);
        self.ended(None);
    }

    /// The call's client went away before its answer (not a cancellation): forgotten
    /// without telling the upstream, recorded as ended without an answer.
    pub(crate) fn forget(self) {
        self.relay.forget(self.up);
        self.ended(None);
    }
}

/// A relayed call's refusal `error` (a rate limit, decided as its route was resolved; its
/// span a child of `parent`) recorded as the general path records it; the error back.
pub(crate) fn observe_refusal(
    wire: WireLabel,
    tool: &str,
    parent: Option<&TraceParent>,
    error: McpError,
) -> McpError {
    let outcome = Err(error);
    let metrics = CallMetrics::start_tool_call(wire, tool);
    observed(metrics, relayed_span(wire, tool, parent)).ended(Some(&outcome));
    match outcome {
        Err(error) => error,
        Ok(_) => McpError::Internal("a refusal".into()),
    }
}

impl RelayedCalls {
    /// Relayed calls in flight.
    pub(crate) fn len(&self) -> usize {
        self.calls.len()
    }

    /// The inbox what comes back for this session's relayed calls will arrive in, for the
    /// seam's slots (which forward to it); not waited on before a call is relayed or adopted.
    pub(crate) fn shared_inbox(&mut self) -> Arc<RelayInbox> {
        match &self.inbox {
            Some(inbox) => inbox.clone(),
            None => self.spare.get_or_insert_with(Default::default).clone(),
        }
    }

    /// The inbox what comes back for this session's relayed calls arrives in, waited on
    /// from now on.
    fn inbox(&mut self) -> &Arc<RelayInbox> {
        let spare = &mut self.spare;
        self.inbox
            .get_or_insert_with(|| spare.take().unwrap_or_default())
    }

    /// Takes `call`, relayed by a request handler itself and accounted in the session as
    /// `dispatch` ([`ServerSession::adopt_relayed`]): what its `slot` holds and all that
    /// comes later arrive here as this call's.
    pub(crate) fn adopt(&mut self, dispatch: DispatchId, call: RelayedCall, slot: &CallSlot) {
        self.inbox();
        self.calls.insert(dispatch, call);
        slot.forward(dispatch);
    }

    /// Sends `call` to the upstream the router names for its tool, made by `caller`,
    /// accounted in `session`; or answers it with the refusal a layer decided (a rate
    /// limit), as the general path would. Its span is a child of `parent` when tracing
    /// passes one. Whether it was taken (else the general path takes it, and nothing was
    /// recorded).
    pub(crate) fn send(
        &mut self,
        router: &Router,
        caller: &RelayCaller<'_>,
        session: &mut ServerSession,
        call: &PlainCall<'_>,
        (wire, parent): (WireLabel, Option<&TraceParent>),
    ) -> bool {
        // Accepted first (in-flight bound, duplicate ids): a layer that counts the call as
        // it decides (a rate limit) must not count it again on the general path.
        let Some(dispatch) = session.accept_relayed(now(), call.request_id().clone()) else {
            return false;
        };
        let route = match router.relay_route(call.tool(), caller) {
            RelayDecision::Relay(route) => route,
            RelayDecision::Refuse(error) => {
                let error = observe_refusal(wire, call.tool(), parent, error);
                session.handle_reply(now(), dispatch, Err(error));
                return true;
            }
            RelayDecision::General => {
                session.withdraw_relayed(dispatch);
                return false;
            }
        };
        let parts = route.into_parts();
        let Ok(renamed) = parts.renamed(call) else {
            session.withdraw_relayed(dispatch);
            return false;
        };
        let RouteParts { relay, member, .. } = &parts;
        let relay = relay.clone();
        let inbox = self.inbox();
        // An upstream that takes each call on a request of its own (HTTP) is told the
        // call's span as the request goes (the general path's trace context headers).
        let mut posted_span = None;
        let trace = || {
            let span = relayed_span(wire, call.tool(), parent);
            let headers = span.in_scope(crate::observe::outgoing_trace);
            posted_span = Some(span);
            headers
        };
        match relay.send(renamed.as_ref().unwrap_or(call), dispatch, inbox, trace) {
            Ok(up) => {
                let span = posted_span.unwrap_or_else(|| relayed_span(wire, call.tool(), parent));
                if let Some(member) = member {
                    span.record("backend", &**member);
                }
                let metrics = CallMetrics::start_tool_call(wire, call.tool());
                self.calls
                    .insert(dispatch, RelayedCall::new(relay, up, metrics, span));
                true
            }
            Err(_) => {
                session.withdraw_relayed(dispatch);
                false
            }
        }
    }

    /// The session ended call `id` without its answer (the client cancelled it, or it
    /// timed out): the upstream is told when it was relayed; whether it was.
    pub(crate) fn cancel(&mut self, id: DispatchId) -> bool {
        match self.calls.remove(&id) {
            Some(call) => {
                call.cancel();
                true
            }
            None => false,
        }
    }

    /// The client answered ask `ask`: handed upstream when it was asked for a relayed
    /// call; the result back otherwise.
    pub(crate) fn ask_done(
        &mut self,
        ask: AskId,
        result: Result<Raw, McpError>,
    ) -> Option<Result<Raw, McpError>> {
        match self.asks.remove(&ask) {
            Some(answer) => {
                answer(result);
                None
            }
            None => Some(result),
        }
    }

    /// Completes when something came back (never before the first relayed call).
    pub(crate) async fn arrived(&self) {
        match &self.inbox {
            Some(inbox) => inbox.arrived().await,
            None => std::future::pending().await,
        }
    }

    /// Takes what came back: answers' bytes (with the client's id of the call they answer)
    /// go to `out` through `write` (called with `None` first to flush what the session
    /// queued before them, in order), the rest to `session`. Whether anything came.
    pub(crate) fn take(
        &mut self,
        session: &mut ServerSession,
        out: &mut BytesMut,
        mut write: impl FnMut(&mut ServerSession, &mut BytesMut, Option<(&RequestId, &[u8])>),
    ) -> bool {
        let Some(inbox) = &self.inbox else {
            return false;
        };
        inbox.take(&mut self.bytes, &mut self.items);
        if self.items.is_empty() {
            return false;
        }
        // Answers are read in place (not split off: the buffer keeps its allocation for the
        // next take).
        let mut at = 0;
        while let Some(item) = self.items.pop_front() {
            match item {
                Arrived::Answer(id, len) => {
                    let bytes = self.bytes.get(at..at + len).unwrap_or_default();
                    at += len;
                    if let Some(call) = self.calls.remove(&id)
                        && let Some(request) = session.relayed_answered(now(), id)
                    {
                        call.answered(bytes);
                        write(session, out, None);
                        write(session, out, Some((&request, bytes)));
                    }
                }
                Arrived::Outcome(id, outcome) => {
                    if let Some(call) = self.calls.remove(&id) {
                        call.ended(Some(&outcome));
                        session.handle_reply(now(), id, outcome);
                    }
                }
                // The call's own (on its stream on HTTP) while it runs, as the general path
                // logs an upstream's log for its oldest call.
                Arrived::Log(Some(id), entry) if self.calls.contains_key(&id) => {
                    session.handle_call_event(id, CallEvent::Log(entry));
                }
                Arrived::Log(_, entry) => session.handle_backend_event(&BackendEvent::Log(entry)),
                Arrived::Ask(origin, ask, answer) => {
                    let id = session.start_ask(now(), origin, ask);
                    self.asks.insert(id, answer);
                }
                Arrived::NotRun(id, frame) => {
                    // Not observed as a relayed call: the general path observes it.
                    if self.calls.remove(&id).is_some() {
                        rerun(session, id, &frame);
                    }
                }
            }
        }
        self.bytes.clear();
        write(session, out, None);
        true
    }
}

/// Runs relayed call `id`, which its upstream did not run, on the general path: `frame` as
/// it went upstream, under the client's id again, as if it had just come.
fn rerun(session: &mut ServerSession, id: DispatchId, frame: &[u8]) {
    let Some(client_id) = session.withdraw_relayed(id) else {
        return;
    };
    match mcpwire_model::jsonrpc::decode_with_depth(frame, RERUN_MAX_DEPTH) {
        Ok(mcpwire_model::Message::Request(mut req)) => {
            req.id = client_id;
            session.handle_inbound(now(), Ok(mcpwire_model::Message::Request(req)));
        }
        // The frame was read as a plain call before it went: nothing else can come back.
        _ => tracing::warn!("a relayed call to run again could not be read; it is dropped"),
    }
}

/// Nesting of a frame run again (it was read once already, within the wire's limit).
const RERUN_MAX_DEPTH: usize = 128;
