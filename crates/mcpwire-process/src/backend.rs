//! [`ProcessBackend`]: a router `Backend` whose tools, resources and prompts live in a tool
//! process. Requests go to the inner native `Server` of its [`ProcessHost`], whose run-time
//! definitions forward to the process, so validation, paging, revision differences and
//! list-change events are the native server's. Starting it spawns the supervisor (and, for
//! `dev`, the file watcher).

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::{
    Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, Server, ToolRouting,
};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::channel::ProcessLoad;
use crate::config::ProcessConfig;
use crate::current::GenState;
use crate::host::ProcessHost;
use crate::supervise::supervise;

/// Quiet time after a file change before reloading.
const RELOAD_DEBOUNCE: Duration = Duration::from_millis(200);

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

/// A backend whose catalog and handlers live in a tool process (the Envelope protocol).
pub struct ProcessBackend {
    host: Arc<ProcessHost>,
    info: BackendInfo,
}

impl std::fmt::Debug for ProcessBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessBackend")
            .field("file", &self.host.config.launch.file)
            .finish()
    }
}

impl Drop for ProcessBackend {
    fn drop(&mut self) {
        self.host.shutdown.cancel();
    }
}

impl ProcessBackend {
    /// Starts the process and waits until it has completed its handshake and its catalog is
    /// known; a process that cannot start is an error (with the end of its stderr).
    pub async fn start(config: ProcessConfig) -> Result<Arc<ProcessBackend>, StartError> {
        let name = config
            .launch
            .file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "tools".into());
        let server =
            Server::builder(Implementation::new(name.clone(), env!("CARGO_PKG_VERSION"))).build();
        let host = Arc::new(ProcessHost::new(config, server));
        let mut rx = host.state();
        tokio::spawn(supervise(host.clone()));
        if host.config.watch {
            let weak = Arc::downgrade(&host);
            let file = host.config.launch.file.clone();
            let shutdown = host.shutdown.clone();
            crate::watch::watch_file(&file.clone(), RELOAD_DEBOUNCE, shutdown, move || {
                let Some(host) = weak.upgrade() else {
                    return false;
                };
                tracing::info!("{} changed; reloading", file.display());
                host.reload.notify_one();
                true
            });
        }
        let first = rx
            .wait_for(|s| !matches!(s, GenState::Starting))
            .await
            .map(|s| s.clone());
        match first {
            Ok(GenState::Ready(_)) => {}
            Ok(GenState::Failed(reason)) => {
                host.shutdown.cancel();
                return Err(StartError(reason));
            }
            _ => return Err(StartError("the tool host stopped".into())),
        }
        let capabilities = ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            prompts: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            logging: Some(Value::Object(Default::default())),
            completions: Some(Value::Object(Default::default())),
            ..ServerCapabilities::default()
        };
        Ok(Arc::new(ProcessBackend {
            host,
            info: BackendInfo { name, capabilities },
        }))
    }

    /// Who the backend introduces itself as (named after the tool file).
    pub fn server_info(&self) -> Implementation {
        self.host.server.server_info().clone()
    }

    /// Names of the active tools.
    pub fn tool_names(&self) -> Vec<String> {
        self.host.server.tool_names()
    }

    /// Starts a new process, switches to it once it is ready and lets the old one finish
    /// its calls (what a file change does under `watch`).
    pub fn reload(&self) {
        self.host.reload.notify_one();
    }

    /// What the current process holds right now: requests unanswered, messages waiting to be
    /// written, asks waiting for a client (each bounded; for monitoring and tests).
    pub fn load(&self) -> ProcessLoad {
        self.host.load()
    }

    /// Times the tool process ended and was started again.
    pub fn restarts(&self) -> u64 {
        self.host
            .restarts
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Backend for ProcessBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        match req {
            BackendRequest::Complete(p) => {
                let fwd = self.host.forward.clone();
                Box::pin(async move { fwd.complete(ctx, p).await })
            }
            other => self.host.server.call(ctx, other),
        }
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.host.server.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        self.host.server.events()
    }
}
