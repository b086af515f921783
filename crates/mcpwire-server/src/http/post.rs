//! `POST`: one JSON-RPC message from the client, validated and routed.
//!
//! Checks, in order: `Origin`/`Host` (403) and the credential when the service authenticates
//! (401/403 with a challenge), both by the [`Caller`] extractor, `Content-Type:
//! application/json` (415),
//! `Accept` listing both JSON and SSE (406), body size (413) and arrival in time (408),
//! JSON-RPC shape (400). Then:
//! with `Mcp-Session-Id` → that session (404 if unknown); without it, a request carrying
//! the 2026-07-28 envelope or version header → a stateless exchange; `initialize` → a new
//! session; anything else → 400.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::CONNECTION;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use mcpwire_model::captured::{Captured, decode_capturing};
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::types::UriParams;
use mcpwire_model::{McpError, Message, Method, Request, Revision};
use mcpwire_router::Identity;
use mcpwire_wire::json_frame::PlainFrame;

use super::App;
use super::auth::Caller;
use super::body::{self, BodyError};
use super::headers::{
    self, Accept, PROTOCOL_VERSION, PROTOCOL_VERSION_HEADER, SESSION_ID, SESSION_ID_HEADER,
};
use super::locate::{Located, locate, mint};
use super::reply;
use super::route_headers::{self, LastMeta, ParamsRead, read_params};
use super::seamed::{self, Seamed};
use super::session::cancelled_request;
use super::stateless::Exchange;
use crate::driver::exchange::RequestFrom;
use crate::observe::TraceParent;

/// Handles a `POST` to the endpoint.
pub(crate) async fn handle<B>(
    State(app): State<Arc<App>>,
    Caller {
        identity,
        addr,
        last_meta,
    }: Caller,
    headers: HeaderMap,
    body: B,
) -> Response
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let ip = Some(addr.ip());
    if !headers::is_json_body(&headers) {
        let e = McpError::UnsupportedMediaType("Content-Type must be application/json".into());
        return reply::refuse(None, e);
    }
    let accept = Accept::of(&headers);
    if !(accept.json && accept.sse) {
        let e = McpError::NotAcceptable(
            "Accept must list application/json and text/event-stream".into(),
        );
        return reply::refuse(None, e);
    }
    let max = app.service.limits.max_message_bytes;
    let bytes = match read_body(body, &headers, max, app.config.read_timeout).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let max_depth = app.service.limits.max_depth;
    let sid = headers::text(&headers, SESSION_ID_HEADER);
    // A session's plain `tools/call` goes to it undecoded: it may be relayed as it came.
    let plain = match sid {
        Ok(Some(_)) if app.service.router.may_relay() => {
            PlainFrame::new(bytes.clone(), max_depth).ok()
        }
        _ => None,
    };
    // Without a session, the params' top-level members are read with the envelope (such a
    // request reads them: its `_meta`, routed members, a `tools/call`'s name and
    // arguments); a session's requests need only the envelope.
    let decoded = match (plain, &sid) {
        (Some(frame), _) => Ok((Posted::Plain(frame), None)),
        (None, Ok(None)) => {
            decode_capturing(&bytes, max_depth).map(|(m, c)| (Posted::Message(m), c))
        }
        (None, _) => decode_with_depth(&bytes, max_depth).map(|m| (Posted::Message(m), None)),
    };
    let (msg, captured) = match decoded {
        Ok(decoded) => decoded,
        Err(bad) => return reply::error_object(bad.id, bad.error),
    };
    let Ok(version) = headers::text(&headers, PROTOCOL_VERSION_HEADER) else {
        return bad_header(PROTOCOL_VERSION);
    };
    match (sid, msg) {
        (Err(()), _) => bad_header(SESSION_ID),
        (Ok(Some(sid)), msg) => {
            let sent = Sent {
                msg,
                bytes: &bytes,
                trace: TraceParent::from_headers(&headers),
            };
            with_session(&app, sid, version, sent, identity.as_ref(), ip).await
        }
        (Ok(None), Posted::Message(msg)) => {
            let last = Some(&*last_meta);
            // Each boxed: a session's requests (most) need none of their futures.
            let read = (captured.as_ref(), last);
            match without_session(&app, &headers, version, msg, read, identity, ip) {
                Sessionless::Answered(response) => response,
                Sessionless::Stateless(exchange) => Box::pin(answer_stateless(exchange)).await,
                Sessionless::Initialize(req, identity) => {
                    let trace = TraceParent::from_headers(&headers);
                    Box::pin(initialize(&app, req, identity, ip, trace)).await
                }
            }
        }
        // Only a session's calls are read as plain.
        (Ok(None), Posted::Plain(frame)) => {
            reply::refuse(Some(frame.request_id().clone()), McpError::SessionRequired)
        }
    }
}

