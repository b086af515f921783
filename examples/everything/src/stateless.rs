//! The 2026-07-28 diagnostic tools and the `input_required` (multi-round) tools and
//! prompt (conformance §7).
//!
//! In 2026-07-28 a client ask (`ctx.elicit_as`, …) returns the client's answer when the
//! retried call carries it, and otherwise records the ask and returns
//! [`McpError::InputRequired`]; propagating that with `?` makes the router answer
//! `input_required`. In a stateful session the same asks are real server→client
//! requests, so every tool here works on both wires.

use mcpwire_model::McpError;
use mcpwire_model::types::{GetPromptResult, PromptMessage};
use mcpwire_router::{CallCtx, NoArgs, PromptDef, ServerBuilder, ToolDef, ToolError, tool};

use crate::{field, first_error, form, one_field_schema, sampled_text, sampling_params};

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(missing_capability())
        .tool(
            tool(
                "test_streaming_elicitation",
                |ctx: CallCtx, _: NoArgs| async move {
                    ctx.progress(50.0, Some(100.0), Some("Streaming".to_owned()));
                    Ok::<_, ToolError>("Streaming complete")
                },
            )
            .description("Streams a progress notification, then the result"),
        )
        .tool(
            tool("test_logging_tool", |ctx: CallCtx, _: NoArgs| async move {
                ctx.info("Diagnostic trace logging activated");
                Ok::<_, ToolError>("Logging evaluated")
            })
            .description("Logs at info level (delivered only if the client asked for a log level)"),
        )
        .tool(mrtr_elicitation())
        .tool(mrtr_sampling())
        .tool(mrtr_list_roots())
        .tool(mrtr_request_state())
        .tool(mrtr_multiple_inputs())
        .tool(mrtr_multi_round())
        .tool(mrtr_tampered_state())
        .tool(mrtr_capabilities())
        .tool(custom_header())
        .prompt(mrtr_prompt())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Regional {
    /// The region; mirrored in the `Mcp-Param-Region` HTTP header (SEP-2243).
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
    /// Text to echo.
    #[serde(default)]
    text: Option<String>,
}

fn custom_header() -> ToolDef {
    tool(
        "test_custom_header",
        |_ctx: CallCtx, a: Regional| async move {
            Ok::<_, ToolError>(format!("{}: {}", a.region, a.text.unwrap_or_default()))
        },
    )
    .description("Echoes text for a region; over HTTP the region travels in Mcp-Param-Region too")
}

fn missing_capability() -> ToolDef {
    tool(
        "test_missing_capability",
        |ctx: CallCtx, _: NoArgs| async move {
            // Without the sampling capability this fails with -32021 (missing required client
            // capability); that error is propagated as is.
            ctx.sample(sampling_params("Reply with anything.", 10))
                .await?;
            Ok::<_, ToolError>("Success")
        },
    )
    .description("Needs the client's sampling capability; refused as a missing required client capability without it")
}

fn ask_name_schema() -> serde_json::Value {
    one_field_schema("name", "string")
}

fn mrtr_elicitation() -> ToolDef {
    tool(
        "test_input_required_result_elicitation",
        |ctx: CallCtx, _: NoArgs| async move {
            let r = ctx
                .elicit_as(
                    Some("user_name"),
                    form("What is your name?", ask_name_schema()),
                )
                .await?;
            let name = field(&r, "name").unwrap_or_else(|| "stranger".to_owned());
            Ok::<_, ToolError>(format!("Hello, {name}!"))
        },
    )
    .description("Asks for the user's name (input_required key user_name), then greets")
}

fn mrtr_sampling() -> ToolDef {
    tool(
        "test_input_required_result_sampling",
        |ctx: CallCtx, _: NoArgs| async move {
            let r = ctx
                .sample_as(
                    Some("sample_request"),
                    sampling_params("What is the capital of France?", 100),
                )
                .await?;
            Ok::<_, ToolError>(format!("Sampling result: {}", sampled_text(&r.content)))
        },
    )
    .description("Asks the client's LLM a question via input_required, then reports the answer")
}

fn mrtr_list_roots() -> ToolDef {
    tool(
        "test_input_required_result_list_roots",
        |ctx: CallCtx, _: NoArgs| async move {
            let r = ctx.list_roots_as(Some("roots_request")).await?;
            Ok::<_, ToolError>(format!("Found {} root(s)", r.roots.len()))
        },
    )
    .description("Asks for the client's roots via input_required, then counts them")
}

/// An elicitation asking for `{ok: boolean}` under the key `confirm`.
async fn confirm(ctx: &CallCtx) -> Result<String, McpError> {
    let r = ctx
        .elicit_as(
            Some("confirm"),
            form("Please confirm", one_field_schema("ok", "boolean")),
        )
        .await?;
    Ok(field(&r, "ok").unwrap_or_else(|| "false".to_owned()))
}

