//! One MCPB connection: version negotiation, token authentication, then MCP messages to a
//! [`ServerSession`], with health checks, per-message tokens, expiry and graceful shutdown.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use super::shapes::Shapes;
use bytes::BytesMut;
use mcpwire_model::{McpError, Message, Method, Outbound, Request, RequestId, to_raw};
use mcpwire_router::{BoxFuture, Identity};
use mcpwire_session::ServerSession;
use mcpwire_session::Transmit;
use mcpwire_wire::json_frame;
use mcpwire_wire::mcpb::{
    MAX_TOKEN, McpbCodec, McpbFrame, McpbOut, McpbShape, VersionAck, valid_request_id,
};
use mcpwire_wire::{Decoded, FramingError};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Encoder;
use tokio_util::sync::CancellationToken;

use super::McpbListenerState;
use crate::driver::framed::output_full;
use crate::driver::{Calls, Endpoint, FramedDriver, ServerCore, Status, Wake, now};
use crate::identify::{AuthFailure, Check};
use crate::observe::{Counted, Direction, FrameKind, McpbMetrics, ProtocolError, WireLabel};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The first frame must be a version offer.
    Version,
    /// Authenticate (a token `initialize`), or, with authentication off, go on.
    Auth,
    /// MCP messages flow.
    Ready,
}

/// The server side of one MCPB connection, run by the framed driver.
pub(crate) struct McpbConnection {
    listener: Arc<McpbListenerState>,
    core: ServerCore,
    /// Encodes what this side writes.
    codec: McpbCodec,
    phase: Phase,
    /// Close once everything written is flushed.
    closing: bool,
    /// When the handshake must be done by.
    handshake_by: Instant,
    /// Last frame received, or last ping sent.
    quiet_since: Instant,
    ping_outstanding: bool,
    expires: Option<Instant>,
    /// The listener's shutdown, as this connection's own token: waiting on it takes no
    /// lock that every connection shares (a waiter on the listener's token did, at each
    /// wake-up of every connection).
    shutdown: CancellationToken,
    /// Set when shutdown began: the connection must be gone by then.
    shutdown_by: Option<Instant>,
    shutdown_acked: bool,
    /// Fires at the earliest handshake, idle, expiry or shutdown deadline it was armed for
    /// (re-armed only when a deadline moves earlier; a wake-up before any is due re-arms it).
    edge_timer: Pin<Box<tokio::time::Sleep>>,
    edge_armed: Instant,
    /// How the client lays out MCP messages; each answer follows its request's.
    shapes: Shapes,
    /// The authenticating `initialize` whose MCP answer (from the session) must also carry
    /// the session id and expiry.
    auth_answer: Option<AuthAnswer>,
    /// Who authenticated (`None`: authentication is off); every call carries it.
    identity: Option<Identity>,
    /// Who the client's TLS certificate names (mTLS): the identity when the listener has
    /// no authentication of its own.
    certificate: Option<Identity>,
    /// A token being verified (its signing keys are loading); no input is read meanwhile.
    verifying: Option<Verifying>,
    /// Set when the connection is over the connections per IP limit: its first request
    /// is answered with this, then it closes.
    over_ip_limit: Option<McpError>,
}

/// A verification in progress and what it decides.
struct Verifying {
    check: BoxFuture<'static, Result<Identity, AuthFailure>>,
    then: AfterVerify,
}

enum AfterVerify {
    /// The authenticating `initialize`.
    Open(AuthInit, Decoded),
    /// A request with a per-message token.
    Message(RequestId, Decoded),
}

/// What the answer to an authenticating `initialize` with standard params gets added.
struct AuthAnswer {
    id: RequestId,
    fields: serde_json::Map<String, Value>,
}

impl AuthAnswer {
    /// `msg` with the session id and expiry beside the standard result fields (an error
    /// stays as it is).
    fn add_to(self, msg: Outbound) -> Outbound {
        let Outbound::Response { id, result } = msg else {
            return msg;
        };
        let mut fields = match serde_json::from_str::<Value>(result.get()) {
            Ok(Value::Object(m)) => m,
            _ => return Outbound::Response { id, result },
        };
        fields.extend(self.fields);
        Outbound::Response {
            id,
            result: to_raw(&fields),
        }
    }
}

