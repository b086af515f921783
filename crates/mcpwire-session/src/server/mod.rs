//! [`ServerSession`]: the protocol state of one client, without I/O.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::types::{
    CancelledParams, ClientCapabilities, Implementation, InitializeParams, LoggingLevel,
    RequestMeta, SetLevelParams, UriParams,
};
use mcpwire_model::{
    BackendEvent, CallEvent, ClientAsk, Dialect, ErrorObject, LogEntry, Malformed, McpError,
    Message, Method, Outbound, Raw, Reply, Request, RequestId, Revision, to_raw,
};
use serde_json::json;
use serde_json::value::RawValue;

mod handshake;
mod stateless;

use crate::config::SessionConfig;
use crate::decorate::{Decorations, decorate_modern};
use crate::timers::{TimerKey, Timers};

/// Names one dispatched request for the life of the session (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DispatchId(u64);

/// Names one server→client ask for the life of the session (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AskId(u64);

/// Which protocol generation a session speaks, fixed by its first request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Nothing received yet.
    Unknown,
    /// `initialize` negotiated this revision (stateful, or bb-1.0).
    Handshake(Revision),
    /// 2026-07-28: every request carries its own `_meta` envelope.
    Stateless,
}

/// What the router needs to know about a dispatched request, besides method and params.
#[derive(Debug, Clone)]
pub struct DispatchCtx {
    /// The revision the request is answered in.
    pub revision: Revision,
    /// The client's capabilities (from `initialize` or the request's `_meta`).
    pub client_capabilities: Arc<ClientCapabilities>,
    /// The request's progress token; progress notifications reach the client only if set.
    pub progress_token: Option<RequestId>,
}

/// A request for the router to run; answer with [`ServerSession::handle_reply`].
#[derive(Debug)]
pub struct Dispatch {
    /// The id to answer with.
    pub id: DispatchId,
    /// The client's id for this request.
    pub request_id: RequestId,
    /// The method.
    pub method: Method,
    /// Raw params.
    pub params: Option<Raw>,
    /// Context.
    pub ctx: DispatchCtx,
}

/// A message to send, with the client request it belongs to (if any) so that stream-based
/// wires can route it (an HTTP POST's stream, say).
#[derive(Debug)]
pub struct Transmit {
    /// The message.
    pub msg: Outbound,
    /// The client request this message answers or is about.
    pub related: Option<RequestId>,
}

/// Something the shell must act on.
#[derive(Debug)]
pub enum SessionEvent {
    /// Stop running this dispatch: the client cancelled it or it timed out.
    Cancel(DispatchId),
    /// The client answered an ask (or it failed: no capability, timeout, origin gone).
    AskDone(AskId, Result<Raw, McpError>),
    /// The client says its roots changed (`notifications/roots/list_changed`): backends
    /// holding state for this session may want to ask again.
    RootsListChanged,
    /// A `subscriptions/listen` stream began (`on`) or ended watching these resources:
    /// backends that must be told to send their updates (a gateway's upstreams) are.
    Listening {
        /// The resources.
        uris: Vec<String>,
        /// Began (`true`) or ended.
        on: bool,
    },
}

#[derive(Debug)]
struct InFlight {
    request_id: RequestId,
    method: Method,
    started: Instant,
    progress_token: Option<RequestId>,
    /// 2026-07-28: the request's own log level (None: no logs for this request).
    log_level: Option<LoggingLevel>,
    deadline: Option<Instant>,
    /// `resources/subscribe`: the URI, subscribed once the backend accepts.
    subscribe_uri: Option<String>,
    /// bb-1.0 `tools/call`: the tool's name, for −32001's `data.tool`.
    tool: Option<String>,
}

#[derive(Debug)]
struct AskEntry {
    ask: AskId,
    /// The dispatch it asks for (`None`: the session's own ask).
    origin: Option<DispatchId>,
    deadline: Instant,
}

#[derive(Debug)]
struct Listen {
    request_id: RequestId,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: HashSet<String>,
}

/// What a stateful session agreed with its client in `initialize`: all another process
/// needs to continue it ([`ServerSession::resumed`]) — a gateway replica that never saw the
/// handshake, rebuilding the session from a sealed `Mcp-Session-Id`.
#[derive(Debug, Clone, PartialEq)]
pub struct HandshakeState {
    /// The negotiated revision (a handshake one).
    pub revision: Revision,
    /// The client's capabilities as it declared them.
    pub client_capabilities: ClientCapabilities,
    /// The client's `clientInfo`.
    pub client_info: Option<Implementation>,
}

