//! 2026-07-28 routing headers (SEP-2243) a client sends with each request: `Mcp-Method`,
//! `Mcp-Name` (the tool or prompt name, the resource URI, the task id of `tasks/get|update|cancel`) and `Mcp-Param-*` (tool arguments
//! whose schema property carries `x-mcp-header`, learnt from `tools/list` results), values
//! that would not survive as a header base64-wrapped as `=?base64?…?=`.

use std::collections::HashMap;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::conn::Headers;
use mcpwire_server::http::headers::{MCP_METHOD, MCP_NAME};

/// Tools remembered at most (a server listing more gets no `Mcp-Param-*` for the rest).
const MAX_TOOLS: usize = 4096;

/// Per tool, the argument paths mirrored into headers and their header tokens.
#[derive(Default)]
pub(super) struct ToolHeaders {
    tools: HashMap<String, Vec<(Vec<String>, String)>>,
}

#[derive(Deserialize)]
struct Named {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    uri: Option<String>,
    #[serde(default, rename = "taskId")]
    task_id: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

impl ToolHeaders {
    /// The routing headers of a 2026-07-28 request.
    pub(super) fn for_request(&self, method: &str, params: Option<&RawValue>) -> Headers {
        let mut h = vec![(MCP_METHOD.to_owned(), method.to_owned())];
        let key = match method {
            "tools/call" | "prompts/get" => "name",
            "resources/read" => "uri",
            "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
            _ => return h,
        };
        let Some(p) = params.and_then(|p| serde_json::from_str::<Named>(p.get()).ok()) else {
            return h;
        };
        let name = match key {
            "uri" => &p.uri,
            "taskId" => &p.task_id,
            _ => &p.name,
        };
        if let Some(name) = name {
            h.push((MCP_NAME.to_owned(), encode(name)));
        }
        if method == "tools/call"
            && let (Some(tool), Some(args)) = (&p.name, &p.arguments)
            && let Some(paths) = self.tools.get(tool)
        {
            for (path, token) in paths {
                let value = path.iter().try_fold(args, |node, key| node.get(key));
                let text = match value {
                    None | Some(Value::Null) => continue,
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                };
                h.push((format!("mcp-param-{token}"), encode(&text)));
            }
        }
        h
    }

    /// Learns the `x-mcp-header` annotations of a `tools/list` result.
    pub(super) fn learn(&mut self, result: &RawValue) {
        if !result.get().contains("x-mcp-header") {
            return;
        }
        #[derive(Deserialize)]
        struct Tool {
            name: String,
            #[serde(rename = "inputSchema", default)]
            input_schema: Value,
        }
        #[derive(Deserialize)]
        struct Page {
            #[serde(default)]
            tools: Vec<Tool>,
        }
        let Ok(page) = serde_json::from_str::<Page>(result.get()) else {
            return;
        };
        for tool in page.tools {
            let mut paths = Vec::new();
            annotated(&tool.input_schema, &mut Vec::new(), &mut paths);
            if paths.is_empty() {
                self.tools.remove(&tool.name);
            } else if self.tools.len() < MAX_TOOLS || self.tools.contains_key(&tool.name) {
                self.tools.insert(tool.name, paths);
            }
        }
    }
}

/// Every property reached through a chain of `properties` that carries a valid
/// `x-mcp-header` token (letters, digits, `-`, `_`), with its path. Depth is bounded by the
/// schema's own (decoded with a depth limit).
fn annotated(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let Some(obj) = schema.as_object() else {
        return;
    };
    if !path.is_empty()
        && let Some(Value::String(token)) = obj.get("x-mcp-header")
        && !token.is_empty()
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        out.push((path.clone(), token.to_ascii_lowercase()));
    }
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (name, sub) in props {
            path.push(name.clone());
            annotated(sub, path, out);
            path.pop();
        }
    }
}

/// A header value: verbatim when it is printable ASCII without edge whitespace (and does not
/// look like the sentinel), else `=?base64?…?=`.
pub(super) fn encode(value: &str) -> String {
    let safe = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if safe {
        value.to_owned()
    } else {
        let b64 = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{b64}?=")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[test]
    fn names_params_and_encoding() {
        let mut t = ToolHeaders::default();
        t.learn(&raw(
            json!({"tools": [{"name": "q", "inputSchema": {"type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                           "opts": {"properties": {"n": {"x-mcp-header": "N"}}},
                           "bad": {"x-mcp-header": "a b"}}}}]}),
        ));
        let h = t.for_request(
            "tools/call",
            Some(&raw(
                json!({"name": "q", "arguments": {"region": "eu wést", "opts": {"n": 3}}}),
            )),
        );
        let get = |k: &str| h.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("mcp-method"), Some("tools/call"));
        assert_eq!(get("mcp-name"), Some("q"));
        assert_eq!(get("mcp-param-region"), Some("=?base64?ZXUgd8Opc3Q=?="));
        assert_eq!(get("mcp-param-n"), Some("3"));
        assert_eq!(h.len(), 4);
        let h = t.for_request("resources/read", Some(&raw(json!({"uri": "file:///a b"}))));
        assert_eq!(h[1].1, "file:///a b");
        assert_eq!(encode(" x"), "=?base64?IHg=?=");
        assert_eq!(t.for_request("tools/list", None).len(), 1);
        let h = t.for_request("tasks/get", Some(&raw(json!({"taskId": "t-1"}))));
        assert_eq!(h[1], ("mcp-name".to_owned(), "t-1".to_owned()));
    }
}
