//! The router: parses requests, checks capabilities, calls the backend, and turns
//! 2026-07-28 asks into `input_required` results.

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};

use mcpwire_model::types::{
    CallToolParams, CompleteParams, GetPromptParams, ListToolsParams, PaginatedParams,
    ServerCapabilities, UriParams,
};
use mcpwire_model::{BackendEvent, McpError, Method, Raw, Reply};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use crate::input::InputRound;
use crate::tasks::{self, StoreAnswer, TaskShare, TaskStore};
use crate::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, StateKey, TASKS_EXTENSION, TaskConfig, TaskSupport, ToolRouting,
};

/// One request for the router: method, raw params and the call's context.
#[derive(Debug)]
pub struct McpCall {
    /// The method.
    pub method: Method,
    /// Raw params.
    pub params: Option<Raw>,
    /// The call context.
    pub ctx: CallCtx,
    /// A `tools/call`'s params as its wire read them already (the 2026-07-28 HTTP
    /// listener reads them with their `_meta`, in one pass): the router takes them rather
    /// than parsing `params` again. Only a call whose params carry no 2026-07-28 input
    /// answers (no top-level `inputResponses` or `requestState`) is given so: the router
    /// looks for none in its params. `None`: the router parses `params`.
    pub tool_call: Option<Box<CallToolParams>>,
}

impl McpCall {
    /// A call of `method` with `params`, which the router parses.
    pub fn new(method: Method, params: Option<Raw>, ctx: CallCtx) -> McpCall {
        McpCall {
            method,
            params,
            ctx,
            tool_call: None,
        }
    }
}

/// The router's answer; errors are values, never `Service` errors.
pub type McpReply = Result<Reply, McpError>;

/// Routes requests to a backend. Cheap to clone; a `tower::Service` that is always ready
/// and never fails (failures are [`McpReply`] values), so layers can wrap it.
#[derive(Clone)]
pub struct Router {
    backend: Arc<dyn Backend>,
    info: Arc<BackendInfo>,
    state_key: StateKey,
    tasks: Option<Arc<TaskStore>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("backend", &self.backend.info().name)
            .finish()
    }
}

impl Router {
    /// A router over one backend (which may itself be a federation).
    pub fn new(backend: Arc<dyn Backend>) -> Router {
        Router {
            info: Arc::new(backend.info().clone()),
            backend,
            state_key: StateKey::random(),
            tasks: None,
        }
    }

    /// Offers the tasks extension (2026-07-28): tools declared with
    /// [`TaskSupport::Optional`] or [`TaskSupport::Required`] may outlive their request.
    pub fn with_tasks(mut self, config: TaskConfig) -> Router {
        let mut info = (*self.info).clone();
        let ext = info
            .capabilities
            .extensions
            .get_or_insert_with(|| serde_json::json!({}));
        if let Some(map) = ext.as_object_mut() {
            map.insert(TASKS_EXTENSION.to_owned(), serde_json::json!({}));
        }
        self.info = Arc::new(info);
        self.tasks = Some(Arc::new(TaskStore::new(config)));
        self
    }

    /// Shares this router's tasks with the other replicas of a replica set through `share`
    /// (a task created here answered by any replica; see [`TaskShare`]). False when the
    /// router runs no tasks or already shares them.
    pub fn share_tasks(&self, share: Arc<dyn TaskShare>) -> bool {
        self.tasks.as_ref().is_some_and(|t| t.set_share(share))
    }

    /// Uses `key` to seal 2026-07-28 `requestState` (share it between replicas).
    pub fn with_state_key(mut self, key: StateKey) -> Router {
        self.state_key = key;
        self
    }

    /// The backend's name and capabilities (plus the extensions the router adds).
    pub fn info(&self) -> &BackendInfo {
        &self.info
    }

