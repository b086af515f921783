//! [`SearchCatalog`]: the `search` catalog mode of a listener or a view. `tools/list`
//! shows two meta-tools — `search_tools` and `call_tool` — then the tools this session's
//! searches disclosed; every other request (calls by exact name, `tools/list` with a
//! `query`, prompts, resources) goes to the catalog as in `full` mode.

use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};

use mcpwire_model::{BackendEvent, McpError, Raw, Reply, to_raw};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, Identity, RelayCaller,
    RelayDecision, SessionScope, ToolRouting,
};
use serde_json::{Value, json};
use tokio::sync::broadcast;

use crate::disclosure::Disclosures;
use crate::federation::Federation;
use crate::listing::{Item, Kind};
use crate::pages;
use crate::subset::Sight;
use crate::tool_index::{self, MAX_SEARCH_LIMIT, ToolIndex, tool_items};
use crate::view::View;

/// The meta-tool that searches the catalog.
pub const SEARCH_TOOLS: &str = "search_tools";
/// The meta-tool that calls a catalog tool by name.
pub const CALL_TOOL: &str = "call_tool";
/// How many tools `search_tools` returns when the caller does not say.
pub const DEFAULT_SEARCH_LIMIT: usize = 8;

/// What a search-mode catalog searches and lists: a federation or one of its views.
enum Searched {
    Federation(Arc<Federation>),
    View(Arc<View>),
}

impl Searched {
    fn sight(&self, who: Option<&Identity>) -> Sight {
        match self {
            Searched::Federation(f) => f.sight(who),
            Searched::View(v) => v.sight(who),
        }
    }

    fn index(&self) -> &Arc<RwLock<ToolIndex>> {
        match self {
            Searched::Federation(f) => f.tool_index(),
            Searched::View(v) => v.federation().tool_index(),
        }
    }
}

/// The `search` catalog mode over a federation or a view: a backend whose `tools/list`
/// is the meta-tools `search_tools` and `call_tool` followed by the tools the session's
/// searches found (at most [`crate::MAX_DISCLOSED_PER_SESSION`] tools and
/// [`crate::MAX_DISCLOSED_BYTES`] of definitions, the least recently found leaving first;
/// each change announced to that session with `list_changed`).
///
/// `search_tools` ranks only what the caller may see (its view and the policy), and
/// answers the tools exactly as the catalog exposes them; `call_tool` is the inner
/// `tools/call` with the same context (progress, cancellation, logs, asks, structured
/// output and errors as a direct call). Everything else — calls by exact name,
/// `tools/list` with a `query`, prompts, resources — goes to `calls` unchanged.
pub struct SearchCatalog {
    me: Weak<SearchCatalog>,
    searched: Searched,
    calls: Arc<dyn Backend>,
    disclosed: Mutex<Disclosures>,
}

impl std::fmt::Debug for SearchCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchCatalog")
            .field("calls", &self.calls.info().name)
            .finish_non_exhaustive()
    }
}

impl Federation {
    /// The federation's catalog in `search` mode; requests it does not answer itself go
    /// to `calls` (the federation, or a layer around it such as rate limits).
    pub fn search_catalog(&self, calls: Arc<dyn Backend>) -> Arc<SearchCatalog> {
        let fed = self.me.upgrade().expect("a federation is always in an Arc");
        SearchCatalog::new(Searched::Federation(fed), calls)
    }
}

impl View {
    /// The view's catalog in `search` mode; requests it does not answer itself go to
    /// `calls` (the view, or a layer around it).
    pub fn search_catalog(&self, calls: Arc<dyn Backend>) -> Arc<SearchCatalog> {
        let view = self.me.upgrade().expect("a view is always in an Arc");
        SearchCatalog::new(Searched::View(view), calls)
    }
}

impl SearchCatalog {
    fn new(searched: Searched, calls: Arc<dyn Backend>) -> Arc<SearchCatalog> {
        Arc::new_cyclic(|me| SearchCatalog {
            me: me.clone(),
            searched,
            calls,
            disclosed: Mutex::new(Disclosures::default()),
        })
    }

