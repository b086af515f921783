//! The WebSocket listener: binary messages are proto-mcp (`MCPMessage`, one per message),
//! text messages JSON-RPC (one per message). The first message fixes the connection's
//! protocol; a message of the other kind is answered (−32600 / `ErrorResponse`) and dropped.
//!
//! When the service authenticates, the upgrade request needs `Authorization: Bearer …` the
//! service's authenticator accepts; otherwise it is answered 401 (403 for a missing scope)
//! with a Bearer challenge and never upgraded. The connection's calls carry the identity.
//!
//! Limits: a message over `Limits::max_message_bytes` is answered with the protocol's
//! −32600 and the connection stays open; past twice that the WebSocket layer closes the
//! connection (1009, message too big) without buffering it. One session per connection,
//! many requests in flight; calls still running when the peer closes are dropped.
//!
//! Shutdown ([`WsServer::serve_until`]): no new upgrade; each connection stops reading,
//! answers the calls it accepted, then sends a Close frame (1001, going away).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::SinkExt;
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{Malformed, McpError};
use mcpwire_proto_mcp::{Inbound, Translator};
use mcpwire_router::Identity;
use mcpwire_session::ServerSession;
use mcpwire_wire::proto_mcp::pb::McpMessage;
use mcpwire_wire::proto_mcp::{decode_message, encode_message};

use crate::Service;
use crate::driver::framed::WRITE_HIGH_WATER;
use crate::driver::{Calls, ServerCore};
use crate::identify::{AuthFailure, Authenticate};
use crate::observe::{TraceParent, WireLabel};
use crate::tls::{Incoming, PeerAddr, TlsConfig};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

#[derive(Clone)]
struct WsState {
    service: Service,
    /// Connections still allowed; an upgrade past the limit is refused with 503.
    slots: Arc<tokio::sync::Semaphore>,
    /// Cancelled when the listener starts shutting down: connections drain.
    shutdown: CancellationToken,
    /// The upgraded connections (axum runs them on tasks of its own).
    connections: TaskTracker,
}

/// A bound WebSocket listener.
pub struct WsServer {
    listener: Incoming,
    app: axum::Router,
    shutdown: CancellationToken,
    connections: TaskTracker,
}