    /// What the router and the wires need to know about tool `name` before calling it.
    pub fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.backend.tool_routing(name)
    }

    /// The backend's event stream.
    pub fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        self.backend.events()
    }

    /// `tasks/*`: the router's own tasks first; other ids are another replica's (through
    /// the share), else the backend's when it runs tasks, else unknown.
    fn tasks_call(
        &self,
        store: &Arc<TaskStore>,
        method: Method,
        params: Option<Raw>,
        ctx: CallCtx,
    ) -> BoxFuture<'static, McpReply> {
        let Method::Other(name) = &method else {
            return Box::pin(std::future::ready(Err(McpError::MethodNotFound(
                method.as_str().to_owned(),
            ))));
        };
        // The router's own tasks first; other ids are the backend's when it runs tasks.
        let (unknown, remote) = match store.handle(name, params.as_deref(), &ctx) {
            StoreAnswer::Answered(reply) => return Box::pin(std::future::ready(reply)),
            StoreAnswer::NotHeld { unknown, remote } => (unknown, remote),
        };
        let backend = tasks::offers_tasks_extension(&self.backend.info().capabilities)
            .then(|| self.backend.clone());
        let Some(share) = store.share().cloned() else {
            return match backend {
                Some(b) => b.call(ctx, BackendRequest::Other { method, params }),
                None => Box::pin(std::future::ready(Err(unknown))),
            };
        };
        // Another replica's task, else the backend's, else unknown.
        Box::pin(async move {
            match share.remote(remote).await? {
                Some(reply) => Ok(reply),
                None => match backend {
                    Some(b) => b.call(ctx, BackendRequest::Other { method, params }).await,
                    None => Err(unknown),
                },
            }
        })
    }

    /// A handshake-era `tools/call` the backend forwards with its params as they came
    /// (see [`Backend::forward_tool_call`]); the call back when it does not.
    fn forward(
        &self,
        ctx: CallCtx,
        params: Raw,
    ) -> Result<BoxFuture<'static, McpReply>, (CallCtx, Raw)> {
        if !self.backend.forwards_tool_calls() {
            return Err((ctx, params));
        }
        let call = ForwardedCall::new(ctx, params)?;
        self.backend
            .forward_tool_call(call)
            .map_err(ForwardedCall::into_parts)
    }

    /// Where a handshake-era `tools/call` of tool `name` by `caller` may go as a raw frame,
    /// or the refusal a layer decided (see [`Backend::relay_route`]);
    /// [`RelayDecision::General`] when the router must run it.
    pub fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        if !self.may_relay() {
            return RelayDecision::General;
        }
        self.backend.relay_route(name, caller)
    }

    /// Whether a `tools/call` may be relayed at all (the backend has tools and forwards
    /// calls as they came): a wire that reads a frame as plain only for the relay asks
    /// first.
    pub fn may_relay(&self) -> bool {
        self.backend.info().capabilities.tools.is_some() && self.backend.forwards_tool_calls()
    }

    /// Answers one request.
    pub fn call(&self, call: McpCall) -> BoxFuture<'static, McpReply> {
        let McpCall {
            method,
            params,
            mut ctx,
            tool_call,
        } = call;
        let stateless = ctx.revision().is_stateless();
        // A 2026-07-28 `tools/call` (whose `_meta` is always there: the envelope) has its
        // `_meta` read with its name and arguments, in one pass over the params.
        let meta_with_call = stateless && method == Method::ToolsCall;
        if !meta_with_call {
            ctx = ctx.with_meta(request_meta(params.as_deref()));
        }
        if let (Method::Other(name), Some(store)) = (&method, &self.tasks)
            && name.starts_with("tasks/")
        {
            // In a replica set, an executor running tasks first takes what other replicas
            // relayed to it (a `tasks/update` sent through another replica just before), so
            // its `tasks/get` answer reflects it rather than waiting for the next heartbeat.
            if &**name == "tasks/get" && store.takes_relayed() {
                let (this, store) = (self.clone(), store.clone());
                return Box::pin(async move {
                    store.take_relayed().await;
                    this.tasks_call(&store, method, params, ctx).await
                });
            }
            let store = store.clone();
            return self.tasks_call(&store, method, params, ctx);
        }
        let caps = &self.backend.info().capabilities;
        let (mut ctx, params) = match (&method, params) {
            (Method::ToolsCall, Some(params)) if !stateless && caps.tools.is_some() => {
                match self.forward(ctx, params) {
                    Ok(answer) => return answer,
                    Err((ctx, params)) => (ctx, Some(params)),
                }
            }
            (_, params) => (ctx, params),
        };
        let parsed = match parse_request(&method, params, tool_call, caps, stateless) {
            Ok(req) => req,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let Parsed {
            request: req,
            input: input_params,
            meta,
        } = parsed;
        if meta_with_call {
            ctx = ctx.with_meta(meta.map(Arc::from));
        }
        let task_store = match (&req, &self.tasks) {
            (BackendRequest::CallTool { name, arguments }, Some(store)) if stateless => {
                let routing = self.backend.call_routing(name, arguments.as_ref());
                let support = routing
                    .as_ref()
                    .map_or(TaskSupport::Forbidden, |r| r.task_support);
                let backends_own = routing.as_ref().is_some_and(|r| r.backend_runs_tasks);
                match support {
                    TaskSupport::Forbidden => None,
                    support => {
                        if tasks::client_supports_tasks(ctx.client_capabilities()) {
                            // The backend's own task, or one of the router's.
                            (!backends_own).then(|| store.clone())
                        } else if support == TaskSupport::Required {
                            return Box::pin(std::future::ready(Err(tasks::missing_extension())));
                        } else {
                            None
                        }
                    }
                }
            }
            _ => None,
        };
        // A call that may become a task gets a cancellation of its own (the task's), kept
        // apart from the request's; others keep the request's alone.
        let task = match task_store {
            Some(store) => {
                let request_cancel = ctx.cancellation_token().clone();
                let task_cancel = tokio_util::sync::CancellationToken::new();
                ctx = ctx.with_cancel(task_cancel.clone());
                Some((store, request_cancel, task_cancel))
            }
            None => None,
        };
        if let Some(params) = input_params {
            match InputRound::from_params(
                Some(&params),
                ctx.shared_capabilities(),
                self.state_key.clone(),
            ) {
                Ok(round) => ctx = ctx.with_input(round),
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            }
        } else if stateless && supports_input(&method) {
            let round =
                InputRound::from_params(None, ctx.shared_capabilities(), self.state_key.clone());
            if let Ok(round) = round {
                ctx = ctx.with_input(round);
            }
        }
        let fut = self.backend.call(ctx.clone(), req);
        let finish_ctx = ctx.clone();
        let finish = move |r: McpReply| match r {
            Err(McpError::InputRequired) => match finish_ctx.take_input_round() {
                Some(round) => round.into_result().map(Reply::InputRequired),
                None => Err(McpError::Internal(
                    "input required outside 2026-07-28".into(),
                )),
            },
            other => other,
        };
        match task {
            Some((store, request_cancel, task_cancel)) => {
                tasks::run_call(store, ctx, request_cancel, task_cancel, fut, finish)
            }
            None => Box::pin(async move { finish(fut.await) }),
        }
    }
}

