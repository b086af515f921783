//! 2026-07-28 request validation before a stateless exchange (SEP-2243): the version header
//! and `_meta` envelope, and the routing headers mirroring the body — `Mcp-Method`,
//! `Mcp-Name` (tool/prompt name, resource URI, task id) and `Mcp-Param-{Name}` for tool
//! arguments whose schema carries `"x-mcp-header": "{Name}"`. A header that is missing when
//! the body has its value, or that disagrees with it, is −32020 (HTTP 400).

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Mutex;

use axum::http::HeaderMap;
use mcpwire_model::captured::{Captured, TopMembers};
use mcpwire_model::types::{CallToolParams, RequestMeta};
use mcpwire_model::{McpError, Method, Request};
use mcpwire_router::Router;
use mcpwire_wire::json_frame;
use serde_json::value::RawValue;

use super::headers::{self, MCP_METHOD_HEADER, MCP_NAME_HEADER};

/// Where a request's `name`, `uri` and `taskId` (what `Mcp-Name` mirrors) are in its params,
/// found while its `_meta` was read ([`read_params`]); `None`: not there.
#[derive(Debug, Default)]
pub(crate) struct Routed {
    name: Option<Range<usize>>,
    uri: Option<Range<usize>>,
    task_id: Option<Range<usize>>,
}

/// A request's `_meta` as the listener read it ([`RequestMeta::from_params`]'s answer),
/// boxed: it moves through the futures answering a stateless request, and is 400 bytes.
pub(crate) type ReadMeta = Result<Option<Box<RequestMeta>>, String>;

/// What the listener read of a request's params, in one pass over them ([`read_params`]).
pub(crate) struct ParamsRead {
    /// Its `_meta`.
    pub(crate) meta: ReadMeta,
    /// Where its routed members are; `None` when that pass could not say (no `_meta`, or
    /// params it refused) and [`check`] scans for them instead.
    pub(crate) routed: Option<Routed>,
    /// A well-formed `tools/call`'s params, for the router to take as they are (anything
    /// else is left for it to parse, and to refuse with its own error).
    pub(crate) tool_call: Option<Box<CallToolParams>>,
}

impl ParamsRead {
    /// Only `meta` is known: no routed members, no call for the router.
    pub(crate) fn unread(meta: ReadMeta) -> ParamsRead {
        ParamsRead {
            meta,
            routed: None,
            tool_call: None,
        }
    }
}

/// The `_meta` a connection's requests carried last, as read: its text and what it says.
/// A 2026-07-28 client sends the same envelope with every request, and reading it was
/// about 5% of a stateless `tools/call`; the next request with the same text takes the
/// kept reading. Kept only when it has no progress token (those differ per request) and
/// is at most [`LastMeta::MAX_TEXT`] bytes: one envelope per connection.
#[derive(Debug, Default)]
pub(crate) struct LastMeta(Mutex<Option<(Box<str>, RequestMeta)>>);

impl LastMeta {
    /// The longest `_meta` text kept.
    pub(crate) const MAX_TEXT: usize = 4096;

    /// `text` (a request's `_meta` value) read as [`RequestMeta`]: the kept reading when
    /// it is the same text.
    fn read(&self, text: &str) -> serde_json::Result<RequestMeta> {
        if let Ok(last) = self.0.lock()
            && let Some((kept, meta)) = &*last
            && **kept == *text
        {
            return Ok(meta.clone());
        }
        let meta: RequestMeta = serde_json::from_str(text)?;
        if meta.progress_token.is_none()
            && text.len() <= LastMeta::MAX_TEXT
            && let Ok(mut last) = self.0.lock()
        {
            *last = Some((text.into(), meta.clone()));
        }
        Ok(meta)
    }
}

/// What a request of `method` with `params` carries, as [`ParamsRead`] says; `last`: the
/// envelope its connection sent last ([`LastMeta`]). `captured`: the params' members as the
/// decoder read them with the envelope (`mcpwire_model::captured`), when it did — then the
/// params are not read again.
pub(crate) fn read_params(
    method: &Method,
    params: Option<&RawValue>,
    captured: Option<&Captured<'_>>,
    last: Option<&LastMeta>,
) -> ParamsRead {
    if let Some(captured) = captured {
        return members_read(
            method,
            params,
            &captured.members,
            |v| captured.range(v),
            last,
        );
    }
    let text = params.map(RawValue::get).unwrap_or_default();
    if !text.starts_with('{') || !text.contains("\"_meta\"") {
        // What `from_params` makes of it, without its scanning the params again.
        return ParamsRead::unread(Ok(None));
    }
    let Ok(members) = TopMembers::read(text) else {
        // Its own error: as the listener always read it.
        return ParamsRead::unread(from_params(params));
    };
    let base = text.as_ptr() as usize;
    let at = |v: &RawValue| {
        let start = v.get().as_ptr() as usize - base;
        start..start + v.get().len()
    };
    members_read(method, params, &members, at, last)
}

