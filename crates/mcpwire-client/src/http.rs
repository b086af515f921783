//! The Streamable HTTP client wire (`http://`, `https://`): one task per connection owning
//! the [`ClientCore`]. Each request is a POST of its own whose answer — JSON, or an event
//! stream resumed with `Last-Event-ID` — comes back through a bounded channel; notifications
//! and answers to server requests are POSTed in order (a request waits behind them, as the
//! Python client does); the session's GET stream is opened once a handshake-era session
//! exists. `Mcp-Session-Id` and `MCP-Protocol-Version` are sent as negotiated; 2026-07-28
//! requests carry the routing headers, and are cancelled by closing their POST (that era has
//! no client notifications over HTTP). Closing deletes the session.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use mcpwire_model::{McpError, Message, Outbound, Revision};
use mcpwire_session::{ClientEra, ClientRequestId, TransmitKind};
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinHandle};

use crate::core::ClientCore;
use crate::handle::{Parts, WireSession, parts, parts_with, session_for};
use crate::{Client, ClientError, ClientEvents, ClientOptions};
use mcpwire_relay::Relay;
use mcpwire_server::driver::now;
use mcpwire_server::http::headers::PROTOCOL_VERSION;

mod conn;
mod driven;
mod exchange;
mod relayed;
mod routing;
mod sse;

use conn::{Headers, HttpConn, VersionHeader};
use exchange::{Inbound, Post};
use routing::ToolHeaders;

/// Messages from the exchanges waiting for the task.
const INBOUND_QUEUE: usize = 64;

/// Messages the session may have waiting to be sent before the task stops taking input.
const MAX_UNSENT: usize = 256;

/// How long `connect` waits for the session's GET stream to open.
const GET_STREAM_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Inbound messages handled between two waits.
const INBOUND_BURST: usize = 64;

/// Reaches the server at `url` and negotiates within `opts.limits.handshake_timeout`.
pub(crate) async fn connect(
    url: &str,
    opts: &ClientOptions,
) -> Result<(Client, ClientEvents), ClientError> {
    let conn = HttpConn::new(
        url,
        opts.limits.max_in_flight,
        opts.limits.handshake_timeout,
        opts.tls.clone(),
        opts.auth.clone(),
    )?;
    start(Arc::new(conn), parts(opts, url), opts).await
}

/// Continues the handshake-era session `session_id` the server at `url` holds, negotiated
/// (by this process or another) with the `initialize` result `result`: nothing is sent to
/// negotiate; requests carry the session id and its revision, and the session's GET stream
/// is opened as after `initialize`. Whether the server still holds the session shows on
/// the first request (404 when it does not).
pub(crate) async fn reattach(
    url: &str,
    opts: &ClientOptions,
    session_id: &str,
    result: &serde_json::value::RawValue,
) -> Result<(Client, ClientEvents), ClientError> {
    let mut session = session_for(opts);
    session
        .start_negotiated(result)
        .map_err(|e| ClientError::Invalid(format!("the recorded initialize result: {e}")))?;
    let conn = HttpConn::new(
        url,
        opts.limits.max_in_flight,
        opts.limits.handshake_timeout,
        opts.tls.clone(),
        opts.auth.clone(),
    )?;
    if let Some(n) = session.negotiated() {
        conn.resume(session_id, n.era.revision().as_str());
    }
    start(Arc::new(conn), parts_with(session, opts, url), opts).await
}

/// Runs the connection's task over `conn` and waits for negotiation (and the GET stream).
async fn start(
    conn: Arc<HttpConn>,
    mut parts: Parts,
    opts: &ClientOptions,
) -> Result<(Client, ClientEvents), ClientError> {
    let (inbound_tx, inbound_rx) = mpsc::channel(INBOUND_QUEUE);
    let (stream_ready, stream_ready_rx) = oneshot::channel();
    // The gateway relays calls of a handshake-era session as raw frames, each POSTed as
    // it is relayed (`relayed`).
    let ids = parts.pending.ids();
    let max_in_flight = opts.limits.max_in_flight;
    let post = relayed::HttpRelayPost::new(
        conn.clone(),
        inbound_tx.clone(),
        max_in_flight,
        parts.wire_session.clone(),
    );
    let relay = Arc::new(
        Relay::new(Box::new(move || ids.next_number()), max_in_flight)
            .with_post(Box::new(post))
            .with_call_timeout(opts.relay_timeout),
    );
    parts.core.set_relay(relay.clone(), parts.pending.peer());
    parts.pending.relay = Some(relay.clone());
    let task = HttpTask {
        relay,
        core: parts.core,
        conn,
        inbound_tx,
        inbound_rx,
        posts: HashMap::new(),
        negotiation: Vec::new(),
        sending: None,
        listening: None,
        stream_ready: Some(stream_ready),
        tool_headers: ToolHeaders::default(),
        send_timeout: opts.limits.handshake_timeout,
        wire_session: parts.wire_session,
        session_gone: false,
    };
    tokio::spawn(task.run());
    let connected = parts.pending.settle(" (--timeout waits longer)").await?;
    // The session's GET stream is open (or refused) before the first request goes out: a
    // server that sends its requests there only (as the TypeScript SDK's does for requests
    // not tied to a call) would otherwise drop those sent before it opened.
    // Bounded apart from the handshake: a server that holds the GET's headers back must not
    // hold up `connect`.
    let wait = opts.limits.handshake_timeout.min(GET_STREAM_WAIT);
    let _ = tokio::time::timeout(wait, stream_ready_rx).await;
    Ok(connected)
}

