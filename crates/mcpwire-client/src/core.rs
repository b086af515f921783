//! [`ClientCore`]: a [`ClientSession`] and the channels to its [`Client`](crate::Client)
//! handles — what every client wire's task holds, as `ServerCore` is for servers. It takes
//! commands (requests, answers to server requests, close), routes the session's answers to
//! their waiters and everything else to the owner's bounded event stream, and knows the
//! transport's own account of a failed request (an HTTP status) so the caller gets that
//! rather than a bare code.
//!
//! Bounds: commands are a bounded channel (the handle waits for room); cancellations come
//! from dropped [`PendingRequest`](crate::PendingRequest)s, at most one per request in
//! flight; events wait in the session (bounded) and, when the owner's channel is full, in
//! `held` (bounded by the same limit; notifications past it are dropped, server requests
//! refused).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use mcpwire_model::{McpError, Method, Raw};
use mcpwire_session::{
    Answer, ClientEvent, ClientRequestId, ClientSession, IdMap, Negotiated, RequestOptions,
    ServerRequestId, TIMED_OUT_REASON,
};
use tokio::sync::{mpsc, oneshot};

use crate::ClientError;
use mcpwire_relay::{CancelReason, Relay};

/// How a request ended badly: the session's account, or the transport's (richer) one.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The session ended the request with this error.
    Session(McpError),
    /// The transport failed it, and says how.
    Transport(ClientError),
}

/// What a waiter receives.
pub(crate) type Outcome = Result<Answer, Failure>;

/// How negotiation ended, for `connect`.
pub(crate) type Settled = Result<Arc<Negotiated>, (Method, Failure)>;

/// What a handle asks of the wire's task.
pub(crate) enum Command {
    /// Send a request under the id the handle chose (from [`RequestIds`]); say its end
    /// (or why it was not sent) on `reply`.
    Request {
        id: ClientRequestId,
        method: Method,
        params: Option<Raw>,
        opts: RequestOptions,
        reply: oneshot::Sender<Outcome>,
        /// The sender's trace context headers (`traceparent`), for wires that carry
        /// headers; empty when tracing is off.
        trace: Vec<(String, String)>,
    },
    /// Answer a server request.
    Answer {
        id: ServerRequestId,
        result: Result<Raw, McpError>,
    },
    /// Send a client notification (`notifications/roots/list_changed`).
    Notify { method: Method, params: Option<Raw> },
    /// Send `tools/call` with `params` under `id` outside the session (see
    /// [`ClientCore::take_direct`]); say its end on `reply`.
    Direct {
        id: ClientRequestId,
        params: Option<Raw>,
        reply: oneshot::Sender<Outcome>,
    },
    /// End the connection.
    Close,
}

/// The task's ends of a handle's channels.
pub(crate) struct CoreChannels {
    pub(crate) commands: mpsc::Receiver<Command>,
    pub(crate) cancels: mpsc::UnboundedReceiver<(ClientRequestId, String)>,
    pub(crate) events: mpsc::Sender<ClientEvent>,
    pub(crate) settled: oneshot::Sender<Settled>,
    pub(crate) ids: RequestIds,
    pub(crate) backlog: EventBacklog,
    pub(crate) ended: ConnectionEnded,
}

/// The ids handles give their requests: above every id the session minted for
/// negotiation (set when it settles), so `send` needs no round trip to learn its id.
#[derive(Clone, Default)]
pub(crate) struct RequestIds(Arc<AtomicU64>);

impl RequestIds {
    /// The next id.
    pub(crate) fn next(&self) -> ClientRequestId {
        ClientRequestId::new(self.next_number())
    }