/// `RequestMeta::from_params`, boxed: the `_meta` as every wire reads it (and its error as
/// every wire words it).
fn from_params(params: Option<&RawValue>) -> ReadMeta {
    RequestMeta::from_params(params).map(|m| m.map(Box::new))
}

/// [`ParamsRead`] from the params' top-level `members` (`at`: where one lies in the
/// params' text).
fn members_read(
    method: &Method,
    params: Option<&RawValue>,
    members: &TopMembers<'_>,
    at: impl Fn(&RawValue) -> Range<usize>,
    last: Option<&LastMeta>,
) -> ParamsRead {
    if members.duplicate {
        // Params a struct would refuse: the `_meta` as every wire reads them (none, or
        // its error), and nothing else read.
        return ParamsRead::unread(from_params(params));
    }
    let meta = match members.meta {
        None => Ok(None),
        Some(raw) => {
            match last.map_or_else(|| serde_json::from_str(raw.get()), |l| l.read(raw.get())) {
                Ok(meta) => Ok(Some(Box::new(meta))),
                // The error as every wire words it (positions in the params).
                Err(_) => from_params(params),
            }
        }
    };
    // A call answering input requests is left to the router (it reads the answers from
    // its params): the router takes a pre-read call as answering none.
    let answers_input = members.input_responses.is_some() || members.request_state.is_some();
    let tool_call = match (method, &meta) {
        (Method::ToolsCall, Ok(_)) if !answers_input => {
            read_tool_call(&members.name, members.arguments, members.meta)
        }
        _ => None,
    };
    let routed = Routed {
        name: members.name.map(&at),
        uri: members.uri.map(&at),
        task_id: members.task_id.map(&at),
    };
    ParamsRead {
        meta,
        routed: Some(routed),
        tool_call,
    }
}

/// A `tools/call`'s params from its members as [`read_params`] found them, as the router
/// would read them (`CallToolParams`); `None` when it would refuse them (no string `name`,
/// `arguments` neither an object nor `null`): it then parses them and says why.
fn read_tool_call(
    name: &Option<&RawValue>,
    arguments: Option<&RawValue>,
    meta: Option<&RawValue>,
) -> Option<Box<CallToolParams>> {
    let name = string_value(name.as_ref()?.get())?.into_owned();
    let arguments = match arguments {
        None => None,
        Some(a) if a.get() == "null" => None,
        Some(a) if a.get().starts_with('{') => Some(a.to_owned()),
        Some(_) => return None,
    };
    Some(Box::new(CallToolParams {
        name,
        arguments,
        meta: meta.map(RawValue::to_owned),
    }))
}

/// The stateless validation ladder: version header present, envelope present, headers
/// agreeing with the body. (The version itself is the session's to judge.) `meta`: the
/// request's `_meta` as the listener read it (`RequestMeta::from_params`).
pub(crate) fn check(
    headers: &HeaderMap,
    version: Option<&str>,
    req: &Request,
    (meta, routed): (&ReadMeta, Option<&Routed>),
    router: &Router,
) -> Result<(), McpError> {
    let Some(version) = version else {
        return Err(McpError::HeaderMismatch(
            "MCP-Protocol-Version header is required".into(),
        ));
    };
    let meta = match meta {
        Ok(Some(meta)) => meta,
        Ok(None) => &RequestMeta::default(),
        Err(e) => return Err(McpError::InvalidParams(e.clone())),
    };
    let Some(body_version) = &meta.protocol_version else {
        return Err(McpError::InvalidParams(
            "params._meta must carry io.modelcontextprotocol/protocolVersion".into(),
        ));
    };
    if meta.client_capabilities.is_none() {
        return Err(McpError::InvalidParams(
            "params._meta must carry io.modelcontextprotocol/clientCapabilities".into(),
        ));
    }
    if body_version.as_str() != Some(version) {
        return Err(McpError::HeaderMismatch(
            "MCP-Protocol-Version header does not match the request's _meta protocolVersion".into(),
        ));
    }
    // SEP-2243: the standard headers are required, not merely checked when present.
    match headers::text(headers, MCP_METHOD_HEADER) {
        Err(()) => return Err(McpError::HeaderMismatch("invalid Mcp-Method header".into())),
        Ok(None) => {
            return Err(McpError::HeaderMismatch(
                "Mcp-Method header is required".into(),
            ));
        }
        Ok(Some(m)) if m != req.method.as_str() => {
            return Err(McpError::HeaderMismatch(
                "Mcp-Method header does not match the request's method".into(),
            ));
        }
        Ok(Some(_)) => {}
    }
    let name = check_name(headers, req, routed)?;
    check_params(headers, req, name.as_deref(), router)
}

