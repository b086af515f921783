//! [`UpstreamBackend`]: the [`Backend`] over an upstream MCP server.

use std::sync::{Arc, Weak};
use std::time::Duration;

use mcpwire_model::types::{ClientCapabilities, Implementation, LoggingLevel, ServerCapabilities};
use mcpwire_model::{BackendEvent, McpError, Raw, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, RelayRoute, SessionScope, TASKS_EXTENSION, ToolRouting, offers_tasks_extension,
};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::call::Held;
use super::call::{self, Forward};
use super::fast;
use super::forward::{Outgoing, forwarded_capabilities, forwarded_meta, outgoing};
use super::hold::Holder;
use super::link::Link;
use super::offered;
use super::reattach;
use super::restart::{Shared, reopen};
use super::routes::{ToolRoutes, runs_v1_tasks};
use super::sessions::UpstreamSessions;
use super::watched::{Change, Watched};
use mcpwire_client::auth::{PendingConsents, UpstreamAuth};
use mcpwire_client::{
    Client, ClientEra, ClientError, ClientOptions, EraChoice, RequestOptions, Target,
};

/// Backend events held for slow sessions before the oldest are dropped.
const EVENTS_CAPACITY: usize = 256;

/// How long a downstream session's own upstream session may stay unused before it is
/// closed (children of clients that never end their session: issue 23).
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// Upstream requests held for stateless clients' retries at once, per backend.
const MAX_HELD: usize = 256;

/// How to reach an upstream server and how to forward to it.
#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    /// The backend's name (logs, messages).
    pub name: String,
    /// Where the server is: a command line, an `http(s)://` URL or an `mcpb://` address.
    pub target: Target,
    /// How long starting or reaching the server and negotiating may take.
    pub handshake_timeout: Duration,
    /// How long one forwarded request may wait without news (progress restarts it);
    /// `None`: no limit.
    pub call_timeout: Option<Duration>,
    /// Which era to speak upstream (default: discover, falling back to `initialize`).
    pub era: EraChoice,
    /// One upstream session for every downstream session (`true`), or one per downstream
    /// session (`false`: each stateful downstream session gets its own, opened on its first
    /// call and closed when it ends; stateless requests and catalog listing use the shared
    /// one).
    pub shared: bool,
    /// Upstream sessions open at once besides the shared one (`shared = false`).
    pub max_sessions: usize,
    /// `shared = false`: an upstream session unused this long (no call started, none in
    /// flight) is closed, its downstream session's next call opening a new one (`None`:
    /// kept until its downstream session ends).
    pub session_idle: Option<Duration>,
    /// How long an upstream request that asked a stateless (2026-07-28) downstream client
    /// something waits for the client's retry with the answer before it is cancelled.
    pub hold_timeout: Duration,
    /// `https://` and `mcpbs://` targets: which CA to trust, which certificate to present.
    pub tls: mcpwire_server::tls::ClientTls,
    /// How long an upstream connection keeps polling for the server's output before it
    /// sleeps (the gateway's `busy_poll_us`, as its listeners do).
    pub busy_poll: Duration,
    /// HTTP: what the gateway authenticates with (its own credentials; OAuth tokens are
    /// kept per downstream identity for the sessions opened for that identity).
    pub auth: Option<UpstreamAuth>,
    /// Where `auth`'s users' authorizations wait (`consent = "elicit"`): a call that needs
    /// one puts it to its user.
    pub consents: Option<Arc<PendingConsents>>,
    /// A command: its environment and directory; its stderr is logged under `name`
    /// unless `child.log_stderr_as` says otherwise.
    pub child: mcpwire_client::ChildOptions,
    /// Whether plain calls may be relayed to this upstream as raw frames (the default;
    /// `docs/design/gateway.md` § The relay); `false` sends every call the general way
    /// (decoded, routed and encoded again: for comparing the two, or an upstream whose
    /// answers should always be parsed).
    pub relay: bool,
}