impl WsServer {
    /// Binds `addr`, serving `service` at `path` to at most `max_connections` at once (tool
    /// arguments of proto-mcp clients are read with the service's tool schemas), over TLS
    /// (`wss://`) when `tls` is given.
    pub async fn bind(
        service: Service,
        addr: SocketAddr,
        path: &str,
        max_connections: usize,
        tls: Option<&TlsConfig>,
    ) -> std::io::Result<WsServer> {
        let listener = Incoming::bind(addr, tls, crate::tls::alpn::HTTP1).await?;
        let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
        let (shutdown, connections) = (CancellationToken::new(), TaskTracker::new());
        let app = axum::Router::new()
            .route(path, axum::routing::get(upgrade))
            .with_state(WsState {
                service,
                slots,
                shutdown: shutdown.clone(),
                connections: connections.clone(),
            });
        Ok(WsServer {
            listener,
            app,
            shutdown,
            connections,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// `wss` when the listener terminates TLS, else `ws`.
    pub fn scheme(&self) -> &'static str {
        if self.listener.is_tls() { "wss" } else { "ws" }
    }

    /// Serves until the process ends.
    pub async fn serve(self) -> std::io::Result<()> {
        let never = CancellationToken::new();
        self.serve_until(never, Duration::ZERO).await
    }

    /// Serves until `shutdown` is cancelled, then drains: no new upgrade, and every
    /// connection answers the calls it accepted and closes (1001); after `grace` the rest
    /// is dropped.
    pub async fn serve_until(
        self,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> std::io::Result<()> {
        let draining = self.shutdown.clone();
        let app = self.app.into_make_service_with_connect_info::<PeerAddr>();
        axum::serve(self.listener, app)
            .with_graceful_shutdown(async move {
                shutdown.cancelled().await;
                draining.cancel();
            })
            .await?;
        self.connections.close();
        if tokio::time::timeout(grace, self.connections.wait())
            .await
            .is_err()
        {
            tracing::warn!("WebSocket connections still open after the shutdown grace period");
        }
        Ok(())
    }
}

async fn upgrade(
    State(st): State<WsState>,
    ConnectInfo(PeerAddr {
        addr: peer,
        certificate,
    }): ConnectInfo<PeerAddr>,
    headers: axum::http::HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // Over the connections per IP limit: 429 with `Retry-After`, not upgraded.
    let permit = match st
        .service
        .connections
        .as_ref()
        .map(|c| c.admit(peer.ip(), WireLabel::WebSocket))
    {
        Some(Err(refused)) => return crate::http::refusal(refused),
        Some(Ok(permit)) => Some(permit),
        None => None,
    };
    let identity = match &st.service.auth {
        None => certificate,
        Some(auth) => {
            let header = headers.get(AUTHORIZATION).map(|v| v.as_bytes());
            match auth.verify_header(header).await {
                Ok(id) => Some(id),
                Err(failure) => return refuse_upgrade(&**auth, &failure),
            }
        }
    };
    let Ok(slot) = st.slots.clone().try_acquire_owned() else {
        return axum::response::IntoResponse::into_response((
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "too many WebSocket connections",
        ));
    };
    // The upgrade request's trace context is the parent of every call on the connection.
    let trace = TraceParent::from_headers(&headers);
    let max = st.service.limits.max_message_bytes;
    ws.max_message_size(max.saturating_mul(2))
        .max_frame_size(max.saturating_mul(2))
        .on_upgrade(move |socket| async move {
            let ip = Some(peer.ip());
            let _tracked = st.connections.token();
            // Its own token: waiting on it takes no lock that every connection shares.
            let shutdown = st.shutdown.child_token();
            if let Err(e) = WsConnection::new(&st, identity, ip, trace)
                .run(socket, shutdown)
                .await
            {
                tracing::debug!(error = %e, "websocket connection ended");
            }
            drop((slot, permit));
        })
}

/// The refusal of an upgrade request for `failure`: the variant's status (401, 403, 503), the
/// Bearer challenge, the reason as text.
fn refuse_upgrade(auth: &dyn Authenticate, failure: &AuthFailure) -> Response {
    tracing::debug!(%failure, "authentication refused");
    let status = StatusCode::from_u16(failure.to_mcp_error().http_status())
        .unwrap_or(StatusCode::UNAUTHORIZED);
    let mut r = (status, failure.to_string()).into_response();
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        && let Ok(v) = HeaderValue::from_str(&auth.challenge(failure))
    {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    r
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Undecided,
    Json,
    Proto,
}

/// One WebSocket client: its session and the messages waiting to be sent.
struct WsConnection {
    core: ServerCore,
    translator: Translator,
    mode: Mode,
    max: usize,
    depth: usize,
    out: Outbox,
}

/// Messages waiting to be sent, and their size.
#[derive(Default)]
struct Outbox {
    msgs: Vec<WsMessage>,
    bytes: usize,
}

impl Outbox {
    fn push(&mut self, m: WsMessage) {
        self.bytes += match &m {
            WsMessage::Text(t) => t.len(),
            WsMessage::Binary(b) => b.len(),
            _ => 0,
        };
        self.msgs.push(m);
    }

    /// Whether to stop producing and send first.
    fn full(&self) -> bool {
        self.bytes >= WRITE_HIGH_WATER
    }
}

impl WsConnection {
    fn new(
        st: &WsState,
        identity: Option<Identity>,
        ip: Option<IpAddr>,
        trace: Option<TraceParent>,
    ) -> WsConnection {
        WsConnection {
            core: ServerCore::new(
                ServerSession::new(st.service.config.clone()),
                Calls::new(st.service.router.clone(), WireLabel::WebSocket)
                    .with_identity(identity)
                    .with_client_ip(ip)
                    .with_trace_parent(trace),
            )
            .counted_connection(st.service.load.as_ref()),
            translator: Translator::new(st.service.proto.clone()),
            mode: Mode::Undecided,
            max: st.service.limits.max_message_bytes,
            depth: st.service.limits.max_depth,
            out: Outbox::default(),
        }
    }

    /// Serves until the client closes. Output goes out in batches of at most
    /// [`WRITE_HIGH_WATER`] bytes (flushed once per batch); nothing is read while a batch is
    /// being sent, so a client that does not read stops being read from (backpressure).
    async fn run(
        mut self,
        mut socket: WebSocket,
        shutdown: CancellationToken,
    ) -> Result<(), axum::Error> {
        let mut draining = false;
        loop {
            loop {
                self.poll_ready();
                if self.out.msgs.is_empty() {
                    break;
                }
                for m in self.out.msgs.drain(..) {
                    socket.feed(m).await?;
                }
                self.out.bytes = 0;
                socket.flush().await?;
            }
            if draining && self.core.finished() {
                let bye = CloseFrame {
                    code: 1001,
                    reason: "the server is shutting down".into(),
                };
                return socket.send(WsMessage::Close(Some(bye))).await;
            }
            tokio::select! {
                biased;
                _ = shutdown.cancelled(), if !draining => {
                    // Nothing more is read: the calls already accepted are answered.
                    draining = true;
                    self.core.input_closed();
                }
                msg = socket.recv(), if !draining => match msg {
                    Some(Ok(m)) => self.on_message(m),
                    Some(Err(e)) => {
                        self.core.input_closed();
                        return Err(e);
                    }
                    None => {
                        // The socket is gone both ways: answers could not be delivered.
                        self.core.input_closed();
                        return Ok(());
                    }
                },
                wake = self.core.wait(false) => self.core.apply(wake),
            }
        }
    }

    fn on_message(&mut self, m: WsMessage) {
        match m {
            WsMessage::Text(t) => {
                if self.mode == Mode::Proto {
                    let e = McpError::InvalidRequest(
                        "this connection speaks proto-mcp (binary messages)".into(),
                    );
                    return self.proto_out(McpMessage::error(0, &e));
                }
                self.mode = Mode::Json;
                let decoded = if t.len() > self.max {
                    Err(Malformed::new(
                        None,
                        McpError::MessageTooLarge { max: self.max },
                    ))
                } else {
                    decode_with_depth(t.as_bytes(), self.depth)
                };
                self.core.inbound(decoded);
            }
            WsMessage::Binary(b) => {
                if self.mode == Mode::Json {
                    let e = Malformed::invalid_request(
                        None,
                        "this connection speaks JSON-RPC (text messages)",
                    );
                    return self.core.inbound(Err(e));
                }
                self.mode = Mode::Proto;
                if b.len() > self.max {
                    let e = McpError::MessageTooLarge { max: self.max };
                    return self.proto_out(McpMessage::error(0, &e));
                }
                match decode_message(&b) {
                    Err(reply) => self.proto_out(reply),
                    Ok(msg) => match self.translator.inbound(msg) {
                        Inbound::Forward(m) => self.core.inbound(Ok(m)),
                        Inbound::Reply(r, _) => self.proto_out(r),
                    },
                }
            }
            // Pings are answered by the WebSocket layer; a close ends `recv`.
            WsMessage::Ping(_) | WsMessage::Pong(_) | WsMessage::Close(_) => {}
        }
    }

    fn proto_out(&mut self, m: McpMessage) {
        self.out.push(WsMessage::Binary(encode_message(&m).into()));
    }

    fn poll_ready(&mut self) {
        let (tr, mode) = (&mut self.translator, self.mode);
        self.core.poll_ready(&mut self.out, Outbox::full, |out, t| {
            if mode == Mode::Proto {
                if let Some(m) = tr.outbound(&t.msg) {
                    out.push(WsMessage::Binary(encode_message(&m).into()));
                }
            } else {
                out.push(WsMessage::Text(t.msg.to_json_string().into()));
            }
        });
    }
}