fn mrtr_request_state() -> ToolDef {
    tool(
        "test_input_required_result_request_state",
        |ctx: CallCtx, _: NoArgs| async move {
            let ok = confirm(&ctx).await?;
            Ok::<_, ToolError>(format!("state-ok: requestState verified, confirmed={ok}"))
        },
    )
    .description("Asks for confirmation with a sealed requestState; answers state-ok")
}

fn mrtr_tampered_state() -> ToolDef {
    tool(
        "test_input_required_result_tampered_state",
        |ctx: CallCtx, _: NoArgs| async move {
            let ok = confirm(&ctx).await?;
            Ok::<_, ToolError>(format!("state-ok: requestState integrity verified, confirmed={ok}"))
        },
    )
    .description("Asks for confirmation with an integrity-protected requestState; a tampered one is rejected")
}

fn mrtr_multiple_inputs() -> ToolDef {
    tool(
        "test_input_required_result_multiple_inputs",
        |ctx: CallCtx, _: NoArgs| async move {
            // All three asks are made before any error is propagated, so a 2026-07-28
            // client gets them in one input_required round.
            let name = ctx
                .elicit_as(
                    Some("user_name"),
                    form("What is your name?", ask_name_schema()),
                )
                .await;
            let greeting = ctx
                .sample_as(Some("greeting"), sampling_params("Generate a greeting", 50))
                .await;
            let roots = ctx.list_roots_as(Some("client_roots")).await;
            match (name, greeting, roots) {
                (Ok(name), Ok(greeting), Ok(roots)) => Ok(format!(
                    "Name: {}; Greeting: {}; Roots: {}",
                    field(&name, "name").unwrap_or_default(),
                    sampled_text(&greeting.content),
                    roots.roots.len()
                )),
                (name, greeting, roots) => {
                    let errors = [name.err(), greeting.err(), roots.err()];
                    let e = first_error(errors.into_iter().flatten())
                        .unwrap_or_else(|| McpError::Internal("no error".into()));
                    Err(ToolError::from(e))
                }
            }
        },
    )
    .description("Asks for a name, an LLM greeting and the roots in a single input_required round")
}

fn mrtr_multi_round() -> ToolDef {
    tool(
        "test_input_required_result_multi_round",
        |ctx: CallCtx, _: NoArgs| async move {
            let step1 = ctx
                .elicit_as(
                    Some("step1"),
                    form("Step 1: What is your name?", ask_name_schema()),
                )
                .await?;
            let step2 = ctx
                .elicit_as(
                    Some("step2"),
                    form(
                        "Step 2: What is your favorite color?",
                        one_field_schema("color", "string"),
                    ),
                )
                .await?;
            let name = field(&step1, "name").unwrap_or_default();
            let color = field(&step2, "color").unwrap_or_default();
            Ok::<_, ToolError>(format!("Multi-round complete for {name} who likes {color}"))
        },
    )
    .description("Asks for a name, then (in a second round) a favourite colour")
}

fn mrtr_capabilities() -> ToolDef {
    tool(
        "test_input_required_result_capabilities",
        |ctx: CallCtx, _: NoArgs| async move {
            if ctx.client_capabilities().elicitation.is_some() {
                let r = ctx
                    .elicit_as(
                        Some("user_input"),
                        form("What is your name?", ask_name_schema()),
                    )
                    .await?;
                let name = field(&r, "name").unwrap_or_default();
                Ok::<_, ToolError>(format!("Elicited: {name}"))
            } else {
                let r = ctx
                    .sample_as(
                        Some("sample_request"),
                        sampling_params("What is the capital of France?", 100),
                    )
                    .await?;
                Ok(format!("Sampled: {}", sampled_text(&r.content)))
            }
        },
    )
    .description("Asks only with what the client supports: elicitation if declared, else sampling")
}

fn mrtr_prompt() -> PromptDef {
    PromptDef::new(
        "test_input_required_result_prompt",
        |ctx, _args| async move {
            let r = ctx
                .elicit_as(
                    Some("user_context"),
                    form(
                        "What context should the prompt use?",
                        one_field_schema("context", "string"),
                    ),
                )
                .await?;
            let context = field(&r, "context").unwrap_or_default();
            Ok(GetPromptResult {
                description: Some("A prompt built from user-supplied context".to_owned()),
                messages: vec![PromptMessage::user(format!(
                    "Use this context for the task: {context}"
                ))],
            })
        },
    )
    .description(
        "Asks the user for context (input_required key user_context), then returns a prompt",
    )
}
