//! The downstream session a call belongs to, as backends see it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio_util::sync::CancellationToken;

static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

/// One downstream session (a stdio connection, an HTTP `Mcp-Session-Id`, an MCPB or
/// WebSocket connection): an identity unique in this process and a signal that fires when
/// the session ends. Backends that keep state per session (an upstream MCP session per
/// downstream session) key it by [`SessionScope::id`] and drop it on [`SessionScope::ended`].
/// Stateless requests have none. Cheap to clone; the drivers end it when the session goes.
#[derive(Debug, Clone)]
pub struct SessionScope {
    inner: Arc<ScopeInner>,
}

#[derive(Debug)]
struct ScopeInner {
    id: u64,
    ended: CancellationToken,
}

impl SessionScope {
    /// A new session with a fresh identity.
    pub fn new() -> SessionScope {
        SessionScope {
            inner: Arc::new(ScopeInner {
                id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
                ended: CancellationToken::new(),
            }),
        }
    }

    /// The session's identity, unique in this process.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Completes when the session ended.
    pub async fn ended(&self) {
        self.inner.ended.cancelled().await
    }

    /// Whether the session ended.
    pub fn is_ended(&self) -> bool {
        self.inner.ended.is_cancelled()
    }

    /// Ends the session (done by the driver when its connection or HTTP session goes).
    pub fn end(&self) {
        self.inner.ended.cancel();
    }
}

impl Default for SessionScope {
    fn default() -> SessionScope {
        SessionScope::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_differ_and_end_is_seen_by_clones() {
        let a = SessionScope::new();
        let b = SessionScope::new();
        assert_ne!(a.id(), b.id());
        let a2 = a.clone();
        assert!(!a2.is_ended());
        a.end();
        assert!(a2.is_ended() && !b.is_ended());
    }
}
