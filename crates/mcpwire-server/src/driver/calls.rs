//! Running a session's dispatches: the wire-independent half of every connection driver.
//!
//! [`Calls`] owns the router, the futures of the calls in flight, their cancellation tokens,
//! the asks waiting for a client answer and the queue through which running calls report
//! progress, logs and asks. [`Calls::wait`] is the one place that waits for any of them (or
//! the session's timer) and names what happened as a [`Wake`]; [`Calls::apply`] hands it to
//! the [`ServerSession`]. No protocol decisions are made.
//!
//! Everything held here is bounded: call events queued by running calls ([`PEER_QUEUE`];
//! progress and logs dropped past it, asks refused), trace contexts of requests not started
//! yet ([`MAX_WAITING_PARENTS`]), and the requests whose calls asked to close their stream's
//! connection (`ctx.close_stream()`, HTTP SSE polling; [`MAX_DETACHED`]). Only a stateful HTTP
//! session has streams a client can resume, and it takes those requests after every drain
//! ([`Calls::take_detached`]); on every other wire (stdio, WebSocket, MCPB, gRPC, stateless
//! HTTP) `close_stream` is a no-op and nothing is recorded. A request is recorded once however
//! often its call asks; past [`MAX_DETACHED`] waiting requests a close is refused (the stream
//! stays open, which is always correct: closing is only a hint to free a connection), counted
//! and logged (a warning at the 1st, 2nd, 4th, 8th, … refusal of a session, with the count).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use super::relayed::{RelayedCall, RelayedCalls};
use super::{Alarm, now};
use crate::observe::{CallMetrics, TraceParent, WireLabel, finish_span, request_span};
use bytes::BytesMut;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use mcpwire_model::types::CallToolParams;
use mcpwire_model::{BackendEvent, CallEvent, ClientAsk, McpError, Method, Raw, RequestId};
use mcpwire_router::{
    BoxFuture, CallCtx, Identity, McpCall, McpReply, Peer, RelayCaller, Router, SessionNotice,
    SessionScope,
};
use mcpwire_session::{AskId, Dispatch, DispatchId, IdMap, ServerSession, SessionEvent, Transmit};
use mcpwire_wire::json_frame::PlainCall;
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// Events a running call can queue before further ones are dropped (progress, logs) or
/// refused (asks).
pub(crate) const PEER_QUEUE: usize = 1024;

/// Callers' trace contexts kept for requests not started yet; past this, a request's span
/// starts a trace of its own.
const MAX_WAITING_PARENTS: usize = 256;

/// Events for one session alone (an upstream session of its own logging between calls)
/// held before further ones are dropped ([`SessionScope::notify`] never waits).
pub(crate) const SESSION_NOTICES: usize = 64;

/// Requests whose calls asked to close their stream's connection, kept until the wire takes
/// them; past this, a close is refused (the stream stays open). A stateful HTTP session takes
/// them after every drain, so this is reached only by a burst within one drain.
pub(crate) const MAX_DETACHED: usize = 256;

/// What a running call sends back to its driver.
pub(crate) enum PeerMsg {
    Event(DispatchId, CallEvent),
    Ask(
        DispatchId,
        ClientAsk,
        oneshot::Sender<Result<Raw, McpError>>,
    ),
    /// The call asked to close the connection showing its stream (HTTP SSE polling).
    CloseStream(DispatchId),
}

/// The session side of a call's [`Peer`]: queues events and asks for the driver.
struct DriverPeer {
    id: DispatchId,
    tx: mpsc::Sender<Box<PeerMsg>>,
    /// Whether the wire has streams a client can resume (otherwise `close_stream` is a
    /// no-op and does not take a place in the queue).
    resumable: bool,
}

impl Peer for DriverPeer {
    fn event(&self, event: CallEvent) {
        // Progress and logs are lossy under pressure rather than unbounded.
        let _ = self.tx.try_send(Box::new(PeerMsg::Event(self.id, event)));
    }

    fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        let (tx, rx) = oneshot::channel();
        if self
            .tx
            .try_send(Box::new(PeerMsg::Ask(self.id, ask, tx)))
            .is_err()
        {
            return Box::pin(std::future::ready(Err(McpError::LimitExceeded(
                "too many pending messages to the client".into(),
            ))));
        }
        Box::pin(async move { rx.await.unwrap_or(Err(McpError::Cancelled)) })
    }

    fn close_stream(&self) {
        if self.resumable {
            let _ = self.tx.try_send(Box::new(PeerMsg::CloseStream(self.id)));
        }
    }
}

