//! Tools: definitions, calls and results.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Content, Icon, JsonObject};
use crate::Raw;

/// Behaviour hints about a tool (never trusted for security).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no extra effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool definition as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// Unique name.
    pub name: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Execution hints (task support, 2025-11-25).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<Value>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

/// Params of `tools/list`: a page cursor and, as SEP-1821 proposes, an optional search
/// `query` (a server that searches answers the ranked matches; one that does not ignores it).
#[derive(Debug, Default, Deserialize)]
pub struct ListToolsParams {
    /// Opaque cursor from a previous page's `nextCursor`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// What the caller is looking for, in words (SEP-1821).
    #[serde(default)]
    pub query: Option<String>,
}

/// Result of `tools/list`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListToolsResult {
    /// One page of tools.
    pub tools: Vec<Tool>,
    /// Cursor of the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Params of `tools/call`; arguments stay raw.
///
/// A `name` that is not a string or `arguments` that are not an object (or `null`) break
/// the request's own schema, so they fail to deserialize (−32602 on every wire); whether
/// the arguments suit the *tool* is the tool's schema's business (an `isError` result).
#[derive(Debug, Deserialize)]
pub struct CallToolParams {
    /// The tool to call.
    pub name: String,
    /// The raw arguments object.
    #[serde(default, deserialize_with = "object_or_null")]
    pub arguments: Option<Raw>,
    /// The request's `_meta`, raw, when it has one (read in the same pass).
    #[serde(rename = "_meta", default)]
    pub meta: Option<Raw>,
}

/// An optional raw JSON object: `null` or absent is `None`, anything but an object fails.
fn object_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Raw>, D::Error> {
    let raw = Option::<Raw>::deserialize(d)?;
    match raw {
        Some(r) if !r.get().trim_start().starts_with('{') => Err(serde::de::Error::custom(
            "tools/call arguments must be an object",
        )),
        other => Ok(other),
    }
}

/// Result of `tools/call`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content.
    #[serde(default)]
    pub content: Vec<Content>,
    /// Structured content matching the tool's `outputSchema`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<JsonObject>,
}

impl CallToolResult {
    /// A successful result with these content blocks.
    pub fn new(content: Vec<Content>) -> CallToolResult {
        CallToolResult {
            content,
            ..CallToolResult::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> CallToolResult {
        CallToolResult::new(vec![Content::text(text)])
    }

    /// A failed result (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> CallToolResult {
        CallToolResult {
            is_error: Some(true),
            ..CallToolResult::text(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(params: &str) -> Result<CallToolParams, String> {
        serde_json::from_str(params).map_err(|e| e.to_string())
    }

    #[test]
    fn call_params_need_a_string_name_and_object_arguments() {
        assert!(parse(r#"{"name":"t"}"#).unwrap().arguments.is_none());
        assert!(
            parse(r#"{"name":"t","arguments":null}"#)
                .unwrap()
                .arguments
                .is_none()
        );
        let ok = parse(r#"{"name":"t","arguments": {"a":1}}"#).unwrap();
        assert_eq!(ok.arguments.unwrap().get(), r#"{"a":1}"#);
        for bad in [
            r#"{"name":"t","arguments":"a=1"}"#,
            r#"{"name":"t","arguments":[1]}"#,
            r#"{"name":"t","arguments":3}"#,
            r#"{"name":"t","arguments":true}"#,
            r#"{"name":7,"arguments":{}}"#,
            r#"{"name":null}"#,
            r#"{"arguments":{}}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
