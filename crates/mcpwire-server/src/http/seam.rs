//! The seam (`docs/design/gateway.md` § The seam): a stateful session's plain `tools/call`
//! relayed by its `POST` handler itself — the route resolved, the call sent to its
//! upstream and its plain answer written back — without a round trip through the session's
//! task, and on an upstream that takes each call on a request of its own (HTTP) without a
//! task of its own for that request either.
//!
//! The session's task and its handlers share a [`SessionSeam`]: the task publishes whether
//! its calls may be relayed (its revision) and how many requests it holds; the handlers keep
//! the calls they relay in its table, by the client's id, so that a cancellation, a
//! duplicate id, the in-flight bound, idle expiry and the session's end see them. A handler
//! uses the seam only while the session's task holds no request (so duplicate ids are
//! always caught) and the table has room under the session's in-flight bound; otherwise the
//! call goes to the session as before.
//!
//! Only a plain answer is written by the handler. When anything else comes back first — an
//! upstream's log, a server→client request, an answer the general path must shape, a call
//! the upstream did not run — the handler hands the call to its session
//! ([`SessionHandle::adopt`]), which from then on treats it as a call it relayed itself (its
//! stream, replay, asks and logs are the session's), and the handler answers from the
//! session's stream. A call a rate limit refused as its route was resolved is answered by
//! the session too ([`SessionHandle::refused`]), so its error has the general path's shape.
//!
//! Known narrow race: a client's cancellation that arrives while a call is being handed
//! over (out of the seam's table, its `Adopt` not yet taken by the session) reaches the
//! session before the call does and is not applied; the call then runs to its answer.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::Response;
use mcpwire_model::{McpError, Outbound, RequestId, Revision};
use mcpwire_relay::{CallSlot, Relay, RelayExchange, RelayInbox, Taken};
use mcpwire_router::{Identity, RelayCaller, RelayDecision, Router, SessionScope};
use mcpwire_wire::json_frame::PlainFrame;

use super::reply;
use super::session::{Adopted, RequestStream, SessionHandle};
use crate::driver::calls::sleep_until;
use crate::driver::now;
use crate::driver::relayed::{RelayedCall, observe_refusal};
use crate::observe::{CallMetrics, TraceParent, WireLabel, outgoing_trace, relayed_span};

/// What one session's task and its request handlers share (see the module docs).
pub(crate) struct SessionSeam {
    router: Router,
    scope: SessionScope,
    owner: Option<Identity>,
    ip: Option<IpAddr>,
    /// The session's relay inbox, where a handed-over call's slot forwards.
    inbox: Arc<RelayInbox>,
    max_in_flight: usize,
    request_timeout: Option<Duration>,
    /// The session's revision, once its calls may be relayed (set by its task).
    revision: OnceLock<Revision>,
    /// Requests the session's task holds (its routes), as it last said.
    session_requests: AtomicUsize,
    table: Mutex<Table>,
}

/// The calls the handlers relay.
struct Table {
    calls: HashMap<RequestId, Entry>,
    /// When a call of the seam last ended.
    last_end: Instant,
    /// The session ended: nothing more is relayed here.
    closed: bool,
}

/// One call in the table: where its answer arrives, and once sent, where it went.
struct Entry {
    slot: Arc<CallSlot>,
    sent: Option<(Arc<Relay>, u64)>,
}

impl Entry {
    /// The call ends without its answer: the upstream is told, the handler stops waiting.
    fn end(self) {
        if let Some((relay, up)) = self.sent {
            relay.cancel(up);
        }
        self.slot.end();
    }
}

/// Who the session is, for [`SessionSeam::new`].
pub(crate) struct SeamOwner {
    /// The router its calls are routed by.
    pub(crate) router: Router,
    /// The session's scope, as its calls carry it.
    pub(crate) scope: SessionScope,
    /// Who opened it.
    pub(crate) owner: Option<Identity>,
    /// The client's address.
    pub(crate) ip: Option<IpAddr>,
    /// The session's relay inbox.
    pub(crate) inbox: Arc<RelayInbox>,
}

impl SessionSeam {
    /// The seam of the session `owner` describes, holding at most `max_in_flight` calls
    /// with the session's own, each answered with a timeout after `request_timeout`.
    pub(crate) fn new(
        owner: SeamOwner,
        max_in_flight: usize,
        request_timeout: Option<Duration>,
    ) -> SessionSeam {
        SessionSeam {
            router: owner.router,
            scope: owner.scope,
            owner: owner.owner,
            ip: owner.ip,
            inbox: owner.inbox,
            max_in_flight,
            request_timeout,
            revision: OnceLock::new(),
            session_requests: AtomicUsize::new(0),
            table: Mutex::new(Table {
                calls: HashMap::new(),
                last_end: now(),
                closed: false,
            }),
        }
    }

    // ----- the session's task -----

    /// The session's task says whether its calls may be relayed (`revision`, once its
    /// handshake is done) and how many requests it holds.
    pub(crate) fn publish(&self, revision: Option<Revision>, requests: usize) {
        if let Some(r) = revision
            && self.revision.get().is_none()
        {
            let _ = self.revision.set(r);
        }
        self.session_requests.store(requests, Ordering::Release);
    }

    /// Whether a call with client id `id` is running in the seam (the session refuses a
    /// request of its own with the same id).
    pub(crate) fn holds(&self, id: &RequestId) -> bool {
        self.table.lock().is_ok_and(|t| t.calls.contains_key(id))
    }

