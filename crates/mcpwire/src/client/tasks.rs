//! `tools/call` that may become a task (the 2025-11-25 tasks surface): the call carries a
//! `task` parameter, the server answers `CreateTaskResult` (`{task: {taskId, status,
//! pollInterval, ttl, …}}`), the client polls `tasks/get` until the task leaves `working`,
//! then fetches the call's result with `tasks/result`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::ClientError;

/// Bounds on the server's `pollInterval`.
const MIN_POLL: Duration = Duration::from_millis(50);
const MAX_POLL: Duration = Duration::from_secs(5);
const DEFAULT_POLL: Duration = Duration::from_millis(500);

/// Calls tool `name`; with `as_task` asks for a task, and follows any task the server
/// creates to the call's result.
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
    let Some(task) = created_task(&first) else {
        return Ok(first);
    };
    let id = task["taskId"].as_str().unwrap_or_default().to_owned();
    let started = Instant::now();
    let ttl = task["ttl"].as_u64().map(Duration::from_millis);
    let mut current = task.clone();
    let mut shown = String::new();
    loop {
        let status = current["status"].as_str().unwrap_or("working").to_owned();
        let line = match current["statusMessage"].as_str() {
            Some(m) => format!("{status}: {m}"),
            None => status.clone(),
        };
        if line != shown {
            eprintln!("[task {id}] {line}");
            shown = line;
        }
        if status != "working" {
            // completed, failed, cancelled — or input_required, which `tasks/result`
            // resolves (the server sends its requests on that exchange).
            return request("tasks/result", json!({ "taskId": id })).await;
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
        let poll = current["pollInterval"]
            .as_u64()
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL);
        tokio::time::sleep(poll).await;
        current = request("tasks/get", json!({ "taskId": id })).await?;
    }
}

/// The task of a `CreateTaskResult`, if `result` is one.
fn created_task(result: &Value) -> Option<&Value> {
    let task = result.get("task")?;
    (task.get("taskId")?.is_string() && result.get("content").is_none()).then_some(task)
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
}
