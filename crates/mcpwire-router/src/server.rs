//! [`Server`]: the in-process backend holding native tools, resources and prompts.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use mcpwire_model::types::{
    CompleteParams, CompleteResult, Completion, CompletionRef, Implementation,
    ListChangedCapability, ResourceContents, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, LogEntry, McpError, Raw, Reply, Revision, to_raw};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, PromptDef, ResourceDef, TemplateDef,
    ToolDef, ToolRouting,
};

/// Items per page of the `*/list` results.
const DEFAULT_PAGE_SIZE: usize = 500;
/// Events buffered per subscriber before the slowest loses old ones.
const EVENT_CAPACITY: usize = 256;

/// A named list that keeps registration order and serializes its pages once per change.
struct Listing<T> {
    items: Vec<T>,
    /// Foldhash (seeded per process): looked up by a client-given name on every call.
    index: HashMap<String, usize, foldhash::fast::RandomState>,
    pages: Arc<Vec<Raw>>,
}

impl<T> Default for Listing<T> {
    fn default() -> Self {
        Listing {
            items: Vec::new(),
            index: HashMap::default(),
            pages: Arc::new(Vec::new()),
        }
    }
}

impl<T> Listing<T> {
    fn upsert(&mut self, key: String, item: T) {
        match self.index.get(&key) {
            Some(&i) => self.items[i] = item,
            None => {
                self.index.insert(key, self.items.len());
                self.items.push(item);
            }
        }
    }

    fn remove(&mut self, key: &str, key_of: impl Fn(&T) -> String) -> bool {
        let Some(i) = self.index.remove(key) else {
            return false;
        };
        self.items.remove(i);
        self.index = self
            .items
            .iter()
            .enumerate()
            .map(|(i, t)| (key_of(t), i))
            .collect();
        true
    }

    fn get(&self, key: &str) -> Option<&T> {
        self.index.get(key).map(|&i| &self.items[i])
    }

    fn repage<D: serde::Serialize>(&mut self, field: &str, page: usize, def: impl Fn(&T) -> &D) {
        let mut pages = Vec::new();
        let chunks: Vec<&[T]> = if self.items.is_empty() {
            vec![&[]]
        } else {
            self.items.chunks(page.max(1)).collect()
        };
        let n = chunks.len();
        for (i, chunk) in chunks.into_iter().enumerate() {
            let defs: Vec<&D> = chunk.iter().map(&def).collect();
            let mut obj = serde_json::Map::new();
            obj.insert(
                field.to_owned(),
                serde_json::to_value(defs).unwrap_or_default(),
            );
            if i + 1 < n {
                obj.insert("nextCursor".into(), Value::from((i + 1).to_string()));
            }
            pages.push(to_raw(&obj));
        }
        self.pages = Arc::new(pages);
    }

    fn page(&self, cursor: Option<&str>) -> Result<Raw, McpError> {
        let i = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .map_err(|_| McpError::InvalidParams(format!("invalid cursor {c:?}")))?,
        };
        self.pages
            .get(i)
            .cloned()
            .ok_or_else(|| McpError::InvalidParams(format!("invalid cursor {i}")))
    }
}

#[derive(Default)]
struct Catalog {
    tools: Listing<Arc<ToolDef>>,
    resources: Listing<ResourceDef>,
    templates: Listing<TemplateDef>,
    prompts: Listing<Arc<PromptDef>>,
}

/// Lists to replace in one [`Server::replace_catalog`] call; `None` keeps a list as it is.
#[derive(Default)]
pub struct CatalogEdit {
    /// The new tools.
    pub tools: Option<Vec<ToolDef>>,
    /// The new resources.
    pub resources: Option<Vec<ResourceDef>>,
    /// The new resource templates.
    pub templates: Option<Vec<TemplateDef>>,
    /// The new prompts.
    pub prompts: Option<Vec<PromptDef>>,
}

/// The native backend: tools, resources, templates and prompts registered in Rust.
///
/// Lists are serialized once per change; the catalog can change at run time
/// ([`Server::add_tool`], …), which notifies every session.
pub struct Server {
    info: BackendInfo,
    server_info: Implementation,
    instructions: Option<String>,
    page_size: usize,
    catalog: RwLock<Catalog>,
    events: broadcast::Sender<BackendEvent>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.info.name)
            .finish()
    }
}

/// Builds a [`Server`].
pub struct ServerBuilder {
    server_info: Implementation,
    instructions: Option<String>,
    page_size: usize,
    catalog: Catalog,
}