/// A client's message as the handler read it.
enum Posted {
    /// Decoded.
    Message(Message),
    /// A plain `tools/call` (`json_frame::plain_call`), left as it came: its session may
    /// relay it.
    Plain(PlainFrame),
}

/// Reads the whole body: 413 past `max` bytes, 408 (closing the connection) if it has not
/// all arrived within `timeout`, 400 if the connection broke.
async fn read_body<B>(
    body: B,
    headers: &HeaderMap,
    max: usize,
    timeout: Duration,
) -> Result<Bytes, Response>
where
    B: hyper::body::Body<Data = Bytes> + Unpin,
    B::Error: std::fmt::Display,
{
    let too_big = || reply::refuse(None, McpError::MessageTooLarge { max });
    let declared = headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_big());
    }
    let Ok(read) = tokio::time::timeout(timeout, body::read_to_limit(body, max)).await else {
        tracing::debug!(?timeout, "request body not received in time");
        let secs = timeout.as_secs_f64();
        let mut r = reply::refuse(None, McpError::BodyTimeout { secs });
        // The rest of the body may still come: this connection cannot be reused.
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        return Err(r);
    };
    match read {
        Ok(bytes) => Ok(bytes),
        Err(BodyError::TooLarge { .. }) => Err(too_big()),
        Err(BodyError::Read(e)) => {
            tracing::debug!(error = %e, "could not read a request body");
            let e = McpError::InvalidRequest("could not read the body".into());
            Err(reply::refuse(None, e))
        }
    }
}

fn bad_header(name: &str) -> Response {
    reply::refuse(None, McpError::BadHeader(format!("invalid {name} header")))
}

fn unsupported_version(version: &str) -> Response {
    let e = McpError::BadHeader(format!("unsupported MCP-Protocol-Version: {version}"));
    reply::refuse(None, e)
}

fn session_not_found() -> Response {
    reply::refuse(None, McpError::SessionNotFound)
}

/// A client's message, as read and as it sent it (the bytes are what is relayed to
/// another replica, or to an upstream).
struct Sent<'a> {
    msg: Posted,
    bytes: &'a Bytes,
    /// The caller's trace context (`traceparent`), when tracing is on.
    trace: Option<TraceParent>,
}

async fn with_session(
    app: &App,
    sid: &str,
    version: Option<&str>,
    sent: Sent<'_>,
    identity: Option<&Identity>,
    ip: Option<IpAddr>,
) -> Response {
    // A session answers only the caller that opened it: to anyone else it does not exist.
    let Located {
        key: sid,
        handle: session,
    } = match locate(app, sid, identity, ip).await {
        Ok(found) => found,
        Err(e) => return reply::refuse(None, e),
    };
    let sid = &*sid;
    if let Some(v) = version
        && Revision::parse(v).is_none()
    {
        return unsupported_version(v);
    }
    if let Some(answered) = relay(app, sid, &sent).await {
        return answered;
    }
    let msg = match sent.msg {
        Posted::Message(msg) => msg,
        Posted::Plain(frame) => {
            let id = frame.request_id().clone();
            let gone = || match app.sessions.get(sid) {
                Some(_) => reply::empty_stream(),
                None => session_not_found(),
            };
            let stream = match seamed::relay(&session, &frame, sent.trace.as_ref()).await {
                Seamed::Answered(response) => return response,
                Seamed::Ended => return gone(),
                Seamed::Session(stream) => stream,
                Seamed::Declined => match session.plain_call(frame, sent.trace).await {
                    Ok(stream) => stream,
                    Err(_) => return session_not_found(),
                },
            };
            return match reply::answer_session(stream, &id).await {
                Some(a) => a.response,
                None if app.sessions.get(sid).is_some() => reply::empty_stream(),
                None => session_not_found(),
            };
        }
    };
    match msg {
        Message::Request(req) => {
            let id = req.id.clone();
            let subscription = subscription_change(&req);
            let Ok(stream) = session.request(req, sent.trace).await else {
                return session_not_found();
            };
            match reply::answer_session(stream, &id).await {
                Some(a) => {
                    if !a.error
                        && let Some((uri, on)) = subscription
                    {
                        share_subscription(app, sid, &uri, on).await;
                    }
                    a.response
                }
                // Ended without a word: cancelled by the client (nothing more will come),
                // or the session went away.
                None if app.sessions.get(sid).is_some() => reply::empty_stream(),
                None => session_not_found(),
            }
        }
        other => {
            // A cancellation of a call its handler relays itself ends it there; the session
            // hears it too (it may hold the call by now).
            if let Some(id) = cancelled_request(&other) {
                session.seam.cancel(&id);
            }
            match session.message(other).await {
                Ok(()) => reply::accepted(),
                Err(_) => session_not_found(),
            }
        }
    }
}

