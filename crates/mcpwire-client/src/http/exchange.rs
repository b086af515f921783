//! One request's POST and its answer — a JSON body, or an event stream resumed with GET and
//! `Last-Event-ID` after the server closes it (waiting its `retry:` first) — and the
//! session's own GET stream. What they read goes to the connection's task as [`Inbound`].

use std::sync::Arc;
use std::time::Duration;

use super::driven::UpstreamBody;
use axum::body::Bytes;
use http_body_util::BodyExt;
use hyper::StatusCode;
use hyper::header::CONTENT_TYPE;
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{ErrorObject, Malformed, Message, Response};
use mcpwire_session::ClientRequestId;
use tokio::sync::{mpsc, oneshot};

use super::conn::{Headers, HttpConn, VersionHeader, read_limited};
use super::sse::SseParser;
use crate::{ClientError, MAX_MESSAGE_BYTES, excerpt};
use mcpwire_server::http::body::read_to_limit;

/// Nesting accepted in a server's messages (serde_json's own limit).
pub(super) const MAX_DEPTH: usize = 128;

/// Resumptions of one answer's stream in a row that bring no new event.
const MAX_EMPTY_RESUMES: usize = 5;

/// How long to wait before resuming when the server gave no `retry:`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);

/// The longest `retry:` honoured.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// Failed attempts in a row after which the session's GET stream is given up.
const MAX_STREAM_FAILURES: usize = 2;

/// What the exchanges tell the connection's task.
pub(super) enum Inbound {
    /// A message, with the request whose stream it came on.
    Message(Result<Message, Malformed>, Option<ClientRequestId>),
    /// A request's POST failed; the error says how.
    Failed(ClientRequestId, ClientError),
}

/// One request: what it is and where its answer goes.
pub(super) struct Post {
    pub(super) id: ClientRequestId,
    pub(super) method: String,
    pub(super) body: Bytes,
    pub(super) headers: Headers,
}

/// Sends `post` and hands everything its answer brings to `inbound`; a failure is reported
/// as [`Inbound::Failed`].
pub(super) async fn run(conn: Arc<HttpConn>, post: Post, inbound: mpsc::Sender<Inbound>) {
    if let Err(e) = exchange(&conn, &post, &inbound).await {
        let _ = inbound.send(Inbound::Failed(post.id, e)).await;
    }
}

async fn exchange(
    conn: &HttpConn,
    post: &Post,
    inbound: &mpsc::Sender<Inbound>,
) -> Result<(), ClientError> {
    let response = conn
        .post(post.body.clone(), VersionHeader::Own, &post.headers)
        .await?;
    if post.method == "initialize" {
        conn.capture_session(&response);
    }
    let status = response.status();
    if status == StatusCode::ACCEPTED {
        return Err(ClientError::Invalid(format!(
            "{} answered `{}` with 202 Accepted, which carries no answer",
            conn.url(),
            post.method
        )));
    }
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if sse {
        let mut sink = ToTask {
            answer_of: Some(post.id),
            inbound,
        };
        // Boxed: an event stream's reader is kilobytes of future (a JSON answer needs none).
        return Box::pin(read_stream(
            conn,
            &post.method,
            response.into_body(),
            &mut sink,
        ))
        .await;
    }
    let bytes = collect(conn, response.into_body()).await?;
    if status == StatusCode::NOT_FOUND && post.method != "initialize" && conn.has_session() {
        // The server no longer holds the session (whatever its body says): the request was
        // not run, and the session is over (`ClientError::is_session_gone`).
        return Err(conn.status_error(status, &bytes));
    }
    if let Some(msg) = answer_in(&bytes, post.id) {
        let _ = inbound.send(Inbound::Message(Ok(msg), Some(post.id))).await;
        return Ok(());
    }
    if !status.is_success() {
        return Err(conn.status_error(status, &bytes));
    }
    if bytes.is_empty() {
        return Err(ClientError::Invalid(format!(
            "HTTP {status} from {} without an answer to `{}`",
            conn.url(),
            post.method
        )));
    }
    Err(ClientError::Invalid(format!(
        "{} answered `{}` with something that is not its JSON-RPC response: {}",
        conn.url(),
        post.method,
        excerpt(&String::from_utf8_lossy(&bytes))
    )))
}

/// The answer to request `id` in a JSON body: its response, or an error the server could not
/// address (`"id": null`, a request it could not read).
pub(super) fn answer_in(bytes: &[u8], id: ClientRequestId) -> Option<Message> {
    match decode_with_depth(bytes, MAX_DEPTH) {
        Ok(Message::Response(r)) if r.id == id.wire_id() => Some(Message::Response(r)),
        Ok(_) => None,
        Err(_) => {
            #[derive(serde::Deserialize)]
            struct NullId {
                error: ErrorObject,
            }
            let e: NullId = serde_json::from_slice(bytes).ok()?;
            Some(Message::Response(Response {
                id: id.wire_id(),
                outcome: Err(e.error),
            }))
        }
    }
}

/// Where the messages of an event stream go.
pub(super) trait EventSink {
    /// Takes the data of one message event; true once the stream's answer went by (or
    /// nobody takes messages any more).
    async fn message(&mut self, data: &str) -> bool;
}

/// A request's answer stream (or the session's GET stream, answering nothing) read by the
/// connection's task: every message goes to it.
pub(super) struct ToTask<'a> {
    pub(super) answer_of: Option<ClientRequestId>,
    pub(super) inbound: &'a mpsc::Sender<Inbound>,
}

