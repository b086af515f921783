//! One stateful HTTP session: a task owning a [`ServerSession`] and its [`Calls`], fed by
//! the HTTP handlers through [`SessionHandle`].
//!
//! Routing: every message the session transmits names the client request it relates to.
//! A request answered by its response alone gets it as JSON. Once anything else comes
//! first the request's stream is SSE: every message is numbered and logged
//! ([`ReplayLog`]) so a client that lost the connection — or whose stream the server closed
//! on purpose ([`mcpwire_router::CallCtx::close_stream`]) — can resume it with `GET` and
//! `Last-Event-ID`; an answer nobody received is kept for that (bounded). Messages related
//! to no request (list changes, resource updates, unrelated logs), and those of a request
//! whose connection went away before its stream began, go to the standalone `GET` stream
//! (also resumable), or wait in a small backlog until one opens.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::Stream;
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::types::CancelledParams;
use mcpwire_model::{BackendEvent, McpError, Message, Method, Outbound, Request, RequestId};
use mcpwire_relay::CallSlot;
use mcpwire_router::Identity;
use mcpwire_session::{HandshakeState, IdMap, ServerSession, Transmit};
use mcpwire_wire::json_frame::PlainFrame;
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::replay::{self, EventId, Mirror, ReplayLog, StreamItem, StreamKind};
use super::seam::{SeamOwner, SessionSeam};
use crate::Service;
use crate::directory::SessionDirectory;
use crate::driver::relayed::RelayedCall;
use crate::driver::{Alarm, Calls, CancelWatch, RelayedOutput, ServerCore, now};
use crate::observe::{TraceParent, WireLabel};

/// Commands queued from handlers to one session before they wait.
const COMMAND_QUEUE: usize = 64;
/// Messages a request's `POST` stream may fall behind by before notifications are dropped.
const STREAM_QUEUE: usize = 256;
/// Messages kept for a standalone stream that is not open (oldest dropped first).
const BACKLOG: usize = 256;
/// Streams answered while nobody was connected, kept for a client to resume.
const MAX_FINISHED: usize = 8;
/// Work items taken between two waits, so one busy session cannot hog its thread.
const BURST: usize = 64;

/// A connection showing a stream: its events, and (before the stream began) a slot for a
/// response answered alone.
struct Sink {
    /// The stream's events, once it began: the channel is made then, and its receiver goes
    /// to the connection through `last` (most requests are answered alone, and never make
    /// one).
    events: Option<mpsc::Sender<StreamItem>>,
    last: Option<oneshot::Sender<First>>,
}

impl Sink {
    /// Answers the request alone (as JSON), unless its stream began or the answer was
    /// given already.
    fn answer(&mut self, answered: Answered) {
        if let Some(last) = self.last.take() {
            let _ = last.send(First::Answer(answered));
        }
    }

    /// Sends `item` on the stream, beginning it if it has not begun; a connection that left
    /// is `Closed`.
    fn try_send(&mut self, item: StreamItem) -> Result<(), TrySendError<StreamItem>> {
        if self.events.is_none() {
            let Some(last) = self.last.take() else {
                return Err(TrySendError::Closed(item));
            };
            let (tx, rx) = mpsc::channel(STREAM_QUEUE);
            if last.send(First::Stream(rx)).is_err() {
                return Err(TrySendError::Closed(item));
            }
            self.events = Some(tx);
        }
        match &self.events {
            Some(events) => events.try_send(item),
            None => Err(TrySendError::Closed(item)),
        }
    }
}

/// What a request's connection hears first: its response answered alone, or that its
/// stream began (its events then come on the receiver).
enum First {
    Answer(Answered),
    Stream(mpsc::Receiver<StreamItem>),
}

/// A request's response answered alone (as JSON).
pub(crate) enum Answered {
    /// A response the session made.
    Message(Outbound),
    /// A relayed call's answer, the upstream's bytes with the client's id (`mcpwire_relay`),
    /// one line.
    Relayed(Bytes),
}

/// What the session sends a request's connection: a message it made, or a relayed
/// call's answer.
enum Payload {
    Message(Outbound),
    Relayed(Bytes),
}

impl Payload {
    /// The JSON text an event carries.
    fn text(&self) -> Arc<str> {
        match self {
            Payload::Message(msg) => encode(msg),
            // The upstream's line is JSON (so UTF-8); its newline is the event's to add.
            Payload::Relayed(line) => Arc::from(String::from_utf8_lossy(line.trim_ascii_end())),
        }
    }

