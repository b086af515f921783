//! [`LateBackend`]: a backend that could not start (an upstream not up yet, a command
//! that failed) standing in the catalog as a member that is down, started again each time
//! the federation lists it (with the federation's backoff), and from then on the backend
//! itself.
//!
//! Keeping it a member (rather than leaving it out) is what keeps names stable: the
//! federation's conditional prefixing counts members, up or not, so the others' tool names
//! do not change when it comes back; `/readyz` and `--check` show it down with the reason.
//! Containers start in any order: a gateway started before its upstreams serves the
//! others, and each one joins by itself once it answers (`docs/design/gateway.md` §
//! Backends that are down).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use mcpwire_model::types::{ListChangedCapability, ResourcesCapability, ServerCapabilities};
use mcpwire_model::{BackendEvent, McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, ToolRouting,
};
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::backends::{StartFailure, Started};

/// Events held for slow subscribers (as an upstream's own channel holds).
const EVENTS_CAPACITY: usize = 256;

/// How soon after a failed start the next may be tried (the federation lists a new member
/// at once; that listing reports the failure just seen rather than starting it again).
const QUIET_AFTER_FAILURE: Duration = Duration::from_millis(900);

/// Starts the backend once more.
pub(crate) type Starter = Arc<
    dyn Fn() -> Pin<Box<dyn Future<Output = Result<Started, StartFailure>> + Send>> + Send + Sync,
>;

/// A backend that did not start yet; see the module documentation.
pub struct LateBackend {
    /// Itself, for the starts its calls make.
    me: Weak<LateBackend>,
    /// Its name, and capabilities guessed until it is up: every list kind, so the
    /// federation lists each of them (a kind it does not offer lists empty once it is up).
    guess: BackendInfo,
    start: Starter,
    /// The backend once started (never replaced: a backend that fails later restarts
    /// itself).
    up: OnceLock<Started>,
    /// One start at a time; holds why the last one failed and when the next may be tried.
    starting: tokio::sync::Mutex<Attempt>,
    /// The events of the started backend, passed on (subscribers join before it is up).
    events: broadcast::Sender<BackendEvent>,
}

struct Attempt {
    reason: String,
    not_before: Instant,
}

impl std::fmt::Debug for LateBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateBackend")
            .field("name", &self.guess.name)
            .field("up", &self.up.get().is_some())
            .finish()
    }
}

impl LateBackend {
    /// A backend named `name` whose start just failed with `first`; `start` tries again.
    pub(crate) fn new(name: &str, first: &StartFailure, start: Starter) -> Arc<LateBackend> {
        let (events, _) = broadcast::channel(EVENTS_CAPACITY);
        Arc::new_cyclic(|me| LateBackend {
            me: me.clone(),
            guess: BackendInfo {
                name: name.to_owned(),
                capabilities: every_list(),
            },
            start,
            up: OnceLock::new(),
            starting: tokio::sync::Mutex::new(Attempt {
                reason: first.reason.clone(),
                not_before: Instant::now() + QUIET_AFTER_FAILURE,
            }),
            events,
        })
    }

    /// Its name in the configuration.
    pub fn name(&self) -> &str {
        &self.guess.name
    }

    /// The backend, once it started.
    pub fn started(&self) -> Option<&Started> {
        self.up.get()
    }

    /// What the console shows of it (era, restarts): the started backend's own, nothing
    /// before it started.
    pub(crate) fn status(self: &Arc<Self>) -> crate::console::BackendStatus {
        let weak = Arc::downgrade(self);
        Arc::new(move || {
            let status = weak
                .upgrade()
                .and_then(|late| late.started().and_then(|s| s.status.clone()));
            status.map_or(serde_json::Value::Null, |f| f())
        })
    }

    fn backend(&self) -> Option<&Arc<dyn Backend>> {
        self.up.get().map(|s| &s.backend)
    }

    /// The backend, started now if it is not up yet and a start may be tried.
    async fn ensure(self: Arc<Self>) -> Result<Arc<dyn Backend>, McpError> {
        if let Some(b) = self.backend() {
            return Ok(b.clone());
        }
        let mut attempt = self.starting.lock().await;
        if let Some(b) = self.backend() {
            return Ok(b.clone());
        }
        if Instant::now() < attempt.not_before {
            return Err(self.down(&attempt.reason));
        }
        match (self.start)().await {
            Ok(started) => {
                tracing::info!(backend = %self.guess.name, "the backend is up; it joins the catalog");
                let backend = started.backend.clone();
                if let Some(rx) = backend.events() {
                    tokio::spawn(pass_on(rx, Arc::downgrade(&self)));
                }
                // Only this task sets it (under `starting`).
                let _ = self.up.set(started);
                Ok(backend)
            }
            Err(f) => {
                tracing::debug!(backend = %self.guess.name, reason = %f.reason, "still down");
                attempt.reason = f.reason;
                attempt.not_before = Instant::now() + QUIET_AFTER_FAILURE;
                Err(self.down(&attempt.reason))
            }
        }
    }

    fn down(&self, reason: &str) -> McpError {
        McpError::Unavailable(format!(
            "backend `{}` is down (tried again with backoff): {reason}",
            self.guess.name
        ))
    }
}

