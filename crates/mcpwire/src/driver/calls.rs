//! Running a session's dispatches: the wire-independent half of every connection driver.
//!
//! [`Calls`] owns the router, the futures of the calls in flight, their cancellation tokens,
//! the asks waiting for a client answer and the queue through which running calls report
//! progress, logs and asks. [`Calls::wait`] is the one place that waits for any of them (or
//! the session's timer) and names what happened as a [`Wake`]; [`Calls::apply`] hands it to
//! the [`ServerSession`]. No protocol decisions are made.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use super::now;
use super::relayed::RelayedCalls;
use crate::observe::{CallMetrics, TraceParent, Wire, finish_span, request_span};
use bytes::BytesMut;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use mcpwire_model::{BackendEvent, CallEvent, ClientAsk, McpError, Raw, RequestId};
use mcpwire_router::{BoxFuture, CallCtx, Identity, McpCall, McpReply, Peer, Router, SessionScope};
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
        let _ = self.tx.try_send(Box::new(PeerMsg::CloseStream(self.id)));
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
    /// The timer passed.
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
    /// Requests whose calls asked to close their stream's connection; drivers with
    /// resumable streams take them (others ignore them).
    detached: Vec<RequestId>,
    /// The downstream session these calls belong to (`None` for a stateless request);
    /// ended when the calls are dropped with their connection or HTTP session.
    session: Option<SessionScope>,
    /// Who is calling, as the wire's authentication established it (`None`: not
    /// authenticated); every call started from now on carries it.
    identity: Option<Identity>,
    client_ip: Option<std::net::IpAddr>,
    /// The wire these calls came in on (the metrics' `wire` label).
    wire: Wire,
    /// The caller's trace context for every call (a WebSocket upgrade's, a gRPC call's).
    trace_parent: Option<TraceParent>,
    /// The trace context of single requests, until they start (an HTTP session's POSTs).
    request_parents: HashMap<RequestId, TraceParent>,
    /// Calls relayed to an upstream as raw frames (stdio; `crate::relay`).
    relayed: RelayedCalls,
}

impl Drop for Calls {
    fn drop(&mut self) {
        if let Some(session) = &self.session {
            session.end();
        }
    }
}

impl Calls {
    /// The calls of a new stateful session on `wire`; subscribed to the router's backend
    /// events.
    pub(crate) fn new(router: Router, wire: Wire) -> Calls {
        let events = router.events();
        Calls::with_events(router, events, Some(SessionScope::new()), wire)
    }

    /// The calls of one stateless request (no session). Only a request that streams
    /// catalog changes subscribes to backend events (subscribing costs a lock on the shared
    /// event channel).
    pub(crate) fn stateless(router: Router, streams_events: bool, wire: Wire) -> Calls {
        let events = if streams_events {
            router.events()
        } else {
            None
        };
        Calls::with_events(router, events, None, wire)
    }

