//! [`ProcessBackend`]: a router `Backend` whose tools, resources and prompts live in a tool
//! process. It owns an inner native [`Server`] holding the active catalog as run-time
//! definitions whose handlers forward to the process, so validation, paging, revision
//! differences and list-change events are the native server's.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mcpwire_model::types::{
    CallToolResult, CompleteParams, CompletionRef, Implementation, ListChangedCapability,
    ResourceContents, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, LogEntry, McpError, Reply, to_raw};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, CatalogEdit, PromptDef, ResourceDef,
    Server, TemplateDef, ToolDef, ToolError, UriTemplate,
};
use serde_json::Value;
use tokio::sync::{Notify, broadcast, watch};
use tokio_util::sync::CancellationToken;

use crate::codec::{DEFAULT_MAX_ENVELOPE, DEFAULT_MAX_RAW};
use crate::conn::{Answer, Conn, Hooks, handshake};
use crate::pb::{self, envelope::Msg};
use crate::spawn::{ChildProc, Launch, spawn};
use crate::{convert, sideband};

/// Failed starts within [`CRASH_WINDOW`] that make a crash loop.
const CRASH_LOOP_STARTS: usize = 5;
const CRASH_WINDOW: Duration = Duration::from_secs(60);
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long a crash loop waits before trying again (a file change in `dev` retries at once).
const CRASH_LOOP_RETRY: Duration = Duration::from_secs(30);
/// How long a process gets between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);
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
enum State {
    Starting,
    Ready(Arc<Conn>),
    Failed(String),
}

/// Every registered tool of a generation, by name, as a forwarding definition.
type BuiltTools = Vec<(String, ToolDef)>;

struct Gen {
    conn: Arc<Conn>,
    child: ChildProc,
}

