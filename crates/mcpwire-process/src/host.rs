//! [`ProcessHost`]: everything the tool-process host keeps — its configuration, the inner
//! native `Server` holding the active catalog, the generation state requests read, the
//! shutdown and reload signals — and what it does with a generation: make it current
//! (fetch and publish its catalog) and republish its tools when its active list changes.
//! The supervisor (`crate::supervise`) drives it; `crate::backend` exposes it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use mcpwire_model::{LogEntry, McpError};
use mcpwire_router::{CatalogEdit, Server, ToolDef};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::channel::{Answer, ChildChannel, ProcessLoad};
use crate::config::ProcessConfig;
use crate::current::{Current, GenState};
use crate::forward::Forwarder;
use crate::io::Hooks;
use crate::pb::{self, envelope::Msg};

/// Every registered tool of a generation, by name, as a forwarding definition.
type BuiltTools = Vec<(String, ToolDef)>;

/// The host's state. See the module docs.
pub(crate) struct ProcessHost {
    /// How to run and bound the process.
    pub config: ProcessConfig,
    /// The inner native server: the active catalog, served by the router.
    pub server: Arc<Server>,
    /// The request-id counter, shared by every generation (ids are never reused).
    pub ids: Arc<AtomicU64>,
    state: watch::Sender<GenState>,
    /// Forwards requests to the current generation.
    pub forward: Forwarder,
    /// Fires when the backend is dropped.
    pub shutdown: CancellationToken,
    /// Asks the supervisor for a new generation (file change, `ProcessBackend::reload`).
    pub reload: Notify,
    /// Tool definitions built for a generation (its id, every registered tool).
    built: Mutex<Option<(u64, BuiltTools)>>,
    /// Times a process ended and was started again.
    pub restarts: AtomicU64,
}

impl ProcessHost {
    /// A host for `config` publishing its catalog on `server`; no process runs yet.
    pub(crate) fn new(config: ProcessConfig, server: Arc<Server>) -> ProcessHost {
        let (state, _) = watch::channel(GenState::Starting);
        let forward = Forwarder::new(Current::new(&state), config.max_raw);
        ProcessHost {
            config,
            server,
            ids: Arc::new(AtomicU64::new(1)),
            state,
            forward,
            shutdown: CancellationToken::new(),
            reload: Notify::new(),
            built: Mutex::new(None),
            restarts: AtomicU64::new(0),
        }
    }

    /// Sets the generation state requests see.
    pub(crate) fn set_state(&self, state: GenState) {
        self.state.send_replace(state);
    }

    /// A reader of the generation state.
    pub(crate) fn state(&self) -> watch::Receiver<GenState> {
        self.state.subscribe()
    }

    /// What the current generation holds (all zero while none is ready).
    pub(crate) fn load(&self) -> ProcessLoad {
        match &*self.state.borrow() {
            GenState::Ready(c) => c.load(),
            _ => ProcessLoad::default(),
        }
    }

    /// Fetches the rest of a new generation's catalog, publishes it and makes it current.
    pub(crate) async fn activate(&self, channel: &Arc<ChildChannel>) {
        let t = self.config.handshake_timeout;
        let ask = |m: Msg| {
            let channel = channel.clone();
            async move {
                let pc = channel.request(|_| m, None, false)?;
                tokio::time::timeout(t, pc.wait())
                    .await
                    .map_err(|_| McpError::Internal("tool process did not answer in time".into()))
            }
        };
        let resources = match ask(Msg::ListResourcesRequest(pb::ListResourcesRequest {})).await {
            Ok(Answer::Env(Msg::ResourceListResponse(l))) => l.resources,
            other => log_fetch("resources", other),
        };
        let templates = match ask(Msg::ListResourceTemplatesRequest(
            pb::ListResourceTemplatesRequest {},
        ))
        .await
        {
            Ok(Answer::Env(Msg::ResourceTemplateListResponse(l))) => l.templates,
            other => log_fetch("resource templates", other),
        };
        let prompts = match ask(Msg::ListPromptsRequest(pb::ListPromptsRequest {})).await {
            Ok(Answer::Env(Msg::PromptListResponse(l))) => l.prompts,
            other => log_fetch("prompts", other),
        };
        let fwd = &self.forward;
        let edit = CatalogEdit {
            tools: Some(self.tool_defs(channel)),
            resources: Some(resources.into_iter().map(|r| fwd.resource_def(r)).collect()),
            templates: Some(
                templates
                    .into_iter()
                    .filter_map(|t| fwd.template_def(t))
                    .collect(),
            ),
            prompts: Some(prompts.into_iter().map(|p| fwd.prompt_def(p)).collect()),
        };
        self.server.replace_catalog(edit);
        self.set_state(GenState::Ready(channel.clone()));
    }

    /// The active tools of `channel` as definitions (built once per generation).
    fn tool_defs(&self, channel: &ChildChannel) -> Vec<ToolDef> {
        let mut built = self.built.lock().unwrap_or_else(|p| p.into_inner());
        if built.as_ref().map(|b| b.0) != Some(channel.gen_id) {
            let defs = channel
                .defs
                .iter()
                .map(|d| (d.name.clone(), self.forward.tool_def(d)))
                .collect();
            *built = Some((channel.gen_id, defs));
        }
        let tools = channel.tools.lock().unwrap_or_else(|p| p.into_inner());
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
}

impl Hooks for ProcessHost {
    fn tools_changed(&self, channel: &Arc<ChildChannel>) {
        let current =
            matches!(&*self.state.borrow(), GenState::Ready(c) if Arc::ptr_eq(c, channel));
        if current {
            let tools = self.tool_defs(channel);
            self.server.replace_catalog(CatalogEdit {
                tools: Some(tools),
                ..CatalogEdit::default()
            });
        }
    }

    fn resource_changed(&self, uri: String) {
        self.server.notify_resource_updated(uri);
    }

    fn log(&self, entry: LogEntry) {
        self.server.log(entry);
    }
}

fn log_fetch<T>(what: &str, got: Result<Answer, McpError>) -> Vec<T> {
    match got {
        Ok(Answer::Failed(r)) => tracing::warn!("listing the tool process's {what} failed: {r}"),
        Err(e) => tracing::warn!("listing the tool process's {what} failed: {e}"),
        Ok(_) => tracing::warn!("the tool process answered the {what} listing with something else"),
    }
    Vec::new()
}