impl UpstreamConfig {
    /// Defaults for `target` (30 s to start, no call timeout, era chosen by discovery).
    pub fn new(name: impl Into<String>, target: Target) -> UpstreamConfig {
        UpstreamConfig {
            name: name.into(),
            target,
            handshake_timeout: Duration::from_secs(30),
            call_timeout: None,
            era: EraChoice::Auto,
            shared: true,
            max_sessions: 64,
            session_idle: Some(DEFAULT_SESSION_IDLE),
            hold_timeout: Duration::from_secs(60),
            tls: mcpwire_server::tls::ClientTls::default(),
            busy_poll: mcpwire_server::serve::DEFAULT_BUSY_POLL,
            auth: None,
            consents: None,
            child: mcpwire_client::ChildOptions::default(),
            relay: true,
        }
    }

    /// The client options every upstream session of this backend uses: it offers
    /// sampling, elicitation and roots (answered by the downstream client that caused the
    /// ask, or refused with its error), and asks for every log (sessions filter by their
    /// own level).
    fn client_options(&self) -> ClientOptions {
        let mut o = ClientOptions::with_handshake_timeout(self.handshake_timeout);
        o.client_info = Implementation::new("mcpwire-gateway", env!("CARGO_PKG_VERSION"));
        o.capabilities = ClientCapabilities {
            sampling: Some(serde_json::json!({})),
            elicitation: Some(serde_json::json!({ "form": {}, "url": {} })),
            roots: Some(serde_json::json!({})),
            ..ClientCapabilities::default()
        };
        o.era = self.era;
        o.tls = self.tls.clone();
        o.log_level = Some(LoggingLevel::Debug);
        // As the listeners do: an upstream's answer usually follows its request within
        // microseconds, and waking an idle vCPU costs tens of them (docs/benchmarks.md).
        o.busy_poll = self.busy_poll;
        o.auth = self.auth.clone();
        // A relayed call waits as long as a forwarded one: it carries no progress token,
        // so nothing restarts its timeout.
        o.relay_timeout = self.call_timeout;
        o.child = self.child.clone();
        o.child
            .log_stderr_as
            .get_or_insert_with(|| self.name.clone());
        o
    }
}

/// A backend whose catalog and calls are an upstream MCP server's.
pub struct UpstreamBackend {
    inner: Arc<Inner>,
}

struct Inner {
    config: UpstreamConfig,
    info: BackendInfo,
    server_info: Implementation,
    instructions: Option<String>,
    events: broadcast::Sender<BackendEvent>,
    /// The shared upstream session (kept up by `supervise`).
    shared: watch::Sender<Shared>,
    /// Cancelled when the backend is dropped: the shared session closes.
    stop: CancellationToken,
    /// Upstream sessions of downstream sessions (`None`: every call uses the shared one).
    sessions: Option<Arc<UpstreamSessions>>,
    /// Upstream requests waiting for a stateless client's retry.
    holder: Arc<Holder<Held>>,
    /// Task support and header parameters of the tools, from the lists passing through.
    routes: ToolRoutes,
    /// Resources the gateway's session-less listeners watch.
    watched: Watched,
    /// Times the shared session was opened again after it ended.
    restarts: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for UpstreamBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamBackend")
            .field("name", &self.inner.config.name)
            .field("target", &self.inner.config.target.to_string())
            .finish()
    }
}