    /// Whether calls are running in the seam (the session is not idle).
    pub(crate) fn busy(&self) -> bool {
        self.table.lock().is_ok_and(|t| !t.calls.is_empty())
    }

    /// When a call of the seam last ended.
    pub(crate) fn last_end(&self) -> Instant {
        self.table
            .lock()
            .map(|t| t.last_end)
            .unwrap_or_else(|_| now())
    }

    /// The session ended: every call of the seam ends (the upstream told), and nothing
    /// more is relayed here.
    pub(crate) fn close(&self) {
        let calls = self.table.lock().map(|mut t| {
            t.closed = true;
            std::mem::take(&mut t.calls)
        });
        for (_, entry) in calls.into_iter().flatten() {
            entry.end();
        }
    }

    // ----- the handlers -----

    /// The client cancelled request `id`: when it is a call of the seam, it ends (the
    /// upstream told); whether it was one.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        let entry = self.table.lock().ok().and_then(|mut t| t.calls.remove(id));
        match entry {
            Some(entry) => {
                entry.end();
                true
            }
            None => false,
        }
    }

    /// Whether the seam may take call `id` now; the revision the session answers in.
    fn may_take(&self, id: &RequestId) -> Option<Revision> {
        let revision = *self.revision.get()?;
        let session = self.session_requests.load(Ordering::Acquire);
        if session > 0 {
            return None;
        }
        let t = self.table.lock().ok()?;
        (!t.closed && t.calls.len() < self.max_in_flight && !t.calls.contains_key(id))
            .then_some(revision)
    }

    /// Puts call `id` in the table, its answer to arrive in a new slot; `None` when the seam
    /// cannot take it after all (a call with its id, or the bound, came meanwhile).
    fn admit(&self, id: &RequestId) -> Option<Arc<CallSlot>> {
        let mut t = self.table.lock().ok()?;
        if t.closed || t.calls.len() >= self.max_in_flight || t.calls.contains_key(id) {
            return None;
        }
        let slot = Arc::new(CallSlot::new(self.inbox.clone()));
        let entry = Entry {
            slot: slot.clone(),
            sent: None,
        };
        t.calls.insert(id.clone(), entry);
        Some(slot)
    }

    /// Records where call `id` went; false when it ended meanwhile (cancelled, or the
    /// session ended).
    fn sent(&self, id: &RequestId, relay: &Arc<Relay>, up: u64) -> bool {
        let Ok(mut t) = self.table.lock() else {
            return false;
        };
        match t.calls.get_mut(id) {
            Some(entry) => {
                entry.sent = Some((relay.clone(), up));
                true
            }
            None => false,
        }
    }

    /// Takes call `id` out of the table; whether it was still there.
    fn finish(&self, id: &RequestId) -> bool {
        let Ok(mut t) = self.table.lock() else {
            return false;
        };
        let found = t.calls.remove(id).is_some();
        t.last_end = now();
        found
    }
}

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
    let Some(revision) = seam.may_take(id) else {
        return Seamed::Declined;
    };
    let Some(call) = frame.call() else {
        return Seamed::Declined;
    };
    let wire = WireLabel::Http;
    let caller = RelayCaller {
        scope: &seam.scope,
        identity: seam.owner.as_ref(),
        client_ip: seam.ip,
    };
    let route = match seam.router.relay_route(call.tool(), &caller) {
        RelayDecision::Relay(route) => route,
        RelayDecision::Refuse(error) => {
            let error = observe_refusal(wire, call.tool(), trace, error);
            return match session.refused(id.clone(), error).await {
                Ok(stream) => Seamed::Session(stream),
                Err(_) => Seamed::Ended,
            };
        }
        RelayDecision::General => return Seamed::Declined,
    };
    // Room checked again as the call takes it: another request with its id, or the bound,
    // may have come since (then the session decides the route again: a rate limit counts
    // such a call twice).
    let Some(slot) = seam.admit(id) else {
        return Seamed::Declined;
    };
    let (relay, member) = route.into_parts();
    let started = now();
    let mut posted_span = None;
    let headers = || {
        let span = relayed_span(wire, call.tool(), trace);
        let headers = span.in_scope(outgoing_trace);
        posted_span = Some(span);
        headers
    };
    let Ok((up, exchange)) = relay.send_to_slot(&call, &slot, headers) else {
        seam.finish(id);
        return Seamed::Declined;
    };
    let span = posted_span.unwrap_or_else(|| relayed_span(wire, call.tool(), trace));
    if let Some(member) = &member {
        span.record("backend", &**member);
    }
    let metrics = CallMetrics::start_tool_call(wire, call.tool());
    let mut running = Running {
        seam,
        id,
        call: Some(RelayedCall::new(relay.clone(), up, metrics, span)),
    };
    if !seam.sent(id, &relay, up) {
        return Seamed::Ended;
    }
    let deadline = seam.request_timeout.map(|t| started + t);
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
            if let Some(exchange) = exchange {
                // Its request goes on whatever this handler does next.
                tokio::spawn(exchange);
            }
            let Some(call) = running.release() else {
                return Seamed::Ended;
            };
            let adopted = Adopted::new((id.clone(), started), call, slot);
            match session.adopt(adopted).await {
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
