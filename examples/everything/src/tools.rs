//! The stateful-era fixture tools (conformance §4) plus `echo`, `add`, `test_slow` and
//! `test_reconnection` (SSE polling).

use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_model::types::{CallToolResult, Content, LoggingLevel, ResourceContents};
use mcpwire_router::{CallCtx, Json, NoArgs, ServerBuilder, ToolDef, ToolError, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{IMG, WAV, action_name, content_json, form, sampled_text, sampling_params, soften};

/// Delay between the notifications of the logging and progress tools.
const STEP: Duration = Duration::from_millis(50);

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(echo())
        .tool(add())
        .tool(
            tool("test_simple_text", |_ctx: CallCtx, _: NoArgs| async {
                Ok::<_, ToolError>("This is a simple text response for testing.")
            })
            .description("Returns a simple text response"),
        )
        .tool(
            tool("test_image_content", |_ctx: CallCtx, _: NoArgs| async {
                Ok::<_, ToolError>(Content::image(IMG, "image/png"))
            })
            .description("Returns a 1x1 PNG image"),
        )
        .tool(
            tool("test_audio_content", |_ctx: CallCtx, _: NoArgs| async {
                Ok::<_, ToolError>(Content::audio(WAV, "audio/wav"))
            })
            .description("Returns a short WAV audio clip"),
        )
        .tool(
            tool("test_embedded_resource", |_ctx: CallCtx, _: NoArgs| async {
                Ok::<_, ToolError>(Content::resource(ResourceContents::text(
                    "test://embedded-resource",
                    "text/plain",
                    "This is an embedded resource content.",
                )))
            })
            .description("Returns an embedded text resource"),
        )
        .tool(
            tool(
                "test_multiple_content_types",
                |_ctx: CallCtx, _: NoArgs| async {
                    Ok::<_, ToolError>(vec![
                        Content::text("Multiple content types test:"),
                        Content::image(IMG, "image/png"),
                        Content::resource(ResourceContents::text(
                            "test://mixed-content-resource",
                            "application/json",
                            r#"{"test":"data","value":123}"#,
                        )),
                    ])
                },
            )
            .description("Returns text, an image and an embedded resource"),
        )
        .tool(
            tool(
                "test_tool_with_logging",
                |ctx: CallCtx, _: NoArgs| async move {
                    ctx.log(LoggingLevel::Info, "Tool execution started");
                    tokio::time::sleep(STEP).await;
                    ctx.log(LoggingLevel::Info, "Tool processing data");
                    tokio::time::sleep(STEP).await;
                    ctx.info("Tool execution completed");
                    Ok::<_, ToolError>("Tool with logging executed successfully")
                },
            )
            .description("Sends three info log messages while running"),
        )
        .tool(
            tool(
                "test_tool_with_progress",
                |ctx: CallCtx, _: NoArgs| async move {
                    for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                        if i > 0 {
                            tokio::time::sleep(STEP).await;
                        }
                        ctx.progress(p, Some(100.0), Some(format!("Completed step {p} of 100")));
                    }
                    let token = match ctx.progress_token() {
                        Some(mcpwire_model::RequestId::Int(n)) => n.to_string(),
                        Some(mcpwire_model::RequestId::Str(s)) => s.to_string(),
                        None => "no progress token".to_owned(),
                    };
                    Ok::<_, ToolError>(token)
                },
            )
            .description("Reports progress 0, 50 and 100 of 100"),
        )
        .tool(
            tool("test_error_handling", |_ctx: CallCtx, _: NoArgs| async {
                Err::<String, _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            })
            .description("Always fails with a tool error (isError: true)"),
        )
        .tool(sampling())
        .tool(elicitation())
        .tool(elicitation_defaults())
        .tool(elicitation_enums())
        .tool(json_schema_2020_12())
        .tool(
            tool("test_reconnection", |_ctx: CallCtx, _: NoArgs| async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, ToolError>(
                    "Reconnection test completed successfully. If you received this, \
                     the client properly reconnected after stream closure.",
                )
            })
            .description("Answers after 100 ms (used to test SSE stream resumption)"),
        )
        .tool(slow())
        .tool(reconnection())
        .tool(panicking())
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    text: String,
}

