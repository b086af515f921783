//! The stateful-era fixture tools (conformance §4) plus `echo`, `add`, `test_slow`,
//! `test_reconnection` (SSE polling) and `test_panic`.

use std::time::Duration;

use mcpwire::prelude::*;
use mcpwire::router::ServerBuilder;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{IMG, WAV, action_name, content_json, form, soften};

/// Delay between the notifications of the logging and progress tools.
const STEP: Duration = Duration::from_millis(50);

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.handlers(Stateful).tool(json_schema_2020_12())
}

/// The fixtures of the stateful era; no state of their own.
struct Stateful;

/// The structured result of `add`.
#[derive(Serialize, JsonSchema)]
struct AddResult {
    /// `a + b`.
    sum: f64,
}

/// What the user answers `test_elicitation`.
#[derive(Serialize, Deserialize, JsonSchema)]
struct Response {
    /// User's response
    response: String,
}

#[server]
impl Stateful {
    /// Echoes the given text
    #[tool]
    fn echo(
        /// The text to echo.
        text: String,
    ) -> String {
        text
    }

    /// Adds two numbers and returns {sum} as structured content
    #[tool(read_only, idempotent)]
    fn add(
        /// The first addend.
        a: f64,
        /// The second addend.
        b: f64,
    ) -> Json<AddResult> {
        Json(AddResult { sum: a + b })
    }