    fn answered(self) -> Answered {
        match self {
            Payload::Message(msg) => Answered::Message(msg),
            Payload::Relayed(line) => Answered::Relayed(line),
        }
    }
}

/// One request's stream.
struct Route {
    stream: u64,
    /// The connection showing it; `None` while the client is away.
    sink: Option<Sink>,
    /// The stream began (SSE): every further message is numbered and logged.
    sse: bool,
    log: ReplayLog,
}

/// The standalone stream.
struct Standalone {
    stream: u64,
    tx: Option<mpsc::Sender<StreamItem>>,
    log: ReplayLog,
}

enum Command {
    /// A client request and its stream number; its related messages go to the sink; its
    /// span is a child of the trace context.
    Request(Request, Sink, u64, Option<TraceParent>),
    /// A plain `tools/call` as the client sent it (`json_frame::plain_call`), relayed when
    /// the router offers a route, else decoded and taken as [`Command::Request`].
    Plain(PlainFrame, Sink, u64, Option<TraceParent>),
    /// A call a handler relayed itself (the seam), now the session's.
    Adopt(Adopted, Sink, u64),
    /// A call a handler found refused (a rate limit) as it resolved its route: answered
    /// with this error as the general path answers it.
    Refused(RequestId, McpError, Sink, u64),
    /// A notification or a response to one of our asks.
    Message(Message),
    /// A (new) standalone stream; replaces the previous one.
    Standalone(mpsc::Sender<StreamItem>, u64),
    /// Resume a stream after an event id; answers whether the stream is known.
    Resume(EventId, mpsc::Sender<StreamItem>, oneshot::Sender<bool>),
    /// What the session agreed in its handshake (for the session directory to carry in the
    /// session's id).
    Handshake(oneshot::Sender<Option<HandshakeState>>),
    /// Resource subscriptions (`true`) or their end, made through another replica.
    Subscription(Vec<String>, bool),
}

/// A handler's way into a running session.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    /// Boxed so an idle session's channel block stays small (one pointer per slot).
    tx: mpsc::Sender<Box<Command>>,
    close: CancellationToken,
    /// Who opened the session (`None`: the listener does not authenticate); its calls carry
    /// this identity.
    owner: Option<Identity>,
    /// The calls the session's handlers relay themselves.
    pub(crate) seam: Arc<SessionSeam>,
}

/// A call a handler relayed itself (the seam), handed to its session: its client id and
/// when it was relayed, what observes it, and the slot its answer arrives in. Dropped
/// without the session taking it (the session ended), the call is cancelled upstream.
pub(crate) struct Adopted {
    request: (RequestId, Instant),
    call: Option<RelayedCall>,
    slot: Arc<CallSlot>,
}

impl Adopted {
    /// Call `request` (client id, when relayed), observed by `call`, answered into `slot`.
    pub(crate) fn new(
        request: (RequestId, Instant),
        call: RelayedCall,
        slot: Arc<CallSlot>,
    ) -> Adopted {
        Adopted {
            request,
            call: Some(call),
            slot,
        }
    }
}

impl Drop for Adopted {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            call.cancel();
            self.slot.end();
        }
    }
}

/// The messages related to one request: its response alone, or stream items.
pub(crate) struct RequestStream {
    /// The stream's number (event ids `p{stream}-{seq}`).
    pub(crate) stream: u64,
    /// The stream's events, once the session began it.
    events: Option<mpsc::Receiver<StreamItem>>,
    last: Option<oneshot::Receiver<First>>,
}

/// One thing a request's connection receives.
pub(crate) enum Delivery {
    /// The response, before anything else: answered as JSON.
    Response(Answered),
    /// A stream item (the stream is SSE).
    Item(StreamItem),
}

impl Stream for RequestStream {
    type Item = Delivery;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Delivery>> {
        // The session says first either the response (answered alone) or that the stream
        // began; then its events, until the session drops their sender.
        loop {
            if let Some(events) = self.events.as_mut() {
                return events.poll_recv(cx).map(|m| m.map(Delivery::Item));
            }
            let Some(last) = self.last.as_mut() else {
                return Poll::Ready(None);
            };
            let first = std::task::ready!(Pin::new(last).poll(cx));
            self.last = None;
            match first {
                Ok(First::Answer(answered)) => {
                    return Poll::Ready(Some(Delivery::Response(answered)));
                }
                Ok(First::Stream(events)) => self.events = Some(events),
                Err(_) => return Poll::Ready(None),
            }
        }
    }
}

/// Why a stream cannot be resumed.
#[derive(Debug)]
pub(crate) enum ResumeError {
    /// The session ended.
    Gone,
    /// The session does not know (or no longer keeps) that stream.
    Unknown,
}

