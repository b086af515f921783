//! [`Client`]: the async handle over one connection to a server, whichever the wire;
//! [`PendingRequest`]: one request in flight (dropping it cancels it); [`ClientEvents`]: what
//! the server sends unasked.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use mcpwire_model::{McpError, Method, Raw};
use mcpwire_session::{
    Answer, ClientConfig, ClientEvent, ClientRequestId, ClientSession, Negotiated, RequestOptions,
    ServerRequestId,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::core::{
    ClientCore, Command, ConnectionEnded, CoreChannels, EventBacklog, Failure, Outcome, RequestIds,
    Settled,
};
use crate::{ClientError, ClientOptions};
use mcpwire_relay::Relay;

/// Commands a handle may queue before `send` waits for the wire's task.
const COMMAND_QUEUE: usize = 64;

/// An MCP client connection: requests go out, answers come back to their
/// [`PendingRequest`]; server→client requests and notifications arrive on the
/// [`ClientEvents`] returned with it. Cheap to clone; the connection ends with
/// [`Client::close`] or when every clone and the event stream are dropped.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    commands: mpsc::Sender<Command>,
    cancels: mpsc::UnboundedSender<(ClientRequestId, String)>,
    negotiated: Arc<Negotiated>,
    server: Value,
    peer: Arc<str>,
    request_timeout: Option<Duration>,
    ids: RequestIds,
    backlog: EventBacklog,
    ended: ConnectionEnded,
    wire_session: Arc<WireSession>,
    /// The wire writes direct requests (`ClientCore::take_direct`).
    direct: bool,
    /// The wire relays raw frames (`mcpwire_relay`).
    relay: Option<Arc<Relay>>,
}

/// The wire's own session with the server (HTTP: its `Mcp-Session-Id`), shared by the
/// handle and the wire's task: its id once known, and whether closing keeps it (another
/// process re-attaches to it) instead of deleting it.
#[derive(Debug, Default)]
pub(crate) struct WireSession {
    id: OnceLock<String>,
    keep: AtomicBool,
    gone: AtomicBool,
}

impl WireSession {
    /// Records the session id the server gave (the first one stands).
    pub(crate) fn set_id(&self, id: String) {
        let _ = self.id.set(id);
    }

    /// The server no longer holds the session (it answered 404); set before the request
    /// that learnt it fails.
    pub(crate) fn set_gone(&self) {
        self.gone.store(true, Ordering::Relaxed);
    }

    /// Whether closing keeps the server's session.
    pub(crate) fn keeps(&self) -> bool {
        self.keep.load(Ordering::Relaxed)
    }
}

/// What the server sends unasked: server→client requests (answer each with
/// [`Client::answer`]), progress, logs, list changes, resource updates, task status, and
/// withdrawn server requests. Bounded: an owner that stops reading loses notifications
/// (counted and logged) and has further server requests refused. Dropping it refuses every
/// server request from then on. Ends (`None`) when the connection closes.
pub struct ClientEvents {
    rx: mpsc::Receiver<ClientEvent>,
    backlog: EventBacklog,
    /// An event was taken and is counted until the next `recv`.
    taken: bool,
}

impl ClientEvents {
    /// The next event; `None` once the connection has closed. The previous event counts
    /// as done with from this call on ([`Client::events_done`]).
    pub async fn recv(&mut self) -> Option<ClientEvent> {
        if std::mem::take(&mut self.taken) {
            self.backlog.done();
        }
        let event = self.rx.recv().await;
        self.taken = event.is_some();
        event
    }

    /// Prints the server's log notifications on stderr (`[level] data`) until the
    /// connection ends, in a task of its own (what `mcpwire list|call` do). Other events are
    /// dropped; server requests are refused.
    pub fn print_logs(mut self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            while let Some(e) = self.rx.recv().await {
                if let ClientEvent::Log { entry, .. } = e {
                    let level = serde_json::to_value(entry.level).unwrap_or(Value::Null);
                    eprintln!("[{}] {}", level.as_str().unwrap_or("log"), entry.data.get());
                }
            }
        })
    }
}