    /// The two meta-tools (`search_tools`, `call_tool`) as `tools/list` shows them.
    pub fn meta_tools() -> &'static [Value] {
        meta_tools()
    }

    /// `instructions` for a search-mode listener: `base` and how to find tools.
    pub fn instructions(base: &str) -> String {
        format!(
            "{base}\n\nOnly two tools are listed at first: find tools with `{SEARCH_TOOLS}` \
             (describe the task in words) and call them with `{CALL_TOOL}` (or by name once \
             they are listed)."
        )
    }

    fn disclosures(&self) -> std::sync::MutexGuard<'_, Disclosures> {
        self.disclosed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// `tools/list` without a query: the meta-tools, then this session's disclosed tools
    /// that the caller still sees.
    fn listing(&self, ctx: &CallCtx, cursor: Option<&str>) -> Result<Reply, McpError> {
        let mut tools: Vec<Value> = meta_tools().to_vec();
        if let Some(session) = ctx.session() {
            let names = self.disclosures().of(session.id());
            if !names.is_empty() {
                let sight = self.searched.sight(ctx.identity());
                let catalog = &sight.catalog;
                let entries = catalog.kind(Kind::Tools);
                for name in &names {
                    if let Some((i, e)) = entries.get(name)
                        && sight.scope().sees(Kind::Tools, i)
                    {
                        tools.push(Value::Object(e.item.clone()));
                    }
                }
            }
        }
        let page = [to_raw(&json!({ "tools": tools }))];
        pages::page(&page, cursor).map(Reply::Complete)
    }

    /// `search_tools`: the best matches the caller may see, as structured content and
    /// compact text; the session's list gains them.
    fn search_tools(
        &self,
        ctx: CallCtx,
        arguments: Option<&Raw>,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        #[derive(serde::Deserialize)]
        struct Args {
            query: String,
            #[serde(default)]
            limit: Option<i64>,
        }
        let ready = |r| -> BoxFuture<'static, _> { Box::pin(std::future::ready(r)) };
        let invalid = |message: String| McpError::InvalidToolParams {
            tool: SEARCH_TOOLS.into(),
            message,
        };
        let args: Args = match serde_json::from_str(arguments.map_or("{}", |a| a.get())) {
            Ok(a) => a,
            Err(e) => return ready(Err(invalid(e.to_string()))),
        };
        let limit = match args.limit {
            None => DEFAULT_SEARCH_LIMIT,
            Some(n) if n >= 1 => {
                usize::try_from(n).map_or(MAX_SEARCH_LIMIT, |n| n.min(MAX_SEARCH_LIMIT))
            }
            Some(n) => return ready(Err(invalid(format!("`limit` must be at least 1, not {n}")))),
        };
        let sight = self.searched.sight(ctx.identity());
        if let Some(refusal) = &sight.catalog.refusal {
            return ready(Err(McpError::Unavailable(refusal.clone())));
        }
        let search = tool_index::search(self.searched.index(), sight, args.query.clone(), limit);
        let me = self.me.clone();
        Box::pin(async move {
            let (sight, found) = search.await;
            let catalog = &sight.catalog;
            let tools = tool_items(catalog, &found);
            if let (Some(session), Some(me)) = (ctx.session(), me.upgrade()) {
                let disclosed: Vec<(&str, usize)> = found
                    .iter()
                    .zip(&tools)
                    .map(|(&i, tool)| {
                        let name = catalog.kind(Kind::Tools).entries[i].exposed.as_str();
                        (name, serde_json::to_string(tool).map_or(0, |t| t.len()))
                    })
                    .collect();
                me.disclose(session, &disclosed);
            }
            let result = json!({
                "content": [{"type": "text", "text": found_text(&args.query, &tools)}],
                "structuredContent": {"tools": tools},
            });
            Ok(Reply::Complete(to_raw(&result)))
        })
    }

    /// Adds `names` to `session`'s list, telling its client when the list changed and
    /// forgetting the session when it ends.
    fn disclose(&self, session: &SessionScope, tools: &[(&str, usize)]) {
        if tools.is_empty() {
            return;
        }
        let change = self.disclosures().disclose(session.id(), tools);
        if change.new_session
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let (me, session) = (self.me.clone(), session.clone());
            runtime.spawn(async move {
                session.ended().await;
                if let Some(me) = me.upgrade() {
                    me.disclosures().forget(session.id());
                }
            });
        }
        if change.list_changed {
            session.notify(BackendEvent::ToolsListChanged);
        }
    }

    /// `call_tool`: the named tool's `tools/call`, with the same context.
    fn call_tool(
        &self,
        ctx: CallCtx,
        arguments: Option<&Raw>,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        #[derive(serde::Deserialize)]
        struct Args {
            name: String,
            #[serde(default)]
            arguments: Option<Raw>,
        }
        let args = serde_json::from_str::<Args>(arguments.map_or("{}", |a| a.get()))
            .map_err(|e| e.to_string())
            .and_then(
                |a| match a.arguments.as_deref().map(|r| r.get().trim_start()) {
                    Some(text) if !text.starts_with('{') && text != "null" => {
                        Err("`arguments` must be an object".to_owned())
                    }
                    _ => Ok(a),
                },
            );
        match args {
            Ok(a) => self.calls.call(
                ctx,
                BackendRequest::CallTool {
                    name: a.name,
                    arguments: a.arguments.filter(|r| r.get() != "null"),
                },
            ),
            Err(message) => Box::pin(std::future::ready(Err(McpError::InvalidToolParams {
                tool: CALL_TOOL.into(),
                message,
            }))),
        }
    }
}

