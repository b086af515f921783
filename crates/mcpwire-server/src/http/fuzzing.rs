//! Entry points for the fuzz targets in `fuzz/` (`docs/fuzzing.md`): the HTTP wire's
//! header and event-id parsers, which are otherwise private to this module. Thin calls
//! into the code the listener runs, nothing of their own; not a stable API.

use axum::http::HeaderMap;
use mcpwire_model::{McpError, Message, jsonrpc};
use mcpwire_router::Router;

use super::headers::{self, Accept, PROTOCOL_VERSION};
use super::replay::{EventId, StreamKind};

/// `Last-Event-ID` as a `GET` reads it: `(a request's stream, stream number, sequence)`
/// for `p{n}-{seq}` / `g{n}-{seq}`, `None` for anything else.
pub fn last_event_id(value: &str) -> Option<(bool, u64, u64)> {
    EventId::parse(value).map(|id| (id.kind == StreamKind::Request, id.stream, id.seq))
}

/// The id the server gives event `seq` of stream `n` (a request's stream, or the
/// standalone one).
pub fn event_id(request: bool, n: u64, seq: u64) -> String {
    let kind = if request {
        StreamKind::Request
    } else {
        StreamKind::Standalone
    };
    format!("{}{seq}", kind.prefix(n))
}

/// Which response media types the `Accept` headers allow: `(JSON, SSE)`.
pub fn accept(headers: &HeaderMap) -> (bool, bool) {
    let Accept { json, sse } = Accept::of(headers);
    (json, sse)
}

/// Whether `Content-Type` says JSON.
pub fn is_json_body(headers: &HeaderMap) -> bool {
    headers::is_json_body(headers)
}

/// An MCP header's value as the listener reads it: `Some(None)` when absent, `None` when
/// refused (sent twice, or not visible ASCII).
pub fn header_text<'a>(headers: &'a HeaderMap, name: &str) -> Option<Option<&'a str>> {
    headers::text(headers, name).ok()
}

/// An `Mcp-Name` / `Mcp-Param-*` value decoded (verbatim, or `=?base64?…?=`).
pub fn decode_header_value(value: &str) -> Option<String> {
    headers::decode_value(value).map(|v| v.into_owned())
}

/// The 2026-07-28 validation a `POST` of `body` with `headers` goes through before its
/// stateless exchange (version header and `_meta` envelope, `Mcp-Method`, `Mcp-Name`,
/// `Mcp-Param-*` against the tools of `router`). `Ok` for a body that is not a request (the
/// listener accepts those without checking).
pub fn check_stateless(headers: &HeaderMap, body: &[u8], router: &Router) -> Result<(), McpError> {
    let Ok(Message::Request(req)) = jsonrpc::decode(body) else {
        return Ok(());
    };
    let version = headers::text(headers, PROTOCOL_VERSION)
        .map_err(|()| McpError::HeaderMismatch("invalid MCP-Protocol-Version header".into()))?;
    let read = super::route_headers::read_params(&req.method, req.params.as_deref(), None, None);
    let read = (&read.meta, read.routed.as_ref());
    super::route_headers::check(headers, version, &req, read, router)
}
