//! [`ProcessBackend`]: a router `Backend` whose tools, resources and prompts live in a tool
//! process. It owns an inner native [`Server`] holding the active catalog as run-time
//! definitions whose handlers forward to the process, so validation, paging, revision
//! differences and list-change events are the native server's.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use mcpwire_model::types::{
    Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, LogEntry, McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, CatalogEdit, Server, ToolDef,
    ToolRouting,
};
use serde_json::Value;
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::codec::{DEFAULT_MAX_ENVELOPE, DEFAULT_MAX_RAW};
use crate::conn::{Conn, Hooks};
use crate::forward::tool_def;
use crate::spawn::{ChildProc, Launch};
use crate::supervise::supervise;

/// Quiet time after a file change before reloading.
pub(crate) const RELOAD_DEBOUNCE: Duration = Duration::from_millis(200);

/// How to run and bound a tool process.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The file and runtime.
    pub launch: Launch,
    /// How long a process may take to connect and complete its handshake.
    pub handshake_timeout: Duration,
    /// Largest envelope accepted from the process.
    pub max_envelope: usize,
    /// Largest raw (and decompressed) result accepted from the process.
    pub max_raw: u64,
    /// How long a replaced process may keep finishing its calls after a reload.
    pub reload_grace: Duration,
    /// Watch the file's directory and reload on changes (`mcpwire dev`).
    pub watch: bool,
}

impl ProcessConfig {
    /// Defaults for running `launch`.
    pub fn new(launch: Launch) -> ProcessConfig {
        ProcessConfig {
            launch,
            handshake_timeout: Duration::from_secs(30),
            max_envelope: DEFAULT_MAX_ENVELOPE,
            max_raw: DEFAULT_MAX_RAW,
            reload_grace: Duration::from_secs(10),
            watch: false,
        }
    }
}

/// Why the host could not start.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StartError(String);

#[derive(Clone)]
pub(crate) enum State {
    Starting,
    Ready(Arc<Conn>),
    Failed(String),
}

/// Every registered tool of a generation, by name, as a forwarding definition.
type BuiltTools = Vec<(String, ToolDef)>;

pub(crate) struct Gen {
    pub(crate) conn: Arc<Conn>,
    pub(crate) child: ChildProc,
}

pub(crate) struct Shared {
    me: Weak<Shared>,
    pub(crate) config: ProcessConfig,
    pub(crate) server: Arc<Server>,
    pub(crate) ids: Arc<AtomicU64>,
    pub(crate) state: watch::Sender<State>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) reload: Notify,
    /// Tool definitions built for a generation (id, every registered tool).
    built: Mutex<Option<(u64, BuiltTools)>>,
}

/// A backend whose catalog and handlers live in a protomcp tool process.
pub struct ProcessBackend {
    shared: Arc<Shared>,
    info: BackendInfo,
}

impl std::fmt::Debug for ProcessBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessBackend")
            .field("file", &self.shared.config.launch.file)
            .finish()
    }
}

impl Drop for ProcessBackend {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
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
        let (state, _) = watch::channel(State::Starting);
        let shared = Arc::new_cyclic(|me| Shared {
            me: me.clone(),
            config,
            server,
            ids: Arc::new(AtomicU64::new(1)),
            state,
            shutdown: CancellationToken::new(),
            reload: Notify::new(),
            built: Mutex::new(None),
        });
        let mut rx = shared.state.subscribe();
        tokio::spawn(supervise(shared.clone()));
        if shared.config.watch {
            crate::watch::spawn_watcher(Arc::downgrade(&shared));
        }
        let first = rx
            .wait_for(|s| !matches!(s, State::Starting))
            .await
            .map(|s| s.clone());
        match first {
            Ok(State::Ready(_)) => {}
            Ok(State::Failed(reason)) => {
                shared.shutdown.cancel();
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
            shared,
            info: BackendInfo { name, capabilities },
        }))
    }

    /// Who the backend introduces itself as (named after the tool file).
    pub fn server_info(&self) -> Implementation {
        self.shared.server.server_info().clone()
    }

    /// Names of the active tools.
    pub fn tool_names(&self) -> Vec<String> {
        self.shared.server.tool_names()
    }

    /// Starts a new process, switches to it once it is ready and lets the old one finish
    /// its calls (what a file change does under `watch`).
    pub fn reload(&self) {
        self.shared.reload.notify_one();
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
                let shared = self.shared.clone();
                Box::pin(async move { shared.complete(ctx, p).await })
            }
            other => self.shared.server.call(ctx, other),
        }
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.shared.server.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        self.shared.server.events()
    }
}

impl Hooks for Shared {
    fn tools_changed(&self, conn: &Arc<Conn>) {
        if matches!(&*self.state.borrow(), State::Ready(c) if Arc::ptr_eq(c, conn)) {
            self.publish_tools(conn);
        }
    }

    fn resource_changed(&self, uri: String) {
        self.server.notify_resource_updated(uri);
    }

    fn log(&self, entry: LogEntry) {
        self.server.log(entry);
    }
}

impl Shared {
    fn publish_tools(&self, conn: &Arc<Conn>) {
        let tools = self.tool_defs(conn);
        self.server.replace_catalog(CatalogEdit {
            tools: Some(tools),
            ..CatalogEdit::default()
        });
    }

    /// The active tools of `conn` as definitions (built once per generation).
    pub(crate) fn tool_defs(&self, conn: &Arc<Conn>) -> Vec<ToolDef> {
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if built.as_ref().map(|b| b.0) != Some(conn.gen_id) {
            let weak = self.me.clone();
            let defs = conn
                .defs
                .iter()
                .map(|d| (d.name.clone(), tool_def(&weak, d)))
                .collect();
            *built = Some((conn.gen_id, defs));
        }
        let tools = conn.tools.lock().unwrap_or_else(|p| p.into_inner());
        built
            .as_ref()
            .map(|(_, defs)| {
                defs.iter()
                    .filter(|(n, _)| tools.is_active(n))
                    .map(|(_, d)| d.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The current connection, waiting while a process starts (bounded by the caller's
    /// cancellation, i.e. the call timeout).
    pub(crate) async fn conn(&self, ctx: &CallCtx) -> Result<Arc<Conn>, String> {
        let mut rx = self.state.subscribe();
        let state = tokio::select! {
            s = rx.wait_for(|s| !matches!(s, State::Starting)) => s.map(|s| s.clone()),
            _ = ctx.cancelled() => return Err("cancelled".into()),
        };
        match state {
            Ok(State::Ready(c)) => Ok(c),
            Ok(State::Failed(r)) => Err(r),
            _ => Err("the tool host stopped".into()),
        }
    }
}
