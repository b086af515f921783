//! JSON-RPC results → proto-mcp responses, by the kind of request they answer.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use mcpwire_wire::proto_mcp::pb;
use prost::Message as _;
use serde_json::Value;

use crate::tool_schemas::{ProtoToolSchemas, ToolEntry};

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `initialize` result → `InitializeResponse`. proto-mcp v1 has no notifications, so every
/// `supports_list_changed`/`supports_subscribe` is false whatever the backend could emit;
/// `supports_bsr_refs` says whether a schema registry is configured.
pub(super) fn initialize(v: &Value, bsr_refs: bool) -> pb::InitializeResponse {
    let caps = &v["capabilities"];
    let info = &v["serverInfo"];
    let mut metadata = std::collections::BTreeMap::new();
    for key in ["name", "version", "title"] {
        if let Some(s) = info.get(key).and_then(Value::as_str) {
            metadata.insert(key.to_owned(), s.to_owned());
        }
    }
    pb::InitializeResponse {
        protocol_version: str_of(v, "protocolVersion").to_owned(),
        capabilities: Some(pb::ServerCapabilities {
            supports_bsr_refs: bsr_refs,
            supports_streaming: false,
            tools: caps.get("tools").map(|_| pb::ToolCapabilities::default()),
            resources: caps
                .get("resources")
                .map(|_| pb::ResourceCapabilities::default()),
            prompts: None,
        }),
        metadata,
    }
}

/// `tools/list` result → `ListToolsResponse`: each tool's schema inline (a
/// `FileDescriptorSet`) when asked for, else its registry reference when it has one;
/// `metadata["input_type"|"output_type"]` name the messages.
pub(super) fn list_tools(
    v: &Value,
    catalog: &ProtoToolSchemas,
    bsr_refs: &[String],
    include_schemas: bool,
) -> pb::ListToolsResponse {
    let tools = v["tools"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut out = Vec::with_capacity(tools.len());
    for t in tools {
        let bsr_ref = crate::tool_schemas::bsr_ref(t);
        if !bsr_refs.is_empty() && !bsr_ref.is_some_and(|r| bsr_refs.iter().any(|b| b == r)) {
            continue;
        }
        let mut metadata = std::collections::BTreeMap::new();
        let entry = catalog.entry_for(t);
        let mut inline = None;
        match entry.as_deref().map(|e| &e.proto) {
            Some(Ok(p)) => {
                metadata.insert("input_type".to_owned(), p.input().full_name().to_owned());
                if let Some(o) = p.output() {
                    metadata.insert("output_type".to_owned(), o.full_name().to_owned());
                }
                if include_schemas {
                    inline = Some(p.inline_schema());
                }
            }
            Some(Err(e)) => {
                metadata.insert("schema_error".to_owned(), e.clone());
            }
            None => {}
        }
        if let Some(title) = t.get("title").and_then(Value::as_str) {
            metadata.insert("title".to_owned(), title.to_owned());
        }
        let schema_source = match (inline, bsr_ref) {
            (Some(fds), _) => Some(pb::tool::SchemaSource::InlineSchema(fds)),
            (None, Some(r)) => Some(pb::tool::SchemaSource::BsrRef(r.to_owned())),
            (None, None) => None,
        };
        out.push(pb::Tool {
            name: str_of(t, "name").to_owned(),
            description: str_of(t, "description").to_owned(),
            schema_source,
            metadata,
        });
    }
    pb::ListToolsResponse {
        tools: out,
        next_cursor: str_of(v, "nextCursor").to_owned(),
    }
}

/// `tools/call` result → `CallToolResponse.success`. Structured content the tool's output
/// message can hold becomes one `data: Any` block first, replacing the text blocks (by
/// MCP convention its JSON serialization); otherwise text stays text, images and audio
/// are bytes with their MIME type, embedded resources and links are JSON text.
pub(super) fn call_tool(v: &Value, entry: Option<&ToolEntry>) -> pb::CallToolResponse {
    use pb::tool_content::Content;
    let mut content = Vec::new();
    let packed = v
        .get("structuredContent")
        .and_then(|s| structured_any(s, entry));
    let had_data = packed.is_some();
    if let Some(any) = packed {
        content.push(pb::ToolContent {
            content: Some(Content::Data(any)),
            mime_type: String::new(),
        });
    }
    for block in v["content"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let kind = str_of(block, "type");
        let item = match kind {
            "text" if had_data => continue,
            "text" => pb::ToolContent {
                content: Some(Content::Text(str_of(block, "text").to_owned())),
                mime_type: String::new(),
            },
            "image" | "audio" => match B64.decode(str_of(block, "data")) {
                Ok(bytes) => pb::ToolContent {
                    content: Some(Content::Image(bytes)),
                    mime_type: str_of(block, "mimeType").to_owned(),
                },
                Err(_) => json_block(block),
            },
            _ => json_block(block),
        };
        content.push(item);
    }
    pb::CallToolResponse {
        result: Some(pb::call_tool_response::Result::Success(pb::ToolResult {
            content,
            is_error: v.get("isError").and_then(Value::as_bool).unwrap_or(false),
        })),
        metadata: Default::default(),
    }
}

fn json_block(block: &Value) -> pb::ToolContent {
    pb::ToolContent {
        content: Some(pb::tool_content::Content::Text(block.to_string())),
        mime_type: "application/json".to_owned(),
    }
}

fn structured_any(s: &Value, entry: Option<&ToolEntry>) -> Option<prost_types::Any> {
    let proto = entry?.proto.as_ref().ok()?;
    let out = proto.output()?;
    match proto.structured_to_message(s) {
        Ok(msg) => Some(prost_types::Any {
            type_url: format!("type.googleapis.com/{}", out.full_name()),
            value: msg.encode_to_vec(),
        }),
        Err(e) => {
            tracing::debug!(error = %e, "structured content does not fit the output message; sent as JSON text");
            None
        }
    }
}

/// `resources/list` result → `ListResourcesResponse`.
pub(super) fn list_resources(v: &Value) -> pb::ListResourcesResponse {
    let list = v["resources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    pb::ListResourcesResponse {
        resources: list
            .iter()
            .map(|r| pb::Resource {
                uri: str_of(r, "uri").to_owned(),
                name: str_of(r, "name").to_owned(),
                description: str_of(r, "description").to_owned(),
                mime_type: str_of(r, "mimeType").to_owned(),
                metadata: r
                    .get("title")
                    .and_then(Value::as_str)
                    .map(|t| ("title".to_owned(), t.to_owned()))
                    .into_iter()
                    .collect(),
            })
            .collect(),
        next_cursor: str_of(v, "nextCursor").to_owned(),
    }
}

/// `resources/read` result → `ReadResourceResponse` (blobs decoded to bytes).
pub(super) fn read_resource(v: &Value) -> pb::ReadResourceResponse {
    use pb::resource_content::Content;
    let list = v["contents"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    pb::ReadResourceResponse {
        contents: list
            .iter()
            .map(|c| {
                let content = match (c.get("text"), c.get("blob").and_then(Value::as_str)) {
                    (Some(Value::String(t)), _) => Some(Content::Text(t.clone())),
                    (_, Some(b)) => Some(
                        B64.decode(b)
                            .map_or_else(|_| Content::Text(b.to_owned()), Content::Blob),
                    ),
                    _ => None,
                };
                pb::ResourceContent {
                    uri: str_of(c, "uri").to_owned(),
                    mime_type: str_of(c, "mimeType").to_owned(),
                    content,
                }
            })
            .collect(),
    }
}
