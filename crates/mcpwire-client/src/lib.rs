//! The MCP client: one async handle, [`Client`], over a sans-IO
//! [`ClientSession`](mcpwire_session::ClientSession) on any of three wires — a stdio child
//! process, Streamable HTTP (`http://`, `https://`) and MCPB (`mcpb://`). Behind `mcpwire
//! list|call|tokens|schema`, the conformance client harness, and the gateway's upstreams.
//!
//! ```no_run
//! # async fn f() -> Result<(), mcpwire_client::ClientError> {
//! use mcpwire_client::{Client, ClientOptions, Target};
//! let target = Target::parse("mcpwire demo")?;
//! let (client, _events) = Client::connect(&target, &ClientOptions::default()).await?;
//! let tools = client.list_tools().await?;
//! let sum = client.request("tools/call", serde_json::json!({
//!     "name": "add", "arguments": {"a": 2, "b": 3}
//! })).await?;
//! client.close().await?;
//! # Ok(()) }
//! ```
//!
//! The era is negotiated as the official clients do (`server/discover` for 2026-07-28,
//! falling back to `initialize`), or fixed ([`ClientOptions::era`]). Requests are
//! [`Client::send`] (a [`PendingRequest`]: dropping it cancels the request) or
//! [`Client::request`]; server→client requests, progress, logs and list changes arrive on
//! the [`ClientEvents`] stream (answer server requests with [`Client::answer`]; drop the
//! stream to refuse them all). Everything is bounded ([`ClientLimits`]); failures are
//! [`ClientError`]s that name the program, URL or line involved.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::time::Duration;

use mcpwire_model::types::{ClientCapabilities, Implementation, LoggingLevel};
use serde_json::{Value, json};

pub mod auth;
mod core;
mod error;
pub mod fetch;
mod handle;
mod http;
mod mcpb;
mod stdio;
mod target;
mod tasks;

pub use error::{Blame, ClientError};
pub use handle::{Client, ClientEvents, PendingRequest};
pub use mcpwire_session::{
    Answer, ClientEra, ClientEvent, ClientLimits, ClientRequestId, EraChoice, InputRequest,
    InputRequired, ListKind, Negotiated, RequestOptions, ServerRequest, ServerRequestId,
};
pub use target::Target;

use error::excerpt;

/// Largest message the client accepts from a server (a stdio line, an HTTP body, an SSE
/// event).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// How a client connects and what it says about itself.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `clientInfo` (default: `mcpwire` and this crate's version).
    pub client_info: Implementation,
    /// What the client offers (sampling, elicitation, roots). Server requests for anything
    /// not declared are refused by the session; declared ones arrive as events.
    pub capabilities: ClientCapabilities,
    /// Which era to speak (default: discover, falling back to `initialize`).
    pub era: EraChoice,
    /// 2026-07-28: the log level asked for on every request (None: no logs).
    pub log_level: Option<LoggingLevel>,
    /// Limits; `handshake_timeout` bounds starting or reaching the server and negotiating
    /// (over HTTP also each later TCP connect and TLS handshake).
    pub limits: ClientLimits,
    /// Events the owner's stream holds before the client holds them back.
    pub events_capacity: usize,
    /// MCPB: the token `initialize {token}` authenticates with (a `mcpb://TOKEN@host:port`
    /// target's wins), and whether every message carries it.
    pub mcpb_token: Option<String>,
    /// MCPB: wrap every message with the token (`--mcpb-per-message-auth` servers).
    pub mcpb_per_message_auth: bool,
    /// Framed wires (stdio, MCPB): keep polling this long after activity before sleeping.
    pub busy_poll: Duration,
    /// `https://` and `mcpbs://`: which CA to trust and which certificate to present.
    pub tls: mcpwire_server::tls::ClientTls,
    /// HTTP: the credentials sent to the server (static headers, bearer token, OAuth).
    pub auth: Option<auth::UpstreamAuth>,
    /// stdio and HTTP: how long a call relayed on the connection as a raw frame
    /// (`mcpwire_relay`) waits for its answer before it is answered `Timeout` and the
    /// server told (`None`: no limit) — a gateway's `call_timeout_secs`, which its other
    /// requests carry in their `RequestOptions`.
    pub relay_timeout: Option<Duration>,
    /// Stdio: how the child process is started (environment, directory, its stderr).
    pub child: ChildOptions,
}

/// How a stdio server's child process is started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildOptions {
    /// Variables set in its environment (over the ones it inherits).
    pub env: Vec<(String, String)>,
    /// Its working directory (`None`: ours).
    pub cwd: Option<std::path::PathBuf>,
    /// `Some(name)`: its stderr is read line by line and logged as `tracing` events with
    /// `backend = name` (target `mcpwire::child`); `None`: it shares our stderr.
    pub log_stderr_as: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            client_info: Implementation::new("mcpwire", env!("CARGO_PKG_VERSION")),
            capabilities: ClientCapabilities::default(),
            era: EraChoice::Auto,
            log_level: None,
            limits: ClientLimits::default(),
            events_capacity: 256,
            mcpb_token: None,
            mcpb_per_message_auth: false,
            busy_poll: Duration::ZERO,
            tls: mcpwire_server::tls::ClientTls::default(),
            auth: None,
            relay_timeout: None,
            child: ChildOptions::default(),
        }
    }
}

impl ClientOptions {
    /// Default options with this handshake timeout.
    pub fn with_handshake_timeout(timeout: Duration) -> ClientOptions {
        let mut o = ClientOptions::default();
        o.limits.handshake_timeout = timeout;
        o
    }
}

impl Client {
    /// Starts or reaches `target`, negotiates, and returns the connection and its event
    /// stream.
    pub async fn connect(
        target: &Target,
        opts: &ClientOptions,
    ) -> Result<(Client, ClientEvents), ClientError> {
        match target {
            Target::Command { argv } => stdio::connect(argv, opts).await,
            Target::Url(url) => http::connect(url, opts).await,
            Target::Mcpb { addr, token, tls } => {
                mcpb::connect(addr, token.as_deref(), *tls, opts).await
            }
        }
    }

    /// Continues the HTTP session `session_id` that the server at `url` holds, negotiated
    /// with the `initialize` result `result` (by another process, which recorded both):
    /// no `initialize` is sent. A server that no longer holds the session answers the first
    /// request 404 ([`ClientError::is_session_gone`]); start a new one then.
    pub async fn reattach(
        url: &str,
        opts: &ClientOptions,
        session_id: &str,
        result: &serde_json::value::RawValue,
    ) -> Result<(Client, ClientEvents), ClientError> {
        http::reattach(url, opts, session_id, result).await
    }

    /// Every tool, following pagination cursors.
    pub async fn list_tools(&self) -> Result<Vec<Value>, ClientError> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        // A server that keeps answering with new cursors must not keep us forever.
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
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

    /// Calls a tool; with `as_task`, asks for a task (2025-11-25 `task` parameter). A task
    /// the server creates is followed (`tasks/get` polls, then `tasks/result`) to its result.
    pub async fn call_tool(
        &self,
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
}

/// Most `tools/list` pages one listing follows.
const MAX_PAGES: usize = 1000;

/// Whether a listed tool must be called as a task (`execution.taskSupport: "required"`).
pub fn requires_task(tool: &Value) -> bool {
    tool.pointer("/execution/taskSupport") == Some(&json!("required"))
}