/// The parts a wire needs to run a connection: the core for its task, and what `connect`
/// turns into a [`Client`] once negotiation settles.
pub(crate) struct Parts {
    pub(crate) core: ClientCore,
    pub(crate) pending: PendingClient,
    /// The wire's session with the server (HTTP), known to the handle.
    pub(crate) wire_session: Arc<WireSession>,
}

/// A client whose negotiation has not settled yet.
pub(crate) struct PendingClient {
    commands: mpsc::Sender<Command>,
    cancels: mpsc::UnboundedSender<(ClientRequestId, String)>,
    events: mpsc::Receiver<ClientEvent>,
    settled: oneshot::Receiver<Settled>,
    peer: Arc<str>,
    request_timeout: Option<Duration>,
    handshake_timeout: Duration,
    ids: RequestIds,
    backlog: EventBacklog,
    ended: ConnectionEnded,
    wire_session: Arc<WireSession>,
    /// The wire writes direct requests (`ClientCore::take_direct`).
    pub(crate) direct: bool,
    /// The wire relays raw frames (`mcpwire_relay`).
    pub(crate) relay: Option<Arc<Relay>>,
}

/// A session configured by `opts` and the channels around it; `peer` names the server in
/// errors (a command line in backticks, a URL).
pub(crate) fn parts(opts: &ClientOptions, peer: &str) -> Parts {
    parts_with(session_for(opts), opts, peer)
}

/// A session configured by `opts`, not started.
pub(crate) fn session_for(opts: &ClientOptions) -> ClientSession {
    ClientSession::new(ClientConfig {
        client_info: opts.client_info.clone(),
        capabilities: opts.capabilities.clone(),
        era: opts.era,
        log_level: opts.log_level,
        limits: opts.limits.clone(),
    })
}

/// [`parts`] around `session` (started by the core unless it has been already).
pub(crate) fn parts_with(session: ClientSession, opts: &ClientOptions, peer: &str) -> Parts {
    let (commands, commands_rx) = mpsc::channel(COMMAND_QUEUE);
    let (cancels, cancels_rx) = mpsc::unbounded_channel();
    let (events_tx, events) = mpsc::channel(opts.events_capacity.max(1));
    let (settled_tx, settled) = oneshot::channel();
    let ids = RequestIds::default();
    let backlog = EventBacklog::default();
    let ended = ConnectionEnded::default();
    let wire_session = Arc::new(WireSession::default());
    let core = ClientCore::new(
        session,
        CoreChannels {
            commands: commands_rx,
            cancels: cancels_rx,
            events: events_tx,
            settled: settled_tx,
            ids: ids.clone(),
            backlog: backlog.clone(),
            ended: ended.clone(),
        },
        opts.limits.max_events,
    );
    Parts {
        core,
        pending: PendingClient {
            commands,
            cancels,
            events,
            settled,
            peer: peer.into(),
            request_timeout: opts.limits.request_timeout,
            handshake_timeout: opts.limits.handshake_timeout,
            ids,
            backlog,
            ended,
            wire_session: wire_session.clone(),
            direct: false,
            relay: None,
        },
        wire_session,
    }
}

impl PendingClient {
    /// The ids requests on this connection get (a relay numbers its frames from them).
    pub(crate) fn ids(&self) -> RequestIds {
        self.ids.clone()
    }

    /// The server as errors name it.
    pub(crate) fn peer(&self) -> Arc<str> {
        self.peer.clone()
    }

    /// Waits for negotiation; `hint` follows a handshake timeout's message.
    pub(crate) async fn settle(self, hint: &str) -> Result<(Client, ClientEvents), ClientError> {
        let peer = self.peer.clone();
        let settled = self.settled.await.map_err(|_| ClientError::Closed {
            peer: peer.to_string(),
            how: "went away".into(),
            method: "initialize".into(),
        })?;
        let negotiated = settled.map_err(|(method, failure)| match failure {
            Failure::Transport(e) => e,
            Failure::Session(e) => ClientError::from_session(
                method.as_str(),
                e,
                &peer,
                Some(self.handshake_timeout),
                hint,
            ),
        })?;
        let server = serde_json::from_str(negotiated.result.get()).unwrap_or(Value::Null);
        let client = Client {
            inner: Arc::new(Inner {
                commands: self.commands,
                cancels: self.cancels,
                negotiated,
                server,
                peer,
                request_timeout: self.request_timeout,
                ids: self.ids,
                backlog: self.backlog.clone(),
                ended: self.ended,
                wire_session: self.wire_session,
                direct: self.direct,
                relay: self.relay,
            }),
        };
        let events = ClientEvents {
            rx: self.events,
            backlog: self.backlog,
            taken: false,
        };
        Ok((client, events))
    }
}