/// `Mcp-Name` must equal the body's tool/prompt name, resource URI or task id (SEP-2663:
/// `tasks/get|update|cancel`), and must be sent whenever the body carries one. The body's
/// value, when there is one.
fn check_name<'r>(
    headers: &HeaderMap,
    req: &'r Request,
    routed: Option<&Routed>,
) -> Result<Option<Cow<'r, str>>, McpError> {
    let key = match &req.method {
        Method::ToolsCall | Method::PromptsGet => "name",
        Method::ResourcesRead => "uri",
        Method::Other(m) if matches!(&**m, "tasks/get" | "tasks/update" | "tasks/cancel") => {
            "taskId"
        }
        _ => return Ok(None),
    };
    let header = match headers::text(headers, MCP_NAME_HEADER) {
        Ok(h) => h,
        Err(()) => return Err(McpError::HeaderMismatch("invalid Mcp-Name header".into())),
    };
    let params = req.params.as_deref().map(|p| p.get());
    let body = match routed {
        // Where it is was seen with the `_meta`: only a string counts.
        Some(routed) => {
            let range = match key {
                "uri" => &routed.uri,
                "taskId" => &routed.task_id,
                _ => &routed.name,
            };
            let raw = range.clone().and_then(|r| params?.get(r));
            raw.and_then(string_value)
        }
        None => scanned(params, key),
    };
    match (&body, header) {
        (Some(_), None) => Err(McpError::HeaderMismatch(format!(
            "Mcp-Name header is required (the request has a {key})"
        ))),
        (Some(b), Some(h)) if headers::decode_value(h).as_deref() != Some(&**b) => {
            Err(McpError::HeaderMismatch(format!(
                "Mcp-Name header does not match the request's {key}"
            )))
        }
        _ => Ok(body),
    }
}

/// The string a raw JSON value is, if it is one (borrowed when it has no escapes).
fn string_value(raw: &str) -> Option<Cow<'_, str>> {
    let inner = raw.strip_prefix('"')?.strip_suffix('"')?;
    if !inner.contains('\\') {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(raw).ok().map(Cow::Owned)
}

/// Member `key` of `params` when it is a string, found by a scan that skips the other
/// members (the `_meta` envelope, the arguments) without decoding them; the rest (escapes,
/// anything the scan does not read) decoded.
fn scanned<'p>(params: Option<&'p str>, key: &str) -> Option<Cow<'p, str>> {
    #[derive(serde::Deserialize)]
    struct Names {
        name: Option<serde_json::Value>,
        uri: Option<serde_json::Value>,
        #[serde(rename = "taskId")]
        task_id: Option<serde_json::Value>,
    }
    let params = params?;
    if let Some(value) =
        json_frame::plain_string_member(params.as_bytes(), key, json_frame::MAX_NESTING)
    {
        return Some(Cow::Borrowed(value));
    }
    let names = serde_json::from_str::<Names>(params).ok()?;
    let field = match key {
        "uri" => names.uri,
        "taskId" => names.task_id,
        _ => names.name,
    };
    match field {
        Some(serde_json::Value::String(s)) => Some(Cow::Owned(s)),
        _ => None,
    }
}