    /// The next id, as its number (the relay writes it into frames itself).
    pub(crate) fn next_number(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// Events handed to the owner's [`ClientEvents`](crate::ClientEvents) and not yet done
/// with (an event counts until the owner asks for the next one), so an owner that must
/// see every event sent before an answer can tell when there is nothing left to wait
/// for.
#[derive(Clone, Default)]
pub(crate) struct EventBacklog(Arc<AtomicUsize>);

impl EventBacklog {
    /// Whether every event handed over so far is done with.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }

    /// One event is done with.
    pub(crate) fn done(&self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Set once the connection ended, before any request in flight is failed: an owner that
/// saw a request fail because the connection went away sees the connection as ended, so
/// its next request goes to a new connection rather than into the closed one.
#[derive(Clone, Default)]
pub(crate) struct ConnectionEnded(Arc<AtomicBool>);

impl ConnectionEnded {
    /// Whether the connection ended.
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Cancellations of requests not taken yet remembered, so the request is not sent when
/// its command arrives after its cancellation.
const EARLY_CANCELS: usize = 64;

/// What [`ClientCore::wait`] woke up for.
pub(crate) enum CoreWake {
    Command(Option<Command>),
    Cancel(Option<(ClientRequestId, String)>),
    Capacity(Option<mpsc::OwnedPermit<ClientEvent>>),
    Timer,
}

/// Why the upstream is told a relayed call was cancelled: the general path's words
/// (`upstream::fast`), so the upstream sees no difference.
const RELAY_CANCEL_REASON: &str = "the downstream client cancelled";

/// Commands taken between two waits.
const COMMAND_BURST: usize = 64;

/// A client session and its handles' channels.
pub(crate) struct ClientCore {
    pub(crate) session: ClientSession,
    commands: mpsc::Receiver<Command>,
    commands_open: bool,
    cancels: mpsc::UnboundedReceiver<(ClientRequestId, String)>,
    cancels_open: bool,
    events: Option<mpsc::Sender<ClientEvent>>,
    held: VecDeque<ClientEvent>,
    max_held: usize,
    waiters: IdMap<ClientRequestId, oneshot::Sender<Outcome>>,
    settled: Option<oneshot::Sender<Settled>>,
    /// The transport's account of requests it failed, until their end is routed.
    transport_errors: HashMap<ClientRequestId, ClientError>,
    close_requested: bool,
    ids: RequestIds,
    backlog: EventBacklog,
    ended: ConnectionEnded,
    /// Cancelled ids the session did not know (their command may still come), newest
    /// last, at most [`EARLY_CANCELS`].
    early_cancels: VecDeque<ClientRequestId>,
    /// Trace context headers of requests not transmitted yet (taken by the HTTP wire with
    /// [`ClientCore::take_trace`]; dropped with the request's answer).
    traces: HashMap<ClientRequestId, Vec<(String, String)>>,
    /// Direct requests in flight (see [`ClientCore::take_direct`]), with the session's
    /// requests at most its `max_in_flight`.
    direct: IdMap<ClientRequestId, oneshot::Sender<Outcome>>,
    /// Direct requests taken and not yet written by the wire.
    direct_out: VecDeque<(ClientRequestId, Option<Raw>)>,
    /// The relay of this connection (stdio), and the server as errors name it.
    relay: Option<(Arc<Relay>, Arc<str>)>,
    /// Requests (session and direct) that came while the connection held its
    /// `max_in_flight`, oldest first: sent as answers make room, at most as many as that
    /// bound (more are refused).
    queued: VecDeque<Command>,
}

impl ClientCore {
    /// A core over `session` (started here) and the task's ends of the channels.
    pub(crate) fn new(mut session: ClientSession, ch: CoreChannels, max_held: usize) -> Self {
        session.start(mcpwire_server::driver::now());
        ClientCore {
            session,
            commands: ch.commands,
            commands_open: true,
            cancels: ch.cancels,
            cancels_open: true,
            events: Some(ch.events),
            held: VecDeque::new(),
            max_held,
            waiters: IdMap::default(),
            settled: Some(ch.settled),
            transport_errors: HashMap::new(),
            close_requested: false,
            ids: ch.ids,
            backlog: ch.backlog,
            ended: ch.ended,
            early_cancels: VecDeque::new(),
            traces: HashMap::new(),
            direct: IdMap::default(),
            direct_out: VecDeque::new(),
            relay: None,
            queued: VecDeque::new(),
        }
    }

    /// Whether the connection holds as many requests as it may (the session's, direct and
    /// relayed ones together), so a new one must wait.
    fn full(&self) -> bool {
        !self.session.is_finished()
            && self.session.in_flight() + self.direct.len() + self.relayed()
                >= self.session.max_in_flight()
    }

    /// Sends the requests that waited for room, oldest first, while there is room.
    fn start_queued(&mut self, now: Instant) -> bool {
        let mut did = false;
        while !self.queued.is_empty() && !self.full() {
            let Some(c) = self.queued.pop_front() else {
                break;
            };
            self.take(now, c);
            did = true;
        }
        did
    }

    /// Keeps request command `c` until there is room, or refuses it when as many wait
    /// already.
    fn queue(&mut self, c: Command) {
        let max = self.session.max_in_flight();
        if self.queued.len() < max {
            self.queued.push_back(c);
            return;
        }
        let e = McpError::LimitExceeded(format!(
            "more than {max} requests in flight to the server and {max} waiting"
        ));
        if let Command::Request { reply, .. } | Command::Direct { reply, .. } = c {
            let _ = reply.send(Err(Failure::Session(e)));
        }
    }

    /// Relays calls on this connection with `relay` (`mcpwire_relay`): their answers, the
    /// logs sent while they wait and the connection's end go to it. `peer` names the
    /// server in errors.
    pub(crate) fn set_relay(&mut self, relay: Arc<Relay>, peer: Arc<str>) {
        self.relay = Some((relay, peer));
    }

    /// The error a `tools/call` gets from the session's `error`, as a caller of
    /// [`Client::send`](crate::Client::send) reads it (what a relayed call is answered with).
    fn relayed_error(peer: &str, error: McpError) -> McpError {
        ClientError::from_session("tools/call", error, peer, None, "").to_mcp()
    }

    /// The next direct request to write: `tools/call` under its id with these params.
    ///
    /// **Direct requests** are the gateway's hot path on stdio (`Client::send` makes one
    /// for a `tools/call` with no options on a handshake-era connection whose wire writes
    /// them — `docs/design/gateway.md` § The forwarding hot path): the wire writes the
    /// frame itself and hands their answers to [`ClientCore::answer_direct`] before the
    /// session sees them, so the session keeps no record of them. What the session would
    /// have done for such a request is done here: the in-flight bound, the cancellation
    /// notice, the failure when the connection ends. An answer is read as the session
    /// reads a handshake-era one (a result is `Complete`, an error `McpError::Wire`).
    pub(crate) fn take_direct(&mut self) -> Option<(ClientRequestId, Option<Raw>)> {
        self.direct_out.pop_front()
    }

    /// Hands the answer `msg` to its direct request; gives `msg` back when it is not one.
    pub(crate) fn answer_direct(
        &mut self,
        msg: Result<mcpwire_model::Message, mcpwire_model::Malformed>,
    ) -> Option<Result<mcpwire_model::Message, mcpwire_model::Malformed>> {
        use mcpwire_model::{Message, RequestId};
        let claimed = match (&self.relay, &msg) {
            (Some((relay, _)), Ok(Message::Response(r))) if relay.waiting() > 0 => match r.id {
                RequestId::Int(n) => u64::try_from(n).ok().and_then(|n| relay.claim(n)),
                _ => None,
            },
            _ => None,
        };
        if let Some(claimed) = claimed {
            // A relayed call's answer the relay could not pass on as bytes: shaped as the
            // general path shapes it.
            if let (Ok(Message::Response(r)), Some((_, peer))) = (msg, &self.relay) {
                claimed.answer(match r.outcome {
                    Ok(raw) => Ok(mcpwire_model::Reply::Complete(raw)),
                    Err(obj) => Err(Self::relayed_error(peer, McpError::Wire(obj))),
                });
            }
            return None;
        }
        if self.direct.is_empty() {
            return Some(msg);
        }
        let id = match &msg {
            Ok(Message::Response(r)) => match r.id {
                RequestId::Int(n) => u64::try_from(n).ok().map(ClientRequestId::new),
                _ => None,
            },
            _ => None,
        };
        let Some(reply) = id.and_then(|id| self.direct.remove(&id)) else {
            return Some(msg);
        };
        if let Ok(Message::Response(r)) = msg {
            let outcome = match r.outcome {
                Ok(raw) => Ok(Answer::Complete(raw)),
                Err(obj) => Err(Failure::Session(McpError::Wire(obj))),
            };
            let _ = reply.send(outcome);
        }
        None
    }

    /// Takes a direct request (see [`ClientCore::take_direct`]).
    fn direct(
        &mut self,
        id: ClientRequestId,
        params: Option<Raw>,
        reply: oneshot::Sender<Outcome>,
    ) {
        // A full connection queued the command before it came here (`take`).
        let refusal = self
            .session
            .is_finished()
            .then(|| McpError::ConnectionClosed("the connection to the server is closed".into()));
        match refusal {
            Some(e) => {
                let _ = reply.send(Err(Failure::Session(e)));
            }
            None => {
                self.direct.insert(id, reply);
                self.direct_out.push_back((id, params));
            }
        }
    }

    /// When relayed calls may have waited their call timeout (`Relay::expire` is due).
    fn relay_expiry(&self) -> Option<Instant> {
        self.relay.as_ref().and_then(|(r, _)| r.next_expiry())
    }

    /// Relayed calls waiting on this connection.
    fn relayed(&self) -> usize {
        self.relay.as_ref().map_or(0, |(r, _)| r.waiting())
    }

    /// Moves the frames and cancellations the relay queued to the wire's output `out`
    /// (cancellations as the session words them); whether there were any.
    pub(crate) fn take_relayed(&mut self, out: &mut bytes::BytesMut) -> bool {
        let Some((relay, _)) = &self.relay else {
            return false;
        };
        let session = &mut self.session;
        relay.take(out, |id, why| {
            let reason = match why {
                CancelReason::Downstream => RELAY_CANCEL_REASON,
                CancelReason::TimedOut => TIMED_OUT_REASON,
            };
            session.cancel_untracked(ClientRequestId::new(id), reason);
        })
    }

    /// Routes what the session produced now (the stdio wire does so after each line
    /// while calls are relayed: a log reaches the relay before the answer behind it).
    pub(crate) fn route_now(&mut self) {
        self.route();
    }

    /// The trace context headers request `id` goes out with (empty when it has none).
    pub(crate) fn take_trace(&mut self, id: ClientRequestId) -> Vec<(String, String)> {
        if self.traces.is_empty() {
            return Vec::new();
        }
        self.traces.remove(&id).unwrap_or_default()
    }

    /// The owner asked to close (or every handle is gone).
    pub(crate) fn close_requested(&self) -> bool {
        self.close_requested
    }

    /// Takes ready commands (when `accept` — not while the wire's output is full) and
    /// cancellations without waiting, and routes the session's events. Whether anything
    /// happened.
    pub(crate) fn poll_ready(&mut self, now: Instant, accept: bool) -> bool {
        let mut did = false;
        if self.cancels_open {
            while let Ok((id, reason)) = self.cancels.try_recv() {
                self.cancel(id, &reason);
                did = true;
            }
        }
        did |= accept && self.start_queued(now);
        if accept && self.commands_open && !self.close_requested {
            for _ in 0..COMMAND_BURST {
                match self.commands.try_recv() {
                    Ok(c) => {
                        self.take(now, c);
                        did = true;
                    }
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        self.commands_open = false;
                        self.close_requested = true;
                        break;
                    }
                }
            }
        }
        did | self.route()
    }

    /// Waits for a command (when `accept`), a cancellation, room in the owner's event
    /// channel (when events are held back) or the session's next deadline.
    pub(crate) async fn wait(&mut self, accept: bool) -> CoreWake {
        let timer = match (self.session.poll_timeout(), self.relay_expiry()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let room = match (&self.events, self.held.is_empty()) {
            (Some(tx), false) => Some(tx.clone()),
            _ => None,
        };
        let take_commands = accept && self.commands_open && !self.close_requested;
        tokio::select! {
            c = self.commands.recv(), if take_commands => CoreWake::Command(c),
            c = self.cancels.recv(), if self.cancels_open => CoreWake::Cancel(c),
            p = async { room?.reserve_owned().await.ok() }, if room.is_some() => CoreWake::Capacity(p),
            _ = sleep_until(timer), if timer.is_some() => CoreWake::Timer,
            else => std::future::pending().await,
        }
    }

    /// Acts on what [`ClientCore::wait`] woke up for.
    pub(crate) fn apply(&mut self, now: Instant, wake: CoreWake) {
        match wake {
            CoreWake::Command(Some(c)) => self.take(now, c),
            CoreWake::Command(None) => {
                self.commands_open = false;
                self.close_requested = true;
            }
            CoreWake::Cancel(Some((id, reason))) => self.cancel(id, &reason),
            CoreWake::Cancel(None) => self.cancels_open = false,
            CoreWake::Capacity(Some(permit)) => {
                if let Some(e) = self.held.pop_front() {
                    permit.send(e);
                }
                self.flush_held();
            }
            CoreWake::Capacity(None) => self.owner_gone(),
            CoreWake::Timer => {
                self.session.handle_timeout(now);
                if let Some((relay, _)) = &self.relay {
                    relay.expire(now);
                }
            }
        }
        self.route();
        self.start_queued(now);
    }

    /// The transport could not deliver request `id` or read its answer: it ends with
    /// `error` (a failed probe falls back to `initialize`, as an error answer would).
    pub(crate) fn fail_request(&mut self, now: Instant, id: ClientRequestId, error: ClientError) {
        if !self.session.is_awaiting(id) {
            return;
        }
        let mcp = error.to_mcp();
        self.transport_errors.insert(id, error);
        self.session.handle_failed(now, id, mcp);
        self.route();
    }

    /// The connection is over: every request and negotiation ends with `error`, the event
    /// stream ends.
    pub(crate) fn finish(&mut self, error: McpError) {
        if let Some((relay, peer)) = &self.relay {
            relay.close(|| Self::relayed_error(peer, error.clone()));
        }
        self.finish_but_relay(error);
    }

    /// As [`ClientCore::finish`], for a connection whose server no longer holds its
    /// session: relayed calls still being sent are left to finish
    /// ([`Relay::close_leaving_posts`]; those that were not run run again).
    pub(crate) fn finish_session_lost(&mut self, error: McpError) {
        if let Some((relay, peer)) = &self.relay {
            relay.close_leaving_posts(|| Self::relayed_error(peer, error.clone()));
        }
        self.finish_but_relay(error);
    }

    fn finish_but_relay(&mut self, error: McpError) {
        self.ended.set();
        self.direct_out.clear();
        for (_, reply) in self.direct.drain() {
            let _ = reply.send(Err(Failure::Session(error.clone())));
        }
        for c in self.queued.drain(..) {
            if let Command::Request { reply, .. } | Command::Direct { reply, .. } = c {
                let _ = reply.send(Err(Failure::Session(error.clone())));
            }
        }
        self.session.handle_closed(error);
        self.route();
        self.events = None;
        self.held.clear();
    }

    fn take(&mut self, now: Instant, c: Command) {
        if let Command::Request { id, reply, .. } | Command::Direct { id, reply, .. } = &c
            && self.full()
        {
            if !self.given_up(*id, reply) {
                self.queue(c);
            }
            return;
        }
        match c {
            Command::Request {
                id,
                method,
                params,
                opts,
                reply,
                trace,
            } => {
                if self.given_up(id, &reply) {
                    return;
                }
                match self.session.request_as(now, id, method, params, opts) {
                    Ok(()) => {
                        self.waiters.insert(id, reply);
                        if !trace.is_empty() {
                            self.traces.insert(id, trace);
                        }
                    }
                    Err(e) => {
                        let _ = reply.send(Err(Failure::Session(e)));
                    }
                }
            }
            Command::Direct { id, params, reply } => {
                if !self.given_up(id, &reply) {
                    self.direct(id, params, reply);
                }
            }
            Command::Answer { id, result } => {
                self.session.answer(id, result);
            }
            Command::Notify { method, params } => {
                if let Err(e) = self.session.notify(method, params) {
                    tracing::debug!(error = %e, "client notification not sent");
                }
            }
            Command::Close => self.close_requested = true,
        }
    }

    /// Whether the caller of request `id` gave up before it went out (cancelled it, or
    /// stopped waiting for `reply`).
    fn given_up(&mut self, id: ClientRequestId, reply: &oneshot::Sender<Outcome>) -> bool {
        let early = self.early_cancels.iter().position(|c| *c == id);
        if let Some(i) = early {
            self.early_cancels.remove(i);
        }
        early.is_some() || reply.is_closed()
    }

    /// Cancels request `id`; remembers it when its command has not been taken yet.
    fn cancel(&mut self, id: ClientRequestId, reason: &str) {
        let waiting = self.queued.iter().position(|c| {
            matches!(c, Command::Request { id: q, .. } | Command::Direct { id: q, .. } if *q == id)
        });
        if let Some(i) = waiting
            && let Some(Command::Request { reply, .. } | Command::Direct { reply, .. }) =
                self.queued.remove(i)
        {
            // Never sent: the server is not told.
            let _ = reply.send(Err(Failure::Session(McpError::Cancelled)));
            return;
        }
        if let Some(reply) = self.direct.remove(&id) {
            // As the session cancels its own: the server is told if the request went out.
            match self.direct_out.iter().position(|(d, _)| *d == id) {
                Some(i) => {
                    self.direct_out.remove(i);
                }
                None => self.session.cancel_untracked(id, reason),
            }
            let _ = reply.send(Err(Failure::Session(McpError::Cancelled)));
            return;
        }
        if !self.session.cancel(id, reason) && !self.waiters.contains_key(&id) {
            if self.early_cancels.len() >= EARLY_CANCELS {
                self.early_cancels.pop_front();
            }
            self.early_cancels.push_back(id);
        }
    }

    /// Routes the session's events: answers to waiters, negotiation to `connect`, the rest
    /// to the owner.
    fn route(&mut self) -> bool {
        let mut did = false;
        while let Some(e) = self.session.poll_event() {
            did = true;
            match e {
                ClientEvent::Response { id, outcome } => {
                    let outcome = outcome.map_err(|e| match self.transport_errors.remove(&id) {
                        Some(t) => Failure::Transport(t),
                        None => Failure::Session(e),
                    });
                    if let Some(w) = self.waiters.remove(&id) {
                        let _ = w.send(outcome);
                    }
                    if !self.traces.is_empty() {
                        self.traces.remove(&id);
                    }
                }
                ClientEvent::Ready(n) => {
                    self.transport_errors.clear();
                    // Handles number their requests from here on.
                    self.ids.0.store(self.session.minted(), Ordering::Relaxed);
                    if let Some(s) = self.settled.take() {
                        let _ = s.send(Ok(n));
                    }
                }
                ClientEvent::NegotiationFailed { id, method, error } => {
                    let failure = match self.transport_errors.remove(&id) {
                        Some(t) => Failure::Transport(t),
                        None => Failure::Session(error),
                    };
                    self.transport_errors.clear();
                    if let Some(s) = self.settled.take() {
                        let _ = s.send(Err((method, failure)));
                    }
                }
                other => self.deliver(other),
            }
        }
        did
    }

    fn deliver(&mut self, e: ClientEvent) {
        // A log while calls are relayed goes with their answers, in order.
        let e = match (e, &self.relay) {
            (ClientEvent::Log { entry, related }, Some((relay, _))) if relay.waiting() > 0 => {
                match relay.log(entry) {
                    Ok(()) => return,
                    Err(entry) => ClientEvent::Log { entry, related },
                }
            }
            (e, _) => e,
        };
        let Some(tx) = &self.events else {
            return self.unheard(e);
        };
        // Counted before the owner can see it (and take it off the count).
        self.backlog.add();
        if self.held.is_empty() {
            match tx.try_send(e) {
                Ok(()) => return,
                Err(mpsc::error::TrySendError::Full(e)) => return self.hold(e),
                Err(mpsc::error::TrySendError::Closed(e)) => {
                    self.backlog.done();
                    self.owner_gone();
                    return self.unheard(e);
                }
            }
        }
        self.hold(e);
    }

    /// Keeps a counted event until the owner has room.
    fn hold(&mut self, e: ClientEvent) {
        if self.held.len() < self.max_held {
            self.held.push_back(e);
        } else {
            tracing::warn!("the owner is not taking client events; one dropped");
            self.backlog.done();
            self.unheard(e);
        }
    }

    fn flush_held(&mut self) {
        let Some(tx) = &self.events else { return };
        while let Some(e) = self.held.pop_front() {
            match tx.try_send(e) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(e)) => {
                    self.held.push_front(e);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(e)) => {
                    self.held.push_front(e);
                    return self.owner_gone();
                }
            }
        }
    }

    /// The owner dropped its event stream: server requests are refused from now on.
    fn owner_gone(&mut self) {
        self.events = None;
        for e in std::mem::take(&mut self.held) {
            self.unheard(e);
        }
    }

    /// An event nobody will see: a server request is refused, anything else dropped.
    fn unheard(&mut self, e: ClientEvent) {
        if let ClientEvent::ServerRequest(r) = e {
            let refusal = McpError::MethodNotFound(format!(
                "{} (this client takes no server requests)",
                r.method
            ));
            self.session.answer(r.id, Err(refusal));
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ClientOptions;
    use crate::handle::parts;

    /// A request command for `id`, and the caller's end of its reply.
    fn request(id: ClientRequestId) -> (Command, oneshot::Receiver<Outcome>) {
        let (reply, rx) = oneshot::channel();
        let command = Command::Request {
            id,
            method: Method::parse("tools/list"),
            params: None,
            opts: RequestOptions::default(),
            reply,
            trace: Vec::new(),
        };
        (command, rx)
    }

    /// Cancellations of ids the core has not seen yet (their command may still come) are
    /// remembered, at most [`EARLY_CANCELS`]: a flood of them keeps the list at its bound,
    /// newest kept, and a request whose cancellation was forgotten is still not sent when
    /// its caller is gone (the reply channel is closed) — the bound costs nothing.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_early_cancellations_keeps_the_list_at_its_bound() {
        let mut core = parts(&ClientOptions::default(), "`test`").core;
        let first = 1_000;
        let flood = 100 * EARLY_CANCELS as u64;
        for n in first..first + flood {
            core.cancel(ClientRequestId::new(n), "caller cancelled");
            assert!(core.early_cancels.len() <= EARLY_CANCELS);
        }
        assert_eq!(core.early_cancels.len(), EARLY_CANCELS);
        let now = mcpwire_server::driver::now();

        // The newest cancellation is remembered: its request is not sent even though a
        // caller still holds its reply.
        let newest = ClientRequestId::new(first + flood - 1);
        let (command, mut reply) = request(newest);
        core.take(now, command);
        assert!(
            !core.session.is_awaiting(newest),
            "a cancelled request went out"
        );
        assert!(matches!(
            reply.try_recv(),
            Err(oneshot::error::TryRecvError::Closed)
        ));
        assert_eq!(
            core.early_cancels.len(),
            EARLY_CANCELS - 1,
            "taken off the list"
        );

        // The oldest was forgotten; its caller is gone, so it is not sent either.
        let oldest = ClientRequestId::new(first);
        let (command, reply) = request(oldest);
        drop(reply);
        core.take(now, command);
        assert!(!core.session.is_awaiting(oldest));
        assert!(core.waiters.is_empty());

        // A request nobody cancelled goes out as usual.
        let fresh = ClientRequestId::new(first + flood);
        let (command, _reply) = request(fresh);
        core.take(now, command);
        assert!(core.session.is_awaiting(fresh));
    }

    /// A request that comes while the connection holds its `max_in_flight` waits and goes
    /// out as an answer makes room (a gateway in front of one shared upstream queues its
    /// clients' calls rather than refusing them); a waiting request cancelled is never sent;
    /// as many waiting as the bound allows, and the next is refused.
    #[tokio::test(start_paused = true)]
    async fn requests_over_the_in_flight_bound_wait_for_room() {
        let mut opts = ClientOptions::default();
        opts.limits.max_in_flight = 2;
        let mut core = parts(&opts, "`test`").core;
        let now = mcpwire_server::driver::now();
        let id = ClientRequestId::new;
        let mut replies = Vec::new();
        for n in 10..13 {
            let (command, reply) = request(id(n));
            core.take(now, command);
            replies.push(reply);
        }
        assert!(core.session.is_awaiting(id(10)) && core.session.is_awaiting(id(11)));
        assert!(
            !core.session.is_awaiting(id(12)),
            "over the bound: it waits"
        );
        assert_eq!(core.queued.len(), 1);

        // Cancelled while waiting: answered, never sent.
        core.cancel(id(12), "caller cancelled");
        assert!(matches!(
            replies[2].try_recv(),
            Ok(Err(Failure::Session(McpError::Cancelled)))
        ));
        assert!(core.queued.is_empty());

        // Two wait (the bound), a third is refused.
        let (command, _r13) = request(id(13));
        core.take(now, command);
        let (command, _r14) = request(id(14));
        core.take(now, command);
        let (command, mut refused) = request(id(15));
        core.take(now, command);
        assert_eq!(core.queued.len(), 2);
        assert!(matches!(
            refused.try_recv(),
            Ok(Err(Failure::Session(McpError::LimitExceeded(_))))
        ));

        // A request in flight ends (here: its caller cancels it) and makes room: the oldest
        // waiting request goes out.
        core.cancel(id(10), "caller cancelled");
        core.poll_ready(now, true);
        assert!(core.session.is_awaiting(id(13)));
        assert!(!core.session.is_awaiting(id(14)));
        assert_eq!(core.queued.len(), 1);
    }
}