/// The session ended (deleted, timed out); nothing was sent.
#[derive(Debug)]
pub(crate) struct Gone;

impl SessionHandle {
    /// Whether a request by `caller` may use this session: the listener does not
    /// authenticate, or `caller` is the one who opened it (the same subject, authenticated
    /// the same way — a refreshed token is fine).
    pub(crate) fn opened_by(&self, caller: Option<&Identity>) -> bool {
        match (&self.owner, caller) {
            (None, _) => true,
            (Some(owner), Some(caller)) => owner.same_caller(caller),
            (Some(_), None) => false,
        }
    }

    /// Sends a request (its span a child of the caller's `trace` context); its related
    /// messages and response arrive on the returned stream.
    pub(crate) async fn request(
        &self,
        req: Request,
        trace: Option<TraceParent>,
    ) -> Result<RequestStream, Gone> {
        self.open(|sink, stream| Command::Request(req, sink, stream, trace))
            .await
    }

    /// Sends a plain `tools/call` as the client sent it (`json_frame::plain_call` found it
    /// so): relayed to its upstream as bytes when the session may, else taken as
    /// [`SessionHandle::request`] takes it.
    pub(crate) async fn plain_call(
        &self,
        frame: PlainFrame,
        trace: Option<TraceParent>,
    ) -> Result<RequestStream, Gone> {
        self.open(|sink, stream| Command::Plain(frame, sink, stream, trace))
            .await
    }

    /// Hands the session a call a handler relayed itself ([`Adopted`]); its messages
    /// come on the stream returned, as a request's.
    pub(crate) async fn adopt(&self, adopted: Adopted) -> Result<RequestStream, Gone> {
        self.open(|sink, stream| Command::Adopt(adopted, sink, stream))
            .await
    }

    /// Has the session answer `id`, a call refused as its route was resolved, with
    /// `error`.
    pub(crate) async fn refused(
        &self,
        id: RequestId,
        error: McpError,
    ) -> Result<RequestStream, Gone> {
        self.open(|sink, stream| Command::Refused(id, error, sink, stream))
            .await
    }

    async fn open(
        &self,
        command: impl FnOnce(Sink, u64) -> Command,
    ) -> Result<RequestStream, Gone> {
        let (last_tx, last) = oneshot::channel();
        let sink = Sink {
            events: None,
            last: Some(last_tx),
        };
        let stream = replay::next_stream();
        self.send(command(sink, stream)).await?;
        Ok(RequestStream {
            stream,
            events: None,
            last: Some(last),
        })
    }

    /// Sends a notification or a response.
    pub(crate) async fn message(&self, msg: Message) -> Result<(), Gone> {
        self.send(Command::Message(msg)).await
    }

    /// Opens the standalone stream (closing any previous one); returns its number.
    pub(crate) async fn standalone(&self) -> Result<(u64, mpsc::Receiver<StreamItem>), Gone> {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let stream = replay::next_stream();
        self.send(Command::Standalone(tx, stream)).await?;
        Ok((stream, rx))
    }

    /// Resumes a stream after `last` (a `Last-Event-ID`): missed events, then the rest.
    pub(crate) async fn resume(
        &self,
        last: EventId,
    ) -> Result<mpsc::Receiver<StreamItem>, ResumeError> {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        let (known_tx, known) = oneshot::channel();
        self.send(Command::Resume(last, tx, known_tx))
            .await
            .map_err(|_| ResumeError::Gone)?;
        match known.await {
            Ok(true) => Ok(rx),
            Ok(false) => Err(ResumeError::Unknown),
            Err(_) => Err(ResumeError::Gone),
        }
    }

    /// The handshake the session completed, if it did.
    pub(crate) async fn handshake(&self) -> Option<HandshakeState> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Handshake(tx)).await.ok()?;
        rx.await.ok().flatten()
    }

    /// Records a resource subscription made through another replica, without waiting.
    pub(crate) fn offer_subscription(&self, uri: String, on: bool) {
        self.offer(Command::Subscription(vec![uri], on));
    }

    /// Records the resource subscriptions a session rebuilt here had made elsewhere.
    pub(crate) async fn share_subscriptions(&self, uris: Vec<String>) -> Result<(), Gone> {
        self.send(Command::Subscription(uris, true)).await
    }

    fn offer(&self, cmd: Command) {
        if self.close.is_cancelled() {
            return;
        }
        if let Err(TrySendError::Full(_)) = self.tx.try_send(Box::new(cmd)) {
            tracing::debug!("a busy session missed a change from another replica");
        }
    }

    /// Ends the session: running calls are dropped, open streams end.
    pub(crate) fn close(&self) {
        self.close.cancel();
    }

    async fn send(&self, cmd: Command) -> Result<(), Gone> {
        if self.close.is_cancelled() {
            return Err(Gone);
        }
        self.tx.send(Box::new(cmd)).await.map_err(|_| Gone)
    }
}

