//! What a session needs to know about its server, and its limits.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::{Implementation, ServerCapabilities};

/// Limits a session enforces; every queue and map it keeps is bounded by one of these.
#[derive(Debug, Clone)]
pub struct SessionLimits {
    /// Requests the client may have in flight at once (further ones get −32600).
    pub max_in_flight: usize,
    /// Server→client asks outstanding at once.
    pub max_asks: usize,
    /// How long an ask waits for the client's answer.
    pub ask_timeout: Duration,
    /// How long a request may run before it is answered with a timeout (None: no limit).
    pub request_timeout: Option<Duration>,
    /// Resource subscriptions per session.
    pub max_subscriptions: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_in_flight: 1024,
            max_asks: 256,
            ask_timeout: Duration::from_secs(300),
            request_timeout: None,
            max_subscriptions: 1024,
        }
    }
}

/// The server's identity and offer, shared by all its sessions.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// `serverInfo`.
    pub server_info: Implementation,
    /// What the server offers (from its backend).
    pub capabilities: ServerCapabilities,
    /// `instructions` for the model.
    pub instructions: Option<String>,
    /// Limits.
    pub limits: SessionLimits,
}

impl SessionConfig {
    /// A config with default limits.
    pub fn new(server_info: Implementation, capabilities: ServerCapabilities) -> Arc<Self> {
        Arc::new(SessionConfig {
            server_info,
            capabilities,
            instructions: None,
            limits: SessionLimits::default(),
        })
    }
}
