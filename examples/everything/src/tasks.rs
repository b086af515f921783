//! The tasks-extension fixtures (`io.modelcontextprotocol/tasks`, conformance §8).
//!
//! A tool declared with task support becomes a task when a client that declared the
//! extension calls it and the tool waits for something (a timer here) or calls
//! `ctx.run_as_task()`; otherwise it answers in its request like any tool.

use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_router::{CallCtx, NoArgs, ServerBuilder, TaskSupport, ToolDef, ToolError, tool};

use crate::{field, form, one_field_schema};

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.tool(greet())
        .tool(slow_compute())
        .tool(failing_job())
        .tool(protocol_error_job())
        .tool(confirm_delete())
        .tool(multi_input())
        .tool(tool_with_task())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Greet {
    /// Who to greet.
    name: String,
}

fn greet() -> ToolDef {
    tool("greet", |_ctx: CallCtx, a: Greet| async move {
        Ok::<_, ToolError>(format!("Hello, {}!", a.name))
    })
    .description("Greets by name (never a task)")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SlowCompute {
    /// Seconds to work; 0 answers at once.
    seconds: f64,
    /// A free label echoed in the result.
    #[serde(default)]
    label: Option<String>,
}

fn slow_compute() -> ToolDef {
    tool("slow_compute", |ctx: CallCtx, a: SlowCompute| async move {
        let secs = a.seconds.clamp(0.0, 3600.0);
        if secs > 0.0 {
            ctx.progress(0.0, Some(secs), Some(format!("computing for {secs} s")));
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        }
        let label = a.label.unwrap_or_default();
        Ok::<_, ToolError>(
            format!("computed after {secs} s {label}")
                .trim_end()
                .to_owned(),
        )
    })
    .description("Works for `seconds` seconds, then answers (a task for clients with tasks)")
    .task_support(TaskSupport::Optional)
}

fn failing_job() -> ToolDef {
    tool("failing_job", |_ctx: CallCtx, _: NoArgs| async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Err::<String, _>(ToolError::new("the job failed after 1 s"))
    })
    .description("Fails with a tool error after about a second (tasks only)")
    .task_support(TaskSupport::Required)
}

fn protocol_error_job() -> ToolDef {
    tool(
        "protocol_error_job",
        |_ctx: CallCtx, _: NoArgs| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Err::<String, _>(ToolError::from(McpError::Internal(
                "the job's backend went away".into(),
            )))
        },
    )
    .description("Ends in a protocol-level error (a failed task)")
    .task_support(TaskSupport::Optional)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ConfirmDelete {
    /// The file to delete.
    filename: String,
}

fn confirm_delete() -> ToolDef {
    tool(
        "confirm_delete",
        |ctx: CallCtx, a: ConfirmDelete| async move {
            ctx.run_as_task().await;
            let r = ctx
                .elicit_as(
                    Some("confirm"),
                    form(
                        &format!("Delete {}?", a.filename),
                        one_field_schema("confirm", "boolean"),
                    ),
                )
                .await?;
            let yes = field(&r, "confirm").is_some_and(|v| v == "true");
            let verb = if yes { "Deleted" } else { "Kept" };
            Ok::<_, ToolError>(format!("{verb} {}", a.filename))
        },
    )
    .description("Asks for confirmation inside a task, then answers")
    .task_support(TaskSupport::Optional)
}

fn multi_input() -> ToolDef {
    tool("multi_input", |ctx: CallCtx, _: NoArgs| async move {
        ctx.run_as_task().await;
        let name = ctx.elicit_as(
            Some("name"),
            form("Your name?", one_field_schema("name", "string")),
        );
        let confirm = ctx.elicit_as(
            Some("confirm"),
            form("Proceed?", one_field_schema("confirm", "boolean")),
        );
        let (name, confirm) = tokio::join!(name, confirm);
        let name = field(&name?, "name").unwrap_or_default();
        let confirm = field(&confirm?, "confirm").unwrap_or_default();
        Ok::<_, ToolError>(format!("name={name} confirm={confirm}"))
    })
    .description("Asks two questions at once inside a task")
    .task_support(TaskSupport::Optional)
}

fn tool_with_task() -> ToolDef {
    tool(
        "test_tool_with_task",
        |ctx: CallCtx, _: NoArgs| async move {
            // Round 1 asks in the request (input_required); the retried call becomes a task.
            let r = ctx
                .elicit_as(
                    Some("user_name"),
                    form("What is your name?", one_field_schema("name", "string")),
                )
                .await?;
            let name = field(&r, "name").unwrap_or_else(|| "stranger".to_owned());
            ctx.run_as_task().await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok::<_, ToolError>(format!("Hello, {name}! (finished as a task)"))
        },
    )
    .description("Gathers a name by input_required, then finishes as a task")
    .task_support(TaskSupport::Required)
}