type CallFuture = BoxFuture<'static, (DispatchId, Option<McpReply>)>;

/// What [`Calls::wait`] woke up for; hand it to [`Calls::apply`].
pub(crate) enum Wake {
    /// A call finished (`None`: it was cancelled).
    Done(DispatchId, Option<McpReply>),
    /// A running call's progress, log, ask or stream close.
    Peer(Box<PeerMsg>),
    /// A backend event (`None`: the backends closed their event channel).
    Backend(Option<BackendEvent>),
    /// An event or ask for this session alone.
    Notice(SessionNotice),
    /// The session's timer rang: at its next deadline, or before it (nothing due then).
    Timer,
    /// Something came back for a relayed call (taken by [`Calls::take_relayed`]).
    Relayed,
}

/// The calls of one session: their futures, cancellation and client asks.
pub(crate) struct Calls {
    router: Router,
    /// Calls being run, polled inline by the driver's task.
    calls: FuturesUnordered<CallFuture>,
    cancels: IdMap<DispatchId, CancellationToken>,
    asks: IdMap<AskId, oneshot::Sender<Result<Raw, McpError>>>,
    peer_tx: mpsc::Sender<Box<PeerMsg>>,
    /// Progress, logs and asks of running calls.
    /// Boxed messages: an idle connection's channel block holds pointers, not messages.
    peer_rx: mpsc::Receiver<Box<PeerMsg>>,
    /// Catalog changes and other backend events (`None` once the backends closed it).
    events: Option<broadcast::Receiver<BackendEvent>>,
    /// Events and asks for this session alone ([`SessionScope::notify`],
    /// [`SessionScope::ask`]; stateful sessions).
    notices: Option<mpsc::Receiver<SessionNotice>>,
    /// Requests whose calls asked to close their stream's connection, each once, until the
    /// wire takes them (at most [`MAX_DETACHED`]); only recorded when `resumable`.
    detached: Vec<RequestId>,
    /// Whether these calls' wire has streams a client can resume (a stateful HTTP session).
    resumable: bool,
    /// Closes refused because [`MAX_DETACHED`] requests were waiting.
    detaches_refused: u64,
    /// The downstream session these calls belong to (`None` for a stateless request);
    /// ended when the calls are dropped with their connection or HTTP session.
    session: Option<SessionScope>,
    /// Who is calling, as the wire's authentication established it (`None`: not
    /// authenticated); every call started from now on carries it.
    identity: Option<Identity>,
    client_ip: Option<std::net::IpAddr>,
    /// The listener a stateless request came through (a session's is in its scope).
    listener: Option<Arc<str>>,
    /// The wire these calls came in on (the metrics' `wire` label).
    wire: WireLabel,
    /// The caller's trace context for every call (a WebSocket upgrade's, a gRPC call's).
    trace_parent: Option<TraceParent>,
    /// The trace context of single requests, until they start (an HTTP session's POSTs).
    request_parents: IdMap<RequestId, TraceParent>,
    /// A stateless request's `tools/call` params as its wire read them, until its call
    /// starts (the router takes them rather than parsing the params again).
    read_call: Option<(RequestId, Box<CallToolParams>)>,
    /// Calls relayed to an upstream as raw frames (stdio; `mcpwire_relay`).
    relayed: RelayedCalls,
    /// Resources this session's `subscriptions/listen` streams watch (one entry per
    /// stream watching it): unsubscribed at the backend when they end, or with the calls.
    listened: Vec<String>,
    /// The session's timer (its next deadline), armed across waits.
    timer: Alarm,
}

impl Drop for Calls {
    fn drop(&mut self) {
        if let Some(session) = &self.session {
            session.end();
        }
        if !self.listened.is_empty() && tokio::runtime::Handle::try_current().is_ok() {
            let uris = std::mem::take(&mut self.listened);
            tokio::spawn(subscribe_at_backend(self.router.clone(), uris, false));
        }
    }
}