impl UpstreamBackend {
    /// Starts or reaches the server, negotiates, and returns the backend; its capabilities
    /// are the server's — the tasks extension only when the server runs tasks for the
    /// gateway's clients itself (it offers the extension in the 2026-07-28 era), the
    /// 2025-11-25 `tasks` capability never.
    pub async fn connect(config: UpstreamConfig) -> Result<Arc<UpstreamBackend>, ClientError> {
        let (events, _) = broadcast::channel(EVENTS_CAPACITY);
        let link = open(&config, &events).await?;
        let negotiated = link.client().negotiated();
        let mut capabilities = negotiated.capabilities.clone();
        // The 2025-11-25 task surface is not spoken downstream. The tasks extension is
        // kept when the upstream can run tasks for the gateway's stateless clients (whose
        // requests use the shared session): those tasks are its own, passed through.
        capabilities.tasks = None;
        let runs_tasks =
            negotiated.era == ClientEra::Stateless && offers_tasks_extension(&capabilities);
        if !runs_tasks {
            drop_tasks_extension(&mut capabilities);
        }
        let info = BackendInfo {
            name: config.name.clone(),
            capabilities,
        };
        let server_info = negotiated.server_info.clone();
        let instructions = negotiated.instructions.clone();
        let inner = Arc::new(Inner {
            info,
            server_info,
            instructions,
            events,
            shared: watch::Sender::new(Shared::Up(link.clone())),
            stop: CancellationToken::new(),
            sessions: (!config.shared).then(|| {
                UpstreamSessions::new(&config.name, config.max_sessions, config.session_idle)
            }),
            holder: Holder::new(MAX_HELD, config.hold_timeout),
            routes: ToolRoutes::new(
                runs_tasks,
                matches!(negotiated.era, ClientEra::Handshake(_))
                    && runs_v1_tasks(&negotiated.capabilities),
            ),
            watched: Watched::new(),
            restarts: std::sync::atomic::AtomicU64::new(0),
            config,
        });
        tokio::spawn(supervise(Arc::downgrade(&inner), link, inner.stop.clone()));
        Ok(Arc::new(UpstreamBackend { inner }))
    }

    /// `serverInfo` as the upstream gave it.
    pub fn server_info(&self) -> &Implementation {
        &self.inner.server_info
    }

    /// The upstream's instructions for the model.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// Where the upstream is (a command line, a URL).
    pub fn peer(&self) -> String {
        self.inner.config.target.to_string()
    }

    /// The revision spoken with the shared upstream session now (`None` while it is not
    /// up), and how many times that session was opened again after it ended.
    pub fn status(&self) -> (Option<String>, u64) {
        let era = match &*self.inner.shared.borrow() {
            Shared::Up(link) => Some(link.client().negotiated().era.revision().to_string()),
            _ => None,
        };
        let restarts = self
            .inner
            .restarts
            .load(std::sync::atomic::Ordering::Relaxed);
        (era, restarts)
    }

    /// Upstream requests held for stateless clients' retries now.
    pub fn held_count(&self) -> usize {
        self.inner.holder.len()
    }

    /// Calls relayed as raw frames on the upstream sessions open now, the shared one
    /// included (`docs/design/gateway.md` § The relay): how many calls skipped the router
    /// and the call machinery.
    pub fn relayed_calls(&self) -> u64 {
        let own = self
            .inner
            .sessions
            .as_ref()
            .map_or(0, |s| s.relayed_calls());
        let shared = match &*self.inner.shared.borrow() {
            Shared::Up(link) => link.client().relay().map_or(0, |r| r.sent()),
            _ => 0,
        };
        own + shared
    }

    /// Upstream sessions open for downstream sessions now (besides the shared one).
    pub fn session_count(&self) -> usize {
        self.inner.sessions.as_ref().map_or(0, |s| s.len())
    }
}

/// Connects one upstream session and starts routing its events.
async fn open(
    config: &UpstreamConfig,
    events: &broadcast::Sender<BackendEvent>,
) -> Result<Arc<Link>, ClientError> {
    let options = config.client_options();
    connect(config, options, None, events).await
}

