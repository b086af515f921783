//! Building HTTP responses: JSON-RPC errors for refused requests, `202 Accepted`, and a
//! request's answer as `application/json` or `text/event-stream`.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use axum::http::{HeaderName, StatusCode};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use mcpwire_model::{ErrorObject, McpError, Outbound, RequestId};

use super::replay::{self, StreamItem, StreamKind};
use super::session::{Answered, Delivery, RequestStream};
use super::stateless::Exchange;

/// How often an idle SSE stream gets a comment, so dead connections are noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A request refused before it reached a session, as the whole HTTP response (the error's
/// variant picks the status; its code is the one every revision agrees on).
pub(crate) fn refuse(id: Option<RequestId>, e: McpError) -> Response {
    tracing::debug!(error = %e, "request refused");
    error_object(id, e.to_wire_unnegotiated())
}

/// A JSON-RPC error object as the whole HTTP response, with the status of the variant it
/// was made from ([`ErrorObject::http_status`]).
pub(crate) fn error_object(id: Option<RequestId>, error: ErrorObject) -> Response {
    json(status_of(&error), &Outbound::Error { id, error })
}

fn status_of(error: &ErrorObject) -> StatusCode {
    StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

/// One message as an `application/json` response.
pub(crate) fn json(status: StatusCode, msg: &Outbound) -> Response {
    let mut body = Vec::with_capacity(msg.encoded_len_hint());
    if let Err(e) = msg.write_json(&mut body) {
        tracing::error!(error = %e, "could not encode a message");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    let mut response = (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        Body::from(body),
    )
        .into_response();
    if status == StatusCode::TOO_MANY_REQUESTS
        && let Some(secs) = retry_after(msg)
    {
        response.headers_mut().insert(RETRY_AFTER, secs.into());
    }
    // Unavailable (the session directory is down, every session busy): worth retrying soon.
    if status == StatusCode::SERVICE_UNAVAILABLE {
        response
            .headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

/// A relayed call's answer `line` (the upstream's JSON, the client's id in it) as a `200`
/// `application/json` response: the bytes the general path would write.
pub(crate) fn json_line(mut line: Bytes) -> Response {
    line.truncate(line.trim_ascii_end().len());
    let mut response = Response::new(Body::from(line));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// A rate limit's `data.retryAfter` (whole seconds), for the `Retry-After` header.
fn retry_after(msg: &Outbound) -> Option<u64> {
    let Outbound::Error { error, .. } = msg else {
        return None;
    };
    let data: serde_json::Value = serde_json::from_str(error.data.as_ref()?.get()).ok()?;
    data.get("retryAfter")?.as_u64()
}

/// `202 Accepted` with no body: what a POST of notifications or responses gets.
pub(crate) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// A request's answer, chosen once its first message is known.
pub(crate) struct Answer {
    /// The HTTP response.
    pub(crate) response: Response,
    /// Whether the request was answered with a JSON-RPC error and nothing else.
    pub(crate) error: bool,
}

/// The answer to a `POST`ed session request: `application/json` when its response comes
/// first, otherwise a resumable SSE stream (priming event `p{n}-0` with `retry:`, then the
/// stream's events) that ends after the response or when the server detaches it. `None`:
/// the stream ended with nothing (cancelled, or the session went away).
pub(crate) async fn answer_session(mut messages: RequestStream, id: &RequestId) -> Option<Answer> {
    let first = messages.next().await?;
    let first = match first {
        Delivery::Response(Answered::Relayed(line)) => {
            // A relayed call's answer: a result (an error would have come as a message).
            return Some(Answer {
                response: json_line(line),
                error: false,
            });
        }
        Delivery::Response(Answered::Message(msg)) => {
            let error = matches!(msg, Outbound::Error { .. }) && msg.response_id() == Some(id);
            // A request a rate limit refused was not admitted: 429 with `Retry-After`, as
            // outside a session; every other answer is 200.
            let status = match &msg {
                Outbound::Error { error: e, .. } if e.http_status() == 429 => status_of(e),
                _ => StatusCode::OK,
            };
            return Some(Answer {
                response: json(status, &msg),
                error,
            });
        }
        Delivery::Item(item) => item,
    };
    let prefix = StreamKind::Request.prefix(messages.stream);
    let rest = messages.filter_map(|d| {
        std::future::ready(match d {
            Delivery::Item(item) => Some(item),
            Delivery::Response(_) => None,
        })
    });
    let items = futures::stream::once(std::future::ready(first)).chain(rest);
    Some(Answer {
        response: sse_items(items, prefix, true),
        error: false,
    })
}

/// Answers a stateless request from its exchange (the messages related to it, ending with
/// its response): `application/json` when the response comes first, otherwise an SSE
/// stream of everything (not resumable: 2026-07-28 has no `GET`). A lone error's variant
/// picks the HTTP status. `None`: the exchange ended with nothing. The exchange is boxed
/// into a stream only when it streams (a box of a kilobyte or two, per request).
pub(crate) async fn answer(mut exchange: Exchange) -> Option<Answer> {
    let first = exchange.next().await?;
    if first.response_id() == Some(exchange.id()) {
        let (status, error) = match &first {
            Outbound::Error { error, .. } => (status_of(error), true),
            _ => (StatusCode::OK, false),
        };
        let response = json(status, &first);
        exchange.finish();
        return Some(Answer { response, error });
    }
    let n = replay::next_stream();
    let all = futures::stream::once(std::future::ready(first)).chain(exchange.into_stream());
    Some(Answer {
        response: sse(all, format!("s{n}-")),
        error: false,
    })
}

/// Messages as an SSE response, event ids `{prefix}{seq}`, with keep-alive comments.
pub(crate) fn sse<S>(messages: S, prefix: String) -> Response
where
    S: Stream<Item = Outbound> + Send + 'static,
{
    let events = messages
        .enumerate()
        .map(move |(seq, msg)| frame(&format!("{prefix}{seq}"), None, &msg.to_json_string()));
    sse_response(events)
}

/// Stream items as an SSE response (event ids `{prefix}{seq}`), ending at
/// [`StreamItem::Detach`]; `priming` first sends `{prefix}0` with empty data and `retry:`.
pub(crate) fn sse_items<S>(items: S, prefix: String, priming: bool) -> Response
where
    S: Stream<Item = StreamItem> + Send + 'static,
{
    let head = priming.then(|| frame(&format!("{prefix}0"), Some(replay::RETRY), ""));
    let events = items
        .take_while(|i| std::future::ready(!matches!(i, StreamItem::Detach)))
        .filter_map(move |i| {
            std::future::ready(match i {
                StreamItem::Event(seq, data) => Some(frame(&format!("{prefix}{seq}"), None, &data)),
                StreamItem::Replayed(id, data) => Some(frame(&id, None, &data)),
                StreamItem::Detach => None,
            })
        });
    sse_response(futures::stream::iter(head).chain(events))
}

/// One SSE event. Empty `data` still gets its `data:` line, so the event is dispatched (a
/// priming event); axum's `Event` omits it.
fn frame(id: &str, retry: Option<Duration>, data: &str) -> Bytes {
    let mut b = String::with_capacity(data.len() + id.len() + 32);
    b.push_str("id: ");
    b.push_str(id);
    b.push('\n');
    if let Some(r) = retry {
        b.push_str("retry: ");
        b.push_str(&r.as_millis().to_string());
        b.push('\n');
    }
    for line in data.split('\n') {
        b.push_str("data: ");
        b.push_str(line.strip_suffix('\r').unwrap_or(line));
        b.push('\n');
    }
    b.push('\n');
    Bytes::from(b)
}

fn sse_response<S>(events: S) -> Response
where
    S: Stream<Item = Bytes> + Send + 'static,
{
    let body = KeepAlive {
        inner: Box::pin(events),
        timer: Box::pin(tokio::time::sleep(KEEP_ALIVE)),
    }
    .map(Ok::<_, Infallible>);
    (
        [
            (CONTENT_TYPE, HeaderValue::from_static("text/event-stream")),
            (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
            // Ask reverse proxies not to buffer the stream.
            (
                HeaderName::from_static("x-accel-buffering"),
                HeaderValue::from_static("no"),
            ),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Adds a comment line after [`KEEP_ALIVE`] without an event, so dead connections are
/// noticed and proxies keep the stream open.
struct KeepAlive<S> {
    inner: Pin<Box<S>>,
    timer: Pin<Box<tokio::time::Sleep>>,
}

impl<S: Stream<Item = Bytes>> Stream for KeepAlive<S> {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if let Poll::Ready(item) = self.inner.as_mut().poll_next(cx) {
            let at = tokio::time::Instant::now() + KEEP_ALIVE;
            self.timer.as_mut().reset(at);
            return Poll::Ready(item);
        }
        std::task::ready!(self.timer.as_mut().poll(cx));
        let at = tokio::time::Instant::now() + KEEP_ALIVE;
        self.timer.as_mut().reset(at);
        Poll::Ready(Some(Bytes::from_static(b":\n\n")))
    }
}

/// An SSE stream that ends at once: the answer to a request that was cancelled before it
/// produced anything.
pub(crate) fn empty_stream() -> Response {
    (
        [(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"))],
        Body::empty(),
    )
        .into_response()
}