impl Calls {
    /// The calls of a new stateful session on `wire`; subscribed to the router's backend
    /// events. On [`WireLabel::Http`] (a session with resumable streams) they record the requests
    /// whose calls ask to close their stream ([`Calls::take_detached`]).
    pub(crate) fn new(router: Router, wire: WireLabel) -> Calls {
        let events = router.events();
        let (tx, rx) = mpsc::channel(SESSION_NOTICES);
        let mut calls = Calls::with_events(
            router,
            events,
            Some(SessionScope::with_notices(None, Some(tx))),
            wire,
        );
        calls.notices = Some(rx);
        calls
    }

    /// The calls of one stateless request (no session). Only a request that streams
    /// catalog changes subscribes to backend events (subscribing costs a lock on the shared
    /// event channel).
    pub(crate) fn stateless(router: Router, streams_events: bool, wire: WireLabel) -> Calls {
        let events = if streams_events {
            router.events()
        } else {
            None
        };
        Calls::with_events(router, events, None, wire)
    }

    /// Lets go of what a finished stateless request's calls hold that keeps anything alive
    /// — the router (for `idle`, which serves nothing), the caller, events, timer, a call
    /// read for the router — keeping the room of their tables, channel and call set for the next
    /// stateless request ([`Calls::renew`]). `false` (keep nothing: drop them) while
    /// anything could still reach these calls: a call running or relayed, a tool's handle
    /// on the channel (a task it left behind may still send), a resource listened to, a
    /// session scope.
    pub(crate) fn release(&mut self, idle: &Router) -> bool {
        let reusable = self.session.is_none()
            && self.notices.is_none()
            && self.is_empty()
            && self.listened.is_empty()
            && self.peer_tx.strong_count() == 1;
        if !reusable {
            return false;
        }
        // No sender but ours is left: what is queued is all that will ever come.
        while self.peer_rx.try_recv().is_ok() {}
        // What would keep something alive while kept; the rest `renew` resets.
        self.router = idle.clone();
        self.events = None;
        self.identity = None;
        self.read_call = None;
        self.timer = Alarm::default();
        true
    }

    /// Makes released calls ([`Calls::release`]) what [`Calls::stateless`] would make of
    /// `router`, `streams_events` and `wire`, in the room the last request left. Every
    /// field is named: a new one must say here what a request leaves to the next.
    pub(crate) fn renew(&mut self, router: Router, streams_events: bool, wire: WireLabel) {
        let Calls {
            router: own_router,
            calls,
            cancels,
            asks,
            peer_tx: _,
            peer_rx: _,
            events,
            notices,
            detached,
            resumable,
            detaches_refused,
            session,
            identity,
            client_ip,
            listener,
            wire: own_wire,
            trace_parent,
            request_parents,
            read_call,
            relayed,
            listened,
            timer,
        } = self;
        debug_assert!(calls.is_empty() && listened.is_empty() && session.is_none());
        *events = if streams_events {
            router.events()
        } else {
            None
        };
        *own_router = router;
        cancels.clear();
        asks.clear();
        *notices = None;
        detached.clear();
        *resumable = false;
        *detaches_refused = 0;
        *identity = None;
        *client_ip = None;
        *listener = None;
        *own_wire = wire;
        *trace_parent = None;
        request_parents.clear();
        *read_call = None;
        *relayed = RelayedCalls::default();
        *timer = Alarm::default();
    }

    fn with_events(
        router: Router,
        events: Option<broadcast::Receiver<BackendEvent>>,
        session: Option<SessionScope>,
        wire: WireLabel,
    ) -> Calls {
        let (peer_tx, peer_rx) = mpsc::channel(PEER_QUEUE);
        Calls {
            router,
            calls: FuturesUnordered::new(),
            cancels: IdMap::default(),
            asks: IdMap::default(),
            peer_tx,
            peer_rx,
            events,
            notices: None,
            detached: Vec::new(),
            resumable: session.is_some() && wire == WireLabel::Http,
            detaches_refused: 0,
            session,
            identity: None,
            client_ip: None,
            listener: None,
            wire,
            trace_parent: None,
            request_parents: IdMap::default(),
            read_call: None,
            relayed: RelayedCalls::default(),
            listened: Vec::new(),
            timer: Alarm::default(),
        }
    }

    /// Every call's span is a child of the caller's `parent` trace context.
    pub(crate) fn with_trace_parent(mut self, parent: Option<TraceParent>) -> Calls {
        self.set_trace_parent(parent);
        self
    }

    /// [`Calls::with_trace_parent`] in place.
    pub(crate) fn set_trace_parent(&mut self, parent: Option<TraceParent>) {
        self.trace_parent = parent;
    }