/// The two meta-tools, as listed.
fn meta_tools() -> &'static [Value; 2] {
    static TOOLS: std::sync::OnceLock<[Value; 2]> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| {
        [
            json!({
                "name": SEARCH_TOOLS,
                "description": "Find the tools for a task among all this server's tools. Say what you want to do in a few words; you get the best matches with their input schemas, and they are listed from then on. Call one with call_tool, or by its name.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "What you want to do"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": DEFAULT_SEARCH_LIMIT}
                    },
                    "required": ["query"]
                },
                "outputSchema": {
                    "type": "object",
                    "properties": {"tools": {"type": "array", "items": {"type": "object"}}},
                    "required": ["tools"]
                },
                "annotations": {"readOnlyHint": true}
            }),
            json!({
                "name": CALL_TOOL,
                "description": "Call a tool search_tools found, by its name, with its arguments.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "arguments": {"type": "object"}
                    },
                    "required": ["name"]
                }
            }),
        ]
    })
}

/// The text of a `search_tools` result: one block per tool — its name and description,
/// then its input schema as compact JSON.
fn found_text(query: &str, tools: &[&Item]) -> String {
    if tools.is_empty() {
        return format!("No tool matches {query:?}.");
    }
    let mut text = String::new();
    for tool in tools {
        let field = |k: &str| tool.get(k).and_then(Value::as_str).unwrap_or_default();
        let description = field("description");
        text.push_str(field("name"));
        if !description.is_empty() {
            text.push_str(": ");
            text.push_str(description.trim());
        }
        if let Some(schema) = tool.get("inputSchema") {
            text.push_str("\n  inputSchema: ");
            text.push_str(&schema.to_string());
        }
        text.push('\n');
    }
    text
}

impl Backend for SearchCatalog {
    fn info(&self) -> &BackendInfo {
        self.calls.info()
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let ready = |r| -> BoxFuture<'static, _> { Box::pin(std::future::ready(r)) };
        match req {
            BackendRequest::ListTools {
                cursor,
                query: None,
            } => ready(self.listing(&ctx, cursor.as_deref())),
            BackendRequest::CallTool { name, arguments } if name == SEARCH_TOOLS => {
                self.search_tools(ctx, arguments.as_ref())
            }
            BackendRequest::CallTool { name, arguments } if name == CALL_TOOL => {
                self.call_tool(ctx, arguments.as_ref())
            }
            other => self.calls.call(ctx, other),
        }
    }

    fn forwards_tool_calls(&self) -> bool {
        self.calls.forwards_tool_calls()
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        if is_meta_tool(call.name()) {
            return Err(call);
        }
        self.calls.forward_tool_call(call)
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        if is_meta_tool(name) {
            return RelayDecision::General;
        }
        self.calls.relay_route(name, caller)
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        if is_meta_tool(name) {
            return None;
        }
        self.calls.tool_routing(name)
    }

    /// `call_tool` runs as the tool it names would (a task-supporting or task-required tool
    /// becomes a task); `search_tools` never is one.
    fn call_routing(&self, name: &str, arguments: Option<&Raw>) -> Option<Arc<ToolRouting>> {
        match name {
            CALL_TOOL => {
                #[derive(serde::Deserialize)]
                struct Named {
                    name: String,
                }
                let inner: Named = serde_json::from_str(arguments?.get()).ok()?;
                self.calls.tool_routing(&inner.name)
            }
            SEARCH_TOOLS => None,
            _ => self.calls.call_routing(name, arguments),
        }
    }

    fn open_sessions(&self) -> Option<usize> {
        self.calls.open_sessions()
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        self.calls.events()
    }
}

/// Whether `name` is one of the meta-tools (which shadow catalog tools of the same name
/// for direct calls; `call_tool` still reaches those).
fn is_meta_tool(name: &str) -> bool {
    name == SEARCH_TOOLS || name == CALL_TOOL
}
