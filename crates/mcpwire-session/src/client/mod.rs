//! [`ClientSession`]: the protocol state of one connection to a server, without I/O — the
//! mirror of [`ServerSession`](crate::ServerSession).
//!
//! Inputs: [`ClientSession::start`] (begin negotiation), [`ClientSession::request`],
//! [`ClientSession::cancel`], [`ClientSession::answer`] (the owner's answer to a server→client
//! request), [`ClientSession::handle_inbound`] (a decoded message from the server),
//! [`ClientSession::handle_timeout`] and [`ClientSession::handle_closed`]; time is always an
//! argument. Outputs, drained in this order until empty: [`ClientSession::poll_event`]
//! (answers, server requests, notifications), [`ClientSession::poll_transmit`] (messages to
//! send), then [`ClientSession::poll_timeout`] (when to call `handle_timeout`).
//!
//! Negotiation ([`EraChoice`]): `Auto` sends `server/discover` with the 2026-07-28 envelope
//! and adopts 2026-07-28 when the result offers it; any other answer — an error, a result it
//! cannot read, no answer within the discover timeout, the connection closing — falls back to
//! `initialize`, as the official Python client's auto mode does (a −32022 naming 2026-07-28
//! is re-probed once; one naming no revision this client speaks ends negotiation; a −32022
//! answering the fallback `initialize` is re-probed once). Requests made before negotiation
//! ends wait (bounded with the in-flight table) and are sent, stamped for the era, once it
//! does.
//!
//! Every accepted request ends in exactly one [`ClientEvent::Response`]: the result, the
//! server's error, `Timeout`, `Cancelled`, or the error that closed the connection.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::types::{
    CancelledParams, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
};
use mcpwire_model::{
    ErrorObject, Malformed, McpError, Message, Method, Outbound, Raw, RequestId, Revision, to_raw,
};
use serde_json::{Map, Value, json};

mod config;
mod defaults;
mod events;
mod inbound;
mod input;
mod negotiate;
mod results;
mod stamp;

pub use config::{ClientConfig, ClientLimits, EraChoice, RequestOptions};
pub use events::{Answer, ClientEvent, ClientTransmit, ListKind, ServerRequest, TransmitKind};
pub use input::{InputRequest, InputRequired};
pub use results::{ClientEra, Negotiated};

use crate::timers::{TimerKey, Timers};

/// The reason a client session gives the server (`notifications/cancelled`) for a request
/// that waited its timeout.
pub const TIMED_OUT_REASON: &str = "timed out";

/// Names one request this client sent; also its JSON-RPC id (an integer, never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClientRequestId(u64);

impl ClientRequestId {
    /// The id `n` (for [`ClientSession::request_as`]: ids above
    /// [`ClientSession::minted`] are the caller's to choose).
    pub fn new(n: u64) -> ClientRequestId {
        ClientRequestId(n)
    }

    /// The JSON-RPC id the request went out with.
    pub fn wire_id(self) -> RequestId {
        RequestId::Int(self.0 as i64)
    }
}

