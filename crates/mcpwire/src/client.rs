//! A small MCP client over a child process's stdio, used by `mcpwire list` and
//! `mcpwire call` (and by tests). It speaks 2025-11-25 and answers server→client requests
//! with "method not found".

use std::process::Stdio;

use mcpwire_model::{ErrorObject, McpError, Revision};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Why a client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The target command line was empty or could not be parsed.
    #[error("invalid target: {0}")]
    Target(String),
    /// Spawning or talking to the process failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The server closed its output before answering.
    #[error("the server closed the connection")]
    Closed,
    /// The server answered with a JSON-RPC error.
    #[error("server error {}: {}", .0.code, .0.message)]
    Rpc(ErrorObject),
    /// The server sent something that is not JSON-RPC.
    #[error("invalid message from server: {0}")]
    Invalid(String),
}

/// The `initialize` params every mcpwire client sends (2025-11-25, no client features).
pub(crate) fn initialize_params() -> Value {
    json!({
        "protocolVersion": Revision::LATEST_STATEFUL.as_str(),
        "capabilities": {},
        "clientInfo": { "name": "mcpwire", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// A connected MCP client over a child process.
pub struct StdioClient {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: i64,
    /// The server's `initialize` result.
    pub server: Value,
}

impl StdioClient {
    /// Spawns `target` (a shell-like command line) and completes the handshake.
    pub async fn connect(target: &str) -> Result<StdioClient, ClientError> {
        let argv = shlex::split(target).ok_or_else(|| ClientError::Target(target.into()))?;
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| ClientError::Target("empty command".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let stdin = child.stdin.take().ok_or(ClientError::Closed)?;
        let stdout = child.stdout.take().ok_or(ClientError::Closed)?;
        let mut client = StdioClient {
            child,
            stdin,
            lines: BufReader::new(stdout).lines(),
            next_id: 0,
            server: Value::Null,
        };
        client.server = client.request("initialize", initialize_params()).await?;
        client
            .send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(client)
    }

    async fn send(&mut self, msg: &Value) -> Result<(), ClientError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| ClientError::Invalid(e.to_string()))?;
        line.push(b'\n');
        self.stdin.write_all(&line).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Sends a request and waits for its result, logging notifications on the way.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        loop {
            let line = self.lines.next_line().await?.ok_or(ClientError::Closed)?;
            let msg: Value =
                serde_json::from_str(&line).map_err(|e| ClientError::Invalid(e.to_string()))?;
            match (msg.get("id"), msg.get("method")) {
                (Some(rid), None) if rid == &json!(id) => {
                    if let Some(err) = msg.get("error") {
                        let e: ErrorObject = serde_json::from_value(err.clone())
                            .map_err(|e| ClientError::Invalid(e.to_string()))?;
                        return Err(ClientError::Rpc(e));
                    }
                    return Ok(msg.get("result").cloned().unwrap_or(Value::Null));
                }
                (Some(rid), Some(m)) => {
                    tracing::info!(method = %m, "server request refused by the CLI client");
                    let rid = rid.clone();
                    self.send(&json!({
                        "jsonrpc": "2.0", "id": rid,
                        "error": refusal(m)
                    }))
                    .await?;
                }
                (None, Some(m)) if m == "notifications/message" => {
                    let p = &msg["params"];
                    eprintln!("[{}] {}", p["level"].as_str().unwrap_or("log"), p["data"]);
                }
                _ => tracing::debug!(%line, "ignored message"),
            }
        }
    }

    /// Every tool, following pagination cursors.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, ClientError> {
        paginate_tools(async |m, p| self.request(m, p).await).await
    }

    /// Calls a tool with JSON arguments.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// Closes stdin and waits for the server to exit.
    pub async fn close(mut self) -> Result<(), ClientError> {
        drop(self.stdin);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.child.wait()).await;
        let _ = self.child.start_kill();
        Ok(())
    }
}

/// Every tool of a server, following `tools/list` pagination cursors with `request`.
pub(crate) async fn paginate_tools(
    mut request: impl AsyncFnMut(&str, Value) -> Result<Value, ClientError>,
) -> Result<Vec<Value>, ClientError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = request("tools/list", params).await?;
        if let Some(list) = page.get("tools").and_then(Value::as_array) {
            tools.extend(list.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => return Ok(tools),
        }
    }
}

/// What the CLI answers a server's request with: it serves none (no sampling, elicitation
/// or roots).
pub(crate) fn refusal(method: &Value) -> ErrorObject {
    McpError::MethodNotFound(method.as_str().unwrap_or_default().to_owned())
        .to_wire(Revision::LATEST_STATEFUL)
}
