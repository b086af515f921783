//! MCP clients, used by `mcpwire list|call|tokens|schema` (and, later, the gateway's
//! upstreams): [`StdioClient`] runs a server as a child process, [`HttpClient`] talks
//! Streamable HTTP (`http://` and `https://`), and [`Client`] picks one from a [`Target`].
//!
//! They speak 2025-11-25, answer server→client requests with "method not found", print the
//! server's log notifications on stderr, follow `tools/call` tasks to their result, and fail
//! with errors that name the program, URL or line involved ([`ClientError`]).
//!
//! [`HttpClient`]: crate::http::client::HttpClient

use std::time::Duration;

use mcpwire_model::{ErrorObject, McpError, Revision};
use serde_json::{Value, json};

use crate::http::client::HttpClient;

mod stdio;
mod target;
mod tasks;

pub use stdio::StdioClient;
pub use target::Target;

/// Why a client operation failed. Every message names what was involved: the program, the
/// URL, or the offending line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The target is neither a command line nor a supported URL.
    #[error("{0}")]
    Target(String),
    /// The program could not be started.
    #[error("cannot start `{program}`: {error}")]
    Spawn {
        /// The program as given.
        program: String,
        /// Why.
        error: std::io::Error,
    },
    /// The server could not be reached (TCP connect, TLS handshake).
    #[error("cannot connect to {url}: {reason}")]
    Connect {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// Nothing came back in time.
    #[error("no {awaited} from {peer} within {}{hint}", secs(*.after))]
    Timeout {
        /// What was awaited (e.g. "answer to `initialize`").
        awaited: String,
        /// The program or URL.
        peer: String,
        /// How long the client waited.
        after: Duration,
        /// What to check, in parentheses after a space, or empty.
        hint: String,
    },
    /// The server went away before answering.
    #[error("{peer} {how} before answering `{method}`")]
    Closed {
        /// The program or URL.
        peer: String,
        /// What happened ("exited with status 3", "closed its output", …).
        how: String,
        /// The request that was waiting.
        method: String,
    },
    /// The server answered with an HTTP status that is not an MCP answer.
    #[error("HTTP {status} from {url}: {detail}")]
    Http {
        /// The status line's code and reason.
        status: String,
        /// The URL.
        url: String,
        /// What it probably means, and the start of the body.
        detail: String,
    },
    /// The server answered a request with a JSON-RPC error.
    #[error("the server answered `{method}` with error {}: {}", .error.code, .error.message)]
    Rpc {
        /// The request's method.
        method: String,
        /// The error as sent.
        error: ErrorObject,
    },
    /// The server sent something that is not JSON-RPC.
    #[error("{0}")]
    Invalid(String),
    /// Talking to the server failed.
    #[error("{0}")]
    Io(String),
}

impl From<std::io::Error> for ClientError {
    fn from(e: std::io::Error) -> Self {
        ClientError::Io(e.to_string())
    }
}

/// Who is to blame for a [`ClientError`] (the CLI's exit codes follow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The target or arguments as given cannot work.
    Usage,
    /// The server could not be started, reached or understood, or went away.
    Connection,
    /// The server answered, with an error.
    Server,
}

impl ClientError {
    /// Who is to blame.
    pub fn blame(&self) -> Blame {
        match self {
            ClientError::Target(_) => Blame::Usage,
            ClientError::Rpc { .. } => Blame::Server,
            _ => Blame::Connection,
        }
    }
}

/// `30 s`, or `1500 ms` when not whole seconds.
fn secs(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// How a client connects.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// How long starting or reaching the server and its `initialize` answer may take.
    pub handshake_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            handshake_timeout: Duration::from_secs(30),
        }
    }
}

/// Largest message the clients accept from a server (a stdio line, an HTTP body, an SSE
/// event).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// A client over whichever wire a [`Target`] names.
pub enum Client {
    /// A child process over stdio.
    Stdio(Box<StdioClient>),
    /// A Streamable HTTP server.
    Http(Box<HttpClient>),
}

impl Client {
    /// Starts or reaches `target` and completes the handshake.
    pub async fn connect(target: &Target, opts: &ClientOptions) -> Result<Client, ClientError> {
        Ok(match target {
            Target::Command { argv } => {
                Client::Stdio(Box::new(StdioClient::spawn(argv, opts).await?))
            }
            Target::Url(url) => Client::Http(Box::new(HttpClient::connect(url, opts).await?)),
        })
    }

    /// The server's `initialize` result.
    pub fn server(&self) -> &Value {
        match self {
            Client::Stdio(c) => &c.server,
            Client::Http(c) => &c.server,
        }
    }