impl std::fmt::Display for ClientRequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Names one server→client request for the life of the session (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServerRequestId(u64);

#[derive(Debug)]
pub(super) enum Phase {
    Idle,
    Probing { id: u64, attempt: u8 },
    Initializing { id: u64 },
    Ready(Arc<Negotiated>),
    Failed,
}

#[derive(Debug)]
pub(super) struct Pending {
    method: Method,
    /// The params until the request is sent.
    params: Option<Raw>,
    opts: RequestOptions,
    deadline: Option<Instant>,
    sent: bool,
}

#[derive(Debug)]
pub(super) struct PendingServerRequest {
    wire_id: RequestId,
    deadline: Instant,
    /// A form elicitation's defaults, when the client promised to apply them.
    defaults: Option<defaults::FormDefaults>,
}

/// Negotiation requests one session sends at most (probe, re-probe, initialize, …).
pub(super) const MAX_NEGOTIATION_ROUNDS: u8 = 4;

/// The protocol state of one connection to a server. See the module docs for the drive
/// order.
#[derive(Debug)]
pub struct ClientSession {
    config: ClientConfig,
    phase: Phase,
    rounds: u8,
    closed: bool,
    next_id: u64,
    /// The highest id a caller chose ([`ClientSession::request_as`]); minted ids go above.
    chosen_max: u64,
    inflight: crate::IdMap<u64, Pending>,
    /// Requests made before negotiation ended, in order.
    queued: VecDeque<u64>,
    next_server_request: u64,
    server_requests: crate::IdMap<u64, PendingServerRequest>,
    server_by_wire: crate::IdMap<RequestId, u64>,
    timers: Timers,
    handshake_deadline: Option<Instant>,
    probe_deadline: Option<Instant>,
    transmits: VecDeque<ClientTransmit>,
    events: VecDeque<ClientEvent>,
    /// Notification-class events in `events`.
    notices: usize,
    dropped: u64,
    /// The 2026-07-28 `_meta` envelope every stateless request carries.
    envelope: Map<String, Value>,
}

impl ClientSession {
    /// A session that has sent nothing yet; call [`ClientSession::start`].
    pub fn new(config: ClientConfig) -> ClientSession {
        let mut envelope = Map::new();
        envelope.insert(
            META_PROTOCOL_VERSION.into(),
            json!(Revision::STATELESS.as_str()),
        );
        envelope.insert(
            META_CLIENT_CAPABILITIES.into(),
            serde_json::to_value(&config.capabilities).unwrap_or_else(|_| json!({})),
        );
        envelope.insert(
            META_CLIENT_INFO.into(),
            serde_json::to_value(&config.client_info).unwrap_or_else(|_| json!({})),
        );
        if let Some(level) = config.log_level {
            envelope.insert(META_LOG_LEVEL.into(), json!(level));
        }
        ClientSession {
            config,
            phase: Phase::Idle,
            rounds: 0,
            closed: false,
            next_id: 0,
            chosen_max: 0,
            inflight: crate::IdMap::default(),
            queued: VecDeque::new(),
            next_server_request: 0,
            server_requests: crate::IdMap::default(),
            server_by_wire: crate::IdMap::default(),
            timers: Timers::default(),
            handshake_deadline: None,
            probe_deadline: None,
            transmits: VecDeque::new(),
            events: VecDeque::new(),
            notices: 0,
            dropped: 0,
            envelope,
        }
    }

    // ----- getters -----

    /// What negotiation settled, once it has.
    pub fn negotiated(&self) -> Option<&Arc<Negotiated>> {
        match &self.phase {
            Phase::Ready(n) => Some(n),
            _ => None,
        }
    }

    /// Whether the connection closed (or negotiation failed): nothing more can be sent.
    pub fn is_finished(&self) -> bool {
        self.closed || matches!(self.phase, Phase::Failed)
    }

    /// Requests in flight (including those waiting for negotiation).
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// How many requests may be in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.config.limits.max_in_flight
    }

    /// Tells the server (`notifications/cancelled` with `reason`) that request `id`, sent
    /// by the owner outside this session under an id the session never minted or tracks,
    /// is cancelled (a client wire's direct requests, `mcpwire`'s `client::core`).
    pub fn cancel_untracked(&mut self, id: ClientRequestId, reason: &str) {
        if !self.closed && matches!(self.phase, Phase::Ready(_)) {
            self.send_cancel(id, reason);
        }
    }

    /// Server requests surfaced and not yet answered.
    pub fn server_requests_pending(&self) -> usize {
        self.server_requests.len()
    }

    /// Messages waiting to be sent (a transport that cannot send stops taking input while
    /// this grows).
    pub fn transmits_pending(&self) -> usize {
        self.transmits.len()
    }

    /// Notifications dropped because the event queue was full.
    pub fn events_dropped(&self) -> u64 {
        self.dropped
    }

    /// The revision messages are spoken in now (the newest stateful one before negotiation
    /// ends).
    pub fn revision(&self) -> Revision {
        self.negotiated()
            .map_or(Revision::LATEST_STATEFUL, |n| n.era.revision())
    }

    // ----- commands -----

    /// Begins negotiation (`server/discover` or `initialize`, per [`EraChoice`]). Once only.
    pub fn start(&mut self, now: Instant) {
        if !matches!(self.phase, Phase::Idle) || self.closed {
            return;
        }
        let deadline = now + self.config.limits.handshake_timeout;
        self.handshake_deadline = Some(deadline);
        self.timers.insert(deadline, TimerKey::Handshake);
        match self.config.era {
            EraChoice::Auto | EraChoice::Stateless => self.send_probe(now, 0),
            EraChoice::Handshake => self.send_initialize(),
        }
    }

    /// Sends a request (or queues it until negotiation ends); its end arrives as a
    /// [`ClientEvent::Response`]. `params` must be a JSON object when given; the session
    /// adds `_meta` (the progress token, and in 2026-07-28 the per-request envelope).
    pub fn request(
        &mut self,
        now: Instant,
        method: Method,
        params: Option<Raw>,
        opts: RequestOptions,
    ) -> Result<ClientRequestId, McpError> {
        self.check_request(&method, &params)?;
        let id = ClientRequestId(self.mint());
        self.enqueue(now, id.0, method, params, opts);
        Ok(id)
    }

    /// The highest id the session minted itself. It mints ids only for negotiation and
    /// [`ClientSession::request`]; a caller that sends every request after negotiation
    /// with [`ClientSession::request_as`] may hand out ids above this one on its own (an
    /// async handle does, so a request needs no round trip to learn its id).
    pub fn minted(&self) -> u64 {
        self.next_id
    }

    /// [`ClientSession::request`] under the caller's id `id`, which must be above
    /// [`ClientSession::minted`] and not in flight. Ids minted afterwards go above every
    /// chosen one; a caller that mixes both must not choose ids it has not reserved.
    pub fn request_as(
        &mut self,
        now: Instant,
        id: ClientRequestId,
        method: Method,
        params: Option<Raw>,
        opts: RequestOptions,
    ) -> Result<(), McpError> {
        self.check_request(&method, &params)?;
        if id.0 <= self.next_id || self.inflight.contains_key(&id.0) {
            return Err(McpError::InvalidRequest(format!(
                "request id {id} is taken"
            )));
        }
        self.chosen_max = self.chosen_max.max(id.0);
        self.enqueue(now, id.0, method, params, opts);
        Ok(())
    }

    /// Whether a request may be sent now: the connection is up, `method` is not the
    /// session's own, `params` is an object, and there is room in flight.
    fn check_request(&self, method: &Method, params: &Option<Raw>) -> Result<(), McpError> {
        if self.closed {
            return Err(McpError::ConnectionClosed(
                "the connection to the server is closed".into(),
            ));
        }
        if matches!(self.phase, Phase::Failed) {
            return Err(McpError::ConnectionClosed(
                "negotiation with the server failed".into(),
            ));
        }
        if matches!(method, Method::Initialize | Method::ServerDiscover)
            || method.as_str().starts_with("notifications/")
        {
            return Err(McpError::InvalidRequest(format!(
                "{method} is sent by the session itself"
            )));
        }
        if let Some(p) = params
            && !p.get().trim_start().starts_with('{')
        {
            return Err(McpError::InvalidParams(
                "params must be a JSON object".into(),
            ));
        }
        if self.inflight.len() >= self.config.limits.max_in_flight {
            return Err(McpError::LimitExceeded(format!(
                "more than {} requests in flight to the server",
                self.config.limits.max_in_flight
            )));
        }
        Ok(())
    }

    fn enqueue(
        &mut self,
        now: Instant,
        id: u64,
        method: Method,
        params: Option<Raw>,
        opts: RequestOptions,
    ) {
        let deadline = opts
            .timeout
            .or(self.config.limits.request_timeout)
            .map(|t| now + t);
        if let Some(at) = deadline {
            self.timers.insert(at, TimerKey::Request(id));
        }
        self.inflight.insert(
            id,
            Pending {
                method,
                params,
                opts,
                deadline,
                sent: false,
            },
        );
        if matches!(self.phase, Phase::Ready(_)) {
            self.send_request(id);
        } else {
            self.queued.push_back(id);
        }
    }

    /// Stops waiting for request `id`: the server is told (`notifications/cancelled` with
    /// `reason`) if it was sent, and the request ends with `Cancelled`. False if it already
    /// ended.
    pub fn cancel(&mut self, id: ClientRequestId, reason: &str) -> bool {
        let Some(p) = self.inflight.remove(&id.0) else {
            return false;
        };
        if let Some(at) = p.deadline {
            self.timers.remove(at, TimerKey::Request(id.0));
        }
        if p.sent {
            self.send_cancel(id, reason);
        } else {
            self.queued.retain(|q| *q != id.0);
        }
        self.push(ClientEvent::Response {
            id,
            outcome: Err(McpError::Cancelled),
        });
        true
    }

    /// Answers server request `id` with a result or an error. False when it is no longer
    /// pending (cancelled, timed out, or answered).
    pub fn answer(&mut self, id: ServerRequestId, result: Result<Raw, McpError>) -> bool {
        let Some(p) = self.server_requests.remove(&id.0) else {
            return false;
        };
        self.server_by_wire.remove(&p.wire_id);
        self.timers
            .remove(p.deadline, TimerKey::ServerRequest(id.0));
        let result = match (result, &p.defaults) {
            (Ok(raw), Some(d)) => Ok(defaults::apply(raw, d)),
            (r, _) => r,
        };
        if !self.closed {
            self.reply(p.wire_id, result);
        }
        true
    }

    /// Sends a notification of the client's own (`notifications/roots/list_changed`), in
    /// the handshake era only (2026-07-28 has no such notifications).
    pub fn notify(&mut self, method: Method, params: Option<Raw>) -> Result<(), McpError> {
        match &self.phase {
            Phase::Ready(n) if matches!(n.era, ClientEra::Handshake(_)) && !self.closed => {
                let version = Some(n.era.revision());
                self.transmits.push_back(ClientTransmit {
                    msg: Outbound::Notification {
                        method: method.as_str().to_owned().into(),
                        params,
                    },
                    kind: TransmitKind::Notification,
                    version,
                });
                Ok(())
            }
            _ => Err(McpError::InvalidRequest(format!(
                "{method} cannot be sent on this connection now"
            ))),
        }
    }

    // ----- inputs -----

    /// Takes one decoded message from the server (or what a codec made of bad bytes).
    pub fn handle_inbound(&mut self, now: Instant, msg: Result<Message, Malformed>) {
        self.handle_inbound_related(now, msg, None)
    }

    /// Like [`ClientSession::handle_inbound`], for a message that arrived with request
    /// `related` (on an HTTP POST's stream): notifications and server requests carry it.
    pub fn handle_inbound_related(
        &mut self,
        now: Instant,
        msg: Result<Message, Malformed>,
        related: Option<ClientRequestId>,
    ) {
        if self.closed {
            return;
        }
        match msg {
            Ok(Message::Response(r)) => self.on_response(now, r.id, r.outcome),
            Ok(Message::Request(req)) => self.on_server_request(now, req, related),
            Ok(Message::Notification(n)) => self.on_notification(now, n, related),
            Err(bad) => {
                tracing::debug!(code = bad.error.code, message = %bad.error.message, "malformed message from the server");
                if bad.reply && bad.id.is_some() {
                    self.transmits.push_back(ClientTransmit {
                        msg: Outbound::Error {
                            id: bad.id,
                            error: bad.error,
                        },
                        kind: TransmitKind::Answer,
                        version: self.negotiated().map(|n| n.era.revision()),
                    });
                }
            }
        }
    }

    /// The transport could not deliver request `id` or read its answer (an HTTP status that
    /// is not an MCP answer, a stream that broke): it ends with `error`, as an error answer
    /// would — a failed `server/discover` probe falls back to `initialize` in `Auto` mode.
    pub fn handle_failed(&mut self, now: Instant, id: ClientRequestId, error: McpError) {
        let _ = now;
        match self.phase {
            Phase::Probing { id: p, .. } if p == id.0 => return self.after_probe(error),
            Phase::Initializing { id: i } if i == id.0 => {
                return self.fail_negotiation(Method::Initialize, error);
            }
            _ => {}
        }
        if self.inflight.get(&id.0).is_some_and(|p| p.sent) {
            self.end(id.0, Err(error));
        }
    }

    /// Whether request `id` (negotiation included) still waits for its answer.
    pub fn is_awaiting(&self, id: ClientRequestId) -> bool {
        match self.phase {
            Phase::Probing { id: p, .. } | Phase::Initializing { id: p } if p == id.0 => true,
            _ => self.inflight.contains_key(&id.0),
        }
    }

    /// Acts on every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(key) = self.timers.pop_expired(now) {
            match key {
                TimerKey::Handshake => {
                    self.handshake_deadline = None;
                    if let Some(method) = self.negotiating() {
                        self.fail_negotiation(method, McpError::Timeout);
                    }
                }
                TimerKey::Probe(n) => {
                    self.probe_deadline = None;
                    if matches!(self.phase, Phase::Probing { id, .. } if id == n) {
                        tracing::debug!("no answer to server/discover in time; falling back");
                        self.after_probe(McpError::Timeout);
                    }
                }
                TimerKey::Request(n) => {
                    let expired = self
                        .inflight
                        .get(&n)
                        .is_some_and(|p| p.deadline.is_some_and(|d| d <= now));
                    if expired && let Some(p) = self.inflight.remove(&n) {
                        if p.sent {
                            self.send_cancel(ClientRequestId(n), TIMED_OUT_REASON);
                        } else {
                            self.queued.retain(|q| *q != n);
                        }
                        self.push(ClientEvent::Response {
                            id: ClientRequestId(n),
                            outcome: Err(McpError::Timeout),
                        });
                    }
                }
                TimerKey::ServerRequest(n) => {
                    if let Some(p) = self.server_requests.remove(&n) {
                        self.server_by_wire.remove(&p.wire_id);
                        self.reply(p.wire_id, Err(McpError::Timeout));
                        self.push(ClientEvent::ServerRequestCancelled(ServerRequestId(n)));
                    }
                }
                TimerKey::Ask(_) => {}
            }
        }
    }

    /// The connection ended (or failed): every request ends with `error`, server requests
    /// are withdrawn, negotiation fails, and nothing more is sent. While `server/discover`
    /// was being tried in `Auto` mode, the failure names `initialize`: the fallback that
    /// could not be sent (as the Python client reports it).
    pub fn handle_closed(&mut self, error: McpError) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.transmits.clear();
        if let Some(method) = self.negotiating() {
            let method = match (method, self.config.era) {
                (Method::ServerDiscover, EraChoice::Auto) => Method::Initialize,
                (m, _) => m,
            };
            self.fail_negotiation(method, error.clone());
        }
        let ids: Vec<u64> = self.inflight.keys().copied().collect();
        for id in ids {
            self.end(id, Err(error.clone()));
        }
        self.queued.clear();
        let pending: Vec<u64> = self.server_requests.keys().copied().collect();
        for n in pending {
            if let Some(p) = self.server_requests.remove(&n) {
                self.timers.remove(p.deadline, TimerKey::ServerRequest(n));
                self.push(ClientEvent::ServerRequestCancelled(ServerRequestId(n)));
            }
        }
        self.server_by_wire.clear();
    }

    // ----- outputs -----

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<ClientEvent> {
        let e = self.events.pop_front()?;
        if e.is_notice() {
            self.notices -= 1;
        }
        Some(e)
    }

    /// The next message to send, if any.
    pub fn poll_transmit(&mut self) -> Option<ClientTransmit> {
        self.transmits.pop_front()
    }

    /// When [`ClientSession::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    // ----- requests -----

    fn mint(&mut self) -> u64 {
        self.next_id = self.next_id.max(self.chosen_max) + 1;
        self.next_id
    }

    /// Stamps and transmits request `id` in the negotiated era.
    fn send_request(&mut self, id: u64) {
        let Phase::Ready(n) = &self.phase else { return };
        let era = n.era;
        let Some(p) = self.inflight.get_mut(&id) else {
            return;
        };
        let mut meta = p.opts.meta.clone().unwrap_or_default();
        if era == ClientEra::Stateless {
            meta.extend(self.envelope.iter().map(|(k, v)| (k.clone(), v.clone())));
            if let Some(caps) = &p.opts.capabilities {
                let caps = serde_json::to_value(caps).unwrap_or_else(|_| json!({}));
                meta.insert(META_CLIENT_CAPABILITIES.into(), caps);
            }
        }
        if p.opts.progress {
            meta.insert("progressToken".into(), json!(id));
        }
        let params = p.params.take();
        let params = match stamp::with_meta(params.as_deref(), &meta) {
            Ok(Some(params)) => Some(params),
            // 2026-07-28 requests always carry params (their `_meta` is required).
            Ok(None) if era == ClientEra::Stateless => Some(to_raw(&json!({}))),
            Ok(None) => None,
            Err(e) => {
                return self.end(id, Err(McpError::InvalidParams(e)));
            }
        };
        p.sent = true;
        let method = p.method.as_str().to_owned();
        self.transmits.push_back(ClientTransmit {
            msg: Outbound::Request {
                id: ClientRequestId(id).wire_id(),
                method: method.into(),
                params,
            },
            kind: TransmitKind::Request(ClientRequestId(id)),
            version: Some(era.revision()),
        });
    }

    fn send_cancel(&mut self, id: ClientRequestId, reason: &str) {
        let params = to_raw(&CancelledParams {
            request_id: Some(id.wire_id()),
            reason: Some(reason.to_owned()),
        });
        self.transmits.push_back(ClientTransmit {
            msg: Outbound::Notification {
                method: Method::NotificationsCancelled.as_str().to_owned().into(),
                params: Some(params),
            },
            kind: TransmitKind::Cancel(id),
            version: self.negotiated().map(|n| n.era.revision()),
        });
    }

    /// Ends request `id` with `outcome`.
    fn end(&mut self, id: u64, outcome: Result<Answer, McpError>) {
        if let Some(p) = self.inflight.remove(&id)
            && let Some(at) = p.deadline
        {
            self.timers.remove(at, TimerKey::Request(id));
        }
        self.push(ClientEvent::Response {
            id: ClientRequestId(id),
            outcome,
        });
    }

    fn on_response(&mut self, now: Instant, id: RequestId, outcome: Result<Raw, ErrorObject>) {
        let RequestId::Int(n) = id else {
            tracing::debug!(%id, "an answer to no request of ours");
            return;
        };
        let Ok(n) = u64::try_from(n) else { return };
        match self.phase {
            Phase::Probing { id, attempt } if id == n => {
                return self.on_probe_answer(now, attempt, outcome);
            }
            Phase::Initializing { id } if id == n => {
                return self.on_initialize_answer(now, outcome);
            }
            _ => {}
        }
        if !self.inflight.get(&n).is_some_and(|p| p.sent) {
            tracing::debug!(
                id = n,
                "an answer to no request in flight (late or unknown)"
            );
            return;
        }
        let stateless = self
            .negotiated()
            .is_some_and(|n| n.era == ClientEra::Stateless);
        let outcome = match outcome {
            Ok(raw) if stateless => match InputRequired::detect(&raw) {
                None => Ok(Answer::Complete(raw)),
                Some(Ok(ir)) => Ok(Answer::InputRequired(ir)),
                Some(Err(e)) => Err(McpError::BadPeerMessage(e)),
            },
            Ok(raw) => Ok(Answer::Complete(raw)),
            Err(obj) => Err(McpError::Wire(obj)),
        };
        self.end(n, outcome);
    }

    /// Queues an event; a notification over [`ClientLimits::max_events`] is dropped.
    fn push(&mut self, e: ClientEvent) {
        if e.is_notice() {
            if self.notices >= self.config.limits.max_events {
                self.dropped += 1;
                if self.dropped == 1 || self.dropped.is_power_of_two() {
                    tracing::warn!(
                        dropped = self.dropped,
                        "the client's event queue is full; notifications dropped"
                    );
                }
                return;
            }
            self.notices += 1;
        }
        self.events.push_back(e);
    }
}
