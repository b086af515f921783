//! The tasks-extension fixtures (`io.modelcontextprotocol/tasks`, conformance §8).
//!
//! A tool declared with task support becomes a task when a client that declared the
//! extension calls it and the tool waits for something (a timer here) or calls
//! `ctx.run_as_task()`; otherwise it answers in its request like any tool.

use std::time::Duration;

use mcpwire::prelude::*;
use mcpwire::router::ServerBuilder;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::stateless::Name;

pub(crate) fn register(b: ServerBuilder) -> ServerBuilder {
    b.handlers(Tasks)
}

/// The task fixtures; no state of their own.
struct Tasks;

/// A yes or no under the key `confirm`.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    confirm: bool,
}

#[server]
impl Tasks {
    /// Greets by name (never a task)
    #[tool]
    fn greet(
        /// Who to greet.
        name: String,
    ) -> String {
        format!("Hello, {name}!")
    }

    /// Works for `seconds` seconds, then answers (a task for clients with tasks)
    #[tool(task_support = "optional")]
    async fn slow_compute(
        ctx: CallCtx,
        /// Seconds to work; 0 answers at once.
        seconds: f64,
        /// A free label echoed in the result.
        #[serde(default)]
        label: Option<String>,
    ) -> String {
        let secs = seconds.clamp(0.0, 3600.0);
        if secs > 0.0 {
            ctx.progress(0.0, Some(secs), Some(format!("computing for {secs} s")));
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        }
        let label = label.unwrap_or_default();
        format!("computed after {secs} s {label}")
            .trim_end()
            .to_owned()
    }

    /// Fails with a tool error after about a second (tasks only)
    #[tool(task_support = "required")]
    async fn failing_job() -> Result<String, &'static str> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        Err("the job failed after 1 s")
    }

    /// Ends in a protocol-level error (a failed task)
    #[tool(task_support = "optional")]
    async fn protocol_error_job() -> Result<String, McpError> {
        tokio::time::sleep(Duration::from_millis(100)).await;
        Err(McpError::Internal("the job's backend went away".into()))
    }

    /// Asks for confirmation inside a task, then answers
    #[tool(task_support = "optional")]
    async fn confirm_delete(
        ctx: CallCtx,
        /// The file to delete.
        filename: String,
    ) -> Result<String, McpError> {
        ctx.run_as_task().await;
        let r = ctx
            .elicit::<Confirm>(format!("Delete {filename}?"))
            .key("confirm")
            .await?;
        let yes = r.accepted().is_some_and(|c| c.confirm);
        let verb = if yes { "Deleted" } else { "Kept" };
        Ok(format!("{verb} {filename}"))
    }

    /// Asks two questions at once inside a task
    #[tool(task_support = "optional")]
    async fn multi_input(ctx: CallCtx) -> Result<String, McpError> {
        ctx.run_as_task().await;
        let name = ctx.elicit::<Name>("Your name?").key("name");
        let confirm = ctx.elicit::<Confirm>("Proceed?").key("confirm");
        let (name, confirm) = tokio::join!(name.into_future(), confirm.into_future());
        let name = name?.accepted().map(|n| n.name).unwrap_or_default();
        let confirm = confirm?
            .accepted()
            .map(|c| c.confirm.to_string())
            .unwrap_or_default();
        Ok(format!("name={name} confirm={confirm}"))
    }

    /// Gathers a name by input_required, then finishes as a task
    #[tool(task_support = "required")]
    async fn test_tool_with_task(ctx: CallCtx) -> Result<String, McpError> {
        // Round 1 asks in the request (input_required); the retried call becomes a task.
        let r = ctx
            .elicit::<Name>("What is your name?")
            .key("user_name")
            .await?;
        let name = r
            .accepted()
            .map(|n| n.name)
            .unwrap_or_else(|| "stranger".to_owned());
        ctx.run_as_task().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(format!("Hello, {name}! (finished as a task)"))
    }
}
