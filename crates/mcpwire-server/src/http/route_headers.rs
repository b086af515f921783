//! 2026-07-28 request validation before a stateless exchange (SEP-2243): the version header
//! and `_meta` envelope, and the routing headers mirroring the body — `Mcp-Method`,
//! `Mcp-Name` (tool/prompt name, resource URI, task id) and `Mcp-Param-{Name}` for tool
//! arguments whose schema carries `"x-mcp-header": "{Name}"`. A header that is missing when
//! the body has its value, or that disagrees with it, is −32020 (HTTP 400).

use std::borrow::Cow;

use axum::http::HeaderMap;
use mcpwire_model::types::RequestMeta;
use mcpwire_model::{McpError, Method, Request};
use mcpwire_router::Router;
use mcpwire_wire::json_frame;

use super::headers::{self, MCP_METHOD, MCP_NAME};

/// The stateless validation ladder: version header present, envelope present, headers
/// agreeing with the body. (The version itself is the session's to judge.) `meta`: the
/// request's `_meta` as the listener read it (`RequestMeta::from_params`).
pub(crate) fn check(
    headers: &HeaderMap,
    version: Option<&str>,
    req: &Request,
    meta: &Result<Option<RequestMeta>, String>,
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
    match headers::text(headers, MCP_METHOD) {
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
    let name = check_name(headers, req)?;
    check_params(headers, req, name.as_deref(), router)
}

/// `Mcp-Name` must equal the body's tool/prompt name, resource URI or task id (SEP-2663:
/// `tasks/get|update|cancel`), and must be sent whenever the body carries one. The body's
/// value, when there is one.
fn check_name<'r>(headers: &HeaderMap, req: &'r Request) -> Result<Option<Cow<'r, str>>, McpError> {
    let key = match &req.method {
        Method::ToolsCall | Method::PromptsGet => "name",
        Method::ResourcesRead => "uri",
        Method::Other(m) if matches!(&**m, "tasks/get" | "tasks/update" | "tasks/cancel") => {
            "taskId"
        }
        _ => return Ok(None),
    };
    let header = match headers::text(headers, MCP_NAME) {
        Ok(h) => h,
        Err(()) => return Err(McpError::HeaderMismatch("invalid Mcp-Name header".into())),
    };
    #[derive(serde::Deserialize)]
    struct Names {
        name: Option<serde_json::Value>,
        uri: Option<serde_json::Value>,
        #[serde(rename = "taskId")]
        task_id: Option<serde_json::Value>,
    }
    let params = req.params.as_deref().map(|p| p.get());
    // Most values: found by a scan that skips the other members (the `_meta` envelope, the
    // arguments) without decoding them; the rest (escapes, anything the scan does not
    // read) are decoded.
    let plain = params
        .and_then(|p| json_frame::plain_string_member(p.as_bytes(), key, json_frame::MAX_NESTING));
    let body = match plain {
        Some(value) => Some(Cow::Borrowed(value)),
        None => {
            let names = params.and_then(|p| serde_json::from_str::<Names>(p).ok());
            let field = |n: Names| match key {
                "uri" => n.uri,
                "taskId" => n.task_id,
                _ => n.name,
            };
            names.and_then(|n| match field(n) {
                Some(serde_json::Value::String(s)) => Some(Cow::Owned(s)),
                _ => None,
            })
        }
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
                if body.as_deref() != Some(decoded.as_str()) {
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