    /// The span of request `id`, when it starts, is a child of `parent`. Requests the
    /// session refuses never start: once [`MAX_WAITING_PARENTS`] wait, they are forgotten.
    pub(crate) fn set_request_parent(&mut self, id: RequestId, parent: TraceParent) {
        if self.request_parents.len() >= MAX_WAITING_PARENTS {
            self.request_parents.clear();
        }
        self.request_parents.insert(id, parent);
    }

    /// Request `id`'s `tools/call` params as the wire read them (`call`): its call, when
    /// the session starts it, hands them to the router. One at a time (a stateless
    /// exchange has one request); `None` forgets any.
    pub(crate) fn set_read_call(&mut self, id: RequestId, call: Option<Box<CallToolParams>>) {
        self.read_call = call.map(|call| (id, call));
    }

    /// These calls' session is `shared` in a replica set (backends then see its id on every
    /// replica, and its records there); set before any call starts.
    pub(crate) fn with_shared_session(
        mut self,
        shared: Option<mcpwire_router::SharedSession>,
    ) -> Calls {
        if shared.is_some()
            && let Some(old) = &self.session
        {
            self.session = Some(SessionScope::with_notices(shared, old.notices()));
        }
        self
    }

    /// These calls hear `events` instead of the router's own, if they listen at all (a
    /// replica set's endpoint hub: its router's events and the other replicas').
    pub(crate) fn hearing(mut self, events: Option<broadcast::Receiver<BackendEvent>>) -> Calls {
        self.hear(events);
        self
    }

    /// [`Calls::hearing`] in place.
    pub(crate) fn hear(&mut self, events: Option<broadcast::Receiver<BackendEvent>>) {
        if self.events.is_some()
            && let Some(events) = events
        {
            self.events = Some(events);
        }
    }

    /// These calls, made by `identity`.
    pub(crate) fn with_identity(mut self, identity: Option<Identity>) -> Calls {
        self.identity = identity;
        self
    }

    /// These calls came through the listener named `listener` (its URL): the session's
    /// scope carries it, or each call of a stateless request does.
    pub(crate) fn set_listener(&mut self, listener: Arc<str>) {
        match &self.session {
            Some(session) => session.set_listener(listener),
            None => self.listener = Some(listener),
        }
    }

    /// These calls come from `ip` (read by the rate limits, `crate::limits`).
    pub(crate) fn with_client_ip(mut self, ip: Option<std::net::IpAddr>) -> Calls {
        self.set_client_ip(ip);
        self
    }

    /// [`Calls::with_client_ip`] in place.
    pub(crate) fn set_client_ip(&mut self, ip: Option<std::net::IpAddr>) {
        self.client_ip = ip;
    }

    /// From now on, calls are made by `identity` (MCPB learns it after the connection
    /// opened).
    pub(crate) fn set_identity(&mut self, identity: Option<Identity>) {
        self.identity = identity;
    }

    /// Calls still running (relayed ones included).
    pub(crate) fn len(&self) -> usize {
        self.calls.len() + self.relayed.len()
    }

    /// Whether no call is running (relayed ones included).
    pub(crate) fn is_empty(&self) -> bool {
        self.calls.is_empty() && self.relayed.len() == 0
    }

    /// Relays `call` to the upstream serving its tool, as raw bytes, when the router
    /// offers a route for this caller (`docs/design/gateway.md` § The relay): metrics and
    /// the request span are kept for it (`RelayedCalls`), policy and rate limits decide as
    /// the route is resolved. Whether it was taken (relayed, or refused by a limit).
    pub(crate) fn relay(&mut self, session: &mut ServerSession, call: &PlainCall<'_>) -> bool {
        let Some(scope) = &self.session else {
            return false;
        };
        let caller = RelayCaller {
            scope,
            identity: self.identity.as_ref(),
            client_ip: self.client_ip,
        };
        let own = (!self.request_parents.is_empty())
            .then(|| self.request_parents.get(call.request_id()))
            .flatten();
        let parent = own.or(self.trace_parent.as_ref());
        let taken = self
            .relayed
            .send(&self.router, &caller, session, call, (self.wire, parent));
        // Kept for the general path when it takes the call after all.
        if taken && own.is_some() {
            self.request_parents.remove(call.request_id());
        }
        taken
    }

