//! Building HTTP responses: JSON-RPC errors for refused requests, `202 Accepted`, and a
//! request's answer as `application/json` or `text/event-stream`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::header::{CONTENT_TYPE, HeaderValue};
use axum::http::{HeaderName, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt};
use mcpwire_model::{ErrorObject, Outbound, RequestId, codes};

/// 2026-07-28 (SEP-2243): a routing header disagrees with the body.
pub(crate) const HEADER_MISMATCH: i64 = -32020;

/// How often an idle SSE stream gets a comment, so dead connections are noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Numbers SSE streams, so event ids are unique in the process.
static STREAMS: AtomicU64 = AtomicU64::new(1);

/// A JSON-RPC error as the whole HTTP response.
pub(crate) fn error(
    status: StatusCode,
    id: Option<RequestId>,
    code: i64,
    message: impl Into<String>,
) -> Response {
    error_object(status, id, ErrorObject::new(code, message))
}

/// A JSON-RPC error object as the whole HTTP response.
pub(crate) fn error_object(
    status: StatusCode,
    id: Option<RequestId>,
    error: ErrorObject,
) -> Response {
    json(status, &Outbound::Error { id, error })
}

/// One message as an `application/json` response.
pub(crate) fn json(status: StatusCode, msg: &Outbound) -> Response {
    let mut body = Vec::with_capacity(256);
    if let Err(e) = msg.write_json(&mut body) {
        tracing::error!(error = %e, "could not encode a message");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        status,
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        Body::from(body),
    )
        .into_response()
}

/// `202 Accepted` with no body: what a POST of notifications or responses gets.
pub(crate) fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// The HTTP status of a stateless JSON-RPC error answer (2026-07-28): request-shape and
/// negotiation errors are 400, an unknown method 404, everything else 200.
pub(crate) fn stateless_status(code: i64) -> StatusCode {
    match code {
        codes::PARSE_ERROR
        | codes::INVALID_REQUEST
        | codes::INVALID_PARAMS
        | HEADER_MISMATCH
        | codes::MISSING_REQUIRED_CLIENT_CAPABILITY
        | codes::UNSUPPORTED_PROTOCOL_VERSION => StatusCode::BAD_REQUEST,
        codes::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

/// A request's answer, chosen once its first message is known.
pub(crate) struct Answer {
    /// The HTTP response.
    pub(crate) response: Response,
    /// Whether the request was answered with a JSON-RPC error and nothing else.
    pub(crate) error: bool,
}

/// Answers request `id` from the messages related to it (ending with its response):
/// `application/json` when the response comes first, otherwise an SSE stream of everything.
/// `stateless` maps a lone error's code to an HTTP status. `None`: the stream ended with
/// nothing (the session went away).
pub(crate) async fn answer<S>(mut messages: S, id: &RequestId, stateless: bool) -> Option<Answer>
where
    S: Stream<Item = Outbound> + Send + Unpin + 'static,
{
    let first = messages.next().await?;
    if first.response_id() == Some(id) {
        let (status, error) = match &first {
            Outbound::Error { error, .. } if stateless => (stateless_status(error.code), true),
            Outbound::Error { .. } => (StatusCode::OK, true),
            _ => (StatusCode::OK, false),
        };
        return Some(Answer {
            response: json(status, &first),
            error,
        });
    }
    let n = STREAMS.fetch_add(1, Ordering::Relaxed);
    let all = futures::stream::once(std::future::ready(first)).chain(messages);
    Some(Answer {
        response: sse(all, format!("p{n}-")),
        error: false,
    })
}

/// Messages as an SSE response, event ids `{prefix}{seq}`, with keep-alive comments.
pub(crate) fn sse<S>(messages: S, prefix: String) -> Response
where
    S: Stream<Item = Outbound> + Send + 'static,
{
    let events = messages.enumerate().map(move |(seq, msg)| {
        Ok::<_, Infallible>(
            Event::default()
                .id(format!("{prefix}{seq}"))
                .data(msg.to_json_string()),
        )
    });
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response();
    // Ask reverse proxies not to buffer the stream.
    response.headers_mut().insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
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

/// A new standalone-stream id prefix (`g{n}-`).
pub(crate) fn standalone_prefix() -> String {
    format!("g{}-", STREAMS.fetch_add(1, Ordering::Relaxed))
}
