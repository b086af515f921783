//! The Streamable HTTP listener's header and event-id parsers (`mcpwire::http::fuzzing`):
//! `Last-Event-ID`, `Accept`, `Content-Type`, MCP header values (`Mcp-Name`,
//! `Mcp-Param-*`, plain and `=?base64?…?=`) and the 2026-07-28 routing-header check
//! against a request body.
//!
//! The input is NUL-separated fields: an event id, two `Accept` values, a `Content-Type`,
//! a header value, a JSON-RPC body, then `name:value` headers for that body.
//!
//! Invariants: no panic; an event id that parses prints back (as the server writes ids)
//! to one that parses the same, and every id the server writes parses; two `Accept`
//! values allow what their comma-joined value allows, and the same as two headers; a
//! `Content-Type` means the same with `; charset=utf-8` after it; a header value read
//! back is trimmed visible ASCII, sent twice it is refused; a value without the base64
//! wrapping decodes verbatim, and any text wrapped decodes to itself; the stateless check
//! takes the fuzzed headers and body without panicking, passes a body whose headers
//! mirror it (`Mcp-Param-Region` base64-wrapped), and refuses one whose parameter header
//! disagrees.
#![no_main]

use std::sync::OnceLock;

use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue};
use libfuzzer_sys::fuzz_target;
use mcpwire::http::fuzzing;
use mcpwire::model::types::{CallToolResult, Implementation};
use mcpwire::model::{McpError, Revision};
use mcpwire::router::{Router, Server, ToolDef};
use serde_json::json;

/// A router with tool `region`, whose `region` argument travels in `Mcp-Param-Region`.
fn router() -> &'static Router {
    static ROUTER: OnceLock<Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "text": {"type": "string"}}});
        let tool = ToolDef::raw("region", schema, |_, _| async {
            Ok(CallToolResult::text("ok"))
        });
        let server = Server::builder(Implementation::new("fuzz", "1"))
            .tool(tool)
            .build();
        Router::new(server)
    })
}

fn value(bytes: &[u8]) -> Option<HeaderValue> {
    HeaderValue::from_bytes(bytes).ok()
}

fn headers(pairs: &[(&'static str, HeaderValue)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, v) in pairs {
        map.append(HeaderName::from_static(name), v.clone());
    }
    map
}

fn wrapped(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text);
    format!("=?base64?{b64}?=")
}

fn event_ids(field: &[u8]) {
    let text = String::from_utf8_lossy(field);
    if let Some((request, n, seq)) = fuzzing::last_event_id(&text) {
        let printed = fuzzing::event_id(request, n, seq);
        assert_eq!(fuzzing::last_event_id(&printed), Some((request, n, seq)), "{text:?}");
    }
    // Every id the server writes reads back (numbers taken from the field's bytes).
    let mut n = [0u8; 8];
    let mut seq = [0u8; 8];
    for (i, b) in field.iter().enumerate().take(16) {
        if i < 8 { n[i] = *b } else { seq[i - 8] = *b }
    }
    let (n, seq) = (u64::from_le_bytes(n), u64::from_le_bytes(seq));
    let request = field.first().is_some_and(|b| b & 1 == 1);
    let id = fuzzing::event_id(request, n, seq);
    assert_eq!(fuzzing::last_event_id(&id), Some((request, n, seq)), "{id}");
}

fn accepts(a: &[u8], b: &[u8]) {
    let (Some(va), Some(vb)) = (value(a), value(b)) else { return };
    let one = |v: &HeaderValue| fuzzing::accept(&headers(&[("accept", v.clone())]));
    let two = fuzzing::accept(&headers(&[("accept", va.clone()), ("accept", vb.clone())]));
    let (ja, sa) = one(&va);
    let (jb, sb) = one(&vb);
    assert_eq!(two, (ja || jb, sa || sb), "two Accept headers allow what each allows");
    if va.to_str().is_err() || vb.to_str().is_err() {
        return; // a value that is not visible ASCII is skipped as a whole
    }
    let joined = [a, b",", b].concat();
    if let Some(vj) = value(&joined) {
        assert_eq!(one(&vj), two, "a comma-joined Accept allows the same");
    }
}