    /// Sends a request and waits for its result.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        match self {
            Client::Stdio(c) => c.request(method, params).await,
            Client::Http(c) => c.request(method, params).await,
        }
    }

    /// Every tool, following pagination cursors.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, ClientError> {
        paginate_tools(async |m, p| self.request(m, p).await).await
    }

    /// Calls a tool; with `as_task`, asks for a task (2025-11-25 `task` parameter). A task
    /// the server creates is followed (`tasks/get` polls, then `tasks/result`) to its result.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        as_task: bool,
    ) -> Result<Value, ClientError> {
        tasks::call_tool(
            async |m, p| self.request(m, p).await,
            name,
            arguments,
            as_task,
        )
        .await
    }

    /// Ends the session: closes the child's stdin (and waits briefly), or `DELETE`s the
    /// HTTP session.
    pub async fn close(self) -> Result<(), ClientError> {
        match self {
            Client::Stdio(c) => (*c).close().await,
            Client::Http(c) => (*c).close().await,
        }
    }
}

/// Whether a listed tool must be called as a task (`execution.taskSupport: "required"`).
pub fn requires_task(tool: &Value) -> bool {
    tool.pointer("/execution/taskSupport") == Some(&json!("required"))
}

/// The `initialize` params every mcpwire client sends (2025-11-25, no client features).
pub(crate) fn initialize_params() -> Value {
    json!({
        "protocolVersion": Revision::LATEST_STATEFUL.as_str(),
        "capabilities": {},
        "clientInfo": { "name": "mcpwire", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// What one incoming message means to a client waiting for the answer to `id`.
pub(crate) enum Inbound {
    /// The answer: a result or the server's error.
    Answer(Result<Value, ClientError>),
    /// A server→client request; the client refuses it with this message.
    Refuse(Value),
    /// Anything else (logged or ignored).
    Other,
}

/// Sorts `msg` while waiting for the answer to request `id` (`method`); prints log
/// notifications on stderr. With `null_matches`, a response with a `null` id is the answer
/// too (an HTTP answer to a request whose id the server could not read).
pub(crate) fn classify(msg: Value, id: &Value, method: &str, null_matches: bool) -> Inbound {
    match (msg.get("id"), msg.get("method")) {
        (Some(rid), None) if rid == id || (null_matches && rid.is_null()) => {
            if let Some(err) = msg.get("error") {
                return Inbound::Answer(match serde_json::from_value(err.clone()) {
                    Ok(error) => Err(ClientError::Rpc {
                        method: method.to_owned(),
                        error,
                    }),
                    Err(e) => Err(ClientError::Invalid(format!(
                        "the server's error answer is malformed ({e}): {err}"
                    ))),
                });
            }
            Inbound::Answer(Ok(msg.get("result").cloned().unwrap_or(Value::Null)))
        }
        (Some(rid), Some(m)) => {
            tracing::info!(method = %m, "server request refused by the client");
            let error = McpError::MethodNotFound(format!("{m} (the client offers no features)"))
                .to_wire(Revision::LATEST_STATEFUL);
            Inbound::Refuse(json!({ "jsonrpc": "2.0", "id": rid, "error": error }))
        }
        (None, Some(m)) if m == "notifications/message" => {
            let p = &msg["params"];
            eprintln!("[{}] {}", p["level"].as_str().unwrap_or("log"), p["data"]);
            Inbound::Other
        }
        _ => {
            tracing::debug!(%msg, "ignored message");
            Inbound::Other
        }
    }
}

/// At most this much of a server's text goes into an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    let text = text.trim_end();
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}

/// Every tool of a server, following `tools/list` pagination cursors with `request`.
async fn paginate_tools(
    mut request: impl AsyncFnMut(&str, Value) -> Result<Value, ClientError>,
) -> Result<Vec<Value>, ClientError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    // A server that keeps answering with new cursors must not keep us forever.
    for _ in 0..MAX_PAGES {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let page = request("tools/list", params).await?;
        if let Some(list) = page.get("tools").and_then(Value::as_array) {
            tools.extend(list.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) if cursor.as_deref() != Some(c) => cursor = Some(c.to_owned()),
            Some(c) => {
                return Err(ClientError::Invalid(format!(
                    "the server's tools/list repeats the cursor {c:?}"
                )));
            }
            None => return Ok(tools),
        }
    }
    Err(ClientError::Invalid(format!(
        "the server's tools/list has more than {MAX_PAGES} pages"
    )))
}

/// Most `tools/list` pages one listing follows.
const MAX_PAGES: usize = 1000;
