//! The 2026-07-28 diagnostic tools and the `input_required` (multi-round) tools and
//! prompt (conformance §7).
//!
//! In 2026-07-28 a client ask (`ctx.elicit::<T>(..)`, `ctx.sample(..)`, …) returns the
//! client's answer when the retried call carries it, and otherwise records the ask and
//! returns [`McpError::InputRequired`]; propagating that with `?` makes the router answer
//! `input_required`, and the client calls again: **the handler runs again from the start**
//! with the answers. In a stateful session the same asks are real server→client requests,
//! so every tool here works on both wires.

use mcpwire::prelude::*;
use mcpwire::router::ServerBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::first_error;

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.handlers(InputRequired)
}

/// The 2026-07-28 fixtures; no state of their own.
struct InputRequired;

/// A name, as the user gives it.
#[derive(Deserialize, JsonSchema)]
pub(crate) struct Name {
    pub(crate) name: String,
}

/// A yes or no.
#[derive(Deserialize, JsonSchema)]
struct Confirmation {
    ok: bool,
}

/// Context for a prompt.
#[derive(Deserialize, JsonSchema)]
struct Context {
    context: String,
}

/// The name from an answer, or `fallback` if the user declined.
fn name_or(answer: Elicited<Name>, fallback: &str) -> String {
    answer
        .accepted()
        .map(|n| n.name)
        .unwrap_or_else(|| fallback.to_owned())
}

/// An elicitation asking for `{ok: boolean}` under the key `confirm`.
async fn confirm(ctx: &CallCtx) -> Result<String, McpError> {
    let r = ctx
        .elicit::<Confirmation>("Please confirm")
        .key("confirm")
        .await?;
    Ok(r.accepted().map(|c| c.ok).unwrap_or(false).to_string())
}