impl Client {
    /// What negotiation settled: the era and revision, the server's info, capabilities and
    /// instructions.
    pub fn negotiated(&self) -> &Negotiated {
        &self.inner.negotiated
    }

    /// The server's `initialize` (or `server/discover`) result as received.
    pub fn server(&self) -> &Value {
        &self.inner.server
    }

    /// HTTP: the server's `Mcp-Session-Id` for this connection, once it gave one (what
    /// [`Client::reattach`](crate::Client::reattach) continues from another process).
    pub fn wire_session_id(&self) -> Option<&str> {
        self.inner.wire_session.id.get().map(String::as_str)
    }

    /// HTTP: whether the server answered 404 for the session (it no longer holds it; the
    /// connection is ending). Set before the request that learnt it fails.
    pub fn wire_session_gone(&self) -> bool {
        self.inner.wire_session.gone.load(Ordering::Relaxed)
    }

    /// [`Client::close`], keeping the server's HTTP session (no `DELETE`): another process
    /// that re-attached to it goes on using it.
    pub async fn close_keeping_session(self) -> Result<(), ClientError> {
        self.inner.wire_session.keep.store(true, Ordering::Relaxed);
        self.close().await
    }

    /// The relay of this connection (stdio and Streamable HTTP; `mcpwire_relay`),
    /// when a `tools/call` with no options would go out as it came ([`Client::send`]'s
    /// conditions for a direct request, on any wire): relaying its frame writes what that
    /// would.
    pub fn relay(&self) -> Option<&Arc<Relay>> {
        self.sent_as_given("tools/call", &RequestOptions::default())
            .then_some(self.inner.relay.as_ref())
            .flatten()
    }

    /// The server as errors name it: the command line in backticks, or the URL.
    pub fn peer(&self) -> &str {
        &self.inner.peer
    }

    /// Whether every event the connection handed to [`ClientEvents`] so far is done with
    /// (the owner asked for the next one): an owner that must route the events a server
    /// sent before an answer can skip waiting when this is true.
    pub fn events_done(&self) -> bool {
        self.inner.backlog.is_empty()
    }

    /// Whether the connection ended (set before the requests in flight on it fail).
    pub fn is_closed(&self) -> bool {
        self.inner.ended.is_set()
    }

    /// Sends a request; resolves once it is queued for the connection (waiting while the
    /// queue is full); the returned [`PendingRequest`] resolves to its answer, or to why
    /// it was not sent (too many in flight, connection closed). `params` must be a JSON
    /// object; the session adds `_meta` (progress token, 2026-07-28 envelope).
    pub async fn send(
        &self,
        method: &str,
        params: Option<Raw>,
        opts: RequestOptions,
    ) -> Result<PendingRequest, ClientError> {
        let (reply, reply_rx) = oneshot::channel();
        let timeout = opts.timeout.or(self.inner.request_timeout);
        let id = self.inner.ids.next();
        let command = if self.goes_direct(method, &opts) {
            Command::Direct { id, params, reply }
        } else {
            Command::Request {
                id,
                method: Method::parse(method),
                params,
                opts,
                reply,
                trace: mcpwire_server::observe::outgoing_trace(),
            }
        };
        self.inner
            .commands
            .send(command)
            .await
            .map_err(|_| self.gone(method))?;
        Ok(PendingRequest {
            id,
            method: method.into(),
            reply: reply_rx,
            cancels: self.inner.cancels.clone(),
            peer: self.inner.peer.clone(),
            timeout,
            done: false,
        })
    }

    /// Whether a request goes out as a direct request (`ClientCore::take_direct`): a
    /// `tools/call` with nothing for the session to add or time — no timeout, progress,
    /// `_meta` or capabilities — on a handshake-era connection whose wire writes them.
    fn goes_direct(&self, method: &str, opts: &RequestOptions) -> bool {
        self.inner.direct && self.sent_as_given(method, opts)
    }