impl tower::Service<McpCall> for Router {
    type Response = McpReply;
    type Error = Infallible;
    type Future = BoxFuture<'static, Result<McpReply, Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: McpCall) -> Self::Future {
        let fut = Router::call(self, call);
        Box::pin(async move { Ok(fut.await) })
    }
}

fn supports_input(method: &Method) -> bool {
    matches!(
        method,
        Method::ToolsCall | Method::PromptsGet | Method::ResourcesRead
    )
}

/// The `_meta` object of a request's params, kept raw (read only when present).
fn request_meta(params: Option<&RawValue>) -> Option<Arc<RawValue>> {
    #[derive(serde::Deserialize)]
    struct WithMeta {
        #[serde(rename = "_meta", default)]
        meta: Option<Raw>,
    }
    let p = params.filter(|p| p.get().contains("\"_meta\""))?;
    let with: WithMeta = serde_json::from_str(p.get()).ok()?;
    with.meta.map(Arc::from)
}

fn parse<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, McpError> {
    serde_json::from_str(params.map_or("{}", RawValue::get))
        .map_err(|e| McpError::InvalidParams(e.to_string()))
}

/// A request as [`parse_request`] read it.
struct Parsed {
    request: BackendRequest,
    /// The params again, when they may carry 2026-07-28 input responses.
    input: Option<Raw>,
    /// A `tools/call`'s `_meta`, read with its name and arguments.
    meta: Option<Raw>,
}

