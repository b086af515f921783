//! Conversions between Envelope messages and MCP types.

use base64::Engine;
use mcpwire_model::types::{
    CallToolResult, CompleteResult, Completion, Content, GetPromptResult, JsonObject, LoggingLevel,
    PromptMessage, ResourceContents, Role, Tool, ToolAnnotations,
};
use mcpwire_model::{ClientAsk, LogEntry, McpError, to_raw};
use mcpwire_router::CallCtx;
use serde_json::{Value, json};

use crate::pb;

/// Largest number of completion values MCP allows in one answer.
const MAX_COMPLETION_VALUES: usize = 100;

/// A tool definition as MCP lists it. Hints are emitted only when true (the SDK cannot say
/// "false"); an empty or invalid input schema becomes an empty object schema.
pub(crate) fn tool(def: &pb::ToolDefinition) -> Tool {
    let input_schema = serde_json::from_str::<Value>(&def.input_schema_json)
        .ok()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
    let output_schema = serde_json::from_str::<Value>(&def.output_schema_json)
        .ok()
        .filter(Value::is_object);
    let hint = |b: bool| b.then_some(true);
    let annotations = ToolAnnotations {
        read_only_hint: hint(def.read_only_hint),
        destructive_hint: hint(def.destructive_hint),
        idempotent_hint: hint(def.idempotent_hint),
        open_world_hint: hint(def.open_world_hint),
        ..ToolAnnotations::default()
    };
    let any_hint =
        def.read_only_hint || def.destructive_hint || def.idempotent_hint || def.open_world_hint;
    Tool {
        name: def.name.clone(),
        title: non_empty(&def.title),
        description: non_empty(&def.description),
        input_schema,
        output_schema,
        annotations: any_hint.then_some(annotations),
        icons: None,
        execution: None,
        meta: None,
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

/// A `CallToolResponse` as an MCP tool result: `result_json` is the content array (anything
/// else becomes one text block), `structured_content_json` the structured content; a
/// `ToolError` adds a suggestion block and `_meta["io.mcpwire/toolError"]`.
pub(crate) fn call_result(r: pb::CallToolResponse) -> CallToolResult {
    let mut result = CallToolResult {
        content: content_blocks(r.result_json),
        structured_content: (!r.structured_content_json.is_empty())
            .then(|| serde_json::from_str(&r.structured_content_json).ok())
            .flatten(),
        is_error: r.is_error.then_some(true),
        meta: None,
    };
    if let Some(e) = r.error {
        if !e.suggestion.is_empty() {
            result
                .content
                .push(Content::text(format!("Suggestion: {}", e.suggestion)));
        }
        let mut meta = JsonObject::new();
        meta.insert(
            "io.mcpwire/toolError".into(),
            json!({"code": e.error_code, "message": e.message, "suggestion": e.suggestion, "retryable": e.retryable}),
        );
        result.meta = Some(meta);
        result.is_error = Some(true);
    }
    result
}

/// `result_json` as content blocks.
pub(crate) fn content_blocks(result_json: String) -> Vec<Content> {
    if result_json.is_empty() {
        return Vec::new();
    }
    match serde_json::from_str::<Vec<Content>>(&result_json) {
        Ok(c) => c,
        Err(_) => vec![Content::text(result_json)],
    }
}

/// Resource contents: a non-empty blob is sent base64, else the text.
pub(crate) fn contents(r: pb::ReadResourceResponse) -> Vec<ResourceContents> {
    r.contents
        .into_iter()
        .map(|c| {
            let mime = non_empty(&c.mime_type);
            let blob = (!c.blob.is_empty())
                .then(|| base64::engine::general_purpose::STANDARD.encode(&c.blob));
            let text = blob.is_none().then_some(c.text);
            ResourceContents {
                uri: c.uri,
                mime_type: mime,
                text,
                blob,
                meta: None,
            }
        })
        .collect()
}

/// A prompt answer; a message whose content is not a content object becomes text.
pub(crate) fn prompt(r: pb::GetPromptResponse) -> GetPromptResult {
    let messages = r
        .messages
        .into_iter()
        .map(|m| PromptMessage {
            role: if m.role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content: serde_json::from_str(&m.content_json)
                .unwrap_or_else(|_| Content::text(m.content_json)),
        })
        .collect();
    GetPromptResult {
        description: non_empty(&r.description),
        messages,
    }
}

/// A completion answer, capped at 100 values.
pub(crate) fn completion(r: pb::CompletionResponse) -> CompleteResult {
    let mut values = r.values;
    let total = (r.total.max(0) as usize).max(values.len());
    let truncated = values.len() > MAX_COMPLETION_VALUES;
    values.truncate(MAX_COMPLETION_VALUES);
    CompleteResult {
        completion: Completion {
            has_more: Some(r.has_more || truncated || total > values.len()),
            total: Some(total as u64),
            values,
        },
    }
}

/// Runs a process's sampling request against the client of the call that caused it; the
/// flag says the answer must come as a 2026-07-28 `input_required` round trip.
pub(crate) async fn sample(
    origin: Option<CallCtx>,
    s: pb::SamplingRequest,
) -> (pb::SamplingResponse, bool) {
    match sample_inner(origin, s).await {
        Ok(resp) => (resp, false),
        Err(McpError::InputRequired) => (sampling_error("input required".into()), true),
        Err(e) => (sampling_error(e.to_string()), false),
    }
}

fn sampling_error(error: String) -> pb::SamplingResponse {
    pb::SamplingResponse {
        error,
        ..pb::SamplingResponse::default()
    }
}

async fn sample_inner(
    origin: Option<CallCtx>,
    s: pb::SamplingRequest,
) -> Result<pb::SamplingResponse, McpError> {
    let ctx = origin
        .ok_or_else(|| McpError::InvalidRequest("no running tool call to sample for".into()))?;
    let params = sampling_params(&s).map_err(McpError::InvalidParams)?;
    let ask = ClientAsk {
        method: "sampling/createMessage".into(),
        params: Some(to_raw(&params)),
    };
    let raw = ctx.ask(ask).await?;
    let v: Value = serde_json::from_str(raw.get())
        .map_err(|e| McpError::Internal(format!("client answered with invalid JSON: {e}")))?;
    let text = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(pb::SamplingResponse {
        role: text("role"),
        content_json: v.get("content").map(Value::to_string).unwrap_or_default(),
        model: text("model"),
        stop_reason: text("stopReason"),
        error: String::new(),
    })
}

/// `sampling/createMessage` params from the SDK's request (string content wrapped as text).
fn sampling_params(s: &pb::SamplingRequest) -> Result<Value, String> {
    let messages: Vec<Value> = serde_json::from_str(&s.messages_json)
        .map_err(|e| format!("messages_json is not a JSON array: {e}"))?;
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|mut m| {
            if let Some(Value::String(t)) = m.get("content") {
                let t = t.clone();
                m["content"] = json!({"type": "text", "text": t});
            }
            m
        })
        .collect();
    let mut p = json!({"messages": messages, "maxTokens": if s.max_tokens > 0 { s.max_tokens } else { 1000 }});
    if !s.system_prompt.is_empty() {
        p["systemPrompt"] = Value::from(s.system_prompt.clone());
    }
    if let Ok(prefs) = serde_json::from_str::<Value>(&s.model_preferences_json)
        && prefs.is_object()
    {
        p["modelPreferences"] = prefs;
    }
    Ok(p)
}

/// Asks the calling client for its roots on the process's behalf (flag as for [`sample`]).
pub(crate) async fn roots(origin: Option<CallCtx>) -> (pb::ListRootsResponse, bool) {
    let Some(ctx) = origin else {
        return (pb::ListRootsResponse::default(), false);
    };
    match ctx.list_roots().await {
        Ok(r) => {
            let roots = r
                .roots
                .into_iter()
                .map(|r| pb::RootDef {
                    uri: r.uri,
                    name: r.name.unwrap_or_default(),
                })
                .collect();
            (pb::ListRootsResponse { roots }, false)
        }
        Err(e) => {
            tracing::debug!("roots/list for the tool process failed: {e}");
            let input_required = matches!(e, McpError::InputRequired);
            (pb::ListRootsResponse::default(), input_required)
        }
    }
}

/// A process log message as an MCP log entry (`warn` → warning, unknown → info; data kept
/// raw, or as a string when it is not JSON).
pub(crate) fn log_entry(l: pb::LogMessage) -> LogEntry {
    let level = match l.level.to_ascii_lowercase().as_str() {
        "debug" => LoggingLevel::Debug,
        "notice" => LoggingLevel::Notice,
        "warn" | "warning" => LoggingLevel::Warning,
        "error" => LoggingLevel::Error,
        "critical" => LoggingLevel::Critical,
        "alert" => LoggingLevel::Alert,
        "emergency" => LoggingLevel::Emergency,
        _ => LoggingLevel::Info,
    };
    let data = serde_json::value::RawValue::from_string(l.data_json.clone())
        .unwrap_or_else(|_| to_raw(&l.data_json));
    LogEntry {
        level,
        logger: (!l.logger.is_empty()).then_some(l.logger),
        data,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_error_becomes_meta_and_suggestion() {
        let r = call_result(pb::CallToolResponse {
            is_error: true,
            result_json: r#"[{"type":"text","text":"boom"}]"#.into(),
            error: Some(pb::ToolError {
                error_code: "E1".into(),
                message: "boom".into(),
                suggestion: "retry later".into(),
                retryable: true,
            }),
            ..Default::default()
        });
        assert_eq!(r.is_error, Some(true));
        assert_eq!(r.content.len(), 2);
        let meta = r.meta.expect("meta");
        assert_eq!(meta["io.mcpwire/toolError"]["code"], "E1");
        assert_eq!(meta["io.mcpwire/toolError"]["retryable"], true);
    }

    #[test]
    fn non_array_result_is_text_and_completion_is_capped() {
        assert_eq!(content_blocks("plain".into()), vec![Content::text("plain")]);
        let c = completion(pb::CompletionResponse {
            values: (0..150).map(|i| i.to_string()).collect(),
            total: 150,
            has_more: false,
        });
        assert_eq!(c.completion.values.len(), 100);
        assert_eq!(c.completion.has_more, Some(true));
        assert_eq!(c.completion.total, Some(150));
    }

    #[test]
    fn string_sampling_content_is_wrapped() {
        let p = sampling_params(&pb::SamplingRequest {
            messages_json: r#"[{"role":"user","content":"hi"}]"#.into(),
            max_tokens: 5,
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(p["messages"][0]["content"]["type"], "text");
        assert_eq!(p["maxTokens"], 5);
    }
}