fn content_type(field: &[u8]) {
    let Some(v) = value(field) else { return };
    let plain = fuzzing::is_json_body(&headers(&[("content-type", v)]));
    if field.contains(&b';') {
        return;
    }
    let with = [field, b"; charset=utf-8"].concat();
    if let Some(v) = value(&with) {
        let charset = fuzzing::is_json_body(&headers(&[("content-type", v)]));
        assert_eq!(plain, charset, "a charset parameter changes nothing");
    }
}

fn header_values(field: &[u8]) {
    if let Some(v) = value(field) {
        let map = headers(&[("mcp-name", v.clone())]);
        if let Some(Some(text)) = fuzzing::header_text(&map, "mcp-name") {
            assert_eq!(text, text.trim());
            assert!(text.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)));
        }
        let twice = headers(&[("mcp-name", v.clone()), ("mcp-name", v)]);
        assert!(fuzzing::header_text(&twice, "mcp-name").is_none(), "sent twice");
    }
    let text = String::from_utf8_lossy(field);
    let decoded = fuzzing::decode_header_value(&text);
    if !(text.starts_with("=?base64?") && text.ends_with("?=")) {
        assert_eq!(decoded.as_deref(), Some(&*text), "a plain value is verbatim");
    }
    if let Some(d) = decoded {
        assert_eq!(fuzzing::decode_header_value(&wrapped(&d)), Some(d));
    }
    assert_eq!(
        fuzzing::decode_header_value(&wrapped(&text)).as_deref(),
        Some(&*text)
    );
}

/// A `tools/call` of `region` with `region` = `arg`, its headers mirroring it but for the
/// `Mcp-Param-Region` value `param`.
fn mirrored(arg: &str, param: &str) -> Result<(), McpError> {
    let version = Revision::STATELESS.as_str();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "region", "arguments": {"region": arg},
        "_meta": {"io.modelcontextprotocol/protocolVersion": version,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let map = headers(&[
        ("mcp-protocol-version", HeaderValue::from_static(version)),
        ("mcp-method", HeaderValue::from_static("tools/call")),
        ("mcp-name", HeaderValue::from_static("region")),
        ("mcp-param-region", HeaderValue::from_str(param).expect("base64 is ASCII")),
    ]);
    fuzzing::check_stateless(&map, body.to_string().as_bytes(), router())
}

fn stateless(body: &[u8], pairs: &[&[u8]], arg: &[u8]) {
    let mut map = HeaderMap::new();
    for pair in pairs {
        let Some(i) = pair.iter().position(|b| *b == b':') else { continue };
        let (Ok(name), Some(v)) = (HeaderName::from_bytes(&pair[..i]), value(&pair[i + 1..]))
        else {
            continue;
        };
        map.append(name, v);
    }
    let _ = fuzzing::check_stateless(&map, body, router());

    let arg = String::from_utf8_lossy(arg);
    if let Err(e) = mirrored(&arg, &wrapped(&arg)) {
        panic!("mirrored headers refused for {arg:?}: {e}");
    }
    let other = format!("{arg}x");
    assert!(
        matches!(mirrored(&arg, &wrapped(&other)), Err(McpError::HeaderMismatch(_))),
        "a disagreeing Mcp-Param-Region passed"
    );
}

fuzz_target!(|data: &[u8]| {
    let fields: Vec<&[u8]> = data.split(|b| *b == 0).collect();
    let field = |i: usize| fields.get(i).copied().unwrap_or_default();
    event_ids(field(0));
    accepts(field(1), field(2));
    content_type(field(3));
    header_values(field(4));
    stateless(field(5), fields.get(6..).unwrap_or_default(), field(4));
});