/// Parses a request into a [`BackendRequest`] (see [`Parsed`]); a `tools/call` its wire
/// read already (`tool_call`) is taken as it is.
fn parse_request(
    method: &Method,
    params: Option<Raw>,
    tool_call: Option<Box<CallToolParams>>,
    caps: &ServerCapabilities,
    stateless: bool,
) -> Result<Parsed, McpError> {
    let not_offered = || McpError::MethodNotFound(method.to_string());
    if let Method::Other(_) = method {
        let request = BackendRequest::Other {
            method: method.clone(),
            params,
        };
        return Ok(Parsed {
            request,
            input: None,
            meta: None,
        });
    }
    let p = params.as_deref();
    // A call its wire read already carries no input answers (`McpCall::tool_call`).
    let answers_input = tool_call.is_none();
    let mut meta = None;
    let req = match method {
        Method::ToolsList | Method::ToolsCall if caps.tools.is_none() => return Err(not_offered()),
        Method::ResourcesList
        | Method::ResourcesTemplatesList
        | Method::ResourcesRead
        | Method::ResourcesSubscribe
        | Method::ResourcesUnsubscribe
            if caps.resources.is_none() =>
        {
            return Err(not_offered());
        }
        Method::PromptsList | Method::PromptsGet if caps.prompts.is_none() => {
            return Err(not_offered());
        }
        Method::CompletionComplete if caps.completions.is_none() => return Err(not_offered()),
        Method::ToolsList => {
            let l: ListToolsParams = parse(p)?;
            BackendRequest::ListTools {
                cursor: l.cursor,
                query: l.query,
            }
        }
        Method::ToolsCall => {
            let call = match tool_call {
                Some(read) => *read,
                None => parse(p)?,
            };
            meta = call.meta;
            BackendRequest::CallTool {
                name: call.name,
                arguments: call.arguments,
            }
        }
        Method::ResourcesList => BackendRequest::ListResources {
            cursor: parse::<PaginatedParams>(p)?.cursor,
        },
        Method::ResourcesTemplatesList => BackendRequest::ListResourceTemplates {
            cursor: parse::<PaginatedParams>(p)?.cursor,
        },
        Method::ResourcesRead => BackendRequest::ReadResource {
            uri: parse::<UriParams>(p)?.uri,
        },
        Method::ResourcesSubscribe => BackendRequest::Subscribe {
            uri: parse::<UriParams>(p)?.uri,
        },
        Method::ResourcesUnsubscribe => BackendRequest::Unsubscribe {
            uri: parse::<UriParams>(p)?.uri,
        },
        Method::PromptsList => BackendRequest::ListPrompts {
            cursor: parse::<PaginatedParams>(p)?.cursor,
        },
        Method::PromptsGet => {
            let g: GetPromptParams = parse(p)?;
            BackendRequest::GetPrompt {
                name: g.name,
                arguments: g.arguments.unwrap_or_default(),
            }
        }
        Method::CompletionComplete => BackendRequest::Complete(parse::<CompleteParams>(p)?),
        _ => return Err(McpError::MethodNotFound(method.to_string())),
    };
    let input = if stateless
        && supports_input(method)
        && answers_input
        && p.is_some_and(|p| {
            p.get().contains("\"inputResponses\"") || p.get().contains("\"requestState\"")
        }) {
        params
    } else {
        None
    };
    Ok(Parsed {
        request: req,
        input,
        meta,
    })
}