/// Capabilities offering every list, with list changes.
fn every_list() -> ServerCapabilities {
    let changing = || ListChangedCapability {
        list_changed: Some(true),
    };
    ServerCapabilities {
        tools: Some(changing()),
        prompts: Some(changing()),
        resources: Some(ResourcesCapability {
            subscribe: Some(true),
            list_changed: Some(true),
        }),
        ..ServerCapabilities::default()
    }
}

/// Passes the started backend's events on until either side goes.
async fn pass_on(mut rx: broadcast::Receiver<BackendEvent>, late: Weak<LateBackend>) {
    loop {
        let event = match rx.recv().await {
            Ok(event) => event,
            Err(broadcast::error::RecvError::Lagged(_)) => {
                // A change may have been missed: every list may have changed.
                for ev in [
                    BackendEvent::ToolsListChanged,
                    BackendEvent::PromptsListChanged,
                    BackendEvent::ResourcesListChanged,
                ] {
                    let Some(late) = late.upgrade() else { return };
                    let _ = late.events.send(ev);
                }
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let Some(late) = late.upgrade() else { return };
        let _ = late.events.send(event);
    }
}

impl Backend for LateBackend {
    fn info(&self) -> &BackendInfo {
        match self.backend() {
            Some(b) => b.info(),
            None => &self.guess,
        }
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        if let Some(b) = self.backend() {
            return b.call(ctx, req);
        }
        let Some(late) = self.me.upgrade() else {
            return Box::pin(std::future::ready(Err(McpError::Unavailable(
                "the backend is being removed".into(),
            ))));
        };
        Box::pin(async move {
            if !is_listing(&req) {
                // Its names are not in the catalog; only a stale client asks.
                let reason = late
                    .starting
                    .try_lock()
                    .map(|a| a.reason.clone())
                    .unwrap_or_else(|_| "it is being started".to_owned());
                return Err(late.down(&reason));
            }
            let backend = late.ensure().await?;
            backend.call(ctx, req).await
        })
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.backend()?.tool_routing(name)
    }

    fn open_sessions(&self) -> Option<usize> {
        self.backend()?.open_sessions()
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        Some(self.events.subscribe())
    }

    fn forwards_tool_calls(&self) -> bool {
        self.backend().is_some_and(|b| b.forwards_tool_calls())
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        match self.backend() {
            Some(b) => b.forward_tool_call(call),
            None => Err(call),
        }
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        match self.backend() {
            Some(b) => b.relay_route(name, caller),
            None => RelayDecision::General,
        }
    }
}

/// Whether `req` lists something (what the federation asks a member it retries).
fn is_listing(req: &BackendRequest) -> bool {
    matches!(
        req,
        BackendRequest::ListTools { .. }
            | BackendRequest::ListPrompts { .. }
            | BackendRequest::ListResources { .. }
            | BackendRequest::ListResourceTemplates { .. }
    )
}

impl LateBackend {
    /// Why it is down now (`None` once it is up).
    pub fn down_reason(&self) -> Option<String> {
        if self.started().is_some() {
            return None;
        }
        let reason = self
            .starting
            .try_lock()
            .map(|a| a.reason.clone())
            .unwrap_or_else(|_| "being started".to_owned());
        Some(reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{BackendSource, BackendSpec};
    use mcpwire_model::types::Implementation;
    use serde_json::{Value, json};

    /// A backend that answers nothing.
    struct Quiet(BackendInfo);

    impl Backend for Quiet {
        fn info(&self) -> &BackendInfo {
            &self.0
        }

        fn call(
            &self,
            _: CallCtx,
            _: BackendRequest,
        ) -> BoxFuture<'static, Result<Reply, McpError>> {
            Box::pin(async { Err(McpError::Unavailable("quiet".into())) })
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_late_backend_shows_the_era_of_the_one_that_started() {
        let spec = BackendSpec::new(
            "up",
            BackendSource::Native {
                server: "demo".into(),
            },
        );
        let status: crate::console::BackendStatus =
            Arc::new(|| json!({ "era": "2025-11-25", "restarts": 0 }));
        let started = Started {
            spec,
            backend: Arc::new(Quiet(BackendInfo {
                name: "up".into(),
                capabilities: ServerCapabilities::default(),
            })),
            server_info: Implementation::new("up", "1"),
            instructions: None,
            reread: None,
            status: Some(status),
        };
        let start: Starter = Arc::new(move || {
            let s = started.clone();
            Box::pin(async move { Ok(s) })
        });
        let failed = StartFailure {
            backend: "up".into(),
            reason: "connection refused".into(),
            unsupported: false,
        };
        let late = LateBackend::new("up", &failed, start);
        let shown = late.status();
        assert_eq!(shown(), Value::Null, "nothing before it started");
        assert!(
            late.clone().ensure().await.is_err(),
            "quiet after a failure"
        );
        tokio::time::advance(QUIET_AFTER_FAILURE).await;
        late.clone().ensure().await.expect("started");
        assert_eq!(shown()["era"], "2025-11-25");
    }
}
