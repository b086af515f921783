//! One MCPB connection: version negotiation, token authentication, then MCP messages to a
//! [`ServerSession`], with health checks, per-message tokens, expiry and graceful shutdown.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use mcpwire_model::{McpError, Message, Outbound, Request, RequestId, to_raw};
use mcpwire_session::ServerSession;
use mcpwire_wire::FramingError;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut, VersionAck};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;
use tokio_util::codec::{Encoder, FramedRead};

use super::Shared;
use crate::calls::{Calls, recv_event, sleep_until};

/// Frames handled between two writes, so a flood of input cannot starve output.
const READ_BURST: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first frame must be a version offer.
    Version,
    /// Authenticate (a token `initialize`), or, with authentication off, go on.
    Auth,
    /// MCP messages flow.
    Ready,
}

struct Conn {
    shared: Arc<Shared>,
    reader: FramedRead<tokio::net::tcp::OwnedReadHalf, McpbCodec>,
    writer: OwnedWriteHalf,
    codec: McpbCodec,
    wbuf: BytesMut,
    session: ServerSession,
    calls: Calls,
    phase: Phase,
    reader_open: bool,
    /// Close once everything written is flushed.
    closing: bool,
    /// When the handshake must be done by.
    handshake_by: Instant,
    /// Last frame received, or last ping sent.
    quiet_since: Instant,
    ping_outstanding: bool,
    expires: Option<Instant>,
    /// Set when shutdown began: the connection must be gone by then.
    shutdown_by: Option<Instant>,
    shutdown_acked: bool,
}

/// Serves one accepted connection until it closes.
pub(crate) async fn serve(shared: Arc<Shared>, stream: TcpStream) {
    let limits = shared.service.limits.clone();
    let (r, w) = stream.into_split();
    let now = Instant::now();
    let mut conn = Conn {
        session: ServerSession::new(shared.service.config.clone()),
        calls: Calls::new(shared.service.router.clone()),
        reader: FramedRead::with_capacity(r, McpbCodec::server(&limits), 64 * 1024),
        writer: w,
        codec: McpbCodec::server(&limits),
        wbuf: BytesMut::with_capacity(64 * 1024),
        phase: Phase::Version,
        reader_open: true,
        closing: false,
        handshake_by: now + shared.config.handshake_timeout,
        quiet_since: now,
        ping_outstanding: false,
        expires: None,
        shutdown_by: None,
        shutdown_acked: false,
        shared,
    };
    let active = conn.shared.active.fetch_add(1, Ordering::Relaxed) + 1;
    if active > conn.shared.config.max_connections {
        conn.fail("too many connections");
    }
    if let Err(e) = conn.run().await {
        tracing::debug!(target: "mcpwire::mcpb", error = %e, "connection ended with an error");
    }
    conn.session.handle_peer_closed();
    conn.shared.active.fetch_sub(1, Ordering::Relaxed);
}

impl Conn {
    async fn run(&mut self) -> std::io::Result<()> {
        let busy_poll = self.shared.service.busy_poll;
        let mut just_spun = false;
        loop {
            self.pump();
            if self.shared.shutdown.is_cancelled() && self.shutdown_by.is_none() {
                self.begin_shutdown();
            }
            self.check_done();
            if self.closing && self.wbuf.is_empty() {
                break;
            }
            if !just_spun && !busy_poll.is_zero() && self.reader_open && self.wbuf.is_empty() {
                // As the stdio driver: poll a little before sleeping (an idle vCPU is slow to
                // wake), then re-check everything from the top.
                just_spun = true;
                self.spin(busy_poll).await;
                continue;
            }
            just_spun = false;
            let timeout = self.session.poll_timeout();
            let edge_at = self.next_edge_timer();
            tokio::select! {
                biased;
                r = self.writer.write_buf(&mut self.wbuf), if !self.wbuf.is_empty() => {
                    if r? == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                }
                frame = self.reader.next(), if self.reader_open && !self.closing => self.on_frame(frame),
                Some((id, reply)) = self.calls.calls.next(), if !self.calls.is_empty() => {
                    self.calls.on_done(&mut self.session, id, reply);
                }
                Some(msg) = self.calls.peer_rx.recv() => self.calls.on_peer(&mut self.session, *msg),
                ev = recv_event(&mut self.calls.events) => self.calls.on_backend(&mut self.session, ev),
                _ = sleep_until(timeout) => self.session.handle_timeout(Instant::now()),
                _ = sleep_until(Some(edge_at)) => self.on_edge_timer(),
                _ = self.shared.shutdown.cancelled(), if self.shutdown_by.is_none() => self.begin_shutdown(),
            }
            self.drain();
        }
        self.writer.flush().await?;
        self.writer.shutdown().await
    }

