//! What a session needs to know about its server, and its limits.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::decorate::Decorations;
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
    /// What sessions derive from the fields above, made once for all of them (build it
    /// with `Default::default()`; a clone starts it afresh).
    pub derived: Derived,
}

/// What a [`SessionConfig`]'s sessions derive from it, made on first use.
#[derive(Debug, Default)]
pub struct Derived {
    decorations: OnceLock<Arc<Decorations>>,
}

impl Clone for Derived {
    /// Empty: the clone's fields may be changed before its first use.
    fn clone(&self) -> Derived {
        Derived::default()
    }
}

impl SessionConfig {
    /// What every 2026-07-28 result is given (`serverInfo`), serialized once.
    pub(crate) fn decorations(&self) -> Arc<Decorations> {
        self.derived
            .decorations
            .get_or_init(|| Arc::new(Decorations::new(&self.server_info)))
            .clone()
    }

    /// A config with default limits.
    pub fn new(server_info: Implementation, capabilities: ServerCapabilities) -> Arc<Self> {
        Arc::new(SessionConfig {
            server_info,
            capabilities,
            instructions: None,
            limits: SessionLimits::default(),
            derived: Derived::default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server info's JSON is made once, and a clone changed before its first use
    /// gives its own.
    #[test]
    fn decorations_are_made_once_and_a_clone_makes_its_own() {
        let config = SessionConfig::new(Implementation::new("a", "1"), Default::default());
        let first = config.decorations();
        assert!(first.server_info.get().contains("\"a\""));
        assert!(Arc::ptr_eq(&first, &config.decorations()), "made once");
        let mut other = (*config).clone();
        other.server_info = Implementation::new("b", "2");
        assert!(other.decorations().server_info.get().contains("\"b\""));
    }
}