pub(crate) struct Shared {
    me: Weak<Shared>,
    pub(crate) config: ProcessConfig,
    server: Arc<Server>,
    ids: Arc<AtomicU64>,
    state: watch::Sender<State>,
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

/// Runs process generations: start, serve until exit, restart with backoff; reloads.
async fn supervise(shared: Arc<Shared>) {
    let mut failures: VecDeque<Instant> = VecDeque::new();
    let mut backoff = BACKOFF_START;
    let mut gen_no = 0u64;
    let mut ever_ready = false;
    loop {
        gen_no += 1;
        let started = Instant::now();
        let last_error = match start_generation(&shared, gen_no).await {
            Ok(g) => {
                ever_ready = true;
                let reason = serve_generation(&shared, g, &mut gen_no).await;
                let Some(reason) = reason else { return };
                if started.elapsed() > CRASH_WINDOW {
                    failures.clear();
                    backoff = BACKOFF_START;
                }
                reason
            }
            Err(e) if !ever_ready => {
                shared.state.send_replace(State::Failed(e));
                return;
            }
            Err(e) => e,
        };
        tracing::warn!("tool process ended: {last_error}; restarting");
        failures.push_back(Instant::now());
        failures.retain(|t| t.elapsed() < CRASH_WINDOW);
        if failures.len() >= CRASH_LOOP_STARTS {
            let reason = format!(
                "the tool process failed {} times within {}s; last: {last_error}",
                failures.len(),
                CRASH_WINDOW.as_secs()
            );
            tracing::error!("{reason}");
            shared.state.send_replace(State::Failed(reason));
            tokio::select! {
                _ = shared.shutdown.cancelled() => return,
                _ = tokio::time::sleep(CRASH_LOOP_RETRY) => {}
                _ = shared.reload.notified() => {}
            }
            failures.clear();
            backoff = BACKOFF_START;
            continue;
        }
        tokio::select! {
            _ = shared.shutdown.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Serves one generation (and the reloads that replace it) until it ends; `None` on shutdown,
/// else why it ended.
async fn serve_generation(shared: &Arc<Shared>, mut g: Gen, gen_no: &mut u64) -> Option<String> {
    shared.activate(&g.conn).await;
    loop {
        tokio::select! {
            _ = shared.shutdown.cancelled() => {
                g.conn.close("mcpwire is shutting down");
                g.child.shutdown(KILL_GRACE).await;
                return None;
            }
            status = g.child.wait() => {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let reason = format!("tool process exited ({status}){}", g.child.stderr_tail());
                shared.state.send_replace(State::Starting);
                g.conn.close(&reason);
                return Some(reason);
            }
            _ = g.conn.done.cancelled() => {
                shared.state.send_replace(State::Starting);
                let status = tokio::time::timeout(Duration::from_secs(1), g.child.wait()).await;
                let tail = g.child.stderr_tail();
                g.child.shutdown(KILL_GRACE).await;
                return Some(match status {
                    Ok(Ok(s)) => format!("tool process exited ({s}){tail}"),
                    _ => "tool process connection failed".to_string(),
                });
            }
            _ = shared.reload.notified() => {
                *gen_no += 1;
                match start_generation(shared, *gen_no).await {
                    Ok(new) => {
                        let old = std::mem::replace(&mut g, new);
                        shared.activate(&g.conn).await;
                        tracing::info!(generation = *gen_no, "tool process reloaded");
                        tokio::spawn(retire(old, shared.config.reload_grace));
                    }
                    Err(e) => tracing::warn!("reload failed, keeping the running process: {e}"),
                }
            }
        }
    }
}

/// Lets a replaced generation finish its calls (bounded by `grace`), then ends it.
async fn retire(g: Gen, grace: Duration) {
    let deadline = Instant::now() + grace;
    while g.conn.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.conn
        .close("the tool process was reloaded during the call");
    g.child.shutdown(KILL_GRACE).await;
}

async fn start_generation(shared: &Arc<Shared>, gen_no: u64) -> Result<Gen, String> {
    let cfg = &shared.config;
    let deadline = cfg.handshake_timeout;
    let (mut child, stream) = spawn(&cfg.launch, &gen_no.to_string(), deadline)
        .await
        .map_err(|e| e.to_string())?;
    let (mut r, mut w) = Conn::framed(stream, cfg.max_envelope, cfg.max_raw);
    let hs = tokio::select! {
        hs = tokio::time::timeout(deadline, handshake(&mut r, &mut w, &shared.ids)) => hs,
        _ = child.wait() => Ok(Err("tool process exited during the handshake".into())),
    };
    let hs = match hs {
        Ok(Ok(hs)) => hs,
        Ok(Err(e)) => {
            let tail = child.stderr_tail();
            child.shutdown(KILL_GRACE).await;
            return Err(format!("{e}{tail}"));
        }
        Err(_) => {
            child.shutdown(KILL_GRACE).await;
            return Err(format!(
                "tool process did not complete its handshake within {deadline:?}"
            ));
        }
    };
    let hooks: Weak<dyn Hooks> = Arc::downgrade(shared) as Weak<Shared>;
    let conn = Conn::start(gen_no, (r, w), hs, shared.ids.clone(), hooks);
    Ok(Gen { conn, child })
}

/// Why a catalog request to the process failed.
fn unexpected(what: &str, a: Answer) -> McpError {
    match a {
        Answer::Failed(r) => McpError::Internal(r),
        _ => McpError::Internal(format!("tool process answered {what} with something else")),
    }
}

impl Shared {
    /// Fetches the rest of a new generation's catalog, publishes it and makes it current.
    async fn activate(self: &Arc<Self>, conn: &Arc<Conn>) {
        let t = self.config.handshake_timeout;
        let ask = |m: Msg| {
            let conn = conn.clone();
            async move {
                let pc = conn.request(|_| m, None, false)?;
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
        let weak = Arc::downgrade(self);
        let edit = CatalogEdit {
            tools: Some(self.tool_defs(conn)),
            resources: Some(
                resources
                    .into_iter()
                    .map(|r| resource_def(&weak, r))
                    .collect(),
            ),
            templates: Some(
                templates
                    .into_iter()
                    .filter_map(|t| template_def(&weak, t))
                    .collect(),
            ),
            prompts: Some(prompts.into_iter().map(|p| prompt_def(&weak, p)).collect()),
        };
        self.server.replace_catalog(edit);
        self.state.send_replace(State::Ready(conn.clone()));
    }

    fn publish_tools(&self, conn: &Arc<Conn>) {
        let tools = self.tool_defs(conn);
        self.server.replace_catalog(CatalogEdit {
            tools: Some(tools),
            ..CatalogEdit::default()
        });
    }

    /// The active tools of `conn` as definitions (built once per generation).
    fn tool_defs(&self, conn: &Arc<Conn>) -> Vec<ToolDef> {
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
    async fn conn(&self, ctx: &CallCtx) -> Result<Arc<Conn>, String> {
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

    async fn call_tool(
        &self,
        ctx: CallCtx,
        name: String,
        args: Value,
    ) -> Result<CallToolResult, ToolError> {
        let conn = self.conn(&ctx).await.map_err(ToolError::new)?;
        let mut args_json = args.to_string();
        let mut mws = conn.middleware.clone();
        mws.sort_by_key(|m| m.1);
        for (mw, _) in &mws {
            let req = pb::MiddlewareInterceptRequest {
                middleware_name: mw.clone(),
                phase: "before".into(),
                tool_name: name.clone(),
                arguments_json: args_json.clone(),
                ..Default::default()
            };
            if let Answer::Env(Msg::MiddlewareInterceptResponse(r)) = conn
                .request(|_| Msg::MiddlewareIntercept(req), None, false)?
                .wait()
                .await
            {
                if r.reject {
                    return Ok(CallToolResult::error(r.reject_reason));
                }
                if !r.arguments_json.is_empty() {
                    args_json = r.arguments_json;
                }
            }
        }
        let progress = ctx.progress_token().is_some();
        let tool = name.clone();
        let pc = conn.request(
            move |id| {
                Msg::CallTool(pb::CallToolRequest {
                    name: tool,
                    arguments_json: args_json,
                    progress_token: if progress {
                        id.to_owned()
                    } else {
                        String::new()
                    },
                })
            },
            Some(ctx),
            true,
        )?;
        let mut result = match pc.wait().await {
            Answer::Env(Msg::CallResult(r)) => convert::call_result(r),
            Answer::Raw { header, payload } => {
                let text = sideband::decode_result(&header, &payload, self.config.max_raw)?;
                CallToolResult::new(convert::content_blocks(text))
            }
            Answer::InputRequired => return Err(McpError::InputRequired.into()),
            Answer::Failed(reason) => return Err(ToolError::new(reason)),
            Answer::Env(_) => {
                return Err(ToolError::new(
                    "tool process answered the call with something else",
                ));
            }
        };
        for (mw, _) in mws.iter().rev() {
            let req = pb::MiddlewareInterceptRequest {
                middleware_name: mw.clone(),
                phase: "after".into(),
                tool_name: name.clone(),
                result_json: to_raw(&result).get().to_owned(),
                is_error: result.is_error == Some(true),
                ..Default::default()
            };
            if let Answer::Env(Msg::MiddlewareInterceptResponse(r)) = conn
                .request(|_| Msg::MiddlewareIntercept(req), None, false)?
                .wait()
                .await
                && let Ok(replaced) = serde_json::from_str::<CallToolResult>(&r.result_json)
            {
                result = replaced;
            }
        }
        Ok(result)
    }

    async fn read(&self, ctx: CallCtx, uri: String) -> Result<Vec<ResourceContents>, McpError> {
        let conn = self.conn(&ctx).await.map_err(McpError::Internal)?;
        let pc = conn.request(
            |_| Msg::ReadResourceRequest(pb::ReadResourceRequest { uri }),
            Some(ctx),
            false,
        )?;
        match pc.wait().await {
            Answer::Env(Msg::ReadResourceResponse(r)) => Ok(convert::contents(r)),
            other => Err(unexpected("resources/read", other)),
        }
    }

    async fn get_prompt(
        &self,
        ctx: CallCtx,
        name: String,
        args: BTreeMap<String, String>,
    ) -> Result<mcpwire_model::types::GetPromptResult, McpError> {
        let conn = self.conn(&ctx).await.map_err(McpError::Internal)?;
        let arguments_json = serde_json::to_string(&args).unwrap_or_else(|_| "{}".into());
        let pc = conn.request(
            |_| {
                Msg::GetPromptRequest(pb::GetPromptRequest {
                    name,
                    arguments_json,
                })
            },
            Some(ctx),
            false,
        )?;
        match pc.wait().await {
            Answer::Env(Msg::GetPromptResponse(r)) => Ok(convert::prompt(r)),
            other => Err(unexpected("prompts/get", other)),
        }
    }

    async fn complete(&self, ctx: CallCtx, p: CompleteParams) -> Result<Reply, McpError> {
        let conn = self.conn(&ctx).await.map_err(McpError::Internal)?;
        let (ref_type, ref_name) = match p.reference {
            CompletionRef::Prompt { name } => ("ref/prompt", name),
            CompletionRef::Resource { uri } => ("ref/resource", uri),
        };
        let req = pb::CompletionRequest {
            ref_type: ref_type.into(),
            ref_name,
            argument_name: p.argument.name,
            argument_value: p.argument.value,
        };
        let pc = conn.request(|_| Msg::CompletionRequest(req), Some(ctx), false)?;
        match pc.wait().await {
            Answer::Env(Msg::CompletionResponse(r)) => {
                Ok(Reply::Complete(to_raw(&convert::completion(r))))
            }
            other => Err(unexpected("completion/complete", other)),
        }
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

fn tool_def(weak: &Weak<Shared>, d: &pb::ToolDefinition) -> ToolDef {
    let t = convert::tool(d);
    let weak = weak.clone();
    let name = t.name.clone();
    let mut def = ToolDef::raw(t.name.clone(), t.input_schema.clone(), move |ctx, args| {
        let weak = weak.clone();
        let name = name.clone();
        async move {
            match weak.upgrade() {
                Some(s) => s.call_tool(ctx, name, args).await,
                None => Err(ToolError::new("the tool host stopped")),
            }
        }
    });
    if let Some(d) = t.description {
        def = def.description(d);
    }
    if let Some(title) = t.title {
        def = def.title(title);
    }
    if let Some(a) = t.annotations {
        def = def.annotations(a);
    }
    if let Some(o) = t.output_schema {
        def = def.output_schema(o);
    }
    def
}

fn resource_def(weak: &Weak<Shared>, r: pb::ResourceDefinition) -> ResourceDef {
    let weak = weak.clone();
    let mut def = ResourceDef::new(r.uri, r.name, move |ctx, uri| {
        let weak = weak.clone();
        async move {
            match weak.upgrade() {
                Some(s) => s.read(ctx, uri).await,
                None => Err(McpError::Internal("the tool host stopped".into())),
            }
        }
    });
    if !r.description.is_empty() {
        def = def.description(r.description);
    }
    if !r.mime_type.is_empty() {
        def = def.mime_type(r.mime_type);
    }
    def
}

fn template_def(weak: &Weak<Shared>, t: pb::ResourceTemplateDefinition) -> Option<TemplateDef> {
    if let Err(e) = UriTemplate::parse(&t.uri_template) {
        tracing::warn!(template = %t.uri_template, "skipping an invalid resource template: {e}");
        return None;
    }
    let weak = weak.clone();
    let mut def = TemplateDef::new(t.uri_template, t.name, move |ctx, uri, _vars| {
        let weak = weak.clone();
        async move {
            match weak.upgrade() {
                Some(s) => s.read(ctx, uri).await,
                None => Err(McpError::Internal("the tool host stopped".into())),
            }
        }
    });
    if !t.description.is_empty() {
        def = def.description(t.description);
    }
    if !t.mime_type.is_empty() {
        def = def.mime_type(t.mime_type);
    }
    Some(def)
}

fn prompt_def(weak: &Weak<Shared>, p: pb::PromptDefinition) -> PromptDef {
    let weak = weak.clone();
    let name = p.name.clone();
    let mut def = PromptDef::new(p.name, move |ctx, args| {
        let weak = weak.clone();
        let name = name.clone();
        async move {
            match weak.upgrade() {
                Some(s) => s.get_prompt(ctx, name, args).await,
                None => Err(McpError::Internal("the tool host stopped".into())),
            }
        }
    });
    if !p.description.is_empty() {
        def = def.description(p.description);
    }
    for a in p.arguments {
        def = def.argument(a.name, a.description, a.required);
    }
    def
}