/// `Mcp-Param-{Name}` must be sent, and equal the argument, for every argument of the called
/// tool whose schema names a header; and must not be sent for an argument the body lacks.
/// `name`: the tool's, as [`check_name`] read it.
fn check_params(
    headers: &HeaderMap,
    req: &Request,
    name: Option<&str>,
    router: &Router,
) -> Result<(), McpError> {
    if req.method != Method::ToolsCall {
        return Ok(());
    }
    // Most tools declare no header parameters, and then nothing else is read.
    let (Some(name), Some(params)) = (name, req.params.as_deref()) else {
        return Ok(()); // the session answers a malformed call
    };
    let Some(routing) = router.tool_routing(name) else {
        return Ok(());
    };
    if routing.header_params.is_empty() {
        return Ok(());
    }
    #[derive(serde::Deserialize)]
    struct Call {
        #[serde(default)]
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
    }
    let Ok(call) = serde_json::from_str::<Call>(params.get()) else {
        return Ok(());
    };
    for param in &routing.header_params {
        let name = format!("mcp-param-{}", param.header);
        let header = match headers::text(headers, &name) {
            Ok(h) => h,
            Err(()) => {
                return Err(McpError::HeaderMismatch(format!(
                    "invalid Mcp-Param-{} header",
                    param.header
                )));
            }
        };
        let body = call
            .arguments
            .as_ref()
            .and_then(|a| a.get(&param.property))
            .filter(|v| !v.is_null())
            .map(|v| match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        match (body, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(McpError::HeaderMismatch(format!(
                    "Mcp-Param-{} header is required (the call has argument {})",
                    param.header, param.property
                )));
            }
            (body, Some(h)) => {
                let Some(decoded) = headers::decode_value(h) else {
                    return Err(McpError::HeaderMismatch(format!(
                        "Mcp-Param-{} holds invalid Base64",
                        param.header
                    )));
                };
                if body.as_deref() != Some(&*decoded) {
                    return Err(McpError::HeaderMismatch(format!(
                        "Mcp-Param-{} header does not match argument {}",
                        param.header, param.property
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(method: &str, params: &str) -> Request {
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        match mcpwire_model::jsonrpc::decode(text.as_bytes()) {
            Ok(mcpwire_model::Message::Request(r)) => r,
            other => panic!("not a request: {other:?}"),
        }
    }

    /// A request of `method` with `params`, and its params read both ways: by the
    /// listener's own pass, and from the members the decoder captured with the envelope.
    fn reads(method: &str, params: &str) -> (Request, [ParamsRead; 2]) {
        let req = request(method, params);
        let own = read_params(&req.method, req.params.as_deref(), None, None);
        let text = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        let decoded = mcpwire_model::captured::decode_capturing(text.as_bytes(), 64);
        let Ok((mcpwire_model::Message::Request(r), captured)) = decoded else {
            panic!("not a request: {text}");
        };
        let with = read_params(&r.method, r.params.as_deref(), captured.as_ref(), None);
        (req, [own, with])
    }

    /// What the body's routed member is, read with the `_meta` (both ways) and by the scan.
    fn both(method: &str, params: &str) -> ([Option<String>; 2], Option<String>) {
        let (req, reads) = reads(method, params);
        let name = |r: Result<Option<Cow<'_, str>>, McpError>| match r {
            Ok(v) => v.map(Cow::into_owned),
            // Required but absent: the header is missing here, so the body had one.
            Err(e) => Some(format!("required: {e}")),
        };
        let scanned = name(check_name(&HeaderMap::new(), &req, None));
        let read = reads.map(|ParamsRead { meta, routed, .. }| {
            assert_eq!(
                meta.is_ok(),
                RequestMeta::from_params(req.params.as_deref()).is_ok()
            );
            name(check_name(&HeaderMap::new(), &req, routed.as_ref()))
        });
        (read, scanned)
    }

    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn the_routed_member_read_with_the_meta_is_the_one_the_scan_finds() {
        for (method, rest) in [
            (
                "tools/call",
                r#""name":"echo","arguments":{"name":"inner"}"#,
            ),
            (
                "tools/call",
                r#""arguments":{"name":"inner"},"name":"e\"cho""#,
            ),
            ("tools/call", r#""name":"caf\u00e9""#),
            ("tools/call", r#""name":7"#),
            ("tools/call", r#""name":null"#),
            ("tools/call", r#""arguments":{}"#),
            ("tools/call", r#""name":"a","name":"b""#),
            ("prompts/get", r#""name":"p""#),
            ("resources/read", r#""uri":"file:///a b","name":"x""#),
            ("tasks/get", r#""taskId":"t-1""#),
            ("tools/list", r#""name":"ignored""#),
        ] {
            for params in [format!("{{{META},{rest}}}"), format!("{{{rest},{META}}}")] {
                let (read, scanned) = both(method, &params);
                assert_eq!(read, [scanned.clone(), scanned], "{method} {params}");
            }
        }
    }

    #[test]
    fn the_meta_is_read_as_from_params_reads_it() {
        let (_, both_ways) = reads("tools/call", &format!("{{{META},\"name\":\"echo\"}}"));
        for ParamsRead { meta, routed, .. } in both_ways {
            let meta = meta.expect("read").expect("present");
            assert_eq!(meta.protocol_version, Some(serde_json::json!("2026-07-28")));
            assert!(meta.client_capabilities.is_some());
            assert!(routed.is_some_and(|r| r.name.is_some()));
        }
        // Refused `_meta`: the same error (its positions in the params), and no call
        // read for the router.
        for params in [
            r#"{"_meta":{"progressToken":[]},"name":"echo"}"#,
            r#"{"name":"echo","_meta":{"io.modelcontextprotocol/logLevel":"loud"}}"#,
        ] {
            let (req, both_ways) = reads("tools/call", params);
            for read in both_ways {
                assert!(read.tool_call.is_none());
                assert_eq!(
                    read.meta.err(),
                    RequestMeta::from_params(req.params.as_deref()).err()
                );
            }
        }
    }

    /// A `tools/call` read with its `_meta` is what the router's own parse makes of its
    /// params; what that parse refuses is not read (the router refuses it in its words).
    #[test]
    fn a_tool_call_read_with_the_meta_is_what_the_router_would_read() {
        for rest in [
            r#""name":"echo","arguments":{"text":"hi \"there\"","n":[1,{"a":null}]}"#,
            r#""arguments":{"name":"inner"},"name":"e\"cho""#,
            r#""name":"caf\u00e9","arguments":null"#,
            r#""name":"echo""#,
            r#""name":"echo","arguments":[1]"#,
            r#""name":"echo","arguments":"{}""#,
            r#""name":7"#,
            r#""name":null"#,
            r#""arguments":{}"#,
            r#""name":"a","name":"b""#,
            r#""name":"echo","arguments":{},"arguments":{}"#,
            r#""name":"echo","task":{"ttl":1000},"other":[true]"#,
        ] {
            for params in [format!("{{{META},{rest}}}"), format!("{{{rest},{META}}}")] {
                let parsed = serde_json::from_str::<CallToolParams>(&params).ok();
                let fields = |c: &CallToolParams| {
                    let text =
                        |r: &Option<mcpwire_model::Raw>| r.as_ref().map(|r| r.get().to_owned());
                    (c.name.clone(), text(&c.arguments), text(&c.meta))
                };
                for read in reads("tools/call", &params).1 {
                    assert_eq!(
                        read.tool_call.as_deref().map(fields),
                        parsed.as_ref().map(fields),
                        "{params}"
                    );
                }
            }
        }
        // A call answering input requests is left to the router, which reads the answers.
        for rest in [
            r#""name":"ask","inputResponses":{"k":{"action":"accept"}}"#,
            r#""requestState":"s.e.a.l","name":"ask""#,
        ] {
            for read in reads("tools/call", &format!("{{{META},{rest}}}")).1 {
                assert!(read.tool_call.is_none(), "{rest}");
            }
        }
        // Only a `tools/call` is read for the router.
        for read in reads("prompts/get", &format!("{{{META},\"name\":\"p\"}}")).1 {
            assert!(read.tool_call.is_none());
        }
    }

    /// The envelope a connection sent last is read once: the same text again takes the
    /// kept reading (what a fresh parse says); another text is read and kept in its place;
    /// one with a progress token, or too long, is read but not kept; a refused one is an
    /// error either way.
    #[test]
    fn a_connection_keeps_the_envelope_it_sent_last() {
        let kept = |last: &LastMeta| last.0.lock().unwrap().as_ref().map(|(t, _)| t.to_string());
        let last = LastMeta::default();
        let a = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
        let b = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
        let fresh = |t: &str| format!("{:?}", serde_json::from_str::<RequestMeta>(t).unwrap());
        for _ in 0..2 {
            assert_eq!(format!("{:?}", last.read(a).unwrap()), fresh(a));
            assert_eq!(kept(&last).as_deref(), Some(a));
        }
        assert_eq!(format!("{:?}", last.read(b).unwrap()), fresh(b));
        assert_eq!(kept(&last).as_deref(), Some(b));
        let with_token =
            r#"{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#;
        assert_eq!(
            format!("{:?}", last.read(with_token).unwrap()),
            fresh(with_token)
        );
        assert_eq!(kept(&last).as_deref(), Some(b));
        let long = format!(
            r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","x":"{}"}}"#,
            "y".repeat(LastMeta::MAX_TEXT)
        );
        assert!(last.read(&long).is_ok());
        assert_eq!(kept(&last).as_deref(), Some(b));
        assert!(last.read(r#"{"progressToken":[]}"#).is_err());
        assert_eq!(kept(&last).as_deref(), Some(b));
    }
}