#[server]
impl InputRequired {
    /// Needs the client's sampling capability; refused as a missing required client capability without it
    #[tool]
    async fn test_missing_capability(ctx: CallCtx) -> Result<&'static str, McpError> {
        // Without the sampling capability this fails as a missing required client
        // capability; that error is propagated as is.
        ctx.sample("Reply with anything.").max_tokens(10).await?;
        Ok("Success")
    }

    /// Streams a progress notification, then the result
    #[tool]
    fn test_streaming_elicitation(ctx: &CallCtx) -> &'static str {
        ctx.progress(50.0, Some(100.0), Some("Streaming".to_owned()));
        "Streaming complete"
    }

    /// Logs at info level (delivered only if the client asked for a log level)
    #[tool]
    fn test_logging_tool(ctx: &CallCtx) -> &'static str {
        ctx.info("Diagnostic trace logging activated");
        "Logging evaluated"
    }

    /// Asks for the user's name (input_required key user_name), then greets
    #[tool]
    async fn test_input_required_result_elicitation(ctx: CallCtx) -> Result<String, McpError> {
        let r = ctx
            .elicit::<Name>("What is your name?")
            .key("user_name")
            .await?;
        Ok(format!("Hello, {}!", name_or(r, "stranger")))
    }

    /// Asks the client's LLM a question via input_required, then reports the answer
    #[tool]
    async fn test_input_required_result_sampling(ctx: CallCtx) -> Result<String, McpError> {
        let r = ctx
            .sample("What is the capital of France?")
            .max_tokens(100)
            .key("sample_request")
            .await?;
        Ok(format!("Sampling result: {}", r.text))
    }

    /// Asks for the client's roots via input_required, then counts them
    #[tool]
    async fn test_input_required_result_list_roots(ctx: CallCtx) -> Result<String, McpError> {
        let r = ctx.list_roots_as(Some("roots_request")).await?;
        Ok(format!("Found {} root(s)", r.roots.len()))
    }

    /// Asks for confirmation with a sealed requestState; answers state-ok
    #[tool]
    async fn test_input_required_result_request_state(ctx: CallCtx) -> Result<String, McpError> {
        let ok = confirm(&ctx).await?;
        Ok(format!("state-ok: requestState verified, confirmed={ok}"))
    }

    /// Asks for a name, an LLM greeting and the roots in a single input_required round
    #[tool]
    async fn test_input_required_result_multiple_inputs(ctx: CallCtx) -> Result<String, McpError> {
        // All three asks are made before any error is propagated, so a 2026-07-28 client
        // gets them in one input_required round.
        let name = ctx
            .elicit::<Name>("What is your name?")
            .key("user_name")
            .await;
        let greeting = ctx
            .sample("Generate a greeting")
            .max_tokens(50)
            .key("greeting")
            .await;
        let roots = ctx.list_roots_as(Some("client_roots")).await;
        match (name, greeting, roots) {
            (Ok(name), Ok(greeting), Ok(roots)) => Ok(format!(
                "Name: {}; Greeting: {}; Roots: {}",
                name_or(name, ""),
                greeting.text,
                roots.roots.len()
            )),
            (name, greeting, roots) => {
                let errors = [name.err(), greeting.err(), roots.err()];
                Err(first_error(errors.into_iter().flatten())
                    .unwrap_or_else(|| McpError::Internal("no error".into())))
            }
        }
    }

    /// Asks for a name, then (in a second round) a favourite colour
    #[tool]
    async fn test_input_required_result_multi_round(ctx: CallCtx) -> Result<String, McpError> {
        let step1 = ctx
            .elicit::<Name>("Step 1: What is your name?")
            .key("step1")
            .await?;
        // Step 2 reads the answer leniently (a missing field is an empty colour): some test
        // peers answer every form with the same content.
        let form = crate::form(
            "Step 2: What is your favorite color?",
            serde_json::json!({
                "type": "object",
                "properties": { "color": { "type": "string" } },
                "required": ["color"],
            }),
        );
        let step2 = ctx.elicit_with(Some("step2"), form).await?;
        let name = name_or(step1, "");
        let color = step2
            .content
            .as_ref()
            .and_then(|c| c.get("color"))
            .and_then(|c| c.as_str())
            .unwrap_or_default()
            .to_owned();
        Ok(format!("Multi-round complete for {name} who likes {color}"))
    }

    /// Asks for confirmation with an integrity-protected requestState; a tampered one is rejected
    #[tool]
    async fn test_input_required_result_tampered_state(ctx: CallCtx) -> Result<String, McpError> {
        let ok = confirm(&ctx).await?;
        Ok(format!(
            "state-ok: requestState integrity verified, confirmed={ok}"
        ))
    }

    /// Asks only with what the client supports: elicitation if declared, else sampling
    #[tool]
    async fn test_input_required_result_capabilities(ctx: CallCtx) -> Result<String, McpError> {
        if ctx.client_capabilities().elicitation.is_some() {
            let r = ctx
                .elicit::<Name>("What is your name?")
                .key("user_input")
                .await?;
            Ok(format!("Elicited: {}", name_or(r, "")))
        } else {
            let r = ctx
                .sample("What is the capital of France?")
                .max_tokens(100)
                .key("sample_request")
                .await?;
            Ok(format!("Sampled: {}", r.text))
        }
    }

    /// Echoes text for a region; over HTTP the region travels in Mcp-Param-Region too
    #[tool]
    fn test_custom_header(
        /// The region; mirrored in the `Mcp-Param-Region` HTTP header (SEP-2243).
        #[schemars(extend("x-mcp-header" = "Region"))]
        region: String,
        /// Text to echo.
        #[serde(default)]
        text: Option<String>,
    ) -> String {
        format!("{region}: {}", text.unwrap_or_default())
    }

    /// Asks the user for context (input_required key user_context), then returns a prompt
    #[prompt]
    async fn test_input_required_result_prompt(ctx: CallCtx) -> Result<GetPromptResult, McpError> {
        let r = ctx
            .elicit::<Context>("What context should the prompt use?")
            .key("user_context")
            .await?;
        let context = r.accepted().map(|c| c.context).unwrap_or_default();
        Ok(GetPromptResult {
            description: Some("A prompt built from user-supplied context".to_owned()),
            messages: vec![PromptMessage::user(format!(
                "Use this context for the task: {context}"
            ))],
        })
    }
}
