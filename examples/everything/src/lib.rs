//! The "everything" fixture server: every tool, resource and prompt the official MCP
//! conformance suite calls, written with mcpwire's macros (`#[server]`, `#[tool]`,
//! `#[prompt]`, `#[resource]`); the tools that change the catalog at run time and the one
//! with a hand-written schema use the closure builder.
//!
//! **Is:** [`server()`], an [`mcpwire::router::Server`] with the fixture catalog (the
//! stateful-era tools, the 2026-07-28 diagnostic and `input_required` tools, resources,
//! a template, prompts and completers) plus `echo`, `add` and `test_slow` for benchmarks
//! and cancellation tests.
//!
//! **Is not:** a transport. Serve it with the `mcpwire` binary or wrap it in a
//! [`mcpwire::router::Router`] in tests.
//!
//! Nothing here spawns tasks or needs a runtime at build time: [`server()`] may be called
//! outside tokio.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::sync::{Arc, Weak};

use mcpwire::model::types::{ElicitAction, ElicitParams, ElicitResult};
use mcpwire::prelude::*;
use serde_json::Value;

mod prompts;
mod resources;
mod stateless;
mod tasks;
mod tools;

/// The server's name in `serverInfo`.
pub const SERVER_NAME: &str = "mcpwire-everything";

/// A 1×1 PNG, base64.
pub const IMG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A tiny WAV file, base64.
pub const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// The fixture server.
///
/// Registers everything in a fixed order (tools/list order is deterministic), then adds
/// `test_trigger_tool_change`, `test_trigger_prompt_change` and
/// `test_trigger_resource_update`, which hold a [`Weak`] handle to the server so they can
/// change its catalog, or announce a resource change, at run time.
pub fn server() -> Arc<Server> {
    let builder = Server::builder(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")));
    let builder = tools::register(builder);
    let builder = stateless::register(builder);
    let builder = tasks::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    let server = builder.build();
    register_mutators(&server);
    server
}

/// Name of the tool `test_trigger_tool_change` adds and removes.
pub const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// Name of the prompt `test_trigger_prompt_change` (re)registers.
pub const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

fn register_mutators(server: &Arc<Server>) {
    let weak: Weak<Server> = Arc::downgrade(server);
    server.add_tool(
        tool(
            "test_trigger_tool_change",
            move |_ctx: CallCtx, _: NoArgs| {
                let weak = weak.clone();
                async move {
                    if let Some(s) = weak.upgrade()
                        && !s.remove_tool(DYNAMIC_TOOL)
                    {
                        s.add_tool(dynamic_tool());
                    }
                    Ok::<_, ToolError>("Mutation triggered")
                }
            },
        )
        .description(
            "Adds test_dynamic_tool if absent, removes it if present; \
             either way sends notifications/tools/list_changed",
        ),
    );

    let weak: Weak<Server> = Arc::downgrade(server);
    server.add_tool(
        tool(
            "test_trigger_prompt_change",
            move |_ctx: CallCtx, _: NoArgs| {
                let weak = weak.clone();
                async move {
                    if let Some(s) = weak.upgrade()
                        && !s.remove_prompt(DYNAMIC_PROMPT)
                    {
                        s.add_prompt(dynamic_prompt());
                    }
                    Ok::<_, ToolError>("Mutation triggered")
                }
            },
        )
        .description(
            "Adds test_dynamic_prompt if absent, removes it if present; \
             either way sends notifications/prompts/list_changed",
        ),
    );

    let weak: Weak<Server> = Arc::downgrade(server);
    server.add_tool(
        tool(
            "test_trigger_resource_update",
            move |_ctx: CallCtx, a: UpdateArgs| {
                let weak = weak.clone();
                async move {
                    let uri = a.uri.unwrap_or_else(|| WATCHED_RESOURCE.to_owned());
                    if let Some(s) = weak.upgrade() {
                        s.notify_resource_updated(uri.clone());
                    }
                    Ok::<_, ToolError>(format!("Updated {uri}"))
                }
            },
        )
        .description(
            "Sends notifications/resources/updated for uri (default test://watched-resource) \
             to the sessions subscribed to it",
        ),
    );
}

/// The resource `test_trigger_resource_update` announces by default.
pub const WATCHED_RESOURCE: &str = "test://watched-resource";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct UpdateArgs {
    /// The resource that changed (default test://watched-resource).
    uri: Option<String>,
}

fn dynamic_tool() -> ToolDef {
    tool(DYNAMIC_TOOL, |_ctx: CallCtx, _: NoArgs| async {
        Ok::<_, ToolError>("This is a dynamically added tool")
    })
    .description("A tool added at run time by test_trigger_tool_change")
}

fn dynamic_prompt() -> PromptDef {
    PromptDef::new(DYNAMIC_PROMPT, |_ctx, _args| async {
        Ok(GetPromptResult {
            description: None,
            messages: vec![PromptMessage::user("This is a dynamically added prompt.")],
        })
    })
    .description("A prompt registered at run time by test_trigger_prompt_change")
}

// ---------------------------------------------------------------------------------------
// Helpers shared by the tool modules.
// ---------------------------------------------------------------------------------------

/// Splits a failed client ask into "must propagate" and "report as text".
///
/// [`McpError::InputRequired`] (2026-07-28: the ask was recorded and the call must end so
/// the router can answer `input_required`) and [`McpError::Cancelled`] are returned as
/// `Err` for `?`; any other failure becomes `Ok(Err(text))` with `prefix` in front, for
/// tools that report failures to ask as a normal text result.
pub(crate) fn soften<T>(
    result: Result<T, McpError>,
    prefix: &str,
) -> Result<Result<T, String>, ToolError> {
    match result {
        Ok(v) => Ok(Ok(v)),
        Err(e @ (McpError::InputRequired | McpError::Cancelled)) => Err(e.into()),
        Err(e) => Ok(Err(format!("{prefix}: {e}"))),
    }
}

/// Returns the most useful of several failed asks made in one round: a hard error first
/// (retrying would not help), else the first `InputRequired`.
pub(crate) fn first_error(errors: impl IntoIterator<Item = McpError>) -> Option<McpError> {
    let mut input_required = None;
    for e in errors {
        match e {
            McpError::InputRequired => input_required = input_required.or(Some(e)),
            hard => return Some(hard),
        }
    }
    input_required
}

/// Form-mode `elicitation/create` params.
pub(crate) fn form(message: &str, requested_schema: Value) -> ElicitParams {
    ElicitParams {
        message: message.to_owned(),
        requested_schema: Some(requested_schema),
        mode: None,
        url: None,
        elicitation_id: None,
    }
}

/// `accept`, `decline` or `cancel`.
pub(crate) fn action_name(action: ElicitAction) -> &'static str {
    match action {
        ElicitAction::Accept => "accept",
        ElicitAction::Decline => "decline",
        ElicitAction::Cancel => "cancel",
    }
}

/// The submitted content as JSON (`{}` when absent).
pub(crate) fn content_json(r: &ElicitResult) -> String {
    Value::Object(r.content.clone().unwrap_or_default()).to_string()
}