/// Whether a session is busy (something in flight or a stream open), kept up to date by
/// its task; an idle session may be evicted.
#[derive(Debug, Default)]
pub(crate) struct Busy(AtomicBool);

impl Busy {
    /// Records the session's state.
    pub(crate) fn set(&self, busy: bool) {
        self.0.store(busy, Ordering::Relaxed);
    }

    /// Whether the session was busy when its task last said.
    pub(crate) fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Who a session is for and where it starts.
pub(crate) struct Origin {
    /// Who opened it (its calls carry this identity).
    pub(crate) owner: Option<Identity>,
    /// The client's address.
    pub(crate) ip: Option<std::net::IpAddr>,
    /// A handshake made on another replica, to continue from (`None`: a new session that
    /// waits for `initialize`).
    pub(crate) handshake: Option<HandshakeState>,
    /// In a replica set: what its asks' ids start with (this endpoint's relay name).
    pub(crate) ask_prefix: Option<Arc<str>>,
    /// In a replica set: the endpoint's hub of changes, heard instead of the router's.
    pub(crate) events: Option<tokio::sync::broadcast::Receiver<BackendEvent>>,
}

/// Starts the task of session `id`; it keeps `busy` up to date (the table evicts idle
/// sessions only) and calls `ended` when it ends (the table then forgets it).
pub(crate) fn spawn(
    service: &Service,
    idle: Duration,
    id: String,
    busy: Arc<Busy>,
    origin: Origin,
    ended: impl FnOnce() + Send + 'static,
) -> SessionHandle {
    let Origin {
        owner,
        ip,
        handshake,
        ask_prefix,
        events,
    } = origin;
    let (tx, cmds) = mpsc::channel(COMMAND_QUEUE);
    let close = CancellationToken::new();
    let session = match handshake {
        Some(state) => ServerSession::resumed(service.config.clone(), state),
        None => ServerSession::new(service.config.clone()),
    };
    let session = match ask_prefix {
        Some(prefix) => session.with_ask_id_prefix(prefix),
        None => session,
    };
    // In a replica set: the session as backends see it on every replica.
    let shared = service
        .directory
        .as_ref()
        .map(|d| d.backend_session(&id, idle));
    let mut core = ServerCore::new(
        session,
        Calls::new(service.router.clone(), WireLabel::Http)
            .with_shared_session(shared)
            .hearing(events)
            .with_identity(owner.clone())
            .with_client_ip(ip),
    )
    .counted(service.load.as_ref());
    let seam = Arc::new(SessionSeam::new(
        SeamOwner {
            router: service.router.clone(),
            scope: core.scope().cloned().unwrap_or_default(),
            owner: owner.clone(),
            ip,
            inbox: core.relay_inbox(),
        },
        service.config.limits.max_in_flight,
        service.config.limits.request_timeout,
    ));
    let task = SessionTask {
        core,
        seam: seam.clone(),
        cmds,
        closed: CancelWatch::new(close.clone()),
        idle_alarm: Alarm::default(),
        routes: IdMap::default(),
        streams: IdMap::default(),
        finished: VecDeque::new(),
        standalone: None,
        backlog: VecDeque::new(),
        idle,
        last_active: now(),
        busy,
        logged: service.directory.clone().map(|d| (d, Arc::from(&*id))),
        max_depth: service.limits.max_depth,
    };
    tokio::spawn(async move {
        task.run().await;
        ended();
        tracing::debug!(session = %id, "session ended");
    });
    SessionHandle {
        tx,
        close,
        owner,
        seam,
    }
}

struct SessionTask {
    core: ServerCore,
    /// The calls this session's handlers relay themselves.
    seam: Arc<SessionSeam>,
    cmds: mpsc::Receiver<Box<Command>>,
    /// The handle's close, waited on across the task's loop (registered once, then a load
    /// per wake-up).
    closed: CancelWatch,
    /// When the session expires if nothing happens (`idle_deadline`), armed across the
    /// loop: it may ring early, and the deadline is read again then.
    idle_alarm: Alarm,
    /// Requests not yet answered, by client request id.
    routes: IdMap<RequestId, Route>,
    /// Stream number → the request it answers.
    streams: IdMap<u64, RequestId>,
    /// Streams whose answer nobody received, kept for a client to resume (oldest first).
    finished: VecDeque<(u64, ReplayLog)>,
    standalone: Option<Standalone>,
    /// Messages for a standalone stream that is not open, as JSON text.
    backlog: VecDeque<Arc<str>>,
    idle: Duration,
    last_active: Instant,
    busy: Arc<Busy>,
    /// In a replica set: the session directory keeping copies of this session's stream
    /// logs, and the session's name there.
    logged: Option<(Arc<dyn SessionDirectory>, Arc<str>)>,
    /// Nesting a client's message may have (read again when a plain call is relayed).
    max_depth: usize,
}

impl SessionTask {
    /// A fresh log for stream `n` (answering `request`, or the standalone one), copied to
    /// the session directory in a replica set.
    fn new_log(&self, kind: StreamKind, n: u64, request: Option<&RequestId>) -> ReplayLog {
        ReplayLog::new(self.logged.as_ref().map(|(directory, sid)| Mirror {
            directory: directory.clone(),
            sid: sid.clone(),
            kind,
            n,
            request: request.cloned(),
            log: std::sync::OnceLock::new(),
        }))
    }

