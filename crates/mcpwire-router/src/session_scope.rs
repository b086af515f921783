//! The downstream session a call belongs to, as backends see it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use mcpwire_model::{BackendEvent, ClientAsk, McpError, Raw};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::BoxFuture;

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
    shared: Option<SharedSession>,
    /// Events and asks for this session only (bounded by whoever made the channel).
    notices: Option<mpsc::Sender<SessionNotice>>,
    /// Bumped each time the client says its roots changed.
    roots: watch::Sender<u64>,
    /// The listener the session came through (set once, by its driver).
    listener: std::sync::OnceLock<Arc<str>>,
}

/// What a backend sends one downstream session outside its calls
/// ([`SessionScope::notify`], [`SessionScope::ask`]); the session's driver takes them.
#[derive(Debug)]
pub enum SessionNotice {
    /// An event for this session alone, handled as the backends' events are.
    Event(BackendEvent),
    /// A question to the client related to no request; the answer goes to the sender.
    Ask(ClientAsk, oneshot::Sender<Result<Raw, McpError>>),
}

/// Per-session records a replica set keeps in its shared store, by downstream session:
/// what a backend needs to continue the session's state on another replica (an upstream
/// session to re-attach). Implemented over the replica set's store by the gateway's
/// cluster.
pub trait SessionRecords: Send + Sync + std::fmt::Debug {
    /// Backend `backend`'s record for session `sid` (`None`: there is none).
    fn load<'a>(
        &'a self,
        sid: &'a str,
        backend: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>>;
    /// Writes backend `backend`'s record for session `sid` (it lives as long as the
    /// session's own record).
    fn save<'a>(
        &'a self,
        sid: &'a str,
        backend: &'a str,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), String>>;
    /// Whether session `sid` is still live in the replica set (it may be served by another
    /// replica after this one dropped its copy).
    fn is_live<'a>(&'a self, sid: &'a str) -> BoxFuture<'a, Result<bool, String>>;
}

/// A downstream session shared by a replica set: its id there (the same on every replica)
/// and the store its records live in.
#[derive(Debug, Clone)]
pub struct SharedSession {
    /// The session's id in the replica set (the sealed `Mcp-Session-Id`'s `sid`).
    pub sid: Arc<str>,
    /// Where records about it are kept.
    pub records: Arc<dyn SessionRecords>,
}

impl SessionScope {
    /// A new session with a fresh identity.
    pub fn new() -> SessionScope {
        SessionScope::with_shared(None)
    }

    /// A new session (a fresh local identity) that is `shared`'s session in a replica
    /// set, when it is one.
    pub fn with_shared(shared: Option<SharedSession>) -> SessionScope {
        SessionScope::with_notices(shared, None)
    }

    /// A new session as [`SessionScope::with_shared`] makes, whose driver takes events
    /// meant for it alone from `notices` ([`SessionScope::notify`]).
    pub fn with_notices(
        shared: Option<SharedSession>,
        notices: Option<mpsc::Sender<SessionNotice>>,
    ) -> SessionScope {
        SessionScope {
            inner: Arc::new(ScopeInner {
                id: NEXT_SESSION.fetch_add(1, Ordering::Relaxed),
                ended: CancellationToken::new(),
                shared,
                notices,
                roots: watch::Sender::new(0),
                listener: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Sends `event` to this session only — a log an upstream session of its own sent
    /// between calls — as the session handles the backends' events (its log level
    /// applies). Never waits: `false` when the session does not take such events, ended,
    /// or has a full queue (the event is dropped).
    pub fn notify(&self, event: BackendEvent) -> bool {
        self.inner
            .notices
            .as_ref()
            .is_some_and(|n| n.try_send(SessionNotice::Event(event)).is_ok())
    }

    /// Asks the client `ask` related to no request (on HTTP, on the standalone `GET`
    /// stream): what an upstream of this session alone asks between calls, or asks of the
    /// session rather than of a call (`roots/list`). Fails with `Unavailable` when the
    /// session does not take such asks or its queue is full, `Cancelled` when it ended
    /// first, and as the session fails asks (no capability, timeout).
    pub async fn ask(&self, ask: ClientAsk) -> Result<Raw, McpError> {
        let Some(notices) = &self.inner.notices else {
            return Err(McpError::Unavailable(
                "this session takes no requests outside its calls".into(),
            ));
        };
        let (tx, rx) = oneshot::channel();
        notices
            .try_send(SessionNotice::Ask(ask, tx))
            .map_err(|_| McpError::Unavailable("the session is busy or gone".into()))?;
        rx.await.unwrap_or(Err(McpError::Cancelled))
    }

    /// The client said its roots changed (the driver calls this on
    /// `notifications/roots/list_changed`).
    pub fn roots_changed(&self) {
        self.inner.roots.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes each time the client says its roots changed.
    pub fn roots_watch(&self) -> watch::Receiver<u64> {
        self.inner.roots.subscribe()
    }

    /// The queue [`SessionScope::notify`] sends to (for a scope made again for the same
    /// session, e.g. once it is known to be shared by a replica set).
    pub fn notices(&self) -> Option<mpsc::Sender<SessionNotice>> {
        self.inner.notices.clone()
    }

    /// The session's id and records in a replica set, when it is shared by one.
    pub fn shared(&self) -> Option<&SharedSession> {
        self.inner.shared.as_ref()
    }

    /// Names the listener this session came through (its URL); only the first name
    /// given holds. Set once by the session's driver, so a call's listener costs nothing.
    pub fn set_listener(&self, listener: Arc<str>) {
        let _ = self.inner.listener.set(listener);
    }

    /// The listener this session came through, when its driver named it.
    pub fn listener(&self) -> Option<&str> {
        self.inner.listener.get().map(|l| &**l)
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

    #[test]
    fn the_listener_is_named_once_and_seen_by_clones() {
        let a = SessionScope::new();
        assert_eq!(a.listener(), None);
        let a2 = a.clone();
        a.set_listener(Arc::from("http://127.0.0.1:1/mcp"));
        a.set_listener(Arc::from("ws://other"));
        assert_eq!(a2.listener(), Some("http://127.0.0.1:1/mcp"));
    }
}