impl ServerBuilder {
    /// Adds a tool.
    pub fn tool(mut self, t: ToolDef) -> Self {
        self.catalog.tools.upsert(t.tool.name.clone(), Arc::new(t));
        self
    }

    /// Adds a resource.
    pub fn resource(mut self, r: ResourceDef) -> Self {
        self.catalog.resources.upsert(r.resource.uri.clone(), r);
        self
    }

    /// Adds a resource template.
    pub fn template(mut self, t: TemplateDef) -> Self {
        self.catalog
            .templates
            .upsert(t.template.uri_template.clone(), t);
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, p: PromptDef) -> Self {
        self.catalog
            .prompts
            .upsert(p.prompt.name.clone(), Arc::new(p));
        self
    }

    /// Sets the `instructions` returned by `initialize`/`server/discover`.
    pub fn instructions(mut self, i: impl Into<String>) -> Self {
        self.instructions = Some(i.into());
        self
    }

    /// Sets how many items a `*/list` page holds.
    pub fn page_size(mut self, n: usize) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// Finishes the server.
    pub fn build(self) -> Arc<Server> {
        let c = &self.catalog;
        let has_resources = !c.resources.items.is_empty() || !c.templates.items.is_empty();
        let has_prompts = !c.prompts.items.is_empty();
        let has_completions = c.prompts.items.iter().any(|p| !p.completers.is_empty())
            || c.templates.items.iter().any(|t| !t.completers.is_empty())
            || has_prompts;
        let capabilities = ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            resources: has_resources.then_some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            prompts: has_prompts.then_some(ListChangedCapability {
                list_changed: Some(true),
            }),
            logging: Some(Value::Object(Default::default())),
            completions: has_completions.then(|| Value::Object(Default::default())),
            ..ServerCapabilities::default()
        };
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let server = Server {
            info: BackendInfo {
                name: self.server_info.name.clone(),
                capabilities,
            },
            server_info: self.server_info,
            instructions: self.instructions,
            page_size: self.page_size,
            catalog: RwLock::new(self.catalog),
            events,
        };
        if let Ok(mut c) = server.catalog.write() {
            server.repage_all(&mut c);
        }
        Arc::new(server)
    }
}

impl Server {
    /// Starts building a server that introduces itself as `info`.
    pub fn builder(info: Implementation) -> ServerBuilder {
        ServerBuilder {
            server_info: info,
            instructions: None,
            page_size: DEFAULT_PAGE_SIZE,
            catalog: Catalog::default(),
        }
    }

    /// Who this server is.
    pub fn server_info(&self) -> &Implementation {
        &self.server_info
    }

    /// The `instructions` for the model.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// Names of the tools, in listing order.
    pub fn tool_names(&self) -> Vec<String> {
        self.read(|c| c.tools.items.iter().map(|t| t.tool.name.clone()).collect())
    }

    fn read<R>(&self, f: impl FnOnce(&Catalog) -> R) -> R {
        match self.catalog.read() {
            Ok(c) => f(&c),
            Err(poisoned) => f(&poisoned.into_inner()),
        }
    }

    fn write(&self, f: impl FnOnce(&mut Catalog) -> bool, event: BackendEvent) {
        let changed = match self.catalog.write() {
            Ok(mut c) => {
                let changed = f(&mut c);
                if changed {
                    self.repage_all(&mut c);
                }
                changed
            }
            Err(_) => false,
        };
        if changed {
            let _ = self.events.send(event);
        }
    }

    fn repage_all(&self, c: &mut Catalog) {
        let n = self.page_size;
        c.tools.repage("tools", n, |t| &t.tool);
        c.resources.repage("resources", n, |r| &r.resource);
        c.templates.repage("resourceTemplates", n, |t| &t.template);
        c.prompts.repage("prompts", n, |p| &p.prompt);
    }

    /// Adds or replaces a tool and tells every session the list changed.
    pub fn add_tool(&self, t: ToolDef) {
        self.write(
            |c| {
                c.tools.upsert(t.tool.name.clone(), Arc::new(t));
                true
            },
            BackendEvent::ToolsListChanged,
        );
    }

    /// Removes a tool; returns whether it existed.
    pub fn remove_tool(&self, name: &str) -> bool {
        let mut removed = false;
        self.write(
            |c| {
                removed = c.tools.remove(name, |t| t.tool.name.clone());
                removed
            },
            BackendEvent::ToolsListChanged,
        );
        removed
    }

    /// Adds or replaces a prompt and tells every session the list changed.
    pub fn add_prompt(&self, p: PromptDef) {
        self.write(
            |c| {
                c.prompts.upsert(p.prompt.name.clone(), Arc::new(p));
                true
            },
            BackendEvent::PromptsListChanged,
        );
    }