    /// Whether a request of `method` with `opts` goes out with nothing added: a
    /// `tools/call` with no timeout, progress, `_meta` or capabilities, in a handshake era.
    fn sent_as_given(&self, method: &str, opts: &RequestOptions) -> bool {
        method == "tools/call"
            && opts.timeout.is_none()
            && self.inner.request_timeout.is_none()
            && !opts.progress
            && opts.meta.is_none()
            && opts.capabilities.is_none()
            && matches!(
                self.inner.negotiated.era,
                mcpwire_session::ClientEra::Handshake(_)
            )
    }

    /// Sends a request and waits for its result, as JSON. An `input_required` answer
    /// (2026-07-28) is [`ClientError::InputRequired`]: use [`Client::send`] to answer it.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let params = serde_json::value::to_raw_value(&params)
            .map_err(|e| ClientError::Invalid(e.to_string()))?;
        let answer = self
            .send(method, Some(params), RequestOptions::default())
            .await?
            .await?;
        match answer {
            Answer::Complete(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                ClientError::Invalid(format!("the answer to `{method}` is not JSON: {e}"))
            }),
            Answer::InputRequired(ir) => Err(ClientError::InputRequired {
                method: method.into(),
                requests: ir
                    .input_requests
                    .iter()
                    .map(|r| format!("`{}`", r.method))
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Answers server request `id` (from [`ClientEvents`]) with a result or an error.
    pub async fn answer(
        &self,
        id: ServerRequestId,
        result: Result<Raw, McpError>,
    ) -> Result<(), ClientError> {
        self.inner
            .commands
            .send(Command::Answer { id, result })
            .await
            .map_err(|_| self.gone("an answer"))
    }

    /// Sends a notification of the client's own (`notifications/roots/list_changed`;
    /// handshake era only).
    pub async fn notify(&self, method: &str, params: Option<Raw>) -> Result<(), ClientError> {
        let command = Command::Notify {
            method: Method::parse(method),
            params,
        };
        self.inner
            .commands
            .send(command)
            .await
            .map_err(|_| self.gone(method))
    }

    /// Ends the connection and waits until it is down: a stdio server's stdin is closed (it
    /// is killed if it has not exited 2 s later), an HTTP session is deleted, an MCPB
    /// connection closed. Requests still in flight end with `Closed`.
    pub async fn close(self) -> Result<(), ClientError> {
        let commands = self.inner.commands.clone();
        let _ = commands.send(Command::Close).await;
        commands.closed().await;
        Ok(())
    }

    fn gone(&self, method: &str) -> ClientError {
        ClientError::Closed {
            peer: self.inner.peer.to_string(),
            how: "closed the connection".into(),
            method: method.into(),
        }
    }
}

/// A request in flight: a future of its answer. Dropping it before the answer cancels the
/// request (the server is told); [`PendingRequest::cancel`] does so with a reason.
pub struct PendingRequest {
    id: ClientRequestId,
    method: Box<str>,
    reply: oneshot::Receiver<Outcome>,
    cancels: mpsc::UnboundedSender<(ClientRequestId, String)>,
    peer: Arc<str>,
    timeout: Option<Duration>,
    done: bool,
}

impl PendingRequest {
    /// The request's id (progress events name it).
    pub fn id(&self) -> ClientRequestId {
        self.id
    }

    /// Cancels the request: the server is told, with `reason`.
    pub fn cancel(mut self, reason: &str) {
        self.done = true;
        let _ = self.cancels.send((self.id, reason.to_owned()));
    }
}

impl Future for PendingRequest {
    type Output = Result<Answer, ClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let outcome = match Pin::new(&mut self.reply).poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(o) => o,
        };
        self.done = true;
        let method = &self.method;
        Poll::Ready(match outcome {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(Failure::Transport(e))) => Err(e),
            Ok(Err(Failure::Session(e))) => Err(ClientError::from_session(
                method,
                e,
                &self.peer,
                self.timeout,
                "",
            )),
            Err(_) => Err(ClientError::Closed {
                peer: self.peer.to_string(),
                how: "closed the connection".into(),
                method: method.to_string(),
            }),
        })
    }
}

impl Drop for PendingRequest {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.cancels.send((self.id, "caller cancelled".into()));
        }
    }
}