    /// Does the work that is ready without waiting (a bounded burst), then moves session
    /// output to the write buffer.
    fn pump(&mut self) {
        for _ in 0..READ_BURST {
            let mut progressed = false;
            if self.reader_open
                && !self.closing
                && let Some(frame) = self.reader.next().now_or_never()
            {
                self.on_frame(frame);
                progressed = true;
            }
            progressed |= self.calls.poll_ready(&mut self.session);
            self.drain();
            if !progressed {
                break;
            }
        }
    }

    /// Polls input and finished calls without parking the thread, for up to `d`.
    async fn spin(&mut self, d: std::time::Duration) {
        let until = Instant::now() + d;
        loop {
            tokio::task::yield_now().await;
            std::thread::yield_now();
            if !self.closing
                && let Some(frame) = self.reader.next().now_or_never()
            {
                self.on_frame(frame);
                return;
            }
            if !self.calls.is_empty() && self.calls.poll_ready(&mut self.session) {
                return;
            }
            if Instant::now() >= until {
                return;
            }
        }
    }

    /// The next handshake, idle, expiry or shutdown deadline.
    fn next_edge_timer(&self) -> Instant {
        let mut at = if self.phase == Phase::Ready {
            self.quiet_since + self.shared.config.idle_ping
        } else {
            self.handshake_by
        };
        for t in [self.expires, self.shutdown_by].into_iter().flatten() {
            at = at.min(t);
        }
        at
    }

    fn on_edge_timer(&mut self) {
        let now = Instant::now();
        if self.shutdown_by.is_some_and(|t| t <= now) {
            tracing::debug!(target: "mcpwire::mcpb", "shutdown grace period over; closing");
            self.closing = true;
        } else if self.expires.is_some_and(|t| t <= now) {
            self.fail("session expired");
        } else if self.phase != Phase::Ready && self.handshake_by <= now {
            self.fail("handshake timed out");
        } else if self.phase == Phase::Ready
            && self.quiet_since + self.shared.config.idle_ping <= now
        {
            if self.ping_outstanding {
                tracing::debug!(target: "mcpwire::mcpb", "no answer to the health check; closing");
                self.closing = true;
            } else {
                self.write(McpbOut::Health(None));
                self.ping_outstanding = true;
                self.quiet_since = now;
            }
        }
    }

    fn on_frame(&mut self, frame: Option<Result<McpbFrame, FramingError>>) {
        let frame = match frame {
            Some(Ok(f)) => f,
            Some(Err(FramingError::Fatal(reason))) => {
                tracing::debug!(target: "mcpwire::mcpb", %reason, "mcp_gateway_tcp_protocol_errors_total");
                return self.fail(&reason);
            }
            Some(Err(e)) => {
                tracing::debug!(target: "mcpwire::mcpb", error = %e, "input failed");
                self.reader_open = false;
                self.closing = true;
                return;
            }
            None => {
                self.reader_open = false;
                self.session.handle_peer_closed();
                return;
            }
        };
        self.quiet_since = Instant::now();
        self.ping_outstanding = false;
        match (self.phase, frame) {
            (_, McpbFrame::Health(request)) => self.on_health(request),
            (_, McpbFrame::PeerError(text)) => {
                tracing::debug!(target: "mcpwire::mcpb", %text, "the client reported a protocol error");
            }
            (_, McpbFrame::Refused(why)) => self.write(McpbOut::Error(&why)),
            (Phase::Version, McpbFrame::Version(offer)) => match offer.negotiate() {
                Some(v) => {
                    self.write(McpbOut::VersionAck(VersionAck { agreed_version: v }));
                    self.phase = Phase::Auth;
                }
                None => self.fail("no protocol version in common (this server speaks 1)"),
            },
            (Phase::Version, _) => self.fail("the first frame must be a version negotiation"),
            (_, McpbFrame::Version(_) | McpbFrame::VersionAck(_)) => {
                self.write(McpbOut::Error("the version is already agreed"))
            }
            (_, McpbFrame::Control(v)) => self.on_control(&v),
            (Phase::Auth, McpbFrame::Mcp { msg, .. }) => self.on_auth(msg),
            (Phase::Ready, McpbFrame::Mcp { auth_token, msg }) => self.on_mcp(auth_token, msg),
        }
    }

    fn on_health(&mut self, request: Option<Value>) {
        match request {
            // An empty frame answers our ping, or is the client's ping.
            None if self.ping_outstanding => {}
            None => self.write(McpbOut::Health(None)),
            Some(r) => {
                let report = self.shared.health(Some(&r));
                self.write(McpbOut::Health(Some(&report)));
            }
        }
    }