    /// Removes a prompt; returns whether it existed.
    pub fn remove_prompt(&self, name: &str) -> bool {
        let mut removed = false;
        self.write(
            |c| {
                removed = c.prompts.remove(name, |p| p.prompt.name.clone());
                removed
            },
            BackendEvent::PromptsListChanged,
        );
        removed
    }

    /// Adds or replaces a resource and tells every session the list changed.
    pub fn add_resource(&self, r: ResourceDef) {
        self.write(
            |c| {
                c.resources.upsert(r.resource.uri.clone(), r);
                true
            },
            BackendEvent::ResourcesListChanged,
        );
    }

    /// Replaces whole lists at once (`None` keeps a list): repages once and sends one
    /// list-changed event per list whose listing really changed. For backends whose catalog
    /// is defined elsewhere (tool processes, upstream servers) and changes in batches.
    pub fn replace_catalog(&self, edit: CatalogEdit) {
        fn replace<T>(l: &mut Listing<T>, items: Vec<T>, key: impl Fn(&T) -> String) {
            *l = Listing::default();
            for it in items {
                l.upsert(key(&it), it);
            }
        }
        fn same(a: &[Raw], b: &[Raw]) -> bool {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.get() == y.get())
        }
        let n = self.page_size;
        let mut events = Vec::new();
        if let Ok(mut c) = self.catalog.write() {
            if let Some(tools) = edit.tools {
                let old = c.tools.pages.clone();
                replace(
                    &mut c.tools,
                    tools.into_iter().map(Arc::new).collect(),
                    |t| t.tool.name.clone(),
                );
                c.tools.repage("tools", n, |t| &t.tool);
                if !same(&old, &c.tools.pages) {
                    events.push(BackendEvent::ToolsListChanged);
                }
            }
            let mut resources_changed = false;
            if let Some(resources) = edit.resources {
                let old = c.resources.pages.clone();
                replace(&mut c.resources, resources, |r| r.resource.uri.clone());
                c.resources.repage("resources", n, |r| &r.resource);
                resources_changed |= !same(&old, &c.resources.pages);
            }
            if let Some(templates) = edit.templates {
                let old = c.templates.pages.clone();
                replace(&mut c.templates, templates, |t| {
                    t.template.uri_template.clone()
                });
                c.templates.repage("resourceTemplates", n, |t| &t.template);
                resources_changed |= !same(&old, &c.templates.pages);
            }
            if resources_changed {
                events.push(BackendEvent::ResourcesListChanged);
            }
            if let Some(prompts) = edit.prompts {
                let old = c.prompts.pages.clone();
                replace(
                    &mut c.prompts,
                    prompts.into_iter().map(Arc::new).collect(),
                    |p| p.prompt.name.clone(),
                );
                c.prompts.repage("prompts", n, |p| &p.prompt);
                if !same(&old, &c.prompts.pages) {
                    events.push(BackendEvent::PromptsListChanged);
                }
            }
        }
        for e in events {
            let _ = self.events.send(e);
        }
    }

    /// Tells subscribed sessions that the resource at `uri` changed.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        let _ = self
            .events
            .send(BackendEvent::ResourceUpdated { uri: uri.into() });
    }

    /// Sends a log message to every session (filtered by each client's level).
    pub fn log(&self, entry: LogEntry) {
        let _ = self.events.send(BackendEvent::Log(entry));
    }

    fn call_tool(
        &self,
        ctx: CallCtx,
        name: String,
        arguments: Option<Raw>,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let Some(def) = self.read(|c| c.tools.get(&name).cloned()) else {
            return ready(Err(McpError::ToolNotFound(name)));
        };
        let revision = ctx.revision();
        let fut = def.invoke(ctx, arguments.as_deref().map(|a| a.get()));
        Box::pin(async move {
            let started = Instant::now();
            let result = fut.await;
            let outcome = match &result {
                Ok(r) if r.is_error == Some(true) => "tool_error",
                Ok(_) => "ok",
                Err(McpError::InputRequired) => "input_required",
                Err(_) => "error",
            };
            let duration_us = started.elapsed().as_micros() as u64;
            if revision == Revision::Bb1_0 {
                tracing::info!(target: "mcpwire::telemetry", tool = %name, duration_us, outcome, "tool invocation");
            } else {
                tracing::debug!(target: "mcpwire::telemetry", tool = %name, duration_us, outcome, "tool invocation");
            }
            let mut result = result?;
            if !revision.has_structured_output() {
                result.structured_content = None;
            }
            Ok(Reply::Complete(to_raw(&result)))
        })
    }

    fn read_resource(
        &self,
        ctx: CallCtx,
        uri: String,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        type ReadOnce = Box<
            dyn FnOnce(
                    CallCtx,
                    String,
                )
                    -> BoxFuture<'static, Result<Vec<ResourceContents>, McpError>>
                + Send,
        >;
        let found: Option<ReadOnce> = self.read(|c| {
            if let Some(r) = c.resources.get(&uri) {
                let f = r.read.clone();
                return Some(Box::new(move |ctx, u| f(ctx, u)) as ReadOnce);
            }
            c.templates.items.iter().find_map(|t| {
                t.matcher.matches(&uri).map(|vars| {
                    let f = t.read.clone();
                    Box::new(move |ctx, u| f(ctx, u, vars)) as ReadOnce
                })
            })
        });
        let Some(read) = found else {
            return ready(Err(McpError::ResourceNotFound(uri)));
        };
        let fut = read(ctx, uri);
        Box::pin(async move {
            let contents = fut.await?;
            Ok(Reply::Complete(to_raw(
                &serde_json::json!({ "contents": contents }),
            )))
        })
    }

    fn resource_exists(&self, uri: &str) -> bool {
        self.read(|c| {
            c.resources.get(uri).is_some()
                || c.templates
                    .items
                    .iter()
                    .any(|t| t.matcher.matches(uri).is_some())
        })
    }

    fn complete(&self, p: CompleteParams) -> Result<Reply, McpError> {
        let context = p.context.and_then(|c| c.arguments).unwrap_or_default();
        let completer = self.read(|c| match &p.reference {
            CompletionRef::Prompt { name } => c
                .prompts
                .get(name)
                .map(|d| d.completers.get(&p.argument.name).cloned())
                .ok_or_else(|| McpError::InvalidParams(format!("unknown prompt {name}"))),
            CompletionRef::Resource { uri } => c
                .templates
                .get(uri)
                .map(|d| d.completers.get(&p.argument.name).cloned())
                .ok_or_else(|| McpError::InvalidParams(format!("unknown resource template {uri}"))),
        })?;
        let mut values = completer
            .map(|f| f(&p.argument.value, &context))
            .unwrap_or_default();
        let total = values.len() as u64;
        values.truncate(100);
        let result = CompleteResult {
            completion: Completion {
                has_more: Some(total > values.len() as u64),
                total: Some(total),
                values,
            },
        };
        Ok(Reply::Complete(to_raw(&result)))
    }
}