    async fn run(mut self) {
        loop {
            for _ in 0..BURST {
                if !self.drain() {
                    break;
                }
            }
            self.seam
                .publish(self.core.relay_revision(), self.routes.len());
            let idle_at = self.idle_deadline();
            self.busy.set(idle_at.is_none());
            self.idle_alarm.set(idle_at);
            tokio::select! {
                biased;
                () = &mut self.closed => break,
                cmd = self.cmds.recv() => match cmd {
                    Some(cmd) => self.on_command(*cmd),
                    None => break,
                },
                wake = self.core.wait(false) => self.core.apply(wake),
                _ = standalone_closed(&self.standalone) => {
                    if let Some(s) = &mut self.standalone {
                        s.tx = None;
                    }
                    self.last_active = now();
                }
                () = self.idle_alarm.rung() => {
                    if self.idle_deadline().is_some_and(|at| at <= now()) {
                        tracing::debug!("session idle; ending it");
                        break;
                    }
                }
            }
        }
        self.seam.close();
        self.core.input_closed();
    }

    /// When the session expires if nothing happens: only while nothing is in flight and no
    /// standalone stream is open.
    /// Calls of the seam keep it from expiring too: while any runs, the deadline is checked
    /// again an idle period later (they do not wake the task).
    fn idle_deadline(&self) -> Option<Instant> {
        let streaming = self.standalone.as_ref().is_some_and(|s| s.tx.is_some());
        let busy = !self.core.idle() || !self.routes.is_empty() || streaming;
        if busy {
            return None;
        }
        if self.seam.busy() {
            return Some(now() + self.idle);
        }
        Some(self.last_active.max(self.seam.last_end()) + self.idle)
    }

    fn on_command(&mut self, cmd: Command) {
        self.last_active = now();
        match cmd {
            Command::Request(req, sink, stream, trace) => {
                self.on_request(req, sink, stream, trace);
            }
            Command::Plain(frame, sink, stream, trace) => {
                self.on_plain(frame, sink, stream, trace);
            }
            Command::Adopt(adopted, sink, stream) => self.on_adopt(adopted, sink, stream),
            Command::Refused(id, error, sink, stream) => {
                if self.routes.contains_key(&id) {
                    return duplicate(Some(sink), &id);
                }
                self.add_route(&id, sink, stream, None);
                if !self.core.refuse_relayed(id.clone(), error) {
                    duplicate(self.remove_route(&id).and_then(|r| r.sink), &id);
                }
            }
            Command::Message(msg) => {
                let cancelled = cancelled_request(&msg).filter(|id| self.routes.contains_key(id));
                let before = self.core.session.in_flight();
                self.core.inbound(Ok(msg));
                // A cancelled request is never answered: end its stream now rather than
                // when the session ends.
                if let Some(id) = cancelled
                    && self.core.session.in_flight() < before
                {
                    self.remove_route(&id);
                }
            }
            Command::Standalone(tx, stream) => {
                let mut log = self.new_log(StreamKind::Standalone, stream, None);
                while let Some(data) = self.backlog.pop_front() {
                    if tx.try_send(log.push(data, false)).is_err() {
                        break;
                    }
                }
                self.standalone = Some(Standalone {
                    stream,
                    tx: Some(tx),
                    log,
                });
            }
            Command::Resume(last, tx, known) => {
                let _ = known.send(self.resume(last, tx));
            }
            Command::Handshake(tx) => {
                let _ = tx.send(self.core.session.handshake_state());
            }
            Command::Subscription(uris, on) => {
                for uri in uris {
                    if !self.core.session.share_subscription(&uri, on) {
                        tracing::warn!(
                            "a subscription made on another replica is past this session's bound"
                        );
                    }
                }
            }
        }
    }