    fn on_control(&mut self, v: &Value) {
        match v["command"].as_str() {
            Some("shutdown_ack") => self.shutdown_acked = true,
            other => {
                tracing::debug!(target: "mcpwire::mcpb", command = ?other, "control message ignored")
            }
        }
    }

    /// Authentication: a token `initialize` (params with `token`, no `protocolVersion`).
    /// With authentication off, an MCP message instead goes straight to the session.
    fn on_auth(&mut self, msg: Result<Message, mcpwire_model::Malformed>) {
        let token_init = match &msg {
            Ok(Message::Request(r)) if r.method.as_str() == "initialize" => token_of(r),
            _ => None,
        };
        let Some((id, token)) = token_init else {
            if self.shared.auth() {
                return self.fail("authenticate first: initialize with params.token");
            }
            self.phase = Phase::Ready;
            self.expires = None;
            return self.session.handle_inbound(Instant::now(), msg);
        };
        if self.shared.auth() && !self.shared.token_ok(&token) {
            tracing::debug!(target: "mcpwire::mcpb", "authentication failed");
            self.refuse(id, McpError::Unauthenticated("unknown token".into()));
            self.closing = true;
            return;
        }
        let Some(session_id) = super::new_session_id() else {
            return self.fail("the OS random number generator failed");
        };
        let ttl = self.shared.config.session_ttl;
        let result = json!({
            "sessionId": session_id,
            "expiresAt": super::rfc3339(SystemTime::now() + ttl),
        });
        self.write(McpbOut::Mcp(&Outbound::Response {
            id,
            result: to_raw(&result),
        }));
        self.phase = Phase::Ready;
        self.expires = Some(Instant::now() + ttl);
    }

    fn on_mcp(&mut self, token: Option<String>, msg: Result<Message, mcpwire_model::Malformed>) {
        if let Ok(Message::Request(r)) = &msg {
            let token_refused = match &token {
                Some(t) => self.shared.auth() && !self.shared.token_ok(t),
                None => self.shared.config.per_message_auth,
            };
            if token_refused {
                let e = McpError::Unauthenticated("missing or unknown auth_token".into());
                return self.refuse(r.id.clone(), e);
            }
            if self.shutdown_by.is_some() {
                let e = McpError::Unavailable("the server is shutting down".into());
                return self.refuse(r.id.clone(), e);
            }
        }
        self.session.handle_inbound(Instant::now(), msg);
    }

    fn begin_shutdown(&mut self) {
        self.shutdown_by = Some(Instant::now() + self.shared.config.shutdown_grace);
        if self.phase == Phase::Ready {
            self.write(McpbOut::Control(&json!({ "command": "shutdown" })));
        } else {
            self.closing = true;
        }
    }

    /// A shutting-down connection closes once the client acknowledged (or closed its side)
    /// and no call is in flight; a closed input with nothing in flight closes it too.
    fn check_done(&mut self) {
        let idle = self.calls.is_empty() && self.session.in_flight() == 0;
        if !idle {
            return;
        }
        if !self.reader_open || (self.shutdown_by.is_some() && self.shutdown_acked) {
            self.closing = true;
        }
    }

    /// Sends an Error frame and closes.
    fn fail(&mut self, reason: &str) {
        self.write(McpbOut::Error(reason));
        self.closing = true;
    }

    /// Answers request `id` with `e` (MCPB has no codes of its own: the table's −32600).
    fn refuse(&mut self, id: RequestId, e: McpError) {
        self.write(McpbOut::Mcp(&Outbound::Error {
            id: Some(id),
            error: e.to_wire_unnegotiated(),
        }));
    }

    fn write(&mut self, out: McpbOut<'_>) {
        if let Err(e) = self.codec.encode(out, &mut self.wbuf) {
            tracing::error!(error = %e, "could not encode an MCPB frame");
        }
    }

    /// Session output to the write buffer.
    fn drain(&mut self) {
        let (codec, wbuf) = (&mut self.codec, &mut self.wbuf);
        self.calls.drain(&mut self.session, |t| {
            if let Err(e) = codec.encode(McpbOut::Mcp(&t.msg), wbuf) {
                tracing::error!(error = %e, "could not encode a message");
            }
        });
    }
}

/// The id and token of an authentication `initialize` (params with a string `token` and no
/// `protocolVersion`).
fn token_of(r: &Request) -> Option<(RequestId, String)> {
    let params: Value = serde_json::from_str(r.params.as_ref()?.get()).ok()?;
    if params.get("protocolVersion").is_some() {
        return None;
    }
    let token = params.get("token")?.as_str()?.to_owned();
    Some((r.id.clone(), token))
}