/// In a replica set, sends what belongs to a request held by another replica there
/// ([`crate::directory::SessionDirectory::relay`]): the answer to another endpoint's ask is
/// relayed (202, or 503 while the directory is unavailable) and not delivered here (`Some`);
/// a cancellation is relayed to every replica and still delivered here (`None`).
async fn relay(app: &App, sid: &str, sent: &Sent<'_>) -> Option<Response> {
    let shared = app.directory.as_ref()?;
    let (directory, me) = (&shared.directory, &*shared.endpoint);
    let Posted::Message(msg) = &sent.msg else {
        return None;
    };
    match msg {
        Message::Response(r) => {
            let owner = directory.asked_elsewhere(me, &r.id)?;
            Some(
                match directory.relay(me, Some(owner), sid, sent.bytes).await {
                    Ok(()) => reply::accepted(),
                    Err(e) => {
                        tracing::warn!(error = %e, "could not relay an answer to another replica");
                        let e = McpError::Unavailable(
                            "shared session state is unavailable; try again shortly".into(),
                        );
                        reply::refuse(None, e)
                    }
                },
            )
        }
        Message::Notification(n) if n.method == Method::NotificationsCancelled => {
            if let Err(e) = directory.relay(me, None, sid, sent.bytes).await {
                tracing::warn!(error = %e, "could not relay a cancellation to the other replicas");
            }
            None
        }
        _ => None,
    }
}

/// The resource a `resources/subscribe` (`true`) or `resources/unsubscribe` names.
fn subscription_change(req: &Request) -> Option<(String, bool)> {
    let on = match req.method {
        Method::ResourcesSubscribe => true,
        Method::ResourcesUnsubscribe => false,
        _ => return None,
    };
    let p: UriParams = serde_json::from_str(req.params.as_deref()?.get()).ok()?;
    Some((p.uri, on))
}

/// In a replica set, shares a subscription change this replica took: kept in the session
/// directory (for replicas rebuilding the session later) and told to the replicas holding
/// the session now, so whichever has the client's `GET` stream sends the updates. A failure
/// is logged: the subscription still holds on this replica.
async fn share_subscription(app: &App, sid: &str, uri: &str, on: bool) {
    let Some(shared) = &app.directory else {
        return;
    };
    let ttl = app.config.session_idle;
    let me = &shared.endpoint;
    if let Err(e) = shared
        .directory
        .share_subscription(me, sid, uri, on, ttl)
        .await
    {
        tracing::warn!(error = %e, "could not share a resource subscription with the other replicas");
    }
}

/// What a message without a session comes to ([`without_session`]).
enum Sessionless {
    /// Answered already (refused, or a notification accepted).
    Answered(Response),
    /// A stateless request, running: its answer is awaited.
    Stateless(Exchange),
    /// An `initialize` by this identity: a new session.
    Initialize(Request, Option<Identity>),
}

