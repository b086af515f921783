//! What a downstream request becomes upstream: its method, its params rebuilt from the
//! parsed request (names and URIs as the federation mapped them, arguments raw), and the
//! downstream `_meta` less what the client session stamps itself.

use mcpwire_model::types::{ClientCapabilities, META_SERVER_INFO};
use mcpwire_model::{McpError, Raw, to_raw};
use mcpwire_router::{BackendRequest, CallCtx};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// One request for the upstream.
#[derive(Clone)]
pub(crate) struct Outgoing {
    /// The method.
    pub(crate) method: String,
    /// The params (a JSON object, or none).
    pub(crate) params: Option<Raw>,
    /// A `tools/call` sent as a 2025-11-25 task, followed to its result
    /// (`super::call::run_as_task`).
    pub(crate) as_task: bool,
}

/// How long an upstream keeps a task the gateway created (2025-11-25 `task.ttl`, ms): the
/// gateway fetches its result as soon as it ends, so this only has to outlast the work.
const TASK_TTL_MS: u64 = 3_600_000;

impl Outgoing {
    /// The same `tools/call`, asking the upstream to run it as a task.
    pub(crate) fn run_as_task(mut self) -> Outgoing {
        let params = self.params.as_deref().map(RawValue::get).unwrap_or("{}");
        if let Ok(mut map) = serde_json::from_str::<Map<String, Value>>(params) {
            map.insert("task".into(), serde_json::json!({ "ttl": TASK_TTL_MS }));
            self.params = Some(to_raw(&map));
            self.as_task = true;
        }
        self
    }
}

/// The upstream request for `req`.
pub(crate) fn outgoing(req: &BackendRequest) -> Result<Outgoing, McpError> {
    #[derive(serde::Serialize)]
    struct Cursor<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<&'a str>,
    }
    #[derive(serde::Serialize)]
    struct Uri<'a> {
        uri: &'a str,
    }
    /// `tools/list` params: the cursor and a SEP-1821 `query` the upstream may honour.
    #[derive(serde::Serialize)]
    struct ToolsList<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        cursor: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        query: Option<&'a str>,
    }
    let (method, params) = match req {
        BackendRequest::ListTools { cursor, query } => {
            let list = ToolsList {
                cursor: cursor.as_deref(),
                query: query.as_deref(),
            };
            ("tools/list", Some(to_raw(&list)))
        }
        BackendRequest::ListResources { cursor } => ("resources/list", list(cursor)),
        BackendRequest::ListResourceTemplates { cursor } => {
            ("resources/templates/list", list(cursor))
        }
        BackendRequest::ListPrompts { cursor } => ("prompts/list", list(cursor)),
        BackendRequest::CallTool { name, arguments } => {
            #[derive(serde::Serialize)]
            struct Call<'a> {
                name: &'a str,
                #[serde(skip_serializing_if = "Option::is_none")]
                arguments: Option<&'a RawValue>,
            }
            let call = Call {
                name,
                arguments: arguments.as_deref(),
            };
            ("tools/call", Some(to_raw(&call)))
        }
        BackendRequest::ReadResource { uri } => ("resources/read", Some(to_raw(&Uri { uri }))),
        BackendRequest::Subscribe { uri } => ("resources/subscribe", Some(to_raw(&Uri { uri }))),
        BackendRequest::Unsubscribe { uri } => {
            ("resources/unsubscribe", Some(to_raw(&Uri { uri })))
        }
        BackendRequest::GetPrompt { name, arguments } => (
            "prompts/get",
            Some(to_raw(
                &serde_json::json!({ "name": name, "arguments": arguments }),
            )),
        ),
        BackendRequest::Complete(p) => ("completion/complete", Some(to_raw(p))),
        BackendRequest::Other { method, params } => {
            return Ok(Outgoing {
                method: method.as_str().to_owned(),
                params: params.clone(),
                as_task: false,
            });
        }
        _ => {
            return Err(McpError::MethodNotFound(format!(
                "{req:?} cannot be forwarded upstream"
            )));
        }
    };
    fn list(cursor: &Option<String>) -> Option<Raw> {
        Some(to_raw(&Cursor {
            cursor: cursor.as_deref(),
        }))
    }
    Ok(Outgoing {
        method: method.to_owned(),
        params,
        as_task: false,
    })
}