/// The protocol state of one client connection. See the crate docs for the drive order.
#[derive(Debug)]
pub struct ServerSession {
    config: Arc<SessionConfig>,
    era: Era,
    client_capabilities: Arc<ClientCapabilities>,
    client_info: Option<Implementation>,
    /// Legacy `logging/setLevel`; `None` sends every level.
    log_level: Option<LoggingLevel>,
    next_dispatch: u64,
    next_ask: u64,
    next_out_id: i64,
    /// Prepended to the ids of asks (`{prefix}{n}`, strings); `None`: plain numbers.
    ask_id_prefix: Option<Arc<str>>,
    inflight: crate::IdMap<DispatchId, InFlight>,
    by_request: crate::IdMap<RequestId, DispatchId>,
    asks: crate::IdMap<RequestId, AskEntry>,
    subscriptions: HashSet<String>,
    listens: Vec<Listen>,
    timers: Timers,
    transmits: VecDeque<Transmit>,
    dispatches: VecDeque<Dispatch>,
    events: VecDeque<SessionEvent>,
    /// `serverInfo` as JSON, made once per config.
    decorations: Arc<Decorations>,
    peer_closed: bool,
    /// Initialized without the client's own handshake ([`ServerSession::provisional`]): an
    /// `initialize` is still taken as the real one.
    provisional: bool,
}

/// The capabilities of a client that declared none, made once and shared (a stateless
/// server makes a session per request).
fn no_capabilities() -> Arc<ClientCapabilities> {
    static NONE: std::sync::LazyLock<Arc<ClientCapabilities>> =
        std::sync::LazyLock::new(|| Arc::new(ClientCapabilities::default()));
    NONE.clone()
}

impl ServerSession {
    /// A fresh session for a new connection.
    pub fn new(config: Arc<SessionConfig>) -> ServerSession {
        let decorations = config.decorations();
        ServerSession {
            config,
            era: Era::Unknown,
            client_capabilities: no_capabilities(),
            client_info: None,
            log_level: None,
            next_dispatch: 0,
            next_ask: 0,
            next_out_id: 0,
            ask_id_prefix: None,
            inflight: crate::IdMap::default(),
            by_request: crate::IdMap::default(),
            asks: crate::IdMap::default(),
            subscriptions: HashSet::new(),
            listens: Vec::new(),
            timers: Timers::default(),
            transmits: VecDeque::new(),
            dispatches: VecDeque::new(),
            events: VecDeque::new(),
            decorations,
            peer_closed: false,
            provisional: false,
        }
    }

    /// Gives this fresh session the room of `old`'s tables — its requests, their ids, what
    /// it sent and dispatched — emptied: a stateless server makes a session per request,
    /// and each one's first request allocated every table again. Nothing of `old` but that
    /// room reaches this session; a table this session has used already, or one grown past
    /// a few entries, is left where it is.
    pub fn take_room(&mut self, old: &mut ServerSession) {
        const KEPT: usize = 16;
        fn map<K, V>(to: &mut crate::IdMap<K, V>, from: &mut crate::IdMap<K, V>) {
            if to.capacity() == 0 && from.capacity() <= KEPT {
                from.clear();
                std::mem::swap(to, from);
            }
        }
        fn queue<T>(to: &mut VecDeque<T>, from: &mut VecDeque<T>) {
            if to.capacity() == 0 && from.capacity() <= KEPT {
                from.clear();
                std::mem::swap(to, from);
            }
        }
        map(&mut self.inflight, &mut old.inflight);
        map(&mut self.by_request, &mut old.by_request);
        queue(&mut self.transmits, &mut old.transmits);
        queue(&mut self.dispatches, &mut old.dispatches);
    }

    /// A session that starts already initialized in `revision` (a stateful one, bb-1.0 or
    /// proto-mcp), with default client capabilities: for wires where every request is its
    /// own exchange and `initialize` was answered elsewhere (gRPC's unary RPCs).
    pub fn preinitialized(config: Arc<SessionConfig>, revision: Revision) -> ServerSession {
        let mut s = ServerSession::new(config);
        s.era = if revision.is_stateless() {
            Era::Stateless
        } else {
            Era::Handshake(revision)
        };
        s
    }

    /// A session that starts initialized in the newest handshake revision with no client
    /// capabilities, for wires whose own authentication stands in for the MCP handshake
    /// (MCPB's token `initialize`). The client's own `initialize`, if it sends one later, is
    /// answered as its real handshake (once it succeeds, further ones are refused as usual).
    pub fn provisional(config: Arc<SessionConfig>) -> ServerSession {
        let mut s = ServerSession::preinitialized(config, Revision::LATEST_STATEFUL);
        s.provisional = true;
        s
    }

    /// A session continuing one whose handshake happened elsewhere: initialized in
    /// `state.revision` with the client's capabilities and info. What the first session
    /// held beyond the handshake (log level, subscriptions, requests in flight) is not
    /// carried: the client starts afresh on those.
    pub fn resumed(config: Arc<SessionConfig>, state: HandshakeState) -> ServerSession {
        let mut s = ServerSession::preinitialized(config, state.revision);
        s.client_capabilities = Arc::new(state.client_capabilities);
        s.client_info = state.client_info;
        s
    }

