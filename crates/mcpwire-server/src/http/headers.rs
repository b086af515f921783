//! Reading the MCP-specific and content-negotiation headers of a request.

use std::borrow::Cow;

use axum::http::header::{ACCEPT, AsHeaderName, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName};
use base64::Engine;

/// The session id header (case-insensitive on the wire).
pub const SESSION_ID: &str = "mcp-session-id";
/// The negotiated (stateful) or per-request (2026-07-28) revision.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// 2026-07-28: the request's method, mirrored for intermediaries.
pub const MCP_METHOD: &str = "mcp-method";
/// 2026-07-28: the tool/prompt name or resource URI, mirrored for intermediaries.
pub const MCP_NAME: &str = "mcp-name";
/// The last SSE event id a reconnecting client saw.
pub const LAST_EVENT_ID: &str = "last-event-id";

/// [`SESSION_ID`] as a header name, made once (a lookup by `&str` parses the name again).
pub const SESSION_ID_HEADER: HeaderName = HeaderName::from_static(SESSION_ID);
/// [`PROTOCOL_VERSION`] as a header name, made once.
pub const PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static(PROTOCOL_VERSION);
/// [`MCP_METHOD`] as a header name, made once.
pub const MCP_METHOD_HEADER: HeaderName = HeaderName::from_static(MCP_METHOD);
/// [`MCP_NAME`] as a header name, made once.
pub const MCP_NAME_HEADER: HeaderName = HeaderName::from_static(MCP_NAME);

/// `Accept` values listing JSON and SSE as most clients write them.
const COMMON_ACCEPT: [&[u8]; 2] = [
    b"application/json, text/event-stream",
    b"text/event-stream, application/json",
];

/// Which response media types the client's `Accept` allows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Accept {
    pub(crate) json: bool,
    pub(crate) sse: bool,
}

impl Accept {
    /// Parses every `Accept` header (wildcards count; `q=0` excludes).
    pub(crate) fn of(headers: &HeaderMap) -> Accept {
        let mut a = Accept::default();
        let mut values = headers.get_all(ACCEPT).iter();
        // What MCP clients send (the specification's own words), read without parsing.
        if let (Some(only), None) = (values.next(), values.next())
            && COMMON_ACCEPT.contains(&only.as_bytes())
        {
            return Accept {
                json: true,
                sse: true,
            };
        }
        for value in headers.get_all(ACCEPT) {
            let Ok(value) = value.to_str() else { continue };
            for item in value.split(',') {
                let mut parts = item.split(';');
                let media = parts.next().unwrap_or("").trim();
                let refused = parts.any(|p| {
                    let p = p.trim();
                    p.strip_prefix("q=")
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        .is_some_and(|q| q <= 0.0)
                });
                if refused {
                    continue;
                }
                let is = |m: &str| media.eq_ignore_ascii_case(m);
                if is("*/*") {
                    a.json = true;
                    a.sse = true;
                } else if is("application/*") || is("application/json") {
                    a.json = true;
                } else if is("text/*") || is("text/event-stream") {
                    a.sse = true;
                }
            }
        }
        a
    }
}

/// Whether `Content-Type` is `application/json` (parameters such as `charset` allowed).
pub(crate) fn is_json_body(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// A header's value as trimmed text; `Err(())` when present but not visible ASCII, or sent
/// more than once (an MCP header has one meaning; two values are ambiguous).
pub(crate) fn text(headers: &HeaderMap, name: impl AsHeaderName) -> Result<Option<&str>, ()> {
    let mut values = headers.get_all(name).iter();
    let Some(v) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(());
    }
    v.to_str().map(|s| Some(s.trim())).map_err(|_| ())
}

/// Decodes an `Mcp-Name`-style value: verbatim (borrowed), or `=?base64?…?=` holding
/// UTF-8. `None` for a malformed encoded value (so it matches nothing).
pub(crate) fn decode_value(value: &str) -> Option<Cow<'_, str>> {
    let Some(payload) = value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    else {
        return Some(Cow::Borrowed(value));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload)
        .ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Accept {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT, v.parse().unwrap());
        Accept::of(&h)
    }

    #[test]
    fn accept_parsing() {
        let both = Accept {
            json: true,
            sse: true,
        };
        assert_eq!(accept("application/json, text/event-stream"), both);
        assert_eq!(accept("text/event-stream, application/json"), both);
        assert_eq!(accept("text/event-stream;q=0.9, application/json"), both);
        assert_eq!(accept("*/*"), both);
        assert_eq!(
            accept("application/json"),
            Accept {
                json: true,
                sse: false
            }
        );
        assert_eq!(
            accept("application/json, text/event-stream;q=0"),
            Accept {
                json: true,
                sse: false
            }
        );
        assert_eq!(Accept::of(&HeaderMap::new()), Accept::default());
    }

    #[test]
    fn header_values() {
        assert_eq!(decode_value("echo").as_deref(), Some("echo"));
        assert_eq!(decode_value("=?base64?ZWNobw==?=").as_deref(), Some("echo"));
        assert_eq!(decode_value("=?base64?!!?="), None);
    }
}