/// What an MCPB connection wakes up for besides its session.
pub(crate) enum McpbWake {
    Core(Wake),
    /// The handshake, idle, expiry or shutdown timer.
    Edge,
    /// The server began shutting down.
    Shutdown,
    /// A token's verification finished.
    Verified(Result<Identity, AuthFailure>),
}

/// Serves one accepted connection (its two halves; `certificate`: who its TLS client
/// certificate names) until it closes.
pub(crate) async fn serve<R, W>(
    listener: Arc<McpbListenerState>,
    r: R,
    w: W,
    peer: std::net::SocketAddr,
    certificate: Option<Identity>,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let service = &listener.service;
    let (permit, over_ip_limit) = match service
        .connections
        .as_ref()
        .map(|c| c.admit(peer.ip(), WireLabel::Mcpb))
    {
        Some(Ok(p)) => (Some(p), None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let metrics = &listener.metrics;
    let (r, w) = (
        Counted::new(r, metrics.bytes_in.clone()),
        Counted::new(w, metrics.bytes_out.clone()),
    );
    metrics.connections.increment(1);
    metrics.active.increment(1.0);
    let now = now();
    let handshake_by = now + listener.config.handshake_timeout;
    let conn = McpbConnection {
        core: ServerCore::new(
            ServerSession::new(service.config.clone()),
            Calls::new(service.router.clone(), WireLabel::Mcpb)
                .with_client_ip(Some(peer.ip()))
                .with_identity(certificate.clone().filter(|_| listener.auth.is_none())),
        )
        .counted_connection(service.load.as_ref()),
        codec: McpbCodec::server(&service.limits),
        phase: Phase::Version,
        closing: false,
        handshake_by,
        quiet_since: now,
        ping_outstanding: false,
        expires: None,
        shutdown: listener.shutdown.child_token(),
        shutdown_by: None,
        shutdown_acked: false,
        edge_timer: Box::pin(tokio::time::sleep_until(handshake_by.into())),
        edge_armed: handshake_by,
        shapes: Shapes::default(),
        auth_answer: None,
        identity: certificate.clone().filter(|_| listener.auth.is_none()),
        certificate,
        verifying: None,
        over_ip_limit,
        listener: listener.clone(),
    };
    // MCP payloads come undecoded: a plain `tools/call` may be relayed as it came.
    let codec = McpbCodec::server(&service.limits).with_raw_mcp();
    let mut driver = FramedDriver::new(r, codec, w, conn, service.busy_poll);
    let active = listener.active.fetch_add(1, Ordering::Relaxed) + 1;
    if active > listener.config.max_connections {
        let (conn, out) = driver.endpoint_mut();
        conn.fail(out, "too many connections");
    }
    if let Err(e) = driver.run().await {
        tracing::debug!(target: "mcpwire::mcpb", error = %e, "connection ended with an error");
    }
    listener.active.fetch_sub(1, Ordering::Relaxed);
    drop(permit);
    listener.metrics.active.decrement(1.0);
}

impl Endpoint for McpbConnection {
    type Codec = McpbCodec;
    type Wake = McpbWake;

    fn on_frame(&mut self, frame: Option<Result<McpbFrame, FramingError>>, out: &mut BytesMut) {
        let started = Instant::now();
        let measured = frame.is_some();
        self.take_frame(frame, out);
        self.rearm();
        if measured {
            let seconds = started.elapsed().as_secs_f64();
            self.listener.metrics.frame_duration.record(seconds);
        }
    }

    fn poll_ready(&mut self, out: &mut BytesMut) -> bool {
        if self.shutdown_by.is_none() && self.shutdown.is_cancelled() {
            self.begin_shutdown(out);
        }
        // Relayed answers are framed by a copy (the session's messages borrow the codec).
        let relay_codec = self.codec.clone();
        let (codec, shapes, auth_answer) =
            (&mut self.codec, &mut self.shapes, &mut self.auth_answer);
        let metrics = &self.listener.metrics;
        let mut encode = |out: &mut BytesMut, t: Transmit| {
            let msg = match auth_answer.take_if(|a| t.msg.response_id() == Some(&a.id)) {
                Some(a) => a.add_to(t.msg),
                None => t.msg,
            };
            write_mcp(codec, shapes.outbound(&msg), &msg, out, metrics);
        };
        let relayed = !output_full(out)
            && self
                .core
                .take_relayed_framed(out, &mut encode, |out, line| {
                    write_relayed(&relay_codec, line, out, metrics)
                });
        self.core.poll_ready(out, output_full, encode) | relayed
    }

    async fn wait(&mut self, paused: bool) -> McpbWake {
        tokio::select! {
            biased;
            _ = self.shutdown.cancelled(), if self.shutdown_by.is_none() => McpbWake::Shutdown,
            _ = self.edge_timer.as_mut() => McpbWake::Edge,
            r = verified(&mut self.verifying) => McpbWake::Verified(r),
            w = self.core.wait(paused) => McpbWake::Core(w),
        }
    }

    fn apply(&mut self, wake: McpbWake, out: &mut BytesMut) {
        match wake {
            McpbWake::Core(w) => self.core.apply(w),
            McpbWake::Edge => self.on_edge_timer(out),
            McpbWake::Shutdown => self.begin_shutdown(out),
            McpbWake::Verified(r) => match self.verifying.take().map(|v| v.then) {
                Some(AfterVerify::Open(init, msg)) => self.open(out, init, msg, r.map(Some)),
                Some(AfterVerify::Message(id, msg)) => self.take_message(out, id, msg, r),
                None => {}
            },
        }
        self.rearm();
    }

    fn accepts_input(&self) -> bool {
        self.verifying.is_none()
    }

    /// Closing after a fault or a deadline; or once the client closed its side (or
    /// acknowledged a shutdown) and nothing is in flight.
    fn status(&mut self) -> Status {
        let acked = self.shutdown_by.is_some() && self.shutdown_acked && self.core.idle();
        if self.closing || acked || self.core.finished() {
            Status::Close
        } else {
            Status::Open
        }
    }
}

impl McpbConnection {
    /// The next handshake, idle, expiry or shutdown deadline.
    fn next_edge_timer(&self) -> Instant {
        let mut at = if self.phase == Phase::Ready {
            self.quiet_since + self.listener.config.idle_ping
        } else {
            self.handshake_by
        };
        for t in [self.expires, self.shutdown_by].into_iter().flatten() {
            at = at.min(t);
        }
        at
    }

    /// Moves the edge timer earlier when a deadline did.
    fn rearm(&mut self) {
        let at = self.next_edge_timer();
        if at < self.edge_armed {
            self.edge_armed = at;
            self.edge_timer.as_mut().reset(at.into());
        }
    }

    fn on_edge_timer(&mut self, out: &mut BytesMut) {
        let now = now();
        let config = &self.listener.config;
        if self.shutdown_by.is_some_and(|t| t <= now) {
            tracing::debug!(target: "mcpwire::mcpb", "shutdown grace period over; closing");
            self.closing = true;
        } else if self.expires.is_some_and(|t| t <= now) {
            self.fail(out, "session expired");
        } else if self.phase != Phase::Ready && self.handshake_by <= now {
            self.fail(out, "handshake timed out");
        } else if self.phase == Phase::Ready && self.quiet_since + config.idle_ping <= now {
            if self.ping_outstanding {
                tracing::debug!(target: "mcpwire::mcpb", "no answer to the health check; closing");
                self.closing = true;
            } else {
                self.write(out, McpbOut::Health(None));
                self.ping_outstanding = true;
                self.quiet_since = now;
            }
        }
        // Armed for what is due next (a wake-up before any deadline just re-arms).
        self.edge_armed = self.next_edge_timer();
        self.edge_timer.as_mut().reset(self.edge_armed.into());
    }

    fn take_frame(&mut self, frame: Option<Result<McpbFrame, FramingError>>, out: &mut BytesMut) {
        let frame = match frame {
            Some(Ok(McpbFrame::RawMcp(payload))) => {
                if self.relayed(&payload) {
                    return;
                }
                self.codec.decode_mcp(&payload)
            }
            Some(Ok(f)) => f,
            Some(Err(FramingError::Fatal(reason))) => {
                tracing::debug!(target: "mcpwire::mcpb", %reason, "protocol error");
                self.listener.metrics.protocol_error(ProtocolError::Framing);
                return self.fail(out, &reason);
            }
            Some(Err(e)) => {
                tracing::debug!(target: "mcpwire::mcpb", error = %e, "input failed");
                self.closing = true;
                return;
            }
            None => return self.core.input_closed(),
        };
        self.quiet_since = now();
        // An empty health frame while our ping is outstanding is its answer (not a ping of
        // the client's to answer: that would bounce pings back and forth forever).
        let answers_our_ping = self.ping_outstanding;
        self.ping_outstanding = false;
        if let McpbFrame::Mcp { shape, msg, .. } = &frame {
            self.shapes.inbound(*shape, msg);
        }
        let metrics = &self.listener.metrics;
        metrics.message(inbound_kind(&frame), Direction::Inbound);
        match (&frame, self.phase) {
            (McpbFrame::Refused(_), _) => metrics.protocol_error(ProtocolError::Refused),
            (McpbFrame::PeerError(_), _) => metrics.protocol_error(ProtocolError::Peer),
            (McpbFrame::Version(_) | McpbFrame::VersionAck(_), Phase::Auth | Phase::Ready)
            | (McpbFrame::Mcp { .. } | McpbFrame::Control(_), Phase::Version) => {
                metrics.protocol_error(ProtocolError::Sequence)
            }
            _ => {}
        }
        match (self.phase, frame) {
            (_, McpbFrame::Health(request)) => self.on_health(out, request, answers_our_ping),
            (_, McpbFrame::PeerError(text)) => {
                tracing::debug!(target: "mcpwire::mcpb", %text, "the client reported a protocol error");
            }
            (_, McpbFrame::Refused(why)) => self.write(out, McpbOut::Error(&why)),
            (Phase::Version, McpbFrame::Version(offer)) => match offer.negotiate() {
                Some(v) => {
                    self.write(out, McpbOut::VersionAck(VersionAck { agreed_version: v }));
                    self.phase = Phase::Auth;
                }
                None => self.fail(out, "no protocol version in common (this server speaks 1)"),
            },
            (Phase::Version, _) => self.fail(out, "the first frame must be a version negotiation"),
            (_, McpbFrame::Version(_) | McpbFrame::VersionAck(_)) => {
                self.write(out, McpbOut::Error("the version is already agreed"))
            }
            (_, McpbFrame::Control(v)) => self.on_control(&v),
            (
                Phase::Auth,
                McpbFrame::Mcp {
                    auth_token, msg, ..
                },
            ) => self.on_auth(out, auth_token, msg),
            (
                Phase::Ready,
                McpbFrame::Mcp {
                    auth_token, msg, ..
                },
            ) => self.on_mcp(out, auth_token, msg),
            // Decoded above (`decode_mcp` never yields it).
            (_, McpbFrame::RawMcp(_)) => {}
        }
    }

    /// Relays the frame `payload` when it is a plain `tools/call` the connection would
    /// hand its session as it came (`docs/design/gateway.md` § The relay on MCPB): authenticated,
    /// no per-message token required, not shutting down, every message so far plain
    /// JSON-RPC (answers take that shape), an id MCPB accepts; whether it was taken.
    fn relayed(&mut self, payload: &[u8]) -> bool {
        let relayable = self.phase == Phase::Ready
            && !self.listener.config.per_message_auth
            && self.shutdown_by.is_none()
            && self.shapes.all_plain()
            && self.core.may_relay();
        if !relayable {
            return false;
        }
        let max_depth = self.listener.service.limits.max_depth;
        let Some(call) = json_frame::plain_call(payload, max_depth) else {
            return false;
        };
        if !valid_request_id(call.request_id()) || !self.core.relay_plain(&call) {
            return false;
        }
        // What taking any frame does (`take_frame`): the connection is not quiet, an
        // outstanding ping is not answered by it, and it is counted.
        self.quiet_since = now();
        self.ping_outstanding = false;
        let metrics = &self.listener.metrics;
        metrics.message(FrameKind::Request, Direction::Inbound);
        true
    }

    fn on_health(&mut self, out: &mut BytesMut, request: Option<Value>, answers_our_ping: bool) {
        match request {
            // An empty frame answers our ping, or is the client's ping.
            None if answers_our_ping => {}
            None => self.write(out, McpbOut::Health(None)),
            Some(r) => {
                let report = self.listener.health(Some(&r));
                self.write(out, McpbOut::Health(Some(&report)));
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

    /// Authentication: an `initialize` with a token (`params.token`, or else the wrapper's
    /// `auth_token`) opens the MCP session too. With standard params riding along
    /// (`protocolVersion` …) the session negotiates with them and its answer carries the
    /// session id and expiry beside the standard fields; with the token alone the answer is
    /// just those, and the session starts provisionally initialized (the client's own
    /// `initialize`, if it sends one, is its real handshake). With authentication off, any
    /// MCP message may come first instead.
    fn on_auth(&mut self, out: &mut BytesMut, wrapper_token: Option<String>, msg: Decoded) {
        if let Some(refused) = self.over_ip_limit.take() {
            // Over the connections per IP limit: the first request is answered with the
            // rate limit's JSON-RPC error, then the connection closes.
            match &msg {
                Ok(Message::Request(r)) => self.refuse(out, r.id.clone(), refused),
                _ => self.write(
                    out,
                    McpbOut::Error("too many connections from this address"),
                ),
            }
            self.closing = true;
            return;
        }
        let init = match &msg {
            Ok(Message::Request(r)) if r.method == Method::Initialize => Some(AuthInit::of(r)),
            _ => None,
        };
        let auth = self.listener.auth.clone();
        let Some(mut init) = init else {
            if auth.is_some() {
                return self.fail(out, "authenticate first: initialize with a token");
            }
            self.phase = Phase::Ready;
            return self.core.inbound(msg);
        };
        let token = init.token.take().or(wrapper_token);
        let Some(auth) = auth else {
            if token.is_none() {
                // Authentication off and no token: an MCP initialize as on any wire.
                self.phase = Phase::Ready;
                return self.core.inbound(msg);
            }
            // Authentication off: any token opens a session.
            return self.open(out, init, msg, Ok(None));
        };
        if token.as_ref().is_some_and(|t| t.len() > MAX_TOKEN) {
            let too_long = AuthFailure::Malformed("token too long".into());
            crate::observe::auth_failure(too_long.kind());
            return self.open(out, init, msg, Err(too_long));
        }
        match auth.check(token.as_deref()) {
            Check::Done(r) => self.open(out, init, msg, r.map(Some)),
            Check::Wait(check) => {
                self.verifying = Some(Verifying {
                    check,
                    then: AfterVerify::Open(init, msg),
                })
            }
        }
    }

    /// Opens the session once the `initialize` token was checked (`Ok(None)`:
    /// authentication is off): answers with the session id and expiry, or refuses and
    /// closes.
    fn open(
        &mut self,
        out: &mut BytesMut,
        init: AuthInit,
        msg: Decoded,
        checked: Result<Option<Identity>, AuthFailure>,
    ) {
        let identity = match checked {
            Ok(id) => id.or_else(|| self.certificate.clone()),
            Err(failure) => {
                tracing::debug!(target: "mcpwire::mcpb", %failure, "authentication failed");
                self.refuse(out, init.id, failure.to_mcp_error());
                self.closing = true;
                return;
            }
        };
        let Some(session_id) = super::new_session_id() else {
            return self.fail(out, "the OS random number generator failed");
        };
        self.core.set_identity(identity.clone());
        self.identity = identity;
        let ttl = self.listener.config.session_ttl;
        let mut fields = serde_json::Map::new();
        fields.insert("sessionId".into(), Value::String(session_id));
        fields.insert(
            "expiresAt".into(),
            Value::String(super::rfc3339(SystemTime::now() + ttl)),
        );
        self.phase = Phase::Ready;
        self.expires = Some(now() + ttl);
        if init.standard {
            self.auth_answer = Some(AuthAnswer {
                id: init.id,
                fields,
            });
            return self.core.inbound(msg);
        }
        self.core.session = ServerSession::provisional(self.listener.service.config.clone());
        let answer = Outbound::Response {
            id: init.id,
            result: to_raw(&fields),
        };
        write_mcp(
            &mut self.codec,
            self.shapes.latest(),
            &answer,
            out,
            &self.listener.metrics,
        );
    }

    /// An MCP message after authentication. A request's per-message token (required with
    /// `per_message_auth`) must be valid and name the caller who opened the connection.
    fn on_mcp(&mut self, out: &mut BytesMut, token: Option<String>, msg: Decoded) {
        let Ok(Message::Request(r)) = &msg else {
            return self.core.inbound(msg);
        };
        let id = r.id.clone();
        let checked = match (token, &self.listener.auth) {
            (None, _) if self.listener.config.per_message_auth => {
                crate::observe::auth_failure(AuthFailure::Missing.kind());
                Err(AuthFailure::Missing)
            }
            (Some(t), Some(auth)) => match auth.check(Some(&t)) {
                Check::Done(r) => r,
                Check::Wait(check) => {
                    self.verifying = Some(Verifying {
                        check,
                        then: AfterVerify::Message(id, msg),
                    });
                    return;
                }
            },
            // No token, or authentication off: the connection's caller.
            _ => match &self.identity {
                Some(id) => Ok(id.clone()),
                None => return self.take_message(out, id, msg, Err(AuthFailure::Unknown)),
            },
        };
        self.take_message(out, id, msg, checked)
    }

    /// Hands a request to the session once its token was checked, or refuses it.
    fn take_message(
        &mut self,
        out: &mut BytesMut,
        id: RequestId,
        msg: Decoded,
        checked: Result<Identity, AuthFailure>,
    ) {
        let refusal = match (&checked, &self.identity) {
            (Err(AuthFailure::Unknown), None) if self.listener.auth.is_none() => None,
            (Err(f), _) => Some(f.to_mcp_error()),
            (Ok(caller), Some(owner)) if !owner.same_caller(caller) => Some(
                McpError::Unauthenticated("the auth_token is not the connection's caller".into()),
            ),
            _ => None,
        };
        if let Some(e) = refusal {
            return self.refuse(out, id, e);
        }
        if self.shutdown_by.is_some() {
            let e = McpError::Unavailable("the server is shutting down".into());
            return self.refuse(out, id, e);
        }
        self.core.inbound(msg);
    }

    fn begin_shutdown(&mut self, out: &mut BytesMut) {
        self.shutdown_by = Some(now() + self.listener.config.shutdown_grace);
        if self.phase == Phase::Ready {
            self.write(out, McpbOut::Control(&json!({ "command": "shutdown" })));
        } else {
            self.closing = true;
        }
    }

    /// Sends an Error frame and closes.
    fn fail(&mut self, out: &mut BytesMut, reason: &str) {
        self.write(out, McpbOut::Error(reason));
        self.closing = true;
    }

    /// Answers request `id` with `e`: a refused token, or a request while shutting down
    /// (MCPB has no codes of its own: the error table's −32600).
    fn refuse(&mut self, out: &mut BytesMut, id: RequestId, e: McpError) {
        let error = e.to_wire_unnegotiated();
        let refusal = Outbound::Error {
            id: Some(id),
            error,
        };
        write_mcp(
            &mut self.codec,
            self.shapes.latest(),
            &refusal,
            out,
            &self.listener.metrics,
        );
    }

    fn write(&mut self, out: &mut BytesMut, frame: McpbOut<'_>) {
        let kind = match &frame {
            McpbOut::Mcp(m) | McpbOut::Envelope(m) | McpbOut::AuthMcp(m, _) => outbound_kind(m),
            McpbOut::Control(_) => FrameKind::Control,
            McpbOut::Health(_) => FrameKind::HealthCheck,
            McpbOut::Version(_) | McpbOut::VersionAck(_) => FrameKind::Version,
            McpbOut::Error(_) => FrameKind::Error,
        };
        self.listener.metrics.message(kind, Direction::Outbound);
        if let Err(e) = self.codec.encode(frame, out) {
            tracing::error!(error = %e, "could not encode an MCPB frame");
        }
    }
}

/// Writes an MCP message in the client's shape.
fn write_mcp(
    codec: &mut McpbCodec,
    shape: Option<McpbShape>,
    msg: &Outbound,
    out: &mut BytesMut,
    metrics: &McpbMetrics,
) {
    metrics.message(outbound_kind(msg), Direction::Outbound);
    let frame = match shape {
        Some(McpbShape::Envelope) => McpbOut::Envelope(msg),
        _ => McpbOut::Mcp(msg),
    };
    if let Err(e) = codec.encode(frame, out) {
        tracing::error!(error = %e, "could not encode a message");
    }
}

/// Writes the answer `line` of a relayed call (its newline included) as a Response frame;
/// one over the frame limit is answered as [`write_mcp`] answers it.
fn write_relayed(codec: &McpbCodec, line: &[u8], out: &mut BytesMut, metrics: &McpbMetrics) {
    let payload = line.strip_suffix(b"\n").unwrap_or(line);
    match codec.encode_raw_mcp(payload, out) {
        Ok(true) => metrics.message(FrameKind::Response, Direction::Outbound),
        Ok(false) => {
            // Over the limit: the general path's refusal, for the same id.
            if let Ok(Message::Response(r)) = mcpwire_model::jsonrpc::decode(payload)
                && let Ok(result) = r.outcome
            {
                let msg = Outbound::Response { id: r.id, result };
                write_mcp(
                    &mut codec.clone(),
                    Some(McpbShape::Plain),
                    &msg,
                    out,
                    metrics,
                );
            }
        }
        Err(e) => tracing::error!(error = %e, "could not encode a relayed answer"),
    }
}

/// The verification in progress, if any (pending forever when there is none).
async fn verified(verifying: &mut Option<Verifying>) -> Result<Identity, AuthFailure> {
    match verifying {
        Some(v) => v.check.as_mut().await,
        None => std::future::pending().await,
    }
}

/// What an `initialize` during authentication carries.
struct AuthInit {
    id: RequestId,
    /// `params.token`, if a string.
    token: Option<String>,
    /// Standard `initialize` params ride along (`protocolVersion` is present).
    standard: bool,
}

impl AuthInit {
    fn of(r: &Request) -> AuthInit {
        let params: Value = r
            .params
            .as_ref()
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_default();
        AuthInit {
            id: r.id.clone(),
            token: params["token"].as_str().map(str::to_owned),
            standard: params.get("protocolVersion").is_some(),
        }
    }
}

/// The `type` label of an inbound frame.
fn inbound_kind(frame: &McpbFrame) -> FrameKind {
    match frame {
        McpbFrame::Mcp { msg, .. } => match msg {
            Ok(Message::Request(_)) => FrameKind::Request,
            Ok(Message::Notification(_)) => FrameKind::Notification,
            Ok(_) => FrameKind::Response,
            Err(_) => FrameKind::Invalid,
        },
        McpbFrame::Health(_) => FrameKind::HealthCheck,
        McpbFrame::Version(_) | McpbFrame::VersionAck(_) => FrameKind::Version,
        McpbFrame::Control(_) => FrameKind::Control,
        McpbFrame::PeerError(_) => FrameKind::Error,
        McpbFrame::Refused(_) => FrameKind::Refused,
        // Counted once decoded (or relayed).
        McpbFrame::RawMcp(_) => FrameKind::Request,
    }
}

/// The `type` label of an outbound MCP message.
fn outbound_kind(msg: &Outbound) -> FrameKind {
    match msg {
        Outbound::Response { .. } | Outbound::Error { .. } => FrameKind::Response,
        Outbound::Notification { .. } => FrameKind::Notification,
        Outbound::Request { .. } => FrameKind::Request,
    }
}