/// Decides what a message without a session comes to: a stateless request's exchange
/// (started), a new session's `initialize`, or a refusal. Not `async`: what is awaited
/// after it is boxed apart, each future the size of its own path.
fn without_session(
    app: &App,
    headers: &HeaderMap,
    version: Option<&str>,
    msg: Message,
    (captured, last_meta): (Option<&Captured<'_>>, Option<&LastMeta>),
    identity: Option<Identity>,
    ip: Option<IpAddr>,
) -> Sessionless {
    // The params' members as the decoder captured them (else read here, once): the
    // `_meta` chooses the era here, a stateless request's headers are checked against it
    // and its session takes it as it is; with it, where the members `Mcp-Name` mirrors
    // are, and a `tools/call`'s name and arguments for the router.
    let read = match &msg {
        Message::Request(r) => read_params(&r.method, r.params.as_deref(), captured, last_meta),
        _ => ParamsRead::unread(Ok(None)),
    };
    let enveloped = matches!(&read.meta, Ok(Some(m)) if m.protocol_version.is_some());
    if enveloped || version == Some(Revision::STATELESS.as_str()) {
        let sent = Stateless { msg, read };
        return stateless(app, headers, version, sent, identity, ip);
    }
    if let Some(v) = version
        && Revision::parse(v).is_none()
    {
        return Sessionless::Answered(unsupported_version(v));
    }
    match msg {
        Message::Request(req) if req.method == Method::Initialize => {
            Sessionless::Initialize(req, identity)
        }
        Message::Request(req) => {
            Sessionless::Answered(reply::refuse(Some(req.id), McpError::SessionRequired))
        }
        _ => Sessionless::Answered(reply::refuse(None, McpError::SessionRequired)),
    }
}

async fn initialize(
    app: &App,
    req: Request,
    identity: Option<Identity>,
    ip: Option<IpAddr>,
    trace: Option<TraceParent>,
) -> Response {
    let created = app
        .sessions
        .create(&app.service, app.config.session_idle, identity.clone(), ip);
    let Ok((sid, session)) = created else {
        let e = McpError::Unavailable("every session is busy; try again later".into());
        return reply::refuse(Some(req.id), e);
    };
    let id = req.id.clone();
    let answer = match session.request(req, trace).await {
        Ok(stream) => reply::answer_session(stream, &id).await,
        Err(_) => None,
    };
    match answer {
        Some(a) if !a.error => {
            let public = match mint(app, &sid, &session, identity.as_ref()).await {
                Ok(public) => public,
                Err(e) => {
                    app.sessions.remove(&sid);
                    return reply::refuse(Some(id), e);
                }
            };
            let mut response = a.response;
            if let Ok(v) = HeaderValue::from_str(&public) {
                response.headers_mut().insert(SESSION_ID, v);
            }
            tracing::debug!(session = %sid, "session started");
            response
        }
        // A refused initialize leaves no session behind.
        Some(a) => {
            app.sessions.remove(&sid);
            a.response
        }
        None => {
            app.sessions.remove(&sid);
            let e = McpError::Internal("the session ended before answering".into());
            reply::refuse(Some(id), e)
        }
    }
}

/// A 2026-07-28 message and its params as [`without_session`] read them.
struct Stateless {
    msg: Message,
    read: ParamsRead,
}

/// A 2026-07-28 request: validate the routing headers against the body, then start it on
/// a fresh stateless session (or answer it at once: refused, or a notification).
fn stateless(
    app: &App,
    headers: &HeaderMap,
    version: Option<&str>,
    sent: Stateless,
    identity: Option<Identity>,
    ip: Option<IpAddr>,
) -> Sessionless {
    // 2026-07-28 has no session to notify; notifications (cancel is the stream closing)
    // and stray responses have nothing to act on.
    let Stateless {
        msg: Message::Request(req),
        read,
    } = sent
    else {
        return Sessionless::Answered(reply::accepted());
    };
    let checked = (&read.meta, read.routed.as_ref());
    if let Err(e) = route_headers::check(headers, version, &req, checked, &app.service.router) {
        return Sessionless::Answered(reply::error_object(
            Some(req.id),
            e.to_wire(Revision::STATELESS),
        ));
    }
    // A fresh session would take `initialize` as a handshake: 2026-07-28 removed it.
    if req.method == Method::Initialize {
        let e = McpError::MethodNotFound("initialize (not in 2026-07-28)".into());
        return Sessionless::Answered(reply::error_object(
            Some(req.id),
            e.to_wire(Revision::STATELESS),
        ));
    }
    let from = RequestFrom {
        identity,
        ip,
        trace: TraceParent::from_headers(headers),
    };
    Sessionless::Stateless(Exchange::start(
        &app.service,
        req,
        read,
        from,
        app.sessions.hub(),
    ))
}

/// A stateless request's answer, from its running exchange.
async fn answer_stateless(exchange: Exchange) -> Response {
    let id = exchange.id().clone();
    match reply::answer(exchange).await {
        Some(a) => a.response,
        None => reply::refuse(
            Some(id),
            McpError::Internal("the request ended without an answer".into()),
        ),
    }
}
