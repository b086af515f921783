//! [`ClientError`]: why a client operation failed, naming the program, URL or line
//! involved, sorted by [`Blame`] (the CLI's exit codes follow it).

use std::time::Duration;

use mcpwire_model::{ErrorObject, McpError};

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
    /// 2026-07-28: the server needs input (sampling, elicitation, roots) that this caller
    /// does not give; `Client::send` surfaces such answers instead.
    #[error(
        "the server needs input to answer `{method}` ({requests}), which this client does not give"
    )]
    InputRequired {
        /// The request's method.
        method: String,
        /// The input requests' methods.
        requests: String,
    },
    /// The request was cancelled before its answer came.
    #[error("`{method}` was cancelled")]
    Cancelled {
        /// The request's method.
        method: String,
    },
    /// The client refused to send the request (a limit, params that are not an object).
    #[error("`{method}` was not sent: {error}")]
    Refused {
        /// The request's method.
        method: String,
        /// Why.
        error: McpError,
    },
    /// The server sent something that is not JSON-RPC, or that this client cannot use.
    #[error("{0}")]
    Invalid(String),
    /// Talking to the server failed.
    #[error("{0}")]
    Io(String),
    /// The server requires authorization and this client could not obtain it (no
    /// credentials configured, discovery, registration, consent or a token request failed).
    #[error("authorization: {0}")]
    Auth(String),
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
    /// An HTTP server's 404 for a request carrying a session id: it no longer holds the
    /// session (it expired, or the server restarted); the spec's remedy is a new one.
    pub fn is_session_gone(&self) -> bool {
        matches!(self, ClientError::Http { status, .. } if status.starts_with("404"))
    }

    /// Who is to blame.
    pub fn blame(&self) -> Blame {
        match self {
            ClientError::Target(_) | ClientError::Refused { .. } => Blame::Usage,
            ClientError::Rpc { .. } | ClientError::InputRequired { .. } => Blame::Server,
            _ => Blame::Connection,
        }
    }

    /// This failure as the model's error, for a gateway that forwards it to its own client:
    /// the server's own error passes through; the connection's failures are
    /// `ConnectionClosed`, `BadPeerMessage` or `Timeout`.
    pub fn to_mcp(&self) -> McpError {
        match self {
            ClientError::Rpc { error, .. } => McpError::Wire(error.clone()),
            ClientError::Timeout { .. } => McpError::Timeout,
            ClientError::Cancelled { .. } => McpError::Cancelled,
            ClientError::Refused { error, .. } => error.clone(),
            ClientError::Invalid(m) => McpError::BadPeerMessage(m.clone()),
            ClientError::InputRequired { .. } => McpError::InputRequired,
            // Not run: the server no longer holds the session; a new one may run it.
            gone if gone.is_session_gone() => McpError::Unavailable(gone.to_string()),
            other => McpError::ConnectionClosed(other.to_string()),
        }
    }

    /// The error for a request (`method`) the session ended with `error`, talking to
    /// `peer`; `waited` is how long a timeout allowed and `hint` what to say after it.
    pub(crate) fn from_session(
        method: &str,
        error: McpError,
        peer: &str,
        waited: Option<Duration>,
        hint: &str,
    ) -> ClientError {
        match error {
            McpError::Wire(error) => ClientError::Rpc {
                method: method.to_owned(),
                error,
            },
            McpError::Timeout => ClientError::Timeout {
                awaited: format!("answer to `{method}`"),
                peer: peer.to_owned(),
                after: waited.unwrap_or_default(),
                hint: hint.to_owned(),
            },
            McpError::ConnectionClosed(how) => ClientError::Closed {
                peer: peer.to_owned(),
                how,
                method: method.to_owned(),
            },
            McpError::BadPeerMessage(m) => ClientError::Invalid(m),
            McpError::Cancelled => ClientError::Cancelled {
                method: method.to_owned(),
            },
            McpError::UnsupportedVersion {
                requested,
                supported,
            } => ClientError::Invalid(format!(
                "{peer} and this client share no protocol revision (`{method}`: {requested} \
                 against {})",
                supported.join(", ")
            )),
            error => ClientError::Refused {
                method: method.to_owned(),
                error,
            },
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