fn echo() -> ToolDef {
    tool("echo", |_ctx: CallCtx, a: EchoArgs| async move {
        Ok::<_, ToolError>(a.text)
    })
    .description("Echoes the given text")
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

/// The structured result of `add`.
#[derive(Serialize, JsonSchema)]
struct AddResult {
    /// `a + b`.
    sum: f64,
}

fn add() -> ToolDef {
    tool("add", |_ctx: CallCtx, a: AddArgs| async move {
        Ok::<_, ToolError>(Json(AddResult { sum: a.a + a.b }))
    })
    .description("Adds two numbers and returns {sum} as structured content")
    .read_only()
    .idempotent()
}

#[derive(Deserialize, JsonSchema)]
struct SlowArgs {
    /// How long to wait, in seconds (capped at one hour).
    seconds: f64,
}

fn slow() -> ToolDef {
    tool("test_slow", |ctx: CallCtx, a: SlowArgs| async move {
        let wait = Duration::try_from_secs_f64(a.seconds.clamp(0.0, 3600.0)).unwrap_or_default();
        tokio::select! {
            _ = tokio::time::sleep(wait) => Ok::<_, ToolError>("done"),
            _ = ctx.cancelled() => Err(McpError::Cancelled.into()),
        }
    })
    .description("Waits the given number of seconds, unless cancelled, then returns \"done\"")
}

fn reconnection() -> ToolDef {
    tool("test_reconnection", |ctx: CallCtx, _: NoArgs| async move {
        ctx.progress(1.0, Some(2.0), Some("closing the stream".to_owned()));
        ctx.close_stream();
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok::<_, ToolError>("Reconnection test completed")
    })
    .description(
        "Closes its HTTP SSE stream mid-call, then answers: the client resumes with Last-Event-ID",
    )
}

fn panicking() -> ToolDef {
    tool("test_panic", |_ctx: CallCtx, _: NoArgs| async move {
        if std::hint::black_box(true) {
            panic!("test_panic panics on purpose");
        }
        Ok::<_, ToolError>("unreachable")
    })
    .description("Panics on purpose: shows that a panicking tool answers with an internal error")
}

#[derive(Deserialize, JsonSchema)]
struct SamplingArgs {
    /// The prompt to send to the client's LLM.
    prompt: String,
}

fn sampling() -> ToolDef {
    tool(
        "test_sampling",
        |ctx: CallCtx, a: SamplingArgs| async move {
            let asked = ctx.sample(sampling_params(&a.prompt, 100)).await;
            Ok::<_, ToolError>(match soften(asked, "Sampling not supported or error")? {
                Ok(r) => format!("LLM response: {}", sampled_text(&r.content)),
                Err(text) => text,
            })
        },
    )
    .description("Asks the client's LLM (sampling/createMessage) and returns its answer")
}

#[derive(Deserialize, JsonSchema)]
struct ElicitationArgs {
    /// The message shown to the user.
    message: String,
}

fn elicitation() -> ToolDef {
    tool(
        "test_elicitation",
        |ctx: CallCtx, a: ElicitationArgs| async move {
            let schema = serde_json::json!({
                "type": "object",
                "properties": {
                    "response": { "type": "string", "description": "User's response" },
                },
                "required": ["response"],
            });
            let asked = ctx.elicit(form(&a.message, schema)).await;
            Ok::<_, ToolError>(match soften(asked, "Elicitation not supported or error")? {
                Ok(r) => format!(
                    "User response: action={}, content={}",
                    action_name(r.action),
                    content_json(&r)
                ),
                Err(text) => text,
            })
        },
    )
    .description("Asks the user for input (elicitation/create) and returns the answer")
}

/// Runs one elicitation and reports "Elicitation completed: action=…, content=…".
async fn elicit_report(ctx: CallCtx, message: &str, schema: Value) -> Result<String, ToolError> {
    let asked = ctx.elicit(form(message, schema)).await;
    Ok(match soften(asked, "Elicitation not supported or error")? {
        Ok(r) => format!(
            "Elicitation completed: action={}, content={}",
            action_name(r.action),
            content_json(&r)
        ),
        Err(text) => text,
    })
}

fn elicitation_defaults() -> ToolDef {
    tool(
        "test_elicitation_sep1034_defaults",
        |ctx: CallCtx, _: NoArgs| async move {
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
        },
    )
    .description("Elicits a form whose fields have default values (SEP-1034)")
}

fn elicitation_enums() -> ToolDef {
    tool(
        "test_elicitation_sep1330_enums",
        |ctx: CallCtx, _: NoArgs| async move {
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
        },
    )
    .description("Elicits single- and multi-select enum fields, titled and untitled (SEP-1330)")
}

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