    /// This session numbering its asks `{prefix}1`, `{prefix}2`, … (string ids) instead of
    /// `1`, `2`, …: a gateway replica puts its own name there, so the asks of one session
    /// served by several replicas never share an id, and the replica that sent an ask can
    /// be told from its answer's id.
    pub fn with_ask_id_prefix(mut self, prefix: Arc<str>) -> ServerSession {
        self.ask_id_prefix = Some(prefix);
        self
    }

    // ----- getters -----

    /// Whether the session was initialized without the client's own handshake
    /// ([`ServerSession::provisional`]) and has not had one since: its calls are not relayed.
    pub fn is_provisional(&self) -> bool {
        self.provisional
    }

    /// The era this session settled on.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The client's info from `initialize`, if any.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.client_info.as_ref()
    }

    /// The handshake this session completed (`None` before `initialize` succeeded, for a
    /// provisional session and in 2026-07-28, where there is none).
    pub fn handshake_state(&self) -> Option<HandshakeState> {
        match self.era {
            Era::Handshake(revision) if !self.provisional => Some(HandshakeState {
                revision,
                client_capabilities: (*self.client_capabilities).clone(),
                client_info: self.client_info.clone(),
            }),
            _ => None,
        }
    }

    /// The client's id of the request dispatched as `id`, while it is in flight.
    pub fn request_id(&self, id: DispatchId) -> Option<&RequestId> {
        self.inflight.get(&id).map(|f| &f.request_id)
    }

    /// Requests currently being run.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    fn dialect(&self) -> Dialect {
        self.revision().dialect()
    }

    /// The revision answers are given in (the newest stateful one before `initialize`).
    fn revision(&self) -> Revision {
        match self.era {
            Era::Handshake(r) => r,
            Era::Stateless => Revision::STATELESS,
            Era::Unknown => Revision::LATEST_STATEFUL,
        }
    }

    // ----- inputs -----

    /// Takes one decoded message (or the error a codec produced for undecodable bytes).
    pub fn handle_inbound(&mut self, now: Instant, msg: Result<Message, Malformed>) {
        match msg {
            Ok(Message::Request(req)) => self.on_request(now, req),
            Ok(Message::Notification(n)) => self.on_notification(n.method, n.params),
            Ok(Message::Response(resp)) => self.on_response(resp.id, resp.outcome),
            Err(bad) => {
                tracing::debug!(code = bad.error.code, message = %bad.error.message, "malformed message");
                if bad.reply {
                    self.send(
                        Outbound::Error {
                            id: bad.id,
                            error: bad.error,
                        },
                        None,
                    );
                }
            }
        }
    }

    /// Takes a request whose `_meta` the driver has read already: `meta` is what
    /// [`RequestMeta::from_params`] made of `req`'s params (the 2026-07-28 HTTP listener
    /// reads it to choose the era and check the routing headers; it is not parsed again).
    pub fn handle_request(
        &mut self,
        now: Instant,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
    ) {
        self.on_request_with(now, req, meta);
    }

    /// Takes the router's answer to a dispatch.
    pub fn handle_reply(&mut self, now: Instant, id: DispatchId, reply: Result<Reply, McpError>) {
        let Some(entry) = self.inflight.remove(&id) else {
            return; // cancelled or timed out: the answer was already given or is unwanted
        };
        self.by_request.remove(&entry.request_id);
        if let Some(at) = entry.deadline {
            self.timers.remove(at, TimerKey::Request(id.0));
        }
        self.fail_asks_of(id);
        let ok = reply.is_ok();
        if let (Ok(_), Some(uri)) = (&reply, &entry.subscribe_uri) {
            self.subscriptions.insert(uri.clone());
        }
        let msg = self.reply_message(&entry, reply);
        self.telemetry_done(now, &entry, ok, &msg);
        self.send(msg, Some(entry.request_id));
    }

    /// Takes a `tools/call` (client id `request_id`) that the wire relays to an upstream
    /// as a raw frame instead of dispatching it (the gateway's stdio relay): it counts as a
    /// dispatch — the in-flight bound, duplicate ids, the request timeout, cancellation by
    /// the client ([`SessionEvent::Cancel`]), asks on its behalf — but none is handed out.
    /// `None` when the general path must take it: not a handshake-era MCP session, at the
    /// in-flight bound, or a duplicate id (the general path gives those their errors).
    /// End it with [`ServerSession::relayed_answered`], [`ServerSession::handle_reply`] or
    /// [`ServerSession::withdraw_relayed`].
    pub fn accept_relayed(&mut self, now: Instant, request_id: RequestId) -> Option<DispatchId> {
        if self.inflight.len() >= self.config.limits.max_in_flight {
            return None;
        }
        self.take_relayed(now, now, request_id)
    }

    /// Takes a `tools/call` that the wire relayed on its own, outside the session, since
    /// `started` (the gateway's seam: a request handler relays a call itself and hands it to
    /// the session only when something other than its plain answer comes back): from now
    /// on it is the session's as if [`ServerSession::accept_relayed`] had taken it — except
    /// that the in-flight bound, checked when it was relayed, is not checked again (the call
    /// is running), and its request timeout counts from `started`. `None` when the session
    /// cannot take it: not a handshake-era MCP session, or a request with its id is in
    /// flight.
    pub fn adopt_relayed(
        &mut self,
        now: Instant,
        started: Instant,
        request_id: RequestId,
    ) -> Option<DispatchId> {
        self.take_relayed(now, started, request_id)
    }

    fn take_relayed(
        &mut self,
        now: Instant,
        started: Instant,
        request_id: RequestId,
    ) -> Option<DispatchId> {
        let Era::Handshake(rev) = self.era else {
            return None;
        };
        if rev.dialect() != Dialect::Mcp
            || self.provisional
            || self.by_request.contains_key(&request_id)
        {
            return None;
        }
        tracing::trace!(target: "mcpwire::telemetry", method = "tools/call", id = %request_id, "request received");
        let id = DispatchId(self.next_dispatch);
        self.next_dispatch += 1;
        // Already past (a call adopted after its timeout): fires on the next timeout check.
        let deadline = self
            .config
            .limits
            .request_timeout
            .map(|t| (started + t).max(now));
        if let Some(at) = deadline {
            self.timers.insert(at, TimerKey::Request(id.0));
        }
        self.by_request.insert(request_id.clone(), id);
        self.inflight.insert(
            id,
            InFlight {
                request_id,
                method: Method::ToolsCall,
                started,
                progress_token: None,
                log_level: None,
                deadline,
                subscribe_uri: None,
                tool: None,
            },
        );
        Some(id)
    }

    /// The wire wrote the answer of relayed call `id` itself (the upstream's bytes, the
    /// client's id restored): the call is over; the client's id of the call. `None` when it
    /// had ended already (cancelled, timed out) — then the answer must not be written.
    pub fn relayed_answered(&mut self, now: Instant, id: DispatchId) -> Option<RequestId> {
        let entry = self.end_relayed(id)?;
        if tracing::enabled!(target: "mcpwire::telemetry", tracing::Level::DEBUG) {
            let msg = Outbound::Response {
                id: entry.request_id.clone(),
                result: raw_empty(),
            };
            self.telemetry_done(now, &entry, true, &msg);
        }
        Some(entry.request_id)
    }

    /// Relayed call `id` did not go out after all (or the upstream did not run it):
    /// forgotten without an answer (the wire hands the request to the general path next);
    /// the client's id of the call, `None` when it had ended already.
    pub fn withdraw_relayed(&mut self, id: DispatchId) -> Option<RequestId> {
        self.end_relayed(id).map(|entry| entry.request_id)
    }

    fn end_relayed(&mut self, id: DispatchId) -> Option<InFlight> {
        let entry = self.inflight.remove(&id)?;
        self.by_request.remove(&entry.request_id);
        if let Some(at) = entry.deadline {
            self.timers.remove(at, TimerKey::Request(id.0));
        }
        self.fail_asks_of(id);
        Some(entry)
    }

    /// Records a resource subscription this session's client made through another
    /// connection (another replica of a cluster took its `resources/subscribe`), or its
    /// end: `notifications/resources/updated` for `uri` is sent here too. Bounded like the
    /// subscriptions made here (`max_subscriptions`); whether it is recorded.
    pub fn share_subscription(&mut self, uri: &str, subscribed: bool) -> bool {
        if !subscribed {
            self.subscriptions.remove(uri);
            return true;
        }
        if self.subscriptions.len() >= self.config.limits.max_subscriptions {
            return false;
        }
        self.subscriptions.insert(uri.to_owned());
        true
    }

    /// Takes an event a running call emitted (progress, log).
    pub fn handle_call_event(&mut self, id: DispatchId, event: CallEvent) {
        if self.dialect() != Dialect::Mcp {
            return; // bb-1.0 has no notifications
        }
        let Some(entry) = self.inflight.get(&id) else {
            return;
        };
        let related = Some(entry.request_id.clone());
        match event {
            CallEvent::Progress(p) => {
                let Some(token) = &entry.progress_token else {
                    return;
                };
                let mut params = json!({ "progressToken": token, "progress": p.progress });
                if let Some(t) = p.total {
                    params["total"] = json!(t);
                }
                if let Some(m) = p.message {
                    params["message"] = json!(m);
                }
                self.notify("notifications/progress", Some(to_raw(&params)), related);
            }
            CallEvent::Log(entry_log) => {
                let threshold = match self.era {
                    Era::Stateless => match entry.log_level {
                        Some(l) => Some(l),
                        None => return,
                    },
                    _ => self.log_level,
                };
                if threshold.is_some_and(|t| entry_log.level < t) {
                    return;
                }
                self.send_log(entry_log, related);
            }
        }
    }

    /// Asks the client something on behalf of dispatch `origin`; the answer arrives as
    /// [`SessionEvent::AskDone`] with the returned id.
    pub fn start_ask(&mut self, now: Instant, origin: DispatchId, ask: ClientAsk) -> AskId {
        self.ask(now, Some(origin), ask)
    }

    /// Asks the client something on behalf of the session itself, related to no request
    /// (an upstream of this session alone asking `roots/list` between calls): on HTTP it
    /// goes on the standalone `GET` stream. The answer arrives as
    /// [`SessionEvent::AskDone`] with the returned id.
    pub fn start_session_ask(&mut self, now: Instant, ask: ClientAsk) -> AskId {
        self.ask(now, None, ask)
    }

    fn ask(&mut self, now: Instant, origin: Option<DispatchId>, ask: ClientAsk) -> AskId {
        let ask_id = AskId(self.next_ask);
        self.next_ask += 1;
        let fail = |e: McpError| SessionEvent::AskDone(ask_id, Err(e));
        let related = match origin {
            Some(origin) => match self.inflight.get(&origin) {
                Some(entry) => Some(entry.request_id.clone()),
                None => {
                    self.events.push_back(fail(McpError::Cancelled));
                    return ask_id;
                }
            },
            None => None,
        };
        if self.peer_closed {
            self.events.push_back(fail(McpError::Cancelled));
            return ask_id;
        }
        if !matches!(self.era, Era::Handshake(r) if r.dialect() == Dialect::Mcp) {
            self.events.push_back(fail(McpError::InvalidRequest(
                "this protocol revision has no server-to-client requests".into(),
            )));
            return ask_id;
        }
        if let Some(cap) = ask.required_capability() {
            let caps = &self.client_capabilities;
            let has = match cap {
                "sampling" => caps.sampling.is_some(),
                "elicitation" => caps.elicitation.is_some(),
                _ => caps.roots.is_some(),
            };
            if !has {
                self.events.push_back(fail(McpError::MissingCapability {
                    capability: cap.to_owned(),
                    required: json!({ cap: {} }),
                }));
                return ask_id;
            }
        }
        if self.asks.len() >= self.config.limits.max_asks {
            self.events.push_back(fail(McpError::LimitExceeded(
                "too many outstanding requests to the client".into(),
            )));
            return ask_id;
        }
        self.next_out_id += 1;
        let out_id = match &self.ask_id_prefix {
            Some(prefix) => RequestId::Str(format!("{prefix}{}", self.next_out_id).into()),
            None => RequestId::Int(self.next_out_id),
        };
        let deadline = now + self.config.limits.ask_timeout;
        self.timers.insert(deadline, TimerKey::Ask(ask_id.0));
        self.asks.insert(
            out_id.clone(),
            AskEntry {
                ask: ask_id,
                origin,
                deadline,
            },
        );
        self.send(
            Outbound::Request {
                id: out_id,
                method: ask.method,
                params: ask.params,
            },
            related,
        );
        ask_id
    }

    /// Takes an event from a backend (list changes, resource updates, logs).
    pub fn handle_backend_event(&mut self, event: &BackendEvent) {
        match self.era {
            Era::Handshake(r) if r.dialect() == Dialect::Mcp => {}
            Era::Stateless => return self.listen_event(event),
            _ => return,
        }
        let (method, params) = match event {
            BackendEvent::ToolsListChanged => ("notifications/tools/list_changed", None),
            BackendEvent::ResourcesListChanged => ("notifications/resources/list_changed", None),
            BackendEvent::PromptsListChanged => ("notifications/prompts/list_changed", None),
            BackendEvent::ResourceUpdated { uri } => {
                if !self.subscriptions.contains(uri) {
                    return;
                }
                (
                    "notifications/resources/updated",
                    Some(to_raw(&UriParams { uri: uri.clone() })),
                )
            }
            BackendEvent::Log(entry) => {
                if self.log_level.is_some_and(|t| entry.level < t) {
                    return;
                }
                return self.send_log(entry.clone(), None);
            }
        };
        self.notify(method, params, None);
    }

    /// The client can no longer answer (its input stream ended): every outstanding ask
    /// fails now and later asks fail at once.
    pub fn handle_peer_closed(&mut self) {
        self.peer_closed = true;
        let all: Vec<RequestId> = self.asks.keys().cloned().collect();
        for k in all {
            if let Some(a) = self.asks.remove(&k) {
                self.timers.remove(a.deadline, TimerKey::Ask(a.ask.0));
                self.events
                    .push_back(SessionEvent::AskDone(a.ask, Err(McpError::Cancelled)));
            }
        }
    }

    /// Fires every deadline at or before `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(key) = self.timers.pop_expired(now) {
            match key {
                TimerKey::Ask(n) => {
                    let out = self
                        .asks
                        .iter()
                        .find(|(_, a)| a.ask.0 == n)
                        .map(|(k, _)| k.clone());
                    if let Some(out_id) = out {
                        self.asks.remove(&out_id);
                        self.events
                            .push_back(SessionEvent::AskDone(AskId(n), Err(McpError::Timeout)));
                    }
                }
                TimerKey::Request(n) => {
                    let id = DispatchId(n);
                    if let Some(mut entry) = self.inflight.remove(&id) {
                        entry.deadline = None;
                        self.by_request.remove(&entry.request_id);
                        self.fail_asks_of(id);
                        self.events.push_back(SessionEvent::Cancel(id));
                        let msg = Outbound::Error {
                            id: Some(entry.request_id.clone()),
                            error: McpError::Timeout.to_wire(self.revision()),
                        };
                        self.telemetry_done(now, &entry, false, &msg);
                        self.send(msg, Some(entry.request_id));
                    }
                }
                // The client session's timers; a server session never sets them.
                TimerKey::Handshake | TimerKey::Probe(_) | TimerKey::ServerRequest(_) => {}
            }
        }
    }

    // ----- outputs -----

    /// The next shell action, if any.
    pub fn poll_event(&mut self) -> Option<SessionEvent> {
        self.events.pop_front()
    }

    /// The next request to run, if any.
    pub fn poll_dispatch(&mut self) -> Option<Dispatch> {
        self.dispatches.pop_front()
    }

    /// The next message to send, if any.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.transmits.pop_front()
    }

    /// When [`ServerSession::handle_timeout`] should next be called.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    // ----- requests -----

    fn on_request(&mut self, now: Instant, req: Request) {
        let meta = RequestMeta::from_params(req.params.as_deref());
        self.on_request_with(now, req, meta);
    }

    fn on_request_with(
        &mut self,
        now: Instant,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
    ) {
        if self.dialect() == Dialect::Bb {
            tracing::info!(target: "mcpwire::telemetry", method = %req.method, id = %req.id, "request received");
        } else {
            tracing::trace!(target: "mcpwire::telemetry", method = %req.method, id = %req.id, "request received");
        }
        let meta = match meta {
            Ok(m) => m,
            Err(e) => return self.error(req.id, McpError::InvalidParams(e)),
        };
        let modern = meta.as_ref().is_some_and(|m| m.protocol_version.is_some());
        match self.era {
            Era::Unknown => {
                if req.method == Method::Initialize {
                    return self.on_initialize(req);
                }
                if modern {
                    self.era = Era::Stateless;
                    return self.on_modern_request(now, req, meta.unwrap_or_default());
                }
                match req.method {
                    Method::Ping => self.respond(req.id, raw_empty()),
                    Method::ServerDiscover => self.error(
                        req.id,
                        McpError::InvalidParams(
                            "server/discover needs the 2026-07-28 _meta envelope".into(),
                        ),
                    ),
                    _ => self.error(req.id, McpError::NotInitialized),
                }
            }
            Era::Stateless => self.on_modern_request(now, req, meta.unwrap_or_default()),
            Era::Handshake(_) if self.provisional && req.method == Method::Initialize => {
                self.on_initialize(req);
                // Only a successful handshake replaces the provisional one.
                let answered = matches!(
                    self.transmits.back(),
                    Some(Transmit {
                        msg: Outbound::Response { .. },
                        ..
                    })
                );
                self.provisional = !answered;
            }
            Era::Handshake(rev) => {
                if modern {
                    return self.error(
                        req.id,
                        McpError::InvalidRequest(format!(
                            "this connection negotiated {rev} through initialize; \
                             2026-07-28 requests need a new connection"
                        )),
                    );
                }
                self.on_handshake_request(now, rev, req, meta)
            }
        }
    }

    fn dispatch(
        &mut self,
        now: Instant,
        rev: Revision,
        req: Request,
        meta: Option<RequestMeta>,
        subscribe_uri: Option<String>,
    ) {
        let caps = self.client_capabilities.clone();
        let meta = meta.unwrap_or_default();
        self.dispatch_with(now, rev, req, &meta, caps, subscribe_uri)
    }

    fn dispatch_with(
        &mut self,
        now: Instant,
        revision: Revision,
        req: Request,
        meta: &RequestMeta,
        client_capabilities: Arc<ClientCapabilities>,
        subscribe_uri: Option<String>,
    ) {
        if self.inflight.len() >= self.config.limits.max_in_flight {
            return self.error(
                req.id,
                McpError::LimitExceeded(format!(
                    "more than {} requests in flight",
                    self.config.limits.max_in_flight
                )),
            );
        }
        if self.by_request.contains_key(&req.id) {
            return self.error(req.id, McpError::DuplicateRequestId);
        }
        let id = DispatchId(self.next_dispatch);
        self.next_dispatch += 1;
        let deadline = self.config.limits.request_timeout.map(|t| now + t);
        if let Some(at) = deadline {
            self.timers.insert(at, TimerKey::Request(id.0));
        }
        let progress_token = meta.progress_token.clone();
        self.inflight.insert(
            id,
            InFlight {
                request_id: req.id.clone(),
                method: req.method.clone(),
                started: now,
                progress_token: progress_token.clone(),
                log_level: meta.log_level,
                deadline,
                subscribe_uri,
                tool: (self.dialect() == Dialect::Bb && req.method == Method::ToolsCall)
                    .then(|| tool_name(req.params.as_deref()))
                    .flatten(),
            },
        );
        self.by_request.insert(req.id.clone(), id);
        self.dispatches.push_back(Dispatch {
            id,
            request_id: req.id,
            method: req.method,
            params: req.params,
            ctx: DispatchCtx {
                revision,
                client_capabilities,
                progress_token,
            },
        });
    }

    fn reply_message(&self, entry: &InFlight, reply: Result<Reply, McpError>) -> Outbound {
        let revision = self.revision();
        let dialect = revision.dialect();
        let stateless = self.era == Era::Stateless;
        let id = entry.request_id.clone();
        let result = match reply {
            Ok(Reply::Complete(raw))
                if dialect == Dialect::Bb && entry.method == Method::ToolsCall =>
            {
                // bb-1.0 reports a failed tool as −32001, whatever backend answered.
                match bb_tool_failure(&raw, &self.bb_tool_name(entry)) {
                    Some(e) => {
                        return Outbound::Error {
                            id: Some(id),
                            error: e.to_wire(revision),
                        };
                    }
                    None => raw,
                }
            }
            Ok(Reply::Complete(raw)) => raw,
            Ok(Reply::InputRequired(raw)) if stateless => {
                return Outbound::Response { id, result: raw };
            }
            Ok(Reply::InputRequired(_)) => {
                let e = McpError::Internal("input_required outside 2026-07-28".into());
                return Outbound::Error {
                    id: Some(id),
                    error: e.to_wire(revision),
                };
            }
            Err(e) if entry.method == Method::ToolsCall && e.is_tool_result_error(revision) => {
                e.to_tool_result()
            }
            Err(e) => {
                return Outbound::Error {
                    id: Some(id),
                    error: e.to_wire(revision),
                };
            }
        };
        let result = if stateless {
            decorate_modern(result, &entry.method, &self.decorations)
        } else {
            result
        };
        Outbound::Response { id, result }
    }

    // ----- notifications and responses from the client -----

    fn on_notification(&mut self, method: Method, params: Option<Raw>) {
        match method {
            Method::NotificationsCancelled => {
                let Ok(p) = parse::<CancelledParams>(params.as_deref()) else {
                    return;
                };
                let Some(rid) = p.request_id else { return };
                if let Some(pos) = self.listens.iter().position(|l| l.request_id == rid) {
                    let ended = self.listens.swap_remove(pos);
                    if !ended.uris.is_empty() {
                        self.events.push_back(SessionEvent::Listening {
                            uris: ended.uris.into_iter().collect(),
                            on: false,
                        });
                    }
                    return;
                }
                if let Some(did) = self.by_request.remove(&rid) {
                    if let Some(entry) = self.inflight.remove(&did) {
                        if let Some(at) = entry.deadline {
                            self.timers.remove(at, TimerKey::Request(did.0));
                        }
                        tracing::debug!(id = %rid, method = %entry.method, reason = ?p.reason, "request cancelled by client");
                    }
                    self.fail_asks_of(did);
                    // Not handed out yet (the cancellation came in the same burst as the
                    // request): it never runs. Otherwise the driver cancels what it started.
                    let queued = self.dispatches.len();
                    self.dispatches.retain(|d| d.id != did);
                    if self.dispatches.len() == queued {
                        self.events.push_back(SessionEvent::Cancel(did));
                    }
                }
            }
            Method::NotificationsRootsListChanged => {
                self.events.push_back(SessionEvent::RootsListChanged);
            }
            Method::NotificationsInitialized => {}
            Method::NotificationsProgress => {}
            other => tracing::debug!(method = %other, "ignoring unknown notification"),
        }
    }

    fn on_response(&mut self, id: RequestId, outcome: Result<Raw, ErrorObject>) {
        let Some(entry) = self.asks.remove(&id) else {
            tracing::debug!(%id, "response to no outstanding request");
            return;
        };
        self.timers
            .remove(entry.deadline, TimerKey::Ask(entry.ask.0));
        self.events.push_back(SessionEvent::AskDone(
            entry.ask,
            outcome.map_err(McpError::Wire),
        ));
    }

    // ----- helpers -----

    fn bb_tool_name(&self, entry: &InFlight) -> String {
        entry.tool.clone().unwrap_or_default()
    }

    fn fail_asks_of(&mut self, origin: DispatchId) {
        if self.asks.is_empty() {
            return;
        }
        let dead: Vec<RequestId> = self
            .asks
            .iter()
            .filter(|(_, a)| a.origin == Some(origin))
            .map(|(k, _)| k.clone())
            .collect();
        for k in dead {
            if let Some(a) = self.asks.remove(&k) {
                self.timers.remove(a.deadline, TimerKey::Ask(a.ask.0));
                self.events
                    .push_back(SessionEvent::AskDone(a.ask, Err(McpError::Cancelled)));
            }
        }
    }

    fn send_log(&mut self, entry: LogEntry, related: Option<RequestId>) {
        #[derive(serde::Serialize)]
        struct P<'a> {
            level: LoggingLevel,
            #[serde(skip_serializing_if = "Option::is_none")]
            logger: Option<&'a str>,
            data: &'a RawValue,
        }
        let params = to_raw(&P {
            level: entry.level,
            logger: entry.logger.as_deref(),
            data: &entry.data,
        });
        self.notify("notifications/message", Some(params), related);
    }

    fn notify(&mut self, method: &'static str, params: Option<Raw>, related: Option<RequestId>) {
        self.send(
            Outbound::Notification {
                method: method.into(),
                params,
            },
            related,
        );
    }

    fn respond(&mut self, id: RequestId, result: Raw) {
        self.send(
            Outbound::Response {
                id: id.clone(),
                result,
            },
            Some(id),
        );
    }

    fn error(&mut self, id: RequestId, e: McpError) {
        tracing::debug!(%id, error = %e, "request refused");
        let error = e.to_wire(self.revision());
        self.send(
            Outbound::Error {
                id: Some(id.clone()),
                error,
            },
            Some(id),
        );
    }

    fn send(&mut self, msg: Outbound, related: Option<RequestId>) {
        self.transmits.push_back(Transmit { msg, related });
    }

    fn telemetry_done(&self, now: Instant, entry: &InFlight, ok: bool, msg: &Outbound) {
        let bb = self.dialect() == Dialect::Bb;
        if !bb && !tracing::enabled!(target: "mcpwire::telemetry", tracing::Level::DEBUG) {
            return;
        }
        let duration_us = now.saturating_duration_since(entry.started).as_micros() as u64;
        let outcome = match msg {
            Outbound::Error { error, .. } => error.code.to_string(),
            _ if ok => "ok".into(),
            _ => "tool_error".into(),
        };
        if bb {
            tracing::info!(
                target: "mcpwire::telemetry",
                method = %entry.method,
                id = %entry.request_id,
                duration_us,
                outcome = %outcome,
                "request completed"
            );
        } else {
            tracing::debug!(
                target: "mcpwire::telemetry",
                method = %entry.method,
                id = %entry.request_id,
                duration_us,
                outcome = %outcome,
                "request completed"
            );
        }
    }
}

/// The `McpError::ToolFailed` a bb-1.0 client must see for an `isError: true` result.
fn bb_tool_failure(raw: &RawValue, tool: &str) -> Option<McpError> {
    if !raw.get().contains("\"isError\"") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Block {
        #[serde(default)]
        text: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct Failed {
        #[serde(rename = "isError", default)]
        is_error: bool,
        #[serde(default)]
        content: Vec<Block>,
    }
    let r: Failed = serde_json::from_str(raw.get()).ok()?;
    r.is_error.then(|| McpError::ToolFailed {
        tool: tool.to_owned(),
        message: r
            .content
            .into_iter()
            .find_map(|b| b.text)
            .unwrap_or_default(),
    })
}

fn tool_name(params: Option<&RawValue>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    serde_json::from_str::<Named>(params?.get())
        .ok()
        .map(|n| n.name)
}

fn raw_empty() -> Raw {
    mcpwire_model::raw_empty_object()
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, String> {
    let s = params.map_or("{}", RawValue::get);
    serde_json::from_str(s).map_err(|e| e.to_string())
}
