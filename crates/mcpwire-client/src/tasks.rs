//! `tools/call` that may become a task, in either task surface:
//! - 2025-11-25 (v1): the call carries a `task` parameter, the server answers
//!   `CreateTaskResult` (`{task: {taskId, status, pollInterval, ttl, …}}`), the client polls
//!   `tasks/get` until the task leaves `working`, then fetches the result with `tasks/result`;
//! - 2026-07-28 (`io.modelcontextprotocol/tasks`, SEP-2663; the client declares the extension
//!   in its capabilities): the server answers a flat `CreateTaskResult` (`resultType: "task"`,
//!   `taskId`, `status`, `pollIntervalMs`, `ttlMs`), and `tasks/get` carries the outcome —
//!   `result` inlined once `completed`, `error` once `failed`.

use std::time::{Duration, Instant};

use mcpwire_model::ErrorObject;
use serde_json::{Value, json};

use crate::ClientError;

/// Bounds on the server's poll interval.
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(5);
const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// Which task surface a created task belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Surface {
    /// 2025-11-25: `{task: {…}}`, the result from `tasks/result`.
    V1,
    /// SEP-2663: flat, the outcome inlined in `tasks/get`.
    Extension,
}

impl Surface {
    fn poll_key(self) -> &'static str {
        match self {
            Surface::V1 => "pollInterval",
            Surface::Extension => "pollIntervalMs",
        }
    }

    fn ttl_key(self) -> &'static str {
        match self {
            Surface::V1 => "ttl",
            Surface::Extension => "ttlMs",
        }
    }
}

/// Calls tool `name`; with `as_task` asks for a (v1) task, and follows any task the server
/// creates, in either surface, to the call's result.
pub(crate) async fn call_tool(
    mut request: impl AsyncFnMut(&str, Value) -> Result<Value, ClientError>,
    name: &str,
    arguments: Value,
    as_task: bool,
) -> Result<Value, ClientError> {
    let mut params = json!({ "name": name, "arguments": arguments });
    if as_task {
        params["task"] = json!({});
    }
    let first = request("tools/call", params).await?;
    let Some((surface, task)) = created_task(&first) else {
        return Ok(first);
    };
    let id = task["taskId"].as_str().unwrap_or_default().to_owned();
    let started = Instant::now();
    let ttl = task[surface.ttl_key()].as_u64().map(Duration::from_millis);
    let mut current = task.clone();
    let mut shown = String::new();
    loop {
        let status = current["status"].as_str().unwrap_or("working").to_owned();
        let line = match current["statusMessage"].as_str() {
            Some(m) => format!("{status}: {m}"),
            None => status.clone(),
        };
        if line != shown {
            // What `mcpwire call` shows while a task runs.
            eprintln!("[task {id}] {line}");
            shown = line;
        }
        if status != "working" {
            return match surface {
                // completed, failed, cancelled — or input_required, which `tasks/result`
                // resolves (the server sends its requests on that exchange).
                Surface::V1 => request("tasks/result", json!({ "taskId": id })).await,
                Surface::Extension => outcome(&id, &status, current),
            };
        }
        if let Some(ttl) = ttl
            && started.elapsed() > ttl
        {
            return Err(ClientError::Timeout {
                awaited: format!("end of task {id}"),
                peer: "the server".into(),
                after: ttl,
                hint: " (the task's ttl)".into(),
            });
        }
        let poll = current[surface.poll_key()]
            .as_u64()
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tokio::time::sleep(poll).await;
        current = request("tasks/get", json!({ "taskId": id })).await?;
    }
}