/// Connects the upstream session of the stateful downstream session `ctx` came in: it
/// declares that client's capabilities (less the 2025-11-25 `tasks`), and — unless the configuration fixes
/// the era — speaks a handshake era when the upstream has one, as its client does: the
/// upstream's asks then ride the call as they would directly, and subscriptions work
/// (2026-07-28 has none without `subscriptions/listen`). An upstream that refuses
/// `initialize` is reached as `era` says.
async fn open_for_session(
    config: &UpstreamConfig,
    ctx: &CallCtx,
    events: &broadcast::Sender<BackendEvent>,
) -> Result<Arc<Link>, ClientError> {
    let mut options = config.client_options();
    options.capabilities = forwarded_capabilities(ctx);
    // The session acts for its caller: OAuth tokens obtained for it are that identity's.
    options.auth = options
        .auth
        .map(|a| a.for_identity(ctx.identity().map(|i| i.subject())));
    let session = ctx.session().cloned();
    if config.era != EraChoice::Auto || ctx.revision().is_stateless() {
        return connect(config, options, session, events).await;
    }
    options.era = EraChoice::Handshake;
    // In a replica set, an HTTP upstream session this downstream session opened on another
    // replica is continued, and one opened here is recorded for the others.
    let cluster = ctx.session().and_then(|s| s.shared());
    let url = match &config.target {
        Target::Url(url) => cluster.map(|c| (c, url)),
        _ => None,
    };
    if let Some((cluster, url)) = url
        && let Some(record) = reattach::recorded(cluster, &config.name).await
        && let Some(link) = reattach::reattach(
            url,
            &options,
            &record,
            &config.name,
            session.clone(),
            events,
        )
        .await
    {
        return Ok(link);
    }
    let link = match connect(config, options.clone(), session.clone(), events).await {
        Ok(link) => link,
        // Not an era question: discovering would only ask for the authorization again.
        Err(e @ ClientError::Auth(_)) => return Err(e),
        Err(e) => {
            tracing::debug!(upstream = %config.name, "initialize refused ({e}); discovering");
            options.era = EraChoice::Auto;
            connect(config, options, session, events).await?
        }
    };
    if let Some((cluster, _)) = url {
        reattach::record(cluster, &config.name, link.client()).await;
    }
    Ok(link)
}

async fn connect(
    config: &UpstreamConfig,
    options: ClientOptions,
    session: Option<SessionScope>,
    events: &broadcast::Sender<BackendEvent>,
) -> Result<Arc<Link>, ClientError> {
    let (client, client_events) = Client::connect(&config.target, &options).await?;
    let handshake = matches!(client.negotiated().era, ClientEra::Handshake(_));
    if handshake && client.negotiated().capabilities.logging.is_some() {
        // Every log comes; each downstream session filters at its own level.
        let set = client
            .request("logging/setLevel", serde_json::json!({ "level": "debug" }))
            .await;
        if let Err(e) = set {
            tracing::warn!(upstream = %config.name, "logging/setLevel refused: {e}");
        }
    }
    tracing::info!(upstream = %config.name, peer = %client.peer(), "upstream session open");
    Ok(Link::start(client, client_events, session, events.clone()))
}

impl Drop for UpstreamBackend {
    fn drop(&mut self) {
        self.inner.stop.cancel();
    }
}

/// Keeps the shared session up: when it ends, sessions are told every list may have
/// changed (a federation lists the backend again, and so sees whether it is healthy), it
/// is opened again with backoff, and told again once it is back. Closes it when the
/// backend is dropped.
async fn supervise(inner: Weak<Inner>, mut link: Arc<Link>, stop: CancellationToken) {
    let checked = inner
        .upgrade()
        .is_some_and(|b| matches!(b.config.target, Target::Url(_)));
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                link.client().clone().close().await.ok();
                return;
            }
            _ = link.closed() => {}
            () = follow_changes(&inner, &link) => {}
            why = super::health::failed(&link), if checked => {
                if let Some(backend) = inner.upgrade() {
                    tracing::warn!(upstream = %backend.config.name, "health check failed: {why}");
                }
                link.fail();
                // Ends the old session as well as it can (a DELETE may find nobody).
                let old = link.client().clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(super::health::TIMEOUT, old.close()).await;
                });
            }
        }
        let Some(backend) = inner.upgrade() else {
            return;
        };
        tracing::warn!(upstream = %backend.config.name, "the upstream session ended; opening it again");
        backend.announce_lists();
        let reopened = {
            let open = || async {
                open(&backend.config, &backend.events)
                    .await
                    .map_err(|e| unavailable(&backend.config, e))
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                l = reopen(&backend.shared, open) => l,
            }
        };
        let next = reopened;
        tracing::info!(upstream = %backend.config.name, "the upstream session is back");
        backend
            .restarts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        backend.announce_lists();
        backend.resubscribe(&next).await;
        link = next;
    }
}