/// The downstream request's `_meta` entries the upstream should see: all but the progress
/// token (the client session asks for progress under its own) and the 2026-07-28
/// envelope (`io.modelcontextprotocol/…`, stamped by the client session for its own era).
pub(crate) fn forwarded_meta(ctx: &CallCtx) -> Option<Map<String, Value>> {
    let raw = ctx.request_meta()?;
    let mut meta: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    meta.retain(|k, _| k != "progressToken" && !k.starts_with("io.modelcontextprotocol/"));
    (!meta.is_empty()).then_some(meta)
}

/// The capabilities a request forwarded to an upstream declares: the downstream client's
/// own, so the upstream asks only for what that client can answer, and runs a tool as a
/// task of its own only for a client that opted into the tasks extension (the upstream's
/// `CreateTaskResult` and its `tasks/*` pass through the gateway). Less the 2025-11-25
/// `tasks` capability: the gateway does not speak that surface downstream.
pub(crate) fn forwarded_capabilities(ctx: &CallCtx) -> ClientCapabilities {
    let mut caps = ctx.client_capabilities().clone();
    caps.tasks = None;
    caps
}

/// A 2026-07-28 upstream's result as a handshake-era downstream client gets it: without
/// that era's decoration (`resultType`, `ttlMs`, `cacheScope`, the upstream's `serverInfo`
/// in `_meta`); everything else untouched. A 2026-07-28 downstream session decorates
/// results itself (its own `serverInfo` replaces the upstream's; caching hints are kept).
pub(crate) fn undecorated(result: Raw) -> Raw {
    let s = result.get();
    if !s.contains("\"resultType\"") && !s.contains(META_SERVER_INFO) {
        return result;
    }
    let Ok(mut map) = serde_json::from_str::<Map<String, Value>>(s) else {
        return result;
    };
    for key in ["resultType", "ttlMs", "cacheScope"] {
        map.remove(key);
    }
    if let Some(Value::Object(meta)) = map.get_mut("_meta") {
        meta.remove(META_SERVER_INFO);
        if meta.is_empty() {
            map.remove("_meta");
        }
    }
    serde_json::value::to_raw_value(&map).unwrap_or(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn out(req: BackendRequest) -> (String, Value) {
        let o = outgoing(&req).unwrap();
        let p = o
            .params
            .map(|p| serde_json::from_str(p.get()).unwrap())
            .unwrap_or(Value::Null);
        (o.method, p)
    }

    #[test]
    fn era_decoration_is_dropped_for_handshake_clients() {
        let r = to_raw(&serde_json::json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "up"}, "k": 1},
            "contents": [],
        }));
        let v: Value = serde_json::from_str(undecorated(r).get()).unwrap();
        assert_eq!(v, serde_json::json!({"_meta": {"k": 1}, "contents": []}));
        let plain = r#"{"content":[{"type":"text","text":"a \"resultType\" word"}]}"#;
        let r = RawValue::from_string(plain.into()).unwrap();
        let v: Value = serde_json::from_str(undecorated(r).get()).unwrap();
        assert_eq!(v, serde_json::from_str::<Value>(plain).unwrap());
    }

    #[test]
    fn requests_keep_their_fields() {
        let args = to_raw(&serde_json::json!({"a": 1, "_meta": {"x": 1}}));
        assert_eq!(
            out(BackendRequest::CallTool {
                name: "add".into(),
                arguments: Some(args)
            }),
            (
                "tools/call".into(),
                serde_json::json!({"name": "add", "arguments": {"a": 1, "_meta": {"x": 1}}})
            )
        );
        assert_eq!(
            out(BackendRequest::ListTools {
                cursor: Some("2".into()),
                query: None,
            }),
            ("tools/list".into(), serde_json::json!({"cursor": "2"}))
        );
        assert_eq!(
            out(BackendRequest::ListPrompts { cursor: None }),
            ("prompts/list".into(), serde_json::json!({}))
        );
        let mut arguments = BTreeMap::new();
        arguments.insert("who".to_owned(), "x".to_owned());
        assert_eq!(
            out(BackendRequest::GetPrompt {
                name: "greet".into(),
                arguments
            }),
            (
                "prompts/get".into(),
                serde_json::json!({"name": "greet", "arguments": {"who": "x"}})
            )
        );
        assert_eq!(
            out(BackendRequest::Subscribe {
                uri: "a://b".into()
            }),
            (
                "resources/subscribe".into(),
                serde_json::json!({"uri": "a://b"})
            )
        );
    }
}