/// The end of a SEP-2663 task as `tasks/get` reports it.
fn outcome(id: &str, status: &str, mut task: Value) -> Result<Value, ClientError> {
    let method = format!("tools/call (task {id})");
    match status {
        "completed" => match task.get_mut("result").map(Value::take) {
            Some(result) if result.is_object() => Ok(result),
            _ => Err(ClientError::Invalid(format!(
                "task {id} completed without a result object"
            ))),
        },
        "failed" => {
            let error = serde_json::from_value::<ErrorObject>(task["error"].take())
                .map_err(|e| ClientError::Invalid(format!("task {id} failed: {e}")))?;
            Err(ClientError::Rpc { method, error })
        }
        "cancelled" => Err(ClientError::Cancelled { method }),
        "input_required" => Err(ClientError::InputRequired {
            method,
            requests: task["inputRequests"]
                .as_object()
                .map(|m| {
                    m.values()
                        .map(|r| format!("`{}`", r["method"].as_str().unwrap_or("?")))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default(),
        }),
        other => Err(ClientError::Invalid(format!(
            "task {id} reports the unknown status {other:?}"
        ))),
    }
}

/// The task of a `CreateTaskResult`, if `result` is one, and its surface.
fn created_task(result: &Value) -> Option<(Surface, &Value)> {
    if result.get("resultType") == Some(&json!("task")) {
        return result
            .get("taskId")?
            .is_string()
            .then_some((Surface::Extension, result));
    }
    let task = result.get("task")?;
    (task.get("taskId")?.is_string() && result.get("content").is_none())
        .then_some((Surface::V1, task))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::call_tool;

    /// A created task is polled while `working`, at the server's interval, then its result
    /// is fetched; a plain result is returned as is.
    #[tokio::test(start_paused = true)]
    async fn a_created_task_is_polled_to_its_result() {
        let mut calls: Vec<(String, Value)> = Vec::new();
        let mut statuses = ["working", "working", "completed"].into_iter();
        let started = tokio::time::Instant::now();
        let result = call_tool(
            async |m: &str, p: Value| {
                calls.push((m.to_owned(), p));
                Ok(match m {
                    "tools/call" => json!({"task": {
                        "taskId": "t1", "status": "working", "pollInterval": 1000, "ttl": 60000
                    }}),
                    "tasks/get" => json!({
                        "taskId": "t1", "status": statuses.next().unwrap_or("failed"),
                        "pollInterval": 1000
                    }),
                    _ => json!({"content": [{"type": "text", "text": "done"}]}),
                })
            },
            "slow",
            json!({"n": 1}),
            true,
        )
        .await
        .expect("a result");
        assert_eq!(result["content"][0]["text"], "done");
        let methods: Vec<&str> = calls.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(
            methods,
            [
                "tools/call",
                "tasks/get",
                "tasks/get",
                "tasks/get",
                "tasks/result"
            ]
        );
        assert_eq!(
            calls[0].1,
            json!({"name": "slow", "arguments": {"n": 1}, "task": {}})
        );
        assert_eq!(calls[4].1, json!({"taskId": "t1"}));
        assert_eq!(started.elapsed(), std::time::Duration::from_secs(3));

        let plain = call_tool(
            async |_: &str, _: Value| Ok(json!({"content": [], "task": {"taskId": "x"}})),
            "t",
            json!({}),
            false,
        )
        .await
        .expect("a result");
        assert_eq!(
            plain["task"]["taskId"], "x",
            "a result with content is not a task"
        );
    }

    /// A SEP-2663 task is polled with `tasks/get` until it ends; its inlined result (or
    /// error) is the call's.
    #[tokio::test(start_paused = true)]
    async fn an_extension_task_ends_in_its_tasks_get() {
        let mut gets = 0;
        let result = call_tool(
            async |m: &str, _: Value| {
                Ok(match m {
                    "tools/call" => json!({"resultType": "task", "taskId": "t2",
                        "status": "working", "pollIntervalMs": 100}),
                    _ => {
                        gets += 1;
                        if gets < 3 {
                            json!({"taskId": "t2", "status": "working"})
                        } else {
                            json!({"taskId": "t2", "status": "completed",
                                   "result": {"content": [{"type": "text", "text": "ok"}]}})
                        }
                    }
                })
            },
            "slow",
            json!({}),
            false,
        )
        .await
        .expect("a result");
        assert_eq!(result["content"][0]["text"], "ok");
        assert_eq!(gets, 3);
        let failed = call_tool(
            async |m: &str, _: Value| {
                Ok(match m {
                    "tools/call" => json!({"resultType": "task", "taskId": "t3",
                        "status": "failed", "error": {"code": -32603, "message": "boom"}}),
                    _ => unreachable!("an ended task is not polled"),
                })
            },
            "slow",
            json!({}),
            false,
        )
        .await
        .expect_err("a failed task");
        assert!(failed.to_string().contains("boom"), "{failed}");
    }
}
