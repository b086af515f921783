//! What a client session says about itself, which era it speaks, and its limits.

use std::time::Duration;

use mcpwire_model::types::{ClientCapabilities, Implementation, LoggingLevel};

/// How the client picks its protocol era.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    /// Try `server/discover` (2026-07-28) first and fall back to `initialize` when the server
    /// does not take it, as the official Python client's `mode="auto"` does.
    #[default]
    Auto,
    /// `initialize` only (2025-11-25, or what the server answers with).
    Handshake,
    /// 2026-07-28 only: `server/discover`, no fallback.
    Stateless,
}

/// Limits a client session enforces; every table and queue it keeps is bounded by one.
#[derive(Debug, Clone)]
pub struct ClientLimits {
    /// Requests in flight (and queued before negotiation ends) at once; more are refused
    /// with `LimitExceeded`.
    pub max_in_flight: usize,
    /// Server→client requests surfaced and not yet answered; more are refused at once.
    pub max_server_requests: usize,
    /// Notifications and server requests waiting in the event queue; past it notifications
    /// are dropped (counted) and server requests refused.
    pub max_events: usize,
    /// How long negotiation (`server/discover`, `initialize`) may take in all.
    pub handshake_timeout: Duration,
    /// How long the `server/discover` probe waits before falling back to `initialize` (the
    /// Python client waits 10 s); at most half the handshake timeout, so the fallback has
    /// time too.
    pub discover_timeout: Duration,
    /// How long a request waits for its answer unless its options say otherwise (None: no
    /// limit — tools may run long).
    pub request_timeout: Option<Duration>,
    /// How long a server→client request may wait for the owner's answer before the server is
    /// told it timed out.
    pub server_request_timeout: Duration,
}

impl Default for ClientLimits {
    fn default() -> Self {
        ClientLimits {
            max_in_flight: 1024,
            max_server_requests: 64,
            max_events: 1024,
            handshake_timeout: Duration::from_secs(30),
            discover_timeout: Duration::from_secs(10),
            request_timeout: None,
            server_request_timeout: Duration::from_secs(300),
        }
    }
}

/// Who the client is, what it offers, and how it negotiates.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `clientInfo`.
    pub client_info: Implementation,
    /// What the client offers (sampling, elicitation, roots): the server's requests for
    /// anything not declared here are refused by the session.
    pub capabilities: ClientCapabilities,
    /// Which era to speak.
    pub era: EraChoice,
    /// 2026-07-28: the least severe log level to ask for on every request (None: no logs,
    /// as the spec says for requests without `logLevel`).
    pub log_level: Option<LoggingLevel>,
    /// Limits.
    pub limits: ClientLimits,
}

impl ClientConfig {
    /// A config offering no client features, with default limits and era `Auto`.
    pub fn new(client_info: Implementation) -> ClientConfig {
        ClientConfig {
            client_info,
            capabilities: ClientCapabilities::default(),
            era: EraChoice::Auto,
            log_level: None,
            limits: ClientLimits::default(),
        }
    }
}

/// Per-request options.
#[derive(Debug, Clone, Default)]
pub struct RequestOptions {
    /// How long to wait for the answer (None: the session's `request_timeout`). On expiry
    /// the request is answered `Timeout` and the server is told (`notifications/cancelled`).
    pub timeout: Option<Duration>,
    /// Ask for progress (`_meta.progressToken`); updates arrive as `ClientEvent::Progress`.
    pub progress: bool,
    /// Each progress update restarts the timeout (a long call that reports progress lives).
    pub reset_timeout_on_progress: bool,
    /// Extra `_meta` entries to send (the session's own keys win).
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    /// 2026-07-28: the client capabilities this request declares instead of the session's
    /// (a gateway forwarding a downstream client's own, so the server asks only for what
    /// that client can answer). Ignored in the handshake eras, which declare them once.
    pub capabilities: Option<std::sync::Arc<mcpwire_model::types::ClientCapabilities>>,
}