    /// Takes a call a handler relayed itself (the seam): from now on as a call the session
    /// relayed, answered on `sink` (stream number `stream`).
    fn on_adopt(&mut self, mut adopted: Adopted, sink: Sink, stream: u64) {
        let (id, started) = adopted.request.clone();
        let Some(call) = adopted.call.take() else {
            return;
        };
        if self.routes.contains_key(&id) {
            call.cancel();
            adopted.slot.end();
            return duplicate(Some(sink), &id);
        }
        self.add_route(&id, sink, stream, None);
        if !self
            .core
            .adopt_relayed((id.clone(), started), call, &adopted.slot)
        {
            duplicate(self.remove_route(&id).and_then(|r| r.sink), &id);
        }
    }

    /// Whether request `id` is one in flight already (here, or relayed by a handler
    /// itself): answered then with the error for a duplicate id on `sink`.
    fn is_duplicate(&mut self, id: &RequestId, sink: &mut Option<Sink>) -> bool {
        if !self.routes.contains_key(id) && !self.seam.holds(id) {
            return false;
        }
        duplicate(sink.take(), id);
        true
    }

    /// Takes client request `req` (answered on `sink`, stream number `stream`, its span a
    /// child of `trace`).
    fn on_request(&mut self, req: Request, sink: Sink, stream: u64, trace: Option<TraceParent>) {
        let mut sink = Some(sink);
        if self.is_duplicate(&req.id, &mut sink) {
            return;
        }
        let Some(sink) = sink else { return };
        self.add_route(&req.id, sink, stream, trace);
        self.core.inbound(Ok(Message::Request(req)));
    }

    /// Takes a plain `tools/call` as the client sent it: relayed when the session may and
    /// the router offers a route for its tool (`mcpwire_relay`; its answer comes back as
    /// bytes, or as the general path's would when it is not plain), else decoded and taken
    /// as any request.
    fn on_plain(&mut self, plain: PlainFrame, sink: Sink, stream: u64, trace: Option<TraceParent>) {
        let frame: &[u8] = plain.bytes();
        let call = self
            .core
            .may_relay()
            .then(|| plain.call())
            .flatten()
            .filter(|call| {
                let id = call.request_id();
                !self.routes.contains_key(id) && !self.seam.holds(id)
            });
        let mut sink = Some(sink);
        if let Some(call) = call {
            let id = call.request_id().clone();
            if let Some(sink) = sink.take() {
                self.add_route(&id, sink, stream, trace);
            }
            if self.core.relay_plain(&call) {
                return;
            }
            // The general path takes it, on the route it has.
            self.core.inbound(decode_with_depth(frame, self.max_depth));
            return;
        }
        let Some(mut sink) = sink else { return };
        match decode_with_depth(frame, self.max_depth) {
            Ok(Message::Request(req)) => self.on_request(req, sink, stream, trace),
            // The handler sends plain calls only, which decode as requests.
            Ok(_) | Err(_) => {
                let error = McpError::InvalidRequest("not a request".into());
                sink.answer(Answered::Message(Outbound::Error {
                    id: None,
                    error: error.to_wire_unnegotiated(),
                }));
            }
        }
    }

    /// Routes what the session sends about request `id` to `sink` (stream `stream`; the
    /// request's span a child of `trace`).
    fn add_route(&mut self, id: &RequestId, sink: Sink, stream: u64, trace: Option<TraceParent>) {
        let route = Route {
            stream,
            sink: Some(sink),
            sse: false,
            log: self.new_log(StreamKind::Request, stream, Some(id)),
        };
        self.streams.insert(stream, id.clone());
        self.routes.insert(id.clone(), route);
        if let Some(parent) = trace {
            self.core.set_request_parent(id.clone(), parent);
        }
    }

