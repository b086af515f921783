//! [`UpstreamSessions`]: one upstream session per downstream session, opened on the session's
//! first call and closed when it ends — or when it was idle (no call in flight, none
//! started) for `idle` (a client that never ends its session, e.g. one that drops its HTTP
//! session without `DELETE`, does not keep a child for the listener's whole session
//! timeout); the session's next call opens a new one. At most `max` open at once.

use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_router::SessionScope;
use tokio::sync::OnceCell;

use super::link::Link;

type Slot = Arc<OnceCell<Arc<Link>>>;

/// Upstream sessions by downstream session.
pub(crate) struct UpstreamSessions {
    name: String,
    max: usize,
    /// How long an upstream session may stay unused before it is closed.
    idle: Option<Duration>,
    open: Mutex<mcpwire_session::IdMap<u64, Slot>>,
}

impl UpstreamSessions {
    /// No session yet; at most `max` at once for backend `name`.
    /// `idle`: close one unused for this long (`None`: only when its session ends).
    pub(crate) fn new(name: &str, max: usize, idle: Option<Duration>) -> Arc<UpstreamSessions> {
        Arc::new(UpstreamSessions {
            name: name.to_owned(),
            max: max.max(1),
            idle,
            open: Mutex::new(mcpwire_session::IdMap::default()),
        })
    }

    /// Upstream sessions open (or opening) now.
    pub(crate) fn len(&self) -> usize {
        self.open.lock().map_or(0, |m| m.len())
    }

    /// Calls relayed as raw frames (`mcpwire_relay`) on the upstream sessions open now.
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
        tokio::spawn(close_when_done(
            Arc::downgrade(self),
            scope.clone(),
            slot.clone(),
            self.idle,
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

/// Waits for the downstream session to end, or its upstream session to stay unused for
/// `idle`, then forgets the upstream session and closes it (a stdio child is stopped; an
/// HTTP session another replica may be using is kept).
async fn close_when_done(
    sessions: Weak<UpstreamSessions>,
    scope: SessionScope,
    slot: Slot,
    idle: Option<Duration>,
) {
    tokio::select! {
        () = scope.ended() => {}
        () = unused_for(&slot, idle) => {
            if let Some(s) = sessions.upgrade() {
                tracing::info!(upstream = %s.name, "closing an upstream session unused for {:?}", idle.unwrap_or_default());
            }
        }
    }
    if let Some(sessions) = sessions.upgrade() {
        sessions.forget(scope.id(), &slot);
    }
    if let Some(link) = slot.get() {
        super::reattach::close(link.client().clone(), scope.shared())
            .await
            .ok();
    }
}

/// Completes once the link in `slot` saw no call start and had none in flight for `idle`
/// (checked every quarter of it); never without `idle`.
async fn unused_for(slot: &Slot, idle: Option<Duration>) {
    let Some(idle) = idle else {
        return std::future::pending().await;
    };
    let tick = (idle / 4).max(Duration::from_millis(10));
    let mut last = None;
    let mut since = tokio::time::Instant::now();
    loop {
        tokio::time::sleep(tick).await;
        let Some(link) = slot.get() else {
            since = tokio::time::Instant::now();
            continue;
        };
        let (used, busy) = link.activity();
        if busy || last != Some(used) {
            last = Some(used);
            since = tokio::time::Instant::now();
        } else if since.elapsed() >= idle {
            return;
        }
    }
}