/// Follows the list changes of a 2026-07-28 upstream on `link` (`super::listen`) while it
/// is up; never completes (when there is nothing to follow, it waits).
async fn follow_changes(inner: &Weak<Inner>, link: &Link) {
    let watched = inner.upgrade().map(|b| b.watched.uris());
    if let (Some(lists), Some(watched)) = (super::listen::wanted(link), watched) {
        let reopened = || {
            if let Some(b) = inner.upgrade() {
                b.announce_lists();
            }
        };
        let why = super::listen::follow(link, lists, watched, reopened).await;
        if let Some(b) = inner.upgrade() {
            tracing::info!(upstream = %b.config.name, "the upstream does not stream its list changes: {why}");
        }
    }
    std::future::pending().await
}

impl Inner {
    /// The shared upstream session; while it is being opened again, waits for it (at most
    /// the handshake timeout).
    async fn shared(&self) -> Result<Arc<Link>, McpError> {
        let mut state = self.shared.subscribe();
        let deadline = tokio::time::Instant::now() + self.config.handshake_timeout;
        loop {
            let now = state.borrow_and_update().clone();
            match now {
                Shared::Up(link) if !link.is_down() => return Ok(link),
                Shared::Down(e) => {
                    return Err(McpError::Unavailable(format!(
                        "{e} (tried again with backoff)"
                    )));
                }
                // Restarting, or ended and not yet noticed by the supervisor.
                _ => {}
            }
            if tokio::time::timeout_at(deadline, state.changed())
                .await
                .is_err()
            {
                return Err(McpError::Unavailable(format!(
                    "upstream `{}` is being restarted",
                    self.config.name
                )));
            }
        }
    }

    /// Tells sessions every list this backend offers may have changed.
    fn announce_lists(&self) {
        let caps = &self.info.capabilities;
        let kinds = [
            (caps.tools.is_some(), BackendEvent::ToolsListChanged),
            (caps.prompts.is_some(), BackendEvent::PromptsListChanged),
            (caps.resources.is_some(), BackendEvent::ResourcesListChanged),
        ];
        for (offered, ev) in kinds {
            if offered {
                let _ = self.events.send(ev);
            }
        }
    }

    /// The upstream session for a call: its downstream session's own, or the shared one.
    async fn link_for(&self, ctx: &CallCtx) -> Result<Arc<Link>, McpError> {
        match (&self.sessions, own_session(ctx)) {
            (Some(sessions), Some(scope)) => {
                sessions
                    .get(scope, || async {
                        open_for_session(&self.config, ctx, &self.events)
                            .await
                            .map_err(|e| unavailable(&self.config, e))
                    })
                    .await
            }
            _ => self.shared().await,
        }
    }

    /// A session-less `resources/subscribe` (`on`) or `unsubscribe` of `uri`: a gateway's
    /// listening stream began or stopped watching it (`super::watched`). The upstream hears
    /// of the first and the last only.
    async fn watch(&self, uri: &str, on: bool) -> Result<Reply, McpError> {
        let change = self.watched.change(uri, on)?;
        let link = self.shared().await?;
        if change != Change::None && link.client().negotiated().era != ClientEra::Stateless {
            let method = if on {
                "resources/subscribe"
            } else {
                "resources/unsubscribe"
            };
            if let Err(e) = link
                .client()
                .request(method, serde_json::json!({ "uri": uri }))
                .await
            {
                if on {
                    let _ = self.watched.change(uri, false);
                }
                return Err(McpError::Unavailable(format!(
                    "upstream `{}`: {e}",
                    self.config.name
                )));
            }
        }
        // A 2026-07-28 session's listen stream follows the set (`super::listen`).
        Ok(Reply::Complete(mcpwire_model::to_raw(&serde_json::json!(
            {}
        ))))
    }

