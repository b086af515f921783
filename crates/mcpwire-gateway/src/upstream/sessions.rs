//! [`UpstreamSessions`]: one upstream session per downstream session, opened on the session's
//! first call and closed when it ends; at most `max` open at once.

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

use mcpwire_model::McpError;
use mcpwire_router::SessionScope;
use tokio::sync::OnceCell;

use super::link::Link;

type Slot = Arc<OnceCell<Arc<Link>>>;

/// Upstream sessions by downstream session.
pub(crate) struct UpstreamSessions {
    name: String,
    max: usize,
    open: Mutex<mcpwire_session::IdMap<u64, Slot>>,
}

impl UpstreamSessions {
    /// No session yet; at most `max` at once for backend `name`.
    pub(crate) fn new(name: &str, max: usize) -> Arc<UpstreamSessions> {
        Arc::new(UpstreamSessions {
            name: name.to_owned(),
            max: max.max(1),
            open: Mutex::new(mcpwire_session::IdMap::default()),
        })
    }

    /// Upstream sessions open (or opening) now.
    pub(crate) fn len(&self) -> usize {
        self.open.lock().map_or(0, |m| m.len())
    }

    /// Calls relayed as raw frames (`mcpwire_server::relay`) on the upstream sessions open now.
    pub(crate) fn relayed_calls(&self) -> u64 {
        let Ok(open) = self.open.lock() else { return 0 };
        open.values()
            .filter_map(|slot| slot.get()?.client().relay().map(|r| r.sent()))
            .sum()
    }

    /// The upstream session of downstream session `scope`, opened with `open` on first
    /// use (or again when it went down); refused past the bound.
    pub(crate) async fn get<F, Fut>(
        self: &Arc<Self>,
        scope: &SessionScope,
        open: F,
    ) -> Result<Arc<Link>, McpError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<Arc<Link>, McpError>>,
    {
        if scope.is_ended() {
            return Err(McpError::Cancelled);
        }
        // A session whose upstream went away (a crashed child) gets a new one.
        for _ in 0..2 {
            let slot = self.slot(scope)?;
            match slot.get_or_try_init(&open).await {
                Ok(link) if !link.is_down() => return Ok(link.clone()),
                Ok(_) => self.forget(scope.id(), &slot),
                Err(e) => {
                    self.forget(scope.id(), &slot);
                    return Err(e);
                }
            }
        }
        Err(McpError::ConnectionClosed(format!(
            "the upstream session of backend `{}` ended as it was opened",
            self.name
        )))
    }

    /// The upstream session of downstream session `scope` when it is open and up now,
    /// without waiting (the fast path's check; anything else goes through
    /// [`UpstreamSessions::get`]).
    pub(crate) fn ready(&self, scope: &SessionScope) -> Option<Arc<Link>> {
        let open = self.open.lock().ok()?;
        let link = open.get(&scope.id())?.get()?;
        (!link.is_down()).then(|| link.clone())
    }

    /// The slot of `scope`, made (with a task closing it when the session ends) if new.
    fn slot(self: &Arc<Self>, scope: &SessionScope) -> Result<Slot, McpError> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| McpError::Internal("upstream sessions poisoned".into()))?;
        if let Some(slot) = open.get(&scope.id()) {
            return Ok(slot.clone());
        }
        if open.len() >= self.max {
            return Err(McpError::LimitExceeded(format!(
                "backend `{}` has {} upstream sessions open, its max_sessions; try again when \
                 a session ends",
                self.name, self.max
            )));
        }
        let slot: Slot = Arc::new(OnceCell::new());
        open.insert(scope.id(), slot.clone());
        tokio::spawn(close_when_ended(
            Arc::downgrade(self),
            scope.clone(),
            slot.clone(),
        ));
        Ok(slot)
    }

    /// Removes `slot` of session `id` (unless it was replaced already).
    fn forget(&self, id: u64, slot: &Slot) {
        if let Ok(mut open) = self.open.lock()
            && open.get(&id).is_some_and(|s| Arc::ptr_eq(s, slot))
        {
            open.remove(&id);
        }
    }
}

/// Waits for the downstream session to end, then forgets its upstream session and closes
/// it (a stdio child is stopped; an HTTP session another replica may be using is kept).
async fn close_when_ended(sessions: Weak<UpstreamSessions>, scope: SessionScope, slot: Slot) {
    scope.ended().await;
    if let Some(sessions) = sessions.upgrade() {
        sessions.forget(scope.id(), &slot);
    }
    if let Some(link) = slot.get() {
        super::reattach::close(link.client().clone(), scope.shared())
            .await
            .ok();
    }
}
