//! Which generation requests go to: a watch of [`GenState`] that the supervisor writes and
//! every forwarded request reads through [`Current`].

use std::sync::Arc;

use mcpwire_router::CallCtx;
use tokio::sync::watch;

use crate::channel::ChildChannel;

/// The state of the tool process as requests see it.
#[derive(Clone)]
pub(crate) enum GenState {
    /// A process is starting (or restarting): requests wait.
    Starting,
    /// Requests go to this generation.
    Ready(Arc<ChildChannel>),
    /// No process can run (startup failure, crash loop): requests fail with this reason.
    Failed(String),
}

/// A reader of the generation state; cheap to clone.
#[derive(Clone)]
pub(crate) struct Current(watch::Receiver<GenState>);

impl Current {
    /// Reads `state`.
    pub(crate) fn new(state: &watch::Sender<GenState>) -> Current {
        Current(state.subscribe())
    }

    /// The current channel, waiting while a process starts (bounded by the caller's
    /// cancellation, i.e. the call timeout).
    pub(crate) async fn channel(&self, ctx: &CallCtx) -> Result<Arc<ChildChannel>, String> {
        let mut rx = self.0.clone();
        let state = tokio::select! {
            s = rx.wait_for(|s| !matches!(s, GenState::Starting)) => s.map(|s| s.clone()),
            _ = ctx.cancelled() => return Err("cancelled".into()),
        };
        match state {
            Ok(GenState::Ready(c)) => Ok(c),
            Ok(GenState::Failed(r)) => Err(r),
            _ => Err("the tool host stopped".into()),
        }
    }
}