    /// The inbox of these calls' relayed calls (`mcpwire_relay`), which the seam's call
    /// slots forward to.
    pub(crate) fn relay_inbox(&mut self) -> Arc<mcpwire_relay::RelayInbox> {
        self.relayed.shared_inbox()
    }

    /// The downstream session these calls belong to (`None` for a stateless request).
    pub(crate) fn scope(&self) -> Option<&SessionScope> {
        self.session.as_ref()
    }

    /// Takes `call` (client id `request_id`, relayed since `started` by a request handler
    /// itself: the seam), from now on the session's; what its `slot` holds and all that
    /// comes later arrive as this call's. When the session cannot take it
    /// ([`ServerSession::adopt_relayed`]) the call is cancelled; whether it took it.
    pub(crate) fn adopt_relayed(
        &mut self,
        session: &mut ServerSession,
        (request_id, started): (RequestId, Instant),
        call: RelayedCall,
        slot: &mcpwire_relay::CallSlot,
    ) -> bool {
        match session.adopt_relayed(now(), started, request_id) {
            Some(dispatch) => {
                self.relayed.adopt(dispatch, call, slot);
                true
            }
            None => {
                call.cancel();
                slot.end();
                false
            }
        }
    }

    /// Answers `request_id`, a call a request handler found refused (a rate limit) as it
    /// resolved its route, with `error` as the general path answers it; whether the
    /// session took it (else a request with its id is in flight).
    pub(crate) fn refuse_relayed(
        &mut self,
        session: &mut ServerSession,
        request_id: RequestId,
        error: McpError,
    ) -> bool {
        let at = now();
        match session.adopt_relayed(at, at, request_id) {
            Some(dispatch) => {
                session.handle_reply(at, dispatch, Err(error));
                true
            }
            None => false,
        }
    }

    /// Takes what came back for relayed calls (see [`RelayedCalls::take`]); whether
    /// anything came.
    pub(crate) fn take_relayed(
        &mut self,
        session: &mut ServerSession,
        out: &mut BytesMut,
        write: impl FnMut(&mut ServerSession, &mut BytesMut, Option<(&RequestId, &[u8])>),
    ) -> bool {
        self.relayed.take(session, out, write)
    }

    /// Waits for the next finished call, call message, backend event, or for `timer` (the
    /// session's next deadline: [`Wake::Timer`] may come before it, finding nothing due).
    pub(crate) async fn wait(&mut self, timer: Option<Instant>) -> Wake {
        self.timer.set(timer);
        tokio::select! {
            biased;
            Some((id, reply)) = self.calls.next(), if !self.calls.is_empty() => Wake::Done(id, reply),
            Some(msg) = self.peer_rx.recv() => Wake::Peer(msg),
            ev = recv_event(&mut self.events) => Wake::Backend(ev),
            Some(n) = recv_notice(&mut self.notices) => Wake::Notice(n),
            _ = self.relayed.arrived() => Wake::Relayed,
            () = self.timer.rung() => Wake::Timer,
        }
    }

    /// Hands what [`Calls::wait`] woke up for to `session`.
    pub(crate) fn apply(&mut self, session: &mut ServerSession, wake: Wake) {
        match wake {
            Wake::Done(id, reply) => self.on_done(session, id, reply),
            Wake::Peer(msg) => self.on_peer(session, *msg),
            Wake::Backend(ev) => self.on_backend(session, ev),
            Wake::Notice(SessionNotice::Event(ev)) => session.handle_backend_event(&ev),
            Wake::Notice(SessionNotice::Ask(ask, tx)) => {
                let ask_id = session.start_session_ask(now(), ask);
                self.asks.insert(ask_id, tx);
            }
            Wake::Timer => session.handle_timeout(now()),
            Wake::Relayed => {}
        }
    }

    /// Requests whose calls asked to close their stream's connection since the last take
    /// (always empty but on a stateful HTTP session, the one wire with resumable streams).
    pub(crate) fn take_detached(&mut self) -> Vec<RequestId> {
        std::mem::take(&mut self.detached)
    }

    /// How many closes were refused because [`MAX_DETACHED`] requests were waiting.
    #[cfg(test)]
    pub(crate) fn detaches_refused(&self) -> u64 {
        self.detaches_refused
    }

