//! Process-side async tasks (envelope frames 19–23).
//!
//! A process may answer a `CallToolRequest` with `create_task{task_id}` instead of a result.
//! The host then follows the task: it asks `task_status` (polling with backoff, woken early by
//! unsolicited `task_status_response` pushes), reports progress and messages to the client,
//! and once the state is `completed` fetches the result with `task_result`, which the process
//! answers like a call (`call_result`, raw sideband or chunked). The MCP call itself becomes
//! an MCP task when the tool and the client allow it (`CallCtx::run_as_task`); otherwise the
//! client simply waits. A call that ends any other way (client cancel, `tasks/cancel`, call
//! timeout, host error) sends `task_cancel`. See `docs/design/tool-processes.md`.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_router::{CallCtx, ToolError};
use tokio::sync::watch;

use crate::channel::{Answer, ChildChannel, TaskPush};
use crate::pb::{self, envelope::Msg};

/// First status poll after `create_task`, and again after every change.
const FIRST_POLL: Duration = Duration::from_millis(5);
/// Longest wait between polls of an unchanged task.
const MAX_POLL: Duration = Duration::from_millis(500);

/// What a task's state string says.
enum State {
    Running,
    Completed,
    Failed,
    Cancelled,
}

fn state(s: &str) -> Option<State> {
    match s.to_ascii_lowercase().as_str() {
        "" | "pending" | "running" | "working" => Some(State::Running),
        "completed" => Some(State::Completed),
        "failed" => Some(State::Failed),
        "cancelled" | "canceled" => Some(State::Cancelled),
        _ => None,
    }
}

/// A followed task; dropping it before the task ended cancels it in the process.
struct Following {
    channel: Arc<ChildChannel>,
    task_id: String,
    pushed: watch::Receiver<TaskPush>,
    ended: bool,
}

impl Following {
    /// The next unsolicited status update.
    async fn pushed(&mut self) -> Result<pb::TaskStatusResponse, ToolError> {
        loop {
            if self.pushed.changed().await.is_err() {
                let reason = self.channel.closed_reason();
                return Err(ToolError::new(
                    reason.unwrap_or_else(|| "the tool process connection ended".into()),
                ));
            }
            match self.pushed.borrow_and_update().clone() {
                TaskPush::Nothing => {}
                TaskPush::Status(s) => return Ok(s),
                TaskPush::InputRequired => return Err(McpError::InputRequired.into()),
            }
        }
    }

    /// Asks the process for the status, taking a push instead if one comes first.
    async fn poll(&mut self) -> Result<pb::TaskStatusResponse, ToolError> {
        let task_id = self.task_id.clone();
        let pc = self
            .channel
            .request(
                |_| Msg::TaskStatus(pb::TaskStatusRequest { task_id }),
                None,
                false,
            )
            .map_err(|e| ToolError::new(e.to_string()))?;
        tokio::select! {
            a = pc.wait() => match a {
                Answer::Env(Msg::TaskStatusResponse(s)) => Ok(s),
                Answer::Failed(reason) => Err(ToolError::new(reason)),
                _ => Err(ToolError::new("tool process answered task_status with something else")),
            },
            s = self.pushed() => s,
        }
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        self.channel.unfollow_task(&self.task_id, self.ended);
    }
}

/// Follows process task `task_id` (see [`Answer::TaskCreated`]) until it ends, and returns
/// the answer to its `task_result`.
pub(crate) async fn follow(
    channel: &Arc<ChildChannel>,
    ctx: &CallCtx,
    task_id: String,
    pushed: watch::Receiver<TaskPush>,
) -> Result<Answer, ToolError> {
    let mut task = Following {
        channel: channel.clone(),
        task_id,
        pushed,
        ended: false,
    };
    ctx.run_as_task().await;
    let mut delay = FIRST_POLL;
    let mut last = None;
    loop {
        let status = tokio::select! {
            _ = ctx.cancelled() => return Err(ToolError::new("cancelled")),
            s = task.pushed() => s?,
            _ = tokio::time::sleep(delay) => task.poll().await?,
        };
        // An ask of this task was answered `input_required` before the process could
        // change its state because of it: whatever the state says now, the call ends so.
        if matches!(*task.pushed.borrow(), TaskPush::InputRequired) {
            return Err(McpError::InputRequired.into());
        }
        let seen = (status.progress, status.total, status.message.clone());
        if last.as_ref() != Some(&seen) {
            if status.progress > 0 || status.total > 0 || !status.message.is_empty() {
                let total = (status.total > 0).then_some(status.total as f64);
                let message = (!status.message.is_empty()).then(|| status.message.clone());
                ctx.progress(status.progress as f64, total, message);
            }
            last = Some(seen);
            delay = FIRST_POLL;
        } else {
            delay = (delay * 2).min(MAX_POLL);
        }
        match state(&status.state) {
            Some(State::Running) => continue,
            Some(State::Completed) => break,
            Some(State::Failed) => {
                task.ended = true;
                let why = if status.message.is_empty() {
                    "the tool process's task failed".to_owned()
                } else {
                    status.message
                };
                return Err(ToolError::new(why));
            }
            Some(State::Cancelled) => {
                task.ended = true;
                return Err(ToolError::new("the tool process cancelled the task"));
            }
            None => {
                return Err(ToolError::new(format!(
                    "tool process reported unknown task state {:?}",
                    status.state
                )));
            }
        }
    }
    let task_id = task.task_id.clone();
    let pc = channel
        .request(
            |_| Msg::TaskResult(pb::TaskResultRequest { task_id }),
            Some(ctx.clone()),
            false,
        )
        .map_err(|e| ToolError::new(e.to_string()))?;
    let answer = tokio::select! {
        a = pc.wait() => a,
        _ = ctx.cancelled() => return Err(ToolError::new("cancelled")),
    };
    task.ended = true;
    Ok(answer)
}
