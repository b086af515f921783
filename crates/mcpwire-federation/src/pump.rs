//! One task per member: follows its events and, while it is unavailable, lists it again
//! with backoff.
//!
//! List changes are coalesced: every event already queued is taken before the member is
//! re-listed once, for the kinds that changed. A subscriber that lagged re-lists
//! everything (a change may have been missed). The task holds the federation weakly and
//! ends with it (it is also aborted when its member is replaced or removed).

use std::sync::Weak;
use std::time::Duration;

use mcpwire_model::BackendEvent;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use mcpwire_router::BoxFuture;

use crate::listing::Kind;

/// Most queued events taken in one go before re-listing.
const MAX_COALESCED: usize = 256;

/// What the pump needs of the federation it works for.
pub(crate) trait Follow: Send + Sync + 'static {
    /// How long to wait before listing member `id` again; `None` while it is healthy.
    fn retry_delay(&self, id: u64) -> Option<Duration>;
    /// Forwards an event of member `name` that is not a list change.
    fn forward(&self, name: &str, event: BackendEvent);
    /// Lists member `id` again (`kinds`, or everything) and publishes the result.
    fn relist<'a>(&'a self, id: u64, kinds: Option<&'a [Kind]>) -> BoxFuture<'a, ()>;
}

enum Wake {
    Event(BackendEvent),
    Lagged(u64),
    Closed,
    Retry,
}

/// Follows member `id` (called `name`) of `fed`.
pub(crate) async fn pump<F: Follow>(
    fed: Weak<F>,
    id: u64,
    name: String,
    mut rx: Option<broadcast::Receiver<BackendEvent>>,
) {
    loop {
        let delay = match fed.upgrade() {
            Some(f) => f.retry_delay(id),
            None => return,
        };
        if rx.is_none() && delay.is_none() {
            return;
        }
        let wake = tokio::select! {
            ev = recv(&mut rx) => ev,
            () = sleep(delay) => Wake::Retry,
        };
        let Some(fed) = fed.upgrade() else { return };
        let mut kinds: Vec<Kind> = Vec::new();
        let mut take = |wake: Wake, rx: &mut Option<broadcast::Receiver<BackendEvent>>| match wake {
            Wake::Event(BackendEvent::ToolsListChanged) => add(&mut kinds, &[Kind::Tools]),
            Wake::Event(BackendEvent::PromptsListChanged) => add(&mut kinds, &[Kind::Prompts]),
            Wake::Event(BackendEvent::ResourcesListChanged) => {
                add(&mut kinds, &[Kind::Resources, Kind::Templates])
            }
            Wake::Event(other) => fed.forward(&name, other),
            Wake::Lagged(n) => {
                tracing::warn!(member = %name, missed = n, "fell behind the member's events; listing it again");
                add(&mut kinds, &Kind::ALL);
            }
            Wake::Closed => *rx = None,
            Wake::Retry => add(&mut kinds, &Kind::ALL),
        };
        take(wake, &mut rx);
        for _ in 0..MAX_COALESCED {
            let Some(r) = rx.as_mut() else { break };
            let next = match r.try_recv() {
                Ok(ev) => Wake::Event(ev),
                Err(TryRecvError::Lagged(n)) => Wake::Lagged(n),
                Err(TryRecvError::Closed) => Wake::Closed,
                Err(TryRecvError::Empty) => break,
            };
            take(next, &mut rx);
        }
        if kinds.len() == Kind::ALL.len() {
            fed.relist(id, None).await;
        } else if !kinds.is_empty() {
            fed.relist(id, Some(&kinds)).await;
        }
    }
}

fn add(kinds: &mut Vec<Kind>, more: &[Kind]) {
    for k in more {
        if !kinds.contains(k) {
            kinds.push(*k);
        }
    }
}

async fn recv(rx: &mut Option<broadcast::Receiver<BackendEvent>>) -> Wake {
    match rx {
        Some(r) => match r.recv().await {
            Ok(ev) => Wake::Event(ev),
            Err(RecvError::Lagged(n)) => Wake::Lagged(n),
            Err(RecvError::Closed) => Wake::Closed,
        },
        None => std::future::pending().await,
    }
}

async fn sleep(delay: Option<Duration>) {
    match delay {
        Some(d) => tokio::time::sleep(d).await,
        None => std::future::pending().await,
    }
}