    /// Takes a finished call's outcome (`None`: it was cancelled).
    fn on_done(&mut self, session: &mut ServerSession, id: DispatchId, reply: Option<McpReply>) {
        // Events a call emitted before it finished must reach the client before its answer.
        while let Ok(msg) = self.peer_rx.try_recv() {
            self.on_peer(session, *msg);
        }
        self.cancels.remove(&id);
        if let Some(reply) = reply {
            session.handle_reply(now(), id, reply);
        }
    }

    /// Takes one event or ask of a running call.
    fn on_peer(&mut self, session: &mut ServerSession, msg: PeerMsg) {
        match msg {
            PeerMsg::Event(id, ev) => session.handle_call_event(id, ev),
            PeerMsg::Ask(id, ask, tx) => {
                let ask_id = session.start_ask(now(), id, ask);
                self.asks.insert(ask_id, tx);
            }
            PeerMsg::CloseStream(id) => {
                if let Some(request) = session.request_id(id) {
                    self.detach(request.clone());
                }
            }
        }
    }

    /// Records that `request`'s call asked to close its stream's connection: once, and not
    /// past [`MAX_DETACHED`] (refused, counted and logged: the stream stays open).
    fn detach(&mut self, request: RequestId) {
        if !self.resumable || self.detached.contains(&request) {
            return;
        }
        if self.detached.len() >= MAX_DETACHED {
            self.detaches_refused += 1;
            // Logged at 1, 2, 4, 8, … refusals: a flood cannot flood the log too.
            if self.detaches_refused.is_power_of_two() {
                tracing::warn!(
                    refused = self.detaches_refused,
                    max = MAX_DETACHED,
                    "too many streams waiting to be closed; this one stays open"
                );
            }
            return;
        }
        self.detached.push(request);
    }

    /// Takes one backend event (`None`: the backends closed their event channel).
    fn on_backend(&mut self, session: &mut ServerSession, ev: Option<BackendEvent>) {
        match ev {
            Some(ev) => session.handle_backend_event(&ev),
            None => self.events = None,
        }
    }

    /// A `subscriptions/listen` stream began or ended watching `uris`: the backend is asked
    /// to send their updates (`resources/subscribe` as a session-less request), or to stop
    /// once no stream of this session watches them.
    fn listening(&mut self, uris: Vec<String>, on: bool) {
        if on {
            self.listened.extend(uris.iter().cloned());
        } else {
            for uri in &uris {
                if let Some(i) = self.listened.iter().position(|u| u == uri) {
                    self.listened.swap_remove(i);
                }
            }
        }
        tokio::spawn(subscribe_at_backend(self.router.clone(), uris, on));
    }

    /// Takes one finished call without waiting; whether there was one.
    pub(crate) fn take_done(&mut self, session: &mut ServerSession) -> bool {
        if self.calls.is_empty() {
            return false;
        }
        match self.calls.next().now_or_never() {
            Some(Some((id, reply))) => {
                self.on_done(session, id, reply);
                true
            }
            _ => false,
        }
    }

    /// Takes one queued event or ask of a running call without waiting; whether there was
    /// one.
    pub(crate) fn take_peer(&mut self, session: &mut ServerSession) -> bool {
        match self.peer_rx.try_recv() {
            Ok(msg) => {
                self.on_peer(session, *msg);
                true
            }
            Err(_) => false,
        }
    }

    /// Moves session outputs to their destinations, in the session's drain order: shell
    /// events and dispatches here, transmits to `on_transmit`.
    pub(crate) fn drain(
        &mut self,
        session: &mut ServerSession,
        mut on_transmit: impl FnMut(Transmit),
    ) {
        loop {
            let mut any = false;
            while let Some(ev) = session.poll_event() {
                any = true;
                match ev {
                    SessionEvent::Cancel(id) => {
                        if let Some(t) = self.cancels.remove(&id) {
                            t.cancel();
                        } else {
                            self.relayed.cancel(id);
                        }
                    }
                    SessionEvent::AskDone(ask, result) => {
                        if let Some(tx) = self.asks.remove(&ask) {
                            let _ = tx.send(result);
                        } else {
                            let _ = self.relayed.ask_done(ask, result);
                        }
                    }
                    SessionEvent::Listening { uris, on } => self.listening(uris, on),
                    SessionEvent::RootsListChanged => {
                        if let Some(scope) = &self.session {
                            scope.roots_changed();
                        }
                    }
                }
            }
            while let Some(d) = session.poll_dispatch() {
                any = true;
                self.start(d);
            }
            while let Some(t) = session.poll_transmit() {
                any = true;
                on_transmit(t);
            }
            if !any {
                break;
            }
        }
    }