    /// Subscribes a handshake-era shared session opened again to what was watched.
    async fn resubscribe(&self, link: &Link) {
        if link.client().negotiated().era == ClientEra::Stateless {
            return;
        }
        for uri in self.watched.now() {
            let sub = link
                .client()
                .request("resources/subscribe", serde_json::json!({ "uri": uri }));
            if let Err(e) = sub.await {
                tracing::warn!(upstream = %self.config.name, %uri, "subscribing again failed: {e}");
            }
        }
    }

    async fn call(self: Arc<Self>, ctx: CallCtx, req: BackendRequest) -> Result<Reply, McpError> {
        match &req {
            BackendRequest::Subscribe { uri } if ctx.session().is_none() => {
                return self.watch(uri, true).await;
            }
            BackendRequest::Unsubscribe { uri } if ctx.session().is_none() => {
                return self.watch(uri, false).await;
            }
            _ => {}
        }
        let listing = match &req {
            // A searched list (SEP-1821 `query`) is a subset: nothing to learn routes from.
            BackendRequest::ListTools {
                cursor,
                query: None,
            } => Some(cursor.is_none()),
            _ => None,
        };
        let mut out = outgoing(&req)?;
        let mut explain = None;
        if let BackendRequest::CallTool { name, .. } = &req {
            if self.routes.calls_as_task(name) {
                out = out.run_as_task();
            }
            explain = self.explains(&ctx, name);
        }
        let reply = match (&self.config.consents, ctx.identity()) {
            (Some(consents), Some(who)) => {
                let forward = || self.forward(ctx.clone(), out.clone());
                let name = &self.config.name;
                super::consent::asking_consent(consents, name, &ctx, who.subject(), forward).await
            }
            _ => self.forward(ctx, out).await,
        };
        if let Some((lacks, tool)) = explain {
            return offered::explained(reply, &lacks, &self.config.name, &tool);
        }
        match (listing, reply) {
            (Some(first_page), Ok(reply)) => {
                self.routes.learn(first_page, &reply);
                Ok(self.routes.listed(reply))
            }
            (_, reply) => reply,
        }
    }

    /// The options of a request forwarded on `link` for the call `ctx`.
    fn options(&self, ctx: &CallCtx, link: &Link) -> RequestOptions {
        // Only 2026-07-28 requests carry the client's capabilities (a handshake-era link
        // declared them once, at `initialize`).
        let stateless = link.client().negotiated().era == ClientEra::Stateless;
        RequestOptions {
            timeout: self.config.call_timeout,
            progress: ctx.progress_token().is_some(),
            reset_timeout_on_progress: true,
            meta: forwarded_meta(ctx),
            capabilities: stateless.then(|| Arc::new(forwarded_capabilities(ctx))),
        }
    }

    async fn forward(&self, ctx: CallCtx, out: Outgoing) -> Result<Reply, McpError> {
        let resumed = self.holder.resume(&ctx);
        let link = match &resumed {
            Some(held) => held.round.link().clone(),
            None => self.link_for(&ctx).await?,
        };
        let fwd = Forward {
            method: out.method,
            params: out.params,
            opts: self.options(&ctx, &link),
        };
        if out.as_task {
            return call::run_as_task(link, ctx, fwd, &self.holder).await;
        }
        if !(resumed.is_none() && self.scoped(&ctx)) {
            return call::run(link, ctx, fwd, &self.holder, resumed).await;
        }
        match call::run(link.clone(), ctx.clone(), fwd.clone(), &self.holder, None).await {
            Err(McpError::Unavailable(e)) if link.client().wire_session_gone() => {
                self.in_new_session(link, ctx, fwd, e).await
            }
            other => other,
        }
    }