    fn with_events(
        router: Router,
        events: Option<broadcast::Receiver<BackendEvent>>,
        session: Option<SessionScope>,
        wire: Wire,
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
            detached: Vec::new(),
            session,
            identity: None,
            client_ip: None,
            wire,
            trace_parent: None,
            request_parents: HashMap::new(),
            relayed: RelayedCalls::default(),
        }
    }

    /// Every call's span is a child of the caller's `parent` trace context.
    pub(crate) fn with_trace_parent(mut self, parent: Option<TraceParent>) -> Calls {
        self.trace_parent = parent;
        self
    }

    /// The span of request `id`, when it starts, is a child of `parent`. Requests the
    /// session refuses never start: once [`MAX_WAITING_PARENTS`] wait, they are forgotten.
    pub(crate) fn set_request_parent(&mut self, id: RequestId, parent: TraceParent) {
        if self.request_parents.len() >= MAX_WAITING_PARENTS {
            self.request_parents.clear();
        }
        self.request_parents.insert(id, parent);
    }

    /// These calls' session is `cluster`'s in a replica set (backends then see its
    /// cluster-wide id); set before any call starts.
    pub(crate) fn in_cluster(mut self, cluster: Option<mcpwire_router::ClusterSession>) -> Calls {
        if cluster.is_some() && self.session.is_some() {
            self.session = Some(SessionScope::with_cluster(cluster));
        }
        self
    }

    /// These calls hear `events` instead of the router's own, if they listen at all (a
    /// cluster endpoint's hub: its router's events and the other replicas').
    pub(crate) fn hearing(mut self, events: Option<broadcast::Receiver<BackendEvent>>) -> Calls {
        if self.events.is_some()
            && let Some(events) = events
        {
            self.events = Some(events);
        }
        self
    }

    /// These calls, made by `identity`.
    pub(crate) fn with_identity(mut self, identity: Option<Identity>) -> Calls {
        self.identity = identity;
        self
    }

    /// These calls come from `ip` (read by the rate limits, `crate::limits`).
    pub(crate) fn with_client_ip(mut self, ip: Option<std::net::IpAddr>) -> Calls {
        self.client_ip = ip;
        self
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

    /// Relays `call` to the upstream serving its tool, as raw bytes,
    /// when the router offers a route and nothing here acts on calls — no metrics, no
    /// request spans, no identity (`docs/design/gateway.md` § The relay); whether it went.
    pub(crate) fn relay(&mut self, session: &mut ServerSession, call: &PlainCall<'_>) -> bool {
        let Some(scope) = &self.session else {
            return false;
        };
        if self.identity.is_some()
            || self.client_ip.is_some()
            || crate::observe::calls_measured()
            || tracing::enabled!(target: "mcpwire::request", tracing::Level::INFO)
        {
            return false;
        }
        self.relayed.send(&self.router, scope, session, call)
    }

    /// Takes what came back for relayed calls (see [`RelayedCalls::take`]); whether
    /// anything came.
    pub(crate) fn take_relayed(
        &mut self,
        session: &mut ServerSession,
        out: &mut BytesMut,
        write: impl FnMut(&mut ServerSession, &mut BytesMut, Option<&[u8]>),
    ) -> bool {
        self.relayed.take(session, out, write)
    }

    /// Waits for the next finished call, call message, backend event, or for `timer`.
    pub(crate) async fn wait(&mut self, timer: Option<Instant>) -> Wake {
        tokio::select! {
            biased;
            Some((id, reply)) = self.calls.next(), if !self.calls.is_empty() => Wake::Done(id, reply),
            Some(msg) = self.peer_rx.recv() => Wake::Peer(msg),
            ev = recv_event(&mut self.events) => Wake::Backend(ev),
            _ = self.relayed.arrived() => Wake::Relayed,
            _ = sleep_until(timer) => Wake::Timer,
        }
    }

    /// Hands what [`Calls::wait`] woke up for to `session`.
    pub(crate) fn apply(&mut self, session: &mut ServerSession, wake: Wake) {
        match wake {
            Wake::Done(id, reply) => self.on_done(session, id, reply),
            Wake::Peer(msg) => self.on_peer(session, *msg),
            Wake::Backend(ev) => self.on_backend(session, ev),
            Wake::Timer => session.handle_timeout(now()),
            Wake::Relayed => {}
        }
    }

    /// Requests whose calls asked to close their stream's connection since the last take.
    pub(crate) fn take_detached(&mut self) -> Vec<RequestId> {
        std::mem::take(&mut self.detached)
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
                    self.detached.push(request.clone());
                }
            }
        }
    }

    /// Takes one backend event (`None`: the backends closed their event channel).
    fn on_backend(&mut self, session: &mut ServerSession, ev: Option<BackendEvent>) {
        match ev {
            Some(ev) => session.handle_backend_event(&ev),
            None => self.events = None,
        }
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
        });
        let ctx = CallCtx::new(
            d.ctx.revision,
            d.ctx.client_capabilities,
            token.clone(),
            Some(peer),
        )
        .with_progress_token(d.ctx.progress_token)
        .with_session(self.session.clone())
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
        let call = McpCall {
            method: d.method,
            params: d.params,
            ctx,
        };
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

/// Sleeps until `at`; forever when `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