    /// Replays stream `last.stream` after `last.seq` into `tx` and keeps `tx` as its
    /// connection if the stream goes on. False when the stream is unknown here.
    fn resume(&mut self, last: EventId, tx: mpsc::Sender<StreamItem>) -> bool {
        let replay = |log: &ReplayLog, tx: &mpsc::Sender<StreamItem>| {
            if log.lost_after(last.seq) {
                tracing::warn!(
                    stream = last.stream,
                    "resumed stream lost events to its bound"
                );
            }
            for item in log.after(last.seq) {
                if tx.try_send(item).is_err() {
                    break;
                }
            }
        };
        match last.kind {
            StreamKind::Request => {
                if let Some(route) = self
                    .streams
                    .get(&last.stream)
                    .and_then(|id| self.routes.get_mut(id))
                {
                    replay(&route.log, &tx);
                    if let Some(mut old) = route.sink.take() {
                        let _ = old.try_send(StreamItem::Detach);
                    }
                    route.sse = true;
                    route.sink = Some(Sink {
                        events: Some(tx),
                        last: None,
                    });
                    return true;
                }
                let Some(at) = self.finished.iter().position(|(s, _)| *s == last.stream) else {
                    return false;
                };
                if let Some((_, log)) = self.finished.remove(at) {
                    replay(&log, &tx);
                }
                true
            }
            StreamKind::Standalone => match &mut self.standalone {
                Some(s) if s.stream == last.stream => {
                    replay(&s.log, &tx);
                    s.tx = Some(tx);
                    self.backlog.clear();
                    true
                }
                _ => false,
            },
        }
    }

    fn remove_route(&mut self, id: &RequestId) -> Option<Route> {
        let route = self.routes.remove(id)?;
        self.streams.remove(&route.stream);
        Some(route)
    }

    /// Takes the work that is ready and routes what the session sends; whether there was
    /// any work.
    fn drain(&mut self) -> bool {
        let mut out = Vec::new();
        let mut progressed = self.core.poll_ready(&mut out, |_| false, Vec::push);
        for t in out {
            self.route(t);
        }
        // Relayed calls' answers, after what the session queued before them.
        let mut relayed = Vec::new();
        progressed |= self.core.take_relayed_routed(|r| {
            relayed.push(match r {
                RelayedOutput::Sent(t) => Relayed::Sent(t),
                RelayedOutput::Answer(id, line) => {
                    Relayed::Answer(id.clone(), Bytes::copy_from_slice(line))
                }
            })
        });
        for r in relayed {
            match r {
                Relayed::Sent(t) => self.route(t),
                Relayed::Answer(id, line) => self.route_to(Payload::Relayed(line), Some(id), true),
            }
        }
        // After what was emitted with them: a close takes effect once the messages queued
        // before it went out.
        for id in self.core.take_detached() {
            self.detach(&id);
        }
        progressed
    }

    /// Closes the connection showing request `id`'s stream, keeping the stream: the client
    /// resumes it with `GET` and `Last-Event-ID` (SSE polling).
    fn detach(&mut self, id: &RequestId) {
        let Some(route) = self.routes.get_mut(id) else {
            return;
        };
        if let Some(mut sink) = route.sink.take() {
            route.sse = true;
            let _ = sink.try_send(StreamItem::Detach);
        }
    }

    fn route(&mut self, t: Transmit) {
        let Transmit { msg, related } = t;
        let is_response = related.is_some() && msg.response_id() == related.as_ref();
        self.route_to(Payload::Message(msg), related, is_response);
    }

    /// Sends `msg` (the response to `related` when `is_response`) on `related`'s stream: as
    /// the request's JSON answer while its stream has not begun, else as an event.
    fn route_to(&mut self, msg: Payload, related: Option<RequestId>, is_response: bool) {
        let route = related.as_ref().and_then(|id| self.routes.get_mut(id));
        let Some(route) = route else {
            if is_response {
                tracing::debug!("response to a request whose stream is gone; dropped");
            } else {
                self.send_standalone(msg);
            }
            return;
        };
        if !route.sse {
            let Some(sink) = route.sink.as_mut() else {
                // The client left before the stream began: it cannot resume it.
                if !is_response {
                    self.send_standalone(msg);
                } else if let Some(id) = &related {
                    self.remove_route(id);
                }
                return;
            };
            if is_response {
                sink.answer(msg.answered());
                if let Some(id) = &related {
                    self.remove_route(id);
                }
                return;
            }
            match sink.try_send(route.log.push(msg.text(), false)) {
                Ok(()) | Err(TrySendError::Full(_)) => route.sse = true,
                Err(TrySendError::Closed(_)) => {
                    route.sink = None;
                    route.log.clear();
                    self.send_standalone(msg);
                }
            }
            return;
        }
        let item = route.log.push(msg.text(), is_response);
        if let Some(sink) = &mut route.sink {
            match sink.try_send(item) {
                Ok(()) if is_response => {
                    if let Some(id) = &related {
                        self.remove_route(id);
                    }
                    return;
                }
                Ok(()) => return,
                Err(TrySendError::Full(_)) if !is_response => {
                    tracing::warn!(
                        "client is not reading its stream; message kept for replay only"
                    );
                    return;
                }
                // A full or closed connection: the answer waits for the client to resume.
                Err(_) => route.sink = None,
            }
        }
        if is_response
            && let Some(id) = &related
            && let Some(route) = self.remove_route(id)
        {
            if self.finished.len() >= MAX_FINISHED {
                self.finished.pop_front();
            }
            self.finished.push_back((route.stream, route.log));
        }
    }