    /// For a `tools/call` of `tool` (one the upstream listed) in `ctx` on an upstream
    /// session of its own whose client declares fewer asks than the catalog session: what
    /// it lacks and the tool, to explain an upstream's "not found" (`super::offered`).
    fn explains(&self, ctx: &CallCtx, tool: &str) -> Option<(Vec<&'static str>, String)> {
        if !self.scoped(ctx) || !self.routes.lists(tool) {
            return None;
        }
        let lacks = offered::lacking(ctx.client_capabilities());
        (!lacks.is_empty()).then(|| (lacks, tool.to_owned()))
    }

    /// Whether the call `ctx` has an upstream session of its downstream session's own.
    fn scoped(&self, ctx: &CallCtx) -> bool {
        self.sessions.is_some() && own_session(ctx).is_some()
    }

    /// A downstream session's upstream session that the upstream no longer holds (it
    /// expired, or another replica's 404 made a new one): the request was not run, the
    /// link is down, and it runs once more on the session's next upstream session.
    async fn in_new_session(
        &self,
        link: Arc<Link>,
        ctx: CallCtx,
        fwd: Forward,
        e: String,
    ) -> Result<Reply, McpError> {
        tracing::info!(upstream = %self.config.name, "{e}; running the call in a new upstream session");
        // The link is ending; the next one is opened once it has.
        let closing = tokio::time::timeout(self.config.handshake_timeout, link.closed());
        if closing.await.is_err() {
            return Err(McpError::Unavailable(e));
        }
        let link = self.link_for(&ctx).await?;
        call::run(link, ctx, fwd, &self.holder, None).await
    }

    /// The link a `tools/call` in `ctx` takes the fast path on, if it may (`super::fast`):
    /// its downstream session's upstream session when open and up now, or the shared one
    /// when up.
    fn fast_link(&self, ctx: &CallCtx) -> Option<Arc<Link>> {
        if self.config.consents.is_some() {
            // A call may need the user's consent (`super::consent`): the general path asks.
            return None;
        }
        let link = match (&self.sessions, own_session(ctx)) {
            (Some(sessions), Some(scope)) => sessions.ready(scope)?,
            (Some(_), None) => return None,
            (None, _) => match &*self.shared.borrow() {
                Shared::Up(link) if !link.is_down() => link.clone(),
                _ => return None,
            },
        };
        fast::eligible(ctx, &link).then_some(link)
    }

    /// The relay of the upstream session downstream session `scope`'s calls go to, when
    /// they may be relayed as raw frames (`mcpwire_relay`): what
    /// [`Inner::fast_link`] and [`Inner::options`] allow for a call without `_meta` — the
    /// session's own upstream session open and up now (or, with `shared = true`, the shared
    /// one up), a handshake era, no consent flow — on a stdio link whose client would write
    /// the call as a direct request. A call timeout is kept by the relay itself
    /// (`Relay::with_call_timeout`, from the client options). On the shared link, what the
    /// upstream sends without naming a call goes as the link sends it (see `Relay::log`).
    fn relay_for(&self, scope: &SessionScope) -> Option<RelayRoute> {
        if !self.config.relay || self.config.consents.is_some() {
            return None;
        }
        let link = match &self.sessions {
            Some(sessions) => sessions.ready(scope)?,
            None => match &*self.shared.borrow() {
                Shared::Up(link) if !link.is_down() => link.clone(),
                _ => return None,
            },
        };
        if !matches!(link.client().negotiated().era, ClientEra::Handshake(_)) {
            return None;
        }
        // Full: the general path waits for room (and a rate limit deciding the route
        // would otherwise count the call twice).
        let relay = link.client().relay().filter(|r| r.has_room())?.clone();
        Some(RelayRoute::new(relay))
    }