    /// Returns a simple text response
    #[tool]
    fn test_simple_text() -> &'static str {
        "This is a simple text response for testing."
    }

    /// Returns a 1x1 PNG image
    #[tool]
    fn test_image_content() -> Content {
        Content::image(IMG, "image/png")
    }

    /// Returns a short WAV audio clip
    #[tool]
    fn test_audio_content() -> Content {
        Content::audio(WAV, "audio/wav")
    }

    /// Returns an embedded text resource
    #[tool]
    fn test_embedded_resource() -> Content {
        Content::resource(ResourceContents::text(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        ))
    }

    /// Returns text, an image and an embedded resource
    #[tool]
    fn test_multiple_content_types() -> Vec<Content> {
        vec![
            Content::text("Multiple content types test:"),
            Content::image(IMG, "image/png"),
            Content::resource(ResourceContents::text(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            )),
        ]
    }

    /// Sends three info log messages while running
    #[tool]
    async fn test_tool_with_logging(ctx: CallCtx) -> &'static str {
        ctx.log(LoggingLevel::Info, "Tool execution started");
        tokio::time::sleep(STEP).await;
        ctx.log(LoggingLevel::Info, "Tool processing data");
        tokio::time::sleep(STEP).await;
        ctx.info("Tool execution completed");
        "Tool with logging executed successfully"
    }

    /// Reports progress 0, 50 and 100 of 100
    #[tool]
    async fn test_tool_with_progress(ctx: CallCtx) -> String {
        for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            ctx.progress(p, Some(100.0), Some(format!("Completed step {p} of 100")));
        }
        match ctx.progress_token() {
            Some(mcpwire::model::RequestId::Int(n)) => n.to_string(),
            Some(mcpwire::model::RequestId::Str(s)) => s.to_string(),
            None => "no progress token".to_owned(),
        }
    }

    /// Always fails with a tool error (isError: true)
    #[tool]
    fn test_error_handling() -> Result<String, &'static str> {
        Err("This tool intentionally returns an error for testing")
    }

    /// Asks the client's LLM (sampling/createMessage) and returns its answer
    #[tool]
    async fn test_sampling(
        ctx: CallCtx,
        /// The prompt to send to the client's LLM.
        prompt: String,
    ) -> Result<String, ToolError> {
        let asked = ctx.sample(prompt).max_tokens(100).await;
        Ok(match soften(asked, "Sampling not supported or error")? {
            Ok(r) => format!("LLM response: {}", r.text),
            Err(text) => text,
        })
    }

    /// Asks the user for input (elicitation/create) and returns the answer
    #[tool]
    async fn test_elicitation(
        ctx: CallCtx,
        /// The message shown to the user.
        message: String,
    ) -> Result<String, ToolError> {
        let asked = ctx.elicit::<Response>(message).await;
        Ok(match soften(asked, "Elicitation not supported or error")? {
            Ok(Elicited::Accepted(r)) => format!(
                "User response: action=accept, content={}",
                serde_json::to_string(&r).unwrap_or_default()
            ),
            Ok(Elicited::Declined) => "User response: action=decline, content={}".to_owned(),
            Ok(Elicited::Cancelled) => "User response: action=cancel, content={}".to_owned(),
            Err(text) => text,
        })
    }

    /// Elicits a form whose fields have default values (SEP-1034)
    #[tool]
    async fn test_elicitation_sep1034_defaults(ctx: CallCtx) -> Result<String, ToolError> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {
                    "type": "boolean",
                    "description": "Verification status",
                    "default": true,
                },
            },
            "required": [],
        });
        elicit_report(
            ctx,
            "Please review and update the form fields with defaults",
            schema,
        )
        .await
    }

    /// Elicits single- and multi-select enum fields, titled and untitled (SEP-1330)
    #[tool]
    async fn test_elicitation_sep1330_enums(ctx: CallCtx) -> Result<String, ToolError> {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Choose an option",
                    "enum": ["option1", "option2", "option3"],
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Choose a titled option",
                    "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                        { "const": "value3", "title": "Third Option" },
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Choose a legacy option",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Choose one or more options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Choose one or more titled options",
                    "minItems": 1,
                    "maxItems": 3,
                    "items": {
                        "anyOf": [
                            { "const": "value1", "title": "First Choice" },
                            { "const": "value2", "title": "Second Choice" },
                            { "const": "value3", "title": "Third Choice" },
                        ],
                    },
                },
            },
            "required": [],
        });
        elicit_report(ctx, "Please select options from the enum fields", schema).await
    }

    /// Closes its HTTP SSE stream mid-call, then answers: the client resumes with Last-Event-ID
    #[tool]
    async fn test_reconnection(ctx: CallCtx) -> &'static str {
        ctx.progress(1.0, Some(2.0), Some("closing the stream".to_owned()));
        ctx.close_stream();
        tokio::time::sleep(Duration::from_millis(200)).await;
        "Reconnection test completed"
    }

    /// Waits the given number of seconds, unless cancelled, then returns "done"
    #[tool]
    async fn test_slow(
        ctx: CallCtx,
        /// How long to wait, in seconds (capped at one hour).
        seconds: f64,
    ) -> Result<&'static str, McpError> {
        let wait = Duration::try_from_secs_f64(seconds.clamp(0.0, 3600.0)).unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(wait) => Ok("done"),
            _ = ctx.cancelled() => Err(McpError::Cancelled),
        }
    }

    /// Panics on purpose: shows that a panicking tool answers with an internal error
    #[tool]
    fn test_panic() -> &'static str {
        if std::hint::black_box(true) {
            panic!("test_panic panics on purpose");
        }
        "unreachable"
    }
}

/// Runs one elicitation with a hand-written form and reports
/// "Elicitation completed: action=…, content=…".
async fn elicit_report(ctx: CallCtx, message: &str, schema: Value) -> Result<String, ToolError> {
    let asked = ctx.elicit_with(None, form(message, schema)).await;
    Ok(match soften(asked, "Elicitation not supported or error")? {
        Ok(r) => format!(
            "Elicitation completed: action={}, content={}",
            action_name(r.action),
            content_json(&r)
        ),
        Err(text) => text,
    })
}

/// A tool whose schema is written by hand, so it stays on the closure builder.
fn json_schema_2020_12() -> ToolDef {
    let schema = serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" },
                },
            },
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" },
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"],
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false,
    });
    ToolDef::raw(
        "json_schema_2020_12_tool",
        schema,
        |_ctx, args: Value| async move {
            Ok(CallToolResult::text(format!(
                "JSON Schema 2020-12 tool called with: {args}"
            )))
        },
    )
    .description(
        "Declares a JSON Schema 2020-12 input schema ($defs, $anchor, allOf, if/then/else)",
    )
}