    fn start(&mut self, d: Dispatch) {
        let token = CancellationToken::new();
        let peer: Arc<dyn Peer> = Arc::new(DriverPeer {
            id: d.id,
            tx: self.peer_tx.clone(),
            resumable: self.resumable,
        });
        let ctx = CallCtx::new(
            d.ctx.revision,
            d.ctx.client_capabilities,
            token.clone(),
            Some(peer),
        )
        .with_progress_token(d.ctx.progress_token)
        .with_session(self.session.clone())
        .with_listener(self.listener.clone())
        .with_identity(self.identity.clone())
        .with_client_ip(self.client_ip);
        let measured = CallMetrics::start(self.wire, &d.method, d.params.as_ref());
        let parent = if self.request_parents.is_empty() {
            None
        } else {
            self.request_parents.remove(&d.request_id)
        };
        let parent = parent.as_ref().or(self.trace_parent.as_ref());
        let span = request_span(self.wire, &d.method, d.params.as_ref(), parent);
        let mut call = McpCall::new(d.method, d.params, ctx);
        if let Some((id, read)) = self.read_call.take() {
            if id == d.request_id && call.method == Method::ToolsCall {
                call.tool_call = Some(read);
            } else {
                self.read_call = Some((id, read));
            }
        }
        // A panicking tool answers its own request with an internal error; the connection
        // and every other call go on.
        let router = &self.router;
        let fut = match span
            .in_scope(|| std::panic::catch_unwind(AssertUnwindSafe(|| router.call(call))))
        {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind(),
            Err(_) => AssertUnwindSafe(panicked()).catch_unwind(),
        };
        let id = d.id;
        let cancelled = token.clone();
        self.cancels.insert(id, token);
        let call = async move {
            let reply = tokio::select! {
                biased;
                r = fut => Some(r.unwrap_or_else(|_| {
                    tracing::error!("a call panicked");
                    Err(McpError::Internal("the tool panicked".into()))
                })),
                _ = cancelled.cancelled() => None,
            };
            if let Some(m) = measured {
                m.finish(reply.as_ref());
            }
            finish_span(&tracing::Span::current(), reply.as_ref());
            (id, reply)
        };
        self.calls.push(Box::pin(call.instrument(span)));
    }
}

fn panicked() -> BoxFuture<'static, McpReply> {
    tracing::error!("a call panicked before it started");
    Box::pin(std::future::ready(Err(McpError::Internal(
        "the tool panicked".into(),
    ))))
}