fn ready<T: Send + 'static>(v: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(v))
}

impl Backend for Server {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.read(|c| c.tools.get(name).map(|t| t.routing().clone()))
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let page =
            |l: &dyn Fn(&Catalog) -> Result<Raw, McpError>| self.read(l).map(Reply::Complete);
        match req {
            BackendRequest::ListTools { cursor, .. } => {
                ready(page(&|c| c.tools.page(cursor.as_deref())))
            }
            BackendRequest::ListResources { cursor } => {
                ready(page(&|c| c.resources.page(cursor.as_deref())))
            }
            BackendRequest::ListResourceTemplates { cursor } => {
                ready(page(&|c| c.templates.page(cursor.as_deref())))
            }
            BackendRequest::ListPrompts { cursor } => {
                ready(page(&|c| c.prompts.page(cursor.as_deref())))
            }
            BackendRequest::CallTool { name, arguments } => self.call_tool(ctx, name, arguments),
            BackendRequest::ReadResource { uri } => self.read_resource(ctx, uri),
            BackendRequest::Subscribe { uri } | BackendRequest::Unsubscribe { uri } => {
                if self.resource_exists(&uri) {
                    ready(Ok(Reply::Complete(mcpwire_model::raw_empty_object())))
                } else {
                    ready(Err(McpError::ResourceNotFound(uri)))
                }
            }
            BackendRequest::GetPrompt { name, arguments } => {
                let Some(def) = self.read(|c| c.prompts.get(&name).cloned()) else {
                    return ready(Err(McpError::PromptNotFound(name)));
                };
                if let Err(e) = def.check_required(&arguments) {
                    return ready(Err(e));
                }
                let fut = (def.get)(ctx, arguments);
                Box::pin(async move { fut.await.map(|r| Reply::Complete(to_raw(&r))) })
            }
            BackendRequest::Complete(p) => ready(self.complete(p)),
            BackendRequest::Other { method, .. } => {
                ready(Err(McpError::MethodNotFound(method.to_string())))
            }
        }
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        Some(self.events.subscribe())
    }
}