impl EventSink for ToTask<'_> {
    async fn message(&mut self, data: &str) -> bool {
        let (msg, answered) = message_in(data, self.answer_of);
        let gone = self
            .inbound
            .send(Inbound::Message(msg, self.answer_of))
            .await
            .is_err();
        answered || gone // gone: the connection is closing
    }
}

/// Reads a request's event stream until its answer, resuming it with GET and
/// `Last-Event-ID` when the server closes it first (after the server's `retry:`).
pub(super) async fn read_stream(
    conn: &HttpConn,
    method: &str,
    mut body: UpstreamBody,
    sink: &mut impl EventSink,
) -> Result<(), ClientError> {
    let mut last_id: Option<String> = None;
    let mut retry = None;
    let mut empty_resumes = 0;
    loop {
        let mut parser = SseParser::default();
        let before = last_id.clone();
        let answered = pump(conn, &mut body, &mut parser, sink, &mut last_id).await?;
        retry = parser.retry.or(retry);
        if answered {
            // Its end (usually right behind the answer) read, the connection is kept.
            body.finish();
            return Ok(());
        }
        let Some(last) = last_id.clone() else {
            return Err(ClientError::Closed {
                peer: conn.url(),
                how: "ended the event stream (with no event id to resume from)".into(),
                method: method.to_owned(),
            });
        };
        empty_resumes = if last_id == before {
            empty_resumes + 1
        } else {
            0
        };
        if empty_resumes > MAX_EMPTY_RESUMES {
            return Err(ClientError::Closed {
                peer: conn.url(),
                how: "kept ending the event stream".into(),
                method: method.to_owned(),
            });
        }
        tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
        let resumed = conn.get(Some(&last)).await?;
        if !resumed.status().is_success() {
            let status = resumed.status();
            let bytes = read_limited(resumed.into_body(), 64 * 1024).await;
            return Err(conn.status_error(status, &bytes));
        }
        body = resumed.into_body();
    }
}

/// Hands the messages of one event stream to `sink` until it ends; true once the sink
/// said the answer went by.
async fn pump(
    conn: &HttpConn,
    body: &mut UpstreamBody,
    parser: &mut SseParser,
    sink: &mut impl EventSink,
    last_id: &mut Option<String>,
) -> Result<bool, ClientError> {
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| conn.io_error(&e))?;
        let Some(chunk) = frame.data_ref() else {
            continue;
        };
        for event in parser.push(chunk)? {
            if event.id.is_some() {
                last_id.clone_from(&event.id);
            }
            if !event.is_message() {
                continue; // a priming event, or another kind
            }
            if sink.message(&event.data).await {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The message an event's data carries, and whether it answers `answer_of` (an error with
/// a null id on a request's stream is taken as its answer).
fn message_in(
    data: &str,
    answer_of: Option<ClientRequestId>,
) -> (Result<Message, Malformed>, bool) {
    let msg = decode_with_depth(data.as_bytes(), MAX_DEPTH);
    if let Some(id) = answer_of {
        match &msg {
            Ok(Message::Response(r)) if r.id == id.wire_id() => return (msg, true),
            Err(_) => {
                if let Some(m) = answer_in(data.as_bytes(), id) {
                    return (Ok(m), true);
                }
            }
            _ => {}
        }
    }
    (msg, false)
}

/// The session's GET stream: server requests and notifications not tied to a request.
/// Reconnects (with `Last-Event-ID`, after `retry:`) until it fails twice in a row; a 405
/// says the server offers none. `ready` is told once the first attempt has its answer.
pub(super) async fn listen(
    conn: Arc<HttpConn>,
    inbound: mpsc::Sender<Inbound>,
    mut ready: Option<oneshot::Sender<()>>,
) {
    let mut last_id: Option<String> = None;
    let mut retry = None;
    let mut failures = 0;
    loop {
        let opened = conn.get(last_id.as_deref()).await;
        if let Some(r) = ready.take() {
            let _ = r.send(());
        }
        match opened {
            Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => return,
            Ok(r) if r.status().is_success() => {
                let mut parser = SseParser::default();
                let mut body = r.into_body();
                let mut sink = ToTask {
                    answer_of: None,
                    inbound: &inbound,
                };
                match pump(&conn, &mut body, &mut parser, &mut sink, &mut last_id).await {
                    Ok(true) => return,
                    Ok(false) => failures = 0,
                    Err(e) => {
                        tracing::debug!(error = %e, "the GET stream failed");
                        failures += 1;
                    }
                }
                retry = parser.retry.or(retry);
            }
            Ok(r) => {
                tracing::debug!(status = %r.status(), "the server refused the GET stream");
                failures += 1;
            }
            Err(e) => {
                tracing::debug!(error = %e, "the GET stream could not be opened");
                failures += 1;
            }
        }
        if failures >= MAX_STREAM_FAILURES || inbound.is_closed() {
            return;
        }
        tokio::time::sleep(retry.unwrap_or(DEFAULT_RETRY).min(MAX_RETRY)).await;
    }
}

/// A whole (JSON) body, within [`MAX_MESSAGE_BYTES`].
pub(super) async fn collect(conn: &HttpConn, body: UpstreamBody) -> Result<Bytes, ClientError> {
    read_to_limit(body, MAX_MESSAGE_BYTES)
        .await
        .map_err(|e| conn.io_error(&e))
}