    fn send_standalone(&mut self, msg: Payload) {
        let data = msg.text();
        if let Some(s) = &mut self.standalone {
            let item = s.log.push(data.clone(), false);
            if let Some(tx) = &s.tx {
                match tx.try_send(item) {
                    Ok(()) => return,
                    Err(TrySendError::Full(_)) => {
                        tracing::warn!(
                            "client is not reading its standalone stream; message kept for replay only"
                        );
                        return;
                    }
                    Err(TrySendError::Closed(_)) => s.tx = None,
                }
            }
        }
        if self.backlog.len() >= BACKLOG {
            self.backlog.pop_front();
        }
        self.backlog.push_back(data);
    }
}

fn encode(msg: &Outbound) -> Arc<str> {
    Arc::from(msg.to_json_string())
}

/// Answers request `id`, whose id is one in flight already, on its connection's `sink`.
fn duplicate(sink: Option<Sink>, id: &RequestId) {
    if let Some(mut sink) = sink {
        let error = McpError::DuplicateRequestId.to_wire_unnegotiated();
        let id = Some(id.clone());
        sink.answer(Answered::Message(Outbound::Error { id, error }));
    }
}

/// What a drain took for relayed calls, in order: the session's messages, answers' lines.
enum Relayed {
    Sent(Transmit),
    Answer(RequestId, Bytes),
}

/// The request a `notifications/cancelled` names.
pub(crate) fn cancelled_request(msg: &Message) -> Option<RequestId> {
    let Message::Notification(n) = msg else {
        return None;
    };
    if n.method != Method::NotificationsCancelled {
        return None;
    }
    let p: CancelledParams = serde_json::from_str(n.params.as_deref()?.get()).ok()?;
    p.request_id
}

async fn standalone_closed(s: &Option<Standalone>) {
    match s.as_ref().and_then(|s| s.tx.as_ref()) {
        Some(tx) => tx.closed().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    fn pair() -> (Sink, RequestStream) {
        let (last_tx, last) = oneshot::channel();
        let sink = Sink {
            events: None,
            last: Some(last_tx),
        };
        let stream = RequestStream {
            stream: 1,
            events: None,
            last: Some(last),
        };
        (sink, stream)
    }

    fn event(n: u64) -> StreamItem {
        StreamItem::Event(n, Arc::from(format!("{{\"n\":{n}}}")))
    }

    #[tokio::test]
    async fn a_request_answered_alone_makes_no_stream() {
        let (mut sink, mut stream) = pair();
        let answer = Answered::Relayed(Bytes::from_static(b"{}"));
        let last = sink.last.take().expect("slot");
        assert!(last.send(First::Answer(answer)).is_ok());
        assert!(sink.events.is_none());
        assert!(matches!(
            stream.next().await,
            Some(Delivery::Response(Answered::Relayed(_)))
        ));
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_stream_begins_with_its_first_event_and_ends_with_its_sender() {
        let (mut sink, mut stream) = pair();
        assert!(sink.try_send(event(1)).is_ok());
        assert!(sink.last.is_none() && sink.events.is_some());
        assert!(sink.try_send(event(2)).is_ok());
        drop(sink);
        for n in [1, 2] {
            match stream.next().await {
                Some(Delivery::Item(StreamItem::Event(seq, _))) => assert_eq!(seq, n),
                _ => panic!("event {n} expected"),
            }
        }
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_connection_that_left_is_closed_to_the_session() {
        let (mut sink, stream) = pair();
        drop(stream);
        assert!(matches!(
            sink.try_send(event(1)),
            Err(TrySendError::Closed(_))
        ));
        // The stream had begun: its receiver went away.
        let (mut sink, mut stream) = pair();
        assert!(sink.try_send(event(1)).is_ok());
        assert!(stream.next().await.is_some());
        drop(stream);
        assert!(matches!(
            sink.try_send(event(2)),
            Err(TrySendError::Closed(_))
        ));
    }
}