/// A request's POST in flight.
struct PostTask {
    abort: AbortHandle,
    /// A `tools/list` in 2026-07-28: its result tells which arguments become headers.
    lists_tools: bool,
}

struct HttpTask {
    /// The connection's relay: its calls are POSTed as they are relayed; the task sends
    /// their cancellations.
    relay: Arc<Relay>,
    core: ClientCore,
    conn: Arc<HttpConn>,
    inbound_tx: mpsc::Sender<Inbound>,
    inbound_rx: mpsc::Receiver<Inbound>,
    posts: HashMap<ClientRequestId, PostTask>,
    /// The negotiation requests' POSTs, abandoned once negotiation moved on.
    negotiation: Vec<ClientRequestId>,
    /// A notification or answer being POSTed; later messages wait for it.
    sending: Option<JoinHandle<()>>,
    listening: Option<AbortHandle>,
    /// Told once the session's GET stream got its answer (dropped when there is none).
    stream_ready: Option<oneshot::Sender<()>>,
    tool_headers: ToolHeaders,
    /// How long a notification's POST may take.
    send_timeout: std::time::Duration,
    /// The server's session id, told to the handle; whether closing keeps it.
    wire_session: Arc<WireSession>,
    /// The server answered 404 for the session: it is over.
    session_gone: bool,
}

impl HttpTask {
    async fn run(mut self) {
        loop {
            while self.ready_work() {}
            if self.core.close_requested() || self.core.session.is_finished() || self.session_gone {
                break;
            }
            let take_input = self.core.session.transmits_pending() < MAX_UNSENT;
            tokio::select! {
                w = self.core.wait(true) => self.core.apply(now(), w),
                // Cancellations of relayed calls, sent by the next `ready_work`.
                _ = self.relay.queued() => {}
                i = self.inbound_rx.recv(), if take_input => {
                    if let Some(i) = i {
                        self.on_inbound(i);
                    }
                }
                _ = wait_for(&mut self.sending), if self.sending.is_some() => self.sending = None,
            }
        }
        self.wind_down().await;
    }

    /// Does what is ready without waiting; whether anything happened.
    fn ready_work(&mut self) -> bool {
        let mut did = self.core.poll_ready(now(), true);
        for _ in 0..INBOUND_BURST {
            if self.core.session.transmits_pending() >= MAX_UNSENT {
                break;
            }
            match self.inbound_rx.try_recv() {
                Ok(i) => {
                    self.on_inbound(i);
                    did = true;
                }
                Err(_) => break,
            }
        }
        if self.sending.as_ref().is_some_and(JoinHandle::is_finished) {
            self.sending = None;
        }
        // Relayed calls are POSTed as they are relayed: only cancellations are queued.
        did |= self.core.take_relayed(&mut bytes::BytesMut::new());
        did |= self.send();
        self.after_negotiation();
        did
    }

    fn on_inbound(&mut self, i: Inbound) {
        match i {
            Inbound::Message(msg, related) => {
                if let (Ok(Message::Response(r)), Some(id)) = (&msg, related)
                    && self.posts.get(&id).is_some_and(|p| p.lists_tools)
                    && let Ok(result) = &r.outcome
                {
                    self.tool_headers.learn(result);
                }
                self.core
                    .session
                    .handle_inbound_related(now(), msg, related);
                self.core.poll_ready(now(), false);
            }
            Inbound::Failed(id, e) => {
                // A 404 for the session id: the server no longer holds the session, and the
                // connection is over (its owner starts a new session, as the spec says).
                if e.is_session_gone() && self.conn.has_session() {
                    self.session_gone = true;
                    self.wire_session.set_gone();
                }
                self.core.fail_request(now(), id, e);
            }
        }
    }