    /// A `tools/call` with `params` on the fast path (`super::fast`); `again` are the
    /// params for running it in a new upstream session if the upstream no longer holds
    /// this one (an HTTP session: nothing else can be gone).
    async fn fast_call(
        self: Arc<Self>,
        link: Arc<Link>,
        ctx: CallCtx,
        params: Option<Raw>,
        again: Option<Option<Raw>>,
        explain: Option<(Vec<&'static str>, String)>,
    ) -> Result<Reply, McpError> {
        let opts = self.options(&ctx, &link);
        match fast::call(link.clone(), ctx.clone(), params, opts).await {
            fast::Fallback::Done(reply) => match explain {
                Some((lacks, tool)) => offered::explained(reply, &lacks, &self.config.name, &tool),
                None => reply,
            },
            fast::Fallback::SessionGone(McpError::Unavailable(e))
                if self.scoped(&ctx)
                    && let Some(params) = again =>
            {
                let fwd = Forward {
                    method: "tools/call".into(),
                    params,
                    opts: self.options(&ctx, &link),
                };
                // Boxed: opening a session is a large future, and rare; the fast path's
                // own stays small (it is moved into a box on every call).
                Box::pin(self.in_new_session(link, ctx, fwd, e)).await
            }
            fast::Fallback::SessionGone(e) => Err(e),
        }
    }
}

/// The downstream session whose own upstream session the call `ctx` takes (with
/// `shared = false`): a stateful session's; a 2026-07-28 request has none on any wire (as
/// over HTTP, where it has no session at all), so the calls of a stdio, WebSocket or MCPB
/// connection speaking 2026-07-28 use the shared upstream session and hear what every
/// stateless client hears.
fn own_session(ctx: &CallCtx) -> Option<&SessionScope> {
    ctx.session().filter(|_| !ctx.revision().is_stateless())
}

/// The params of a fast-path call kept for running it again in a new upstream session
/// (see `Inner::fast_call`): only on a link with a wire session the upstream can lose.
fn kept_for_again(link: &Link, params: &Option<Raw>) -> Option<Option<Raw>> {
    link.client()
        .wire_session_id()
        .is_some()
        .then(|| params.clone())
}

/// `caps` without the tasks extension (and without `extensions` if it was the only one).
fn drop_tasks_extension(caps: &mut ServerCapabilities) {
    if let Some(serde_json::Value::Object(ext)) = &mut caps.extensions {
        ext.remove(TASKS_EXTENSION);
        if ext.is_empty() {
            caps.extensions = None;
        }
    }
}

/// An upstream session could not be opened.
fn unavailable(config: &UpstreamConfig, e: ClientError) -> McpError {
    McpError::Unavailable(format!("upstream `{}`: {e}", config.name))
}

impl Backend for UpstreamBackend {
    fn info(&self) -> &BackendInfo {
        &self.inner.info
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        if let BackendRequest::CallTool { name, .. } = &req
            && !self.inner.routes.calls_as_task(name)
            && let Some(link) = self.inner.fast_link(&ctx)
        {
            let params = match outgoing(&req) {
                Ok(out) => out.params,
                Err(e) => return Box::pin(std::future::ready(Err(e))),
            };
            let again = kept_for_again(&link, &params);
            let explain = self.inner.explains(&ctx, name);
            return Box::pin(
                self.inner
                    .clone()
                    .fast_call(link, ctx, params, again, explain),
            );
        }
        Box::pin(self.inner.clone().call(ctx, req))
    }

    fn forwards_tool_calls(&self) -> bool {
        true
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        if self.inner.routes.calls_as_task(call.name()) {
            return Err(call);
        }
        let Some(link) = self.inner.fast_link(&call.ctx) else {
            return Err(call);
        };
        let explain = self.inner.explains(&call.ctx, call.name());
        let (ctx, params) = call.into_parts();
        let params = Some(params);
        let again = kept_for_again(&link, &params);
        Ok(Box::pin(
            self.inner
                .clone()
                .fast_call(link, ctx, params, again, explain),
        ))
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        if self.inner.routes.calls_as_task(name) {
            return RelayDecision::General;
        }
        self.inner.relay_for(caller.scope).into()
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.inner.routes.get(name)
    }

    fn open_sessions(&self) -> Option<usize> {
        self.inner.sessions.as_ref().map(|s| s.len())
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        Some(self.inner.events.subscribe())
    }
}