/// The next backend event (`None`: the channel closed); pending forever without a receiver.
async fn recv_event(rx: &mut Option<broadcast::Receiver<BackendEvent>>) -> Option<BackendEvent> {
    let Some(r) = rx else {
        return std::future::pending().await;
    };
    loop {
        match r.recv().await {
            Ok(ev) => return Some(ev),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(skipped = n, "session fell behind on backend events");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

/// Asks `router`'s backend to send (`on`) or stop sending updates of `uris` to the
/// listening streams: a `resources/subscribe` (or `unsubscribe`) of no session; refusals
/// are logged (a backend without subscriptions sends nothing either way).
async fn subscribe_at_backend(router: Router, uris: Vec<String>, on: bool) {
    let method = if on {
        mcpwire_model::Method::ResourcesSubscribe
    } else {
        mcpwire_model::Method::ResourcesUnsubscribe
    };
    for uri in uris {
        let ctx = CallCtx::new(
            mcpwire_model::Revision::LATEST_STATEFUL,
            Arc::new(Default::default()),
            CancellationToken::new(),
            None,
        );
        let params = mcpwire_model::to_raw(&serde_json::json!({ "uri": uri }));
        let call = McpCall::new(method.clone(), Some(params), ctx);
        if let Err(e) = router.call(call).await {
            tracing::debug!(%uri, "{method} for listening streams refused: {e}");
        }
    }
}

/// The next event for this session alone; pending forever without a queue.
async fn recv_notice(rx: &mut Option<mpsc::Receiver<SessionNotice>>) -> Option<SessionNotice> {
    match rx {
        Some(r) => r.recv().await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `at`; forever when `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Service;
    use mcpwire_model::types::Implementation;
    use mcpwire_model::{Message, Method, Request, to_raw};
    use mcpwire_router::{NoArgs, ToolError, tool};
    use serde_json::json;

    /// How often each call of the flood asks to close its stream.
    const CLOSES_PER_CALL: usize = 8;
    /// Calls in the flood: four times the bound.
    const FLOOD: usize = 4 * MAX_DETACHED;
    /// Calls sent before their answers are awaited.
    const BATCH: usize = 64;

    /// A service whose tool `detach` asks [`CLOSES_PER_CALL`] times to close its stream.
    fn service() -> Service {
        let server = mcpwire_router::Server::builder(Implementation::new("t", "1"))
            .tool(tool("detach", |ctx: CallCtx, _: NoArgs| async move {
                for _ in 0..CLOSES_PER_CALL {
                    ctx.close_stream();
                }
                Ok::<_, ToolError>("closed")
            }))
            .build();
        Service::from_server(server)
    }

    fn request(id: usize, method: Method, params: serde_json::Value) -> Message {
        Message::Request(Request {
            id: RequestId::Int(id as i64),
            method,
            params: Some(to_raw(&params)),
        })
    }

    /// What a flood did to a session's record of streams to close.
    #[derive(Debug)]
    struct Flood {
        /// The most requests held at any point.
        most: usize,
        /// Closes refused because the record was full.
        refused: u64,
        /// Requests the wire took (`take`).
        taken: usize,
        /// Calls answered.
        answered: usize,
    }

    /// [`FLOOD`] calls of `detach` on a stateful session over `wire`, in batches of
    /// [`BATCH`]; with `take`, the detached requests are taken after every drain (what the
    /// HTTP session does), otherwise never.
    async fn flood(wire: WireLabel, take: bool) -> Flood {
        let service = service();
        let mut session = ServerSession::new(service.config.clone());
        let mut calls = Calls::new(service.router.clone(), wire);
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}});
        session.handle_inbound(now(), Ok(request(0, Method::Initialize, init)));
        let mut answered = 0;
        let mut counted = |t: Transmit| {
            if t.msg.response_id().is_some() {
                answered += 1;
            }
        };
        calls.drain(&mut session, &mut counted);
        let (mut most, mut taken) = (0, 0);
        let call = json!({"name": "detach", "arguments": {}});
        for first in (1..=FLOOD).step_by(BATCH) {
            for id in first..first + BATCH {
                session.handle_inbound(now(), Ok(request(id, Method::ToolsCall, call.clone())));
            }
            loop {
                calls.drain(&mut session, &mut counted);
                most = most.max(calls.detached.len());
                if take {
                    let ids = calls.take_detached();
                    taken += ids.len();
                }
                if calls.is_empty() && session.in_flight() == 0 {
                    break;
                }
                let wake = calls.wait(session.poll_timeout()).await;
                calls.apply(&mut session, wake);
            }
        }
        Flood {
            most,
            refused: calls.detaches_refused(),
            taken,
            answered,
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn wires_without_resumable_streams_hold_no_detached_requests() {
        for wire in [
            WireLabel::Stdio,
            WireLabel::WebSocket,
            WireLabel::Mcpb,
            WireLabel::Grpc,
        ] {
            let f = flood(wire, false).await;
            assert_eq!(f.answered, FLOOD + 1, "{wire:?}: {f:?}");
            assert_eq!((f.most, f.refused), (0, 0), "{wire:?}: nothing held: {f:?}");
        }
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_session_that_never_takes_its_detached_requests_holds_at_most_the_bound() {
        let f = flood(WireLabel::Http, false).await;
        assert_eq!(f.answered, FLOOD + 1, "{f:?}");
        assert_eq!(f.most, MAX_DETACHED, "flat at the bound: {f:?}");
        let refused_calls = (FLOOD - MAX_DETACHED) as u64;
        assert_eq!(f.refused, refused_calls * CLOSES_PER_CALL as u64, "{f:?}");
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn an_http_session_takes_each_detached_request_once() {
        let f = flood(WireLabel::Http, true).await;
        assert_eq!(f.answered, FLOOD + 1, "{f:?}");
        assert_eq!(f.taken, FLOOD, "every call's request once: {f:?}");
        assert!(f.most <= BATCH, "{f:?}");
        assert_eq!(f.refused, 0, "{f:?}");
    }
}