    /// Sends what the session transmits, in order: requests start POSTs of their own,
    /// notifications and answers are POSTed one at a time.
    fn send(&mut self) -> bool {
        let mut did = false;
        while self.sending.is_none()
            && let Some(t) = self.core.session.poll_transmit()
        {
            did = true;
            let stateless = t.version == Some(Revision::STATELESS);
            let mut headers: Headers = Vec::new();
            if let Some(v) = t.version {
                headers.push((PROTOCOL_VERSION.to_owned(), v.as_str().to_owned()));
            }
            match (t.kind, &t.msg) {
                (TransmitKind::Request(id), Outbound::Request { method, params, .. }) => {
                    if stateless {
                        headers.extend(self.tool_headers.for_request(method, params.as_deref()));
                    }
                    headers.extend(self.core.take_trace(id));
                    if matches!(&**method, "initialize" | "server/discover") {
                        self.negotiation.push(id);
                    }
                    let post = Post {
                        id,
                        method: method.to_string(),
                        body: Bytes::from(t.msg.to_json_string()),
                        headers,
                    };
                    let lists_tools = stateless && post.method == "tools/list";
                    // Boxed: the exchange's future is kilobytes, and a task moves its
                    // future into its cell and copies its stage on every transition; a box
                    // is moved as a pointer (docs/benchmarks.md § Issue 24).
                    let task = tokio::spawn(Box::pin(exchange::run(
                        self.conn.clone(),
                        post,
                        self.inbound_tx.clone(),
                    )));
                    if self.posts.len() >= INBOUND_QUEUE {
                        self.posts.retain(|_, p| !p.abort.is_finished());
                    }
                    let abort = task.abort_handle();
                    self.posts.insert(id, PostTask { abort, lists_tools });
                }
                (TransmitKind::Cancel(id), _) => {
                    if let Some(p) = self.posts.remove(&id) {
                        p.abort.abort();
                    }
                    // 2026-07-28 over HTTP has no client notifications: closing the POST
                    // is the cancellation.
                    if !stateless {
                        self.post_in_order(&t.msg, headers);
                    }
                }
                _ => self.post_in_order(&t.msg, headers),
            }
        }
        did
    }

    /// POSTs a notification or an answer; later messages wait until it is done.
    fn post_in_order(&mut self, msg: &Outbound, headers: Headers) {
        let conn = self.conn.clone();
        let body = Bytes::from(msg.to_json_string());
        let limit = self.send_timeout;
        self.sending = Some(tokio::spawn(async move {
            let sent = tokio::time::timeout(limit, async {
                let r = conn.post(body, VersionHeader::Own, &headers).await?;
                let _ = conn::read_limited(r.into_body(), 64 * 1024).await;
                Ok::<_, ClientError>(())
            })
            .await;
            match sent {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "a message to the server was not delivered")
                }
                Err(_) => tracing::warn!("a message to the server was not delivered in time"),
            }
        }));
    }

    /// Once negotiated: the revision for GET/DELETE, the abandoned negotiation POSTs closed,
    /// and the session's GET stream opened.
    fn after_negotiation(&mut self) {
        if !self.negotiation.is_empty() {
            let session = &self.core.session;
            let abandoned: Vec<ClientRequestId> = self
                .negotiation
                .iter()
                .copied()
                .filter(|id| !session.is_awaiting(*id))
                .collect();
            for id in &abandoned {
                if let Some(p) = self.posts.remove(id) {
                    p.abort.abort();
                }
            }
            self.negotiation.retain(|id| !abandoned.contains(id));
            if let Some(n) = self.core.session.negotiated() {
                self.conn.set_version(n.era.revision().as_str());
            }
        }
        if self.stream_ready.is_some()
            && let Some(sid) = self.conn.session()
        {
            self.wire_session.set_id(sid);
        }
        self.open_stream();
    }

    /// Opens the session's GET stream (handshake era, with a session id) once the
    /// `initialized` notification has been delivered: the lifecycle puts it before anything
    /// else the client sends, and a server may refuse a stream before it.
    fn open_stream(&mut self) {
        if self.stream_ready.is_none() {
            return; // opened, or there is none
        }
        let Some(n) = self.core.session.negotiated() else {
            return;
        };
        if !matches!(n.era, ClientEra::Handshake(_)) || self.conn.session().is_none() {
            // Stateless, or no session: there is no GET stream to wait for.
            self.stream_ready = None;
            return;
        }
        if self.sending.is_some() || self.core.session.transmits_pending() > 0 {
            return; // `initialized` is still on its way
        }
        let task = tokio::spawn(exchange::listen(
            self.conn.clone(),
            self.inbound_tx.clone(),
            self.stream_ready.take(),
        ));
        self.listening = Some(task.abort_handle());
    }

    async fn wind_down(mut self) {
        for (_, p) in self.posts.drain() {
            p.abort.abort();
        }
        if let Some(l) = self.listening.take() {
            l.abort();
        }
        if let Some(s) = self.sending.take() {
            let _ = tokio::time::timeout(self.send_timeout, s).await;
        }
        let how = if self.session_gone {
            "was ended by the server (404 for its session id)"
        } else if self.core.close_requested() && self.wire_session.keeps() {
            "was closed by the client (its session kept)"
        } else if self.core.close_requested() {
            if tokio::time::timeout(self.send_timeout, self.conn.delete())
                .await
                .is_err()
            {
                tracing::debug!("deleting the HTTP session took too long");
            }
            "was closed by the client"
        } else {
            "was closed"
        };
        let error = McpError::ConnectionClosed(how.into());
        if self.session_gone {
            self.core.finish_session_lost(error);
        } else {
            self.core.finish(error);
        }
    }
}

async fn wait_for(h: &mut Option<JoinHandle<()>>) {
    if let Some(h) = h.as_mut() {
        let _ = h.await;
    }
}
