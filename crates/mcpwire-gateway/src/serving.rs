//! [`Gateway`]: a configuration started — its backends running, the federation over them,
//! a service per listener — served on every listener at once, with its configuration file
//! reloaded while serving.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use mcpwire_federation::{
    CatalogMode, Federation, FederationConfig, FederationError, Member, MemberFilter, MemberHealth,
    View,
};
use mcpwire_model::types::Implementation;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::auth::Authenticator;
use crate::backends::{self, Natives, StartFailure, Started};
use crate::check::{CheckCaller, CheckReport};
use crate::cluster::Cluster;
use crate::config::{BackendSource, BackendSpec, FailMode, GatewayConfig, ServerOptions};
use crate::console::GatewayConsole;
use crate::error::{ConfigError, Origin};
use crate::key_path::KeyPath;
use crate::late::LateBackend;
use crate::limits::{RateLimits, Rejections, SharedRateLimits};
use crate::reload::{ReloadPlan, plan};
use crate::stack;
use arc_swap::ArcSwap;
use mcpwire_client::auth::PendingConsents;
use mcpwire_server::Service;
use mcpwire_server::admin::console::calls::CallLog;
use mcpwire_server::admin::{AdminServer, BackendHealth, HealthProbe};
use mcpwire_server::limits::ConnectionLimits;

/// Quiet time after an edit of the configuration file before it is read.
const RELOAD_DEBOUNCE: Duration = Duration::from_millis(300);

/// Why the gateway could not start, serve or reload.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GatewayError {
    /// The configuration is refused.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A backend did not start.
    #[error(transparent)]
    Start(#[from] StartFailure),
    /// A listener could not listen, or failed (shown once: the error is its own message).
    #[error(transparent)]
    Serve(std::io::Error),
    /// `[cluster]`: the store could not be reached, or the session keys are unusable.
    #[error("cluster: {0}")]
    Cluster(#[from] crate::cluster::ClusterError),
}

/// A started gateway: its backends running and a service in front of them per listener.
///
/// One backend configured by flags (the `demo`, `run` and `dev` presets, `serve` with one
/// backend flag) is served directly, exactly as itself. Several backends, views, or a
/// configuration file (which may gain backends when it is edited) are served through a
/// [`Federation`].
pub struct Gateway {
    /// The configuration as applied (a reload updates its backends).
    config: GatewayConfig,
    natives: Natives,
    /// Running backends, in configuration order.
    running: Vec<Started>,
    /// Fail-open backends that did not start at a reload: name and why (at the start, one
    /// that did not start is a late member: `late.rs`).
    down: Vec<(String, String)>,
    /// A fail-closed backend that cannot start waits as a late member (serving), rather
    /// than failing the start (`--check`).
    late_closed: bool,
    /// Backends that did not start at the start, members meanwhile (`late.rs`).
    late: Vec<Arc<LateBackend>>,
    federation: Option<Arc<Federation>>,
    /// One service per listener, in listener order.
    services: Vec<Service>,
    /// The call rate limits every listener shares (`[limits]`), if any; always present
    /// (maybe empty) when the configuration can be reloaded, so a reload can set them.
    rate_limits: Option<SharedRateLimits>,
    /// The connections per IP limit every network listener shares, on the same terms.
    connections: Option<Arc<ConnectionLimits>>,
    /// The authenticator every authenticating listener shares (`[auth]`), if any.
    auth: Option<Arc<Authenticator>>,
    /// Requests and connections refused by `[limits]`, for the metrics.
    rejections: Arc<Rejections>,
    /// The replica set this gateway is one of (`[cluster]`), if any.
    cluster: Option<Arc<Cluster>>,
    /// Users' authorizations of upstreams waiting for the redirect endpoint.
    consents: Arc<PendingConsents>,
    /// The console's live calls (`[admin] console_keys`; `None`: no console).
    calls: Option<Arc<CallLog>>,
    /// The console, once serving with one: told of every reload.
    console: Option<Arc<GatewayConsole>>,
    /// `[server] search_model`, loaded at start (`None`: lexical search only).
    search_model: Option<Arc<dyn mcpwire_federation::Embed>>,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway")
            .field("running", &self.running)
            .field("down", &self.down)
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// Starts every backend of `config` (native ones from `natives`, all at once) and builds
    /// the services in front of them. A backend that cannot start fails the start, unless
    /// it is one of several and fails open (`fail = "open"`, the default): then it is left
    /// out, logged, and tried again at the next reload. One this build cannot serve is
    /// refused as a configuration error naming it.
    pub async fn start(config: GatewayConfig, natives: Natives) -> Result<Gateway, GatewayError> {
        let federate = config.backends.len() > 1
            || !config.views.is_empty()
            || config.searches()
            || config.server.search_model.is_some()
            || config.policy.is_some()
            || matches!(config.origin, Origin::File { .. });
        Gateway::start_as(config, natives, federate, true).await
    }

    /// Starts `config` as [`Gateway::start`] does, always through a federation, and reports
    /// the merged catalog without serving (`mcpwire serve --check`).
    pub async fn check(
        config: GatewayConfig,
        natives: Natives,
    ) -> Result<CheckReport, GatewayError> {
        Gateway::check_as(config, natives, &CheckCaller::Everything).await
    }

    /// [`Gateway::check`] reporting what `caller` may see and call under `[policy]`
    /// (`mcpwire serve --check --as SUBJECT`).
    pub async fn check_as(
        config: GatewayConfig,
        natives: Natives,
        caller: &CheckCaller,
    ) -> Result<CheckReport, GatewayError> {
        let gateway = Gateway::start_as(config, natives, true, false).await?;
        Ok(CheckReport::new(
            &gateway.config,
            &gateway.down_now(),
            gateway.federation.as_deref(),
            caller,
        ))
    }

    /// `late_closed`: a fail-closed backend that cannot start waits as a late member (the
    /// catalog refusing meanwhile) rather than failing the start (`--check` reports it).
    async fn start_as(
        config: GatewayConfig,
        natives: Natives,
        federate: bool,
        late_closed: bool,
    ) -> Result<Gateway, GatewayError> {
        config.validate()?;
        for spec in &config.backends {
            check_supported(&config, spec, &natives)?;
        }
        let search_model = crate::search_model::load(&config)?;
        let consents = crate::consent::pending_consents(&config);
        let starting = config
            .backends
            .iter()
            .map(|spec| backends::start(spec, &config.server, &natives, &consents));
        let results = join_all(starting).await;
        let mut running = Vec::new();
        let mut late = Vec::new();
        let mut failed = Vec::new();
        for (spec, result) in config.backends.iter().zip(results) {
            match result {
                Ok(started) => running.push(started),
                // Down now, not misconfigured: it stays a member, down, and is started
                // again with the federation's backoff (`late.rs`). A fail-closed one makes
                // the catalog refuse until it is up (`/readyz` answers 503 meanwhile).
                Err(f)
                    if federate
                        && !f.unsupported
                        && (late_closed || spec.member.fail == FailMode::Open) =>
                {
                    failed.push((spec, f));
                }
                Err(f) => return Err(f.into()),
            }
        }
        let up = running.len();
        for (spec, f) in failed {
            if up == 0 {
                tracing::error!(
                    "{f}; retrying with backoff; no other backend is running: the catalog is \
                     empty until one is up"
                );
            } else {
                tracing::error!("{f}; retrying with backoff, serving the others meanwhile");
            }
            let (started, backend) = late_started(spec, &config.server, &natives, &consents, &f);
            late.push(backend);
            running.push(started);
        }
        let mut gateway = Gateway {
            config,
            natives,
            running,
            down: Vec::new(),
            late_closed,
            late,
            federation: None,
            services: Vec::new(),
            rate_limits: None,
            connections: None,
            auth: None,
            rejections: Arc::new(Rejections::default()),
            cluster: None,
            consents,
            calls: None,
            console: None,
            search_model,
        };
        gateway.calls = gateway
            .config
            .admin
            .as_ref()
            .filter(|a| a.console())
            .map(|_| Arc::new(CallLog::default()));
        if let Some(c) = &gateway.config.cluster {
            gateway.cluster = Some(Arc::new(Cluster::connect(c).await?));
        }
        gateway.rate_limits = gateway.rate_limits_of(&gateway.config);
        if federate {
            gateway.federation = Some(gateway.federate().await?);
        }
        gateway.auth = crate::access::authenticator(&gateway.config).await?;
        gateway.connections = gateway.connection_limits();
        gateway.services = gateway.front()?;
        Ok(gateway)
    }

    /// The call rate limits of `config` (`None`: none, and the configuration cannot be
    /// reloaded to add some), over the previous ones if any (kept where unchanged).
    fn rate_limits_of(&self, config: &GatewayConfig) -> Option<SharedRateLimits> {
        let limits = config.limits.clone().unwrap_or_default();
        if !limits.limits_calls() && !reloadable(config) {
            return None;
        }
        let (identity, ip, tool, keys) = (
            limits.per_identity,
            limits.per_ip,
            limits.per_tool,
            limits.max_keys,
        );
        if let Some(current) = &self.rate_limits {
            let next = current.load().renewed(identity, ip, tool, keys);
            current.store(Arc::new(next));
            return Some(current.clone());
        }
        let rejections = self.rejections.clone();
        // In a replica set the rates live in the shared store: one budget for all.
        let limits = match &self.cluster {
            Some(c) => RateLimits::in_store(identity, ip, tool, c.store().clone(), rejections),
            None => RateLimits::new(identity, ip, tool, keys, rejections),
        };
        Some(Arc::new(ArcSwap::from_pointee(limits)))
    }

    /// The connections per IP limit (`[limits] connections_per_ip`), one count shared by
    /// every network listener (`None`: none, and none can be added by a reload).
    fn connection_limits(&self) -> Option<Arc<ConnectionLimits>> {
        let per_ip = self
            .config
            .limits
            .as_ref()
            .and_then(|l| l.connections_per_ip);
        if per_ip.is_none() && !reloadable(&self.config) {
            return None;
        }
        let limits = ConnectionLimits::new(u32::MAX, self.rejections.clone());
        limits.set_per_ip(per_ip);
        Some(limits)
    }

    /// What every listener's stack shares (`stack.rs`).
    fn shared_parts(&self) -> stack::Shared<'_> {
        stack::Shared {
            config: &self.config,
            rate_limits: self.rate_limits.as_ref(),
            auth: self.auth.as_ref(),
            connections: self.connections.as_ref(),
            cluster: self.cluster.as_ref(),
            pages: crate::redirect::routes(&self.consents),
            calls: self.calls.as_ref(),
            federation: self
                .federation
                .as_ref()
                .map(Arc::downgrade)
                .unwrap_or_default(),
        }
    }

    /// The federation over the running backends.
    async fn federate(&self) -> Result<Arc<Federation>, GatewayError> {
        let server = &self.config.server;
        let mut fc = FederationConfig::new(Implementation::new(
            server.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ));
        fc.prefix = server.prefix;
        fc.separator = server.separator.clone();
        // Reloads may bring kinds no backend offers yet; capabilities are fixed per session.
        fc.advertise_all = matches!(self.config.origin, Origin::File { .. });
        fc.members = self.running.iter().map(member).collect();
        if let Some(policy) = &self.config.policy {
            fc.policy = policy.clone();
        }
        // A backend that is down is listed again at 1 s, 2 s, 4 s, 8 s, then every 10 s
        // (docs/design/gateway.md § Backends that are down).
        fc.retry_initial = Duration::from_secs(1);
        fc.retry_max = LATE_RETRY_MAX;
        fc.wait_for_required = self.late_closed;
        fc.search_model = self.search_model.clone();
        Federation::new(fc)
            .await
            .map_err(|e| federation_error(&self.config, e))
    }

    /// A service per listener, built by `stack.rs`: the whole catalog, or the listener's
    /// view of it, under the listener's own outer layers.
    fn front(&self) -> Result<Vec<Service>, GatewayError> {
        let config = &self.config;
        let parts = self.shared_parts();
        let Some(fed) = &self.federation else {
            let one = self.running.first().ok_or_else(|| {
                config.error_at(&KeyPath::root().key("backends"), "no backend started")
            })?;
            let via = listeners_label(config.listeners.iter());
            let catalog = parts.catalog_of(
                one.backend.clone(),
                one.server_info.clone(),
                one.instructions.clone(),
                &via,
            )?;
            return Ok(config
                .listeners
                .iter()
                .map(|l| parts.listener(&catalog, l))
                .collect());
        };
        // One catalog service per (view, catalog mode) the listeners ask for, one view
        // per name.
        let mut catalogs: HashMap<(Option<&str>, CatalogMode), Service> = HashMap::new();
        let mut views: HashMap<&str, Arc<View>> = HashMap::new();
        let mut services = Vec::with_capacity(config.listeners.len());
        for listener in &config.listeners {
            let name = listener.options.view.as_deref();
            let spec = match name {
                None => None,
                Some(name) => Some(config.views.iter().find(|v| v.name == name).ok_or_else(
                    || {
                        config.error_at(
                            &listener.key.key("view"),
                            format!("no view is named `{name}`"),
                        )
                    },
                )?),
            };
            let mode = catalog_mode(config, listener);
            if let Some(catalog) = catalogs.get(&(name, mode)) {
                services.push(parts.listener(catalog, listener));
                continue;
            }
            // The listeners showing this catalog: the live calls' listener column.
            let via =
                listeners_label(config.listeners.iter().filter(|l| {
                    l.options.view.as_deref() == name && catalog_mode(config, l) == mode
                }));
            let catalog = match spec {
                None => parts.catalog(
                    stack::Shown::Federation(fed),
                    mode,
                    fed.server_info(),
                    fed.instructions(),
                    &via,
                )?,
                Some(spec) => {
                    let view = views
                        .entry(spec.name.as_str())
                        .or_insert_with(|| fed.view(spec));
                    parts.catalog(
                        stack::Shown::View(view),
                        mode,
                        view.server_info(),
                        view.instructions(),
                        &via,
                    )?
                }
            };
            services.push(parts.listener(&catalog, listener));
            catalogs.insert((name, mode), catalog);
        }
        Ok(services)
    }

    /// Requests and connections refused by `[limits]` so far.
    pub fn rejections(&self) -> &Arc<Rejections> {
        &self.rejections
    }

    /// Every backend's health, for the admin listener: the federation's members as they
    /// last listed, or the one backend served directly (it started, so it is up).
    fn health_probe(&self) -> HealthProbe {
        match &self.federation {
            Some(fed) => {
                let fed = Arc::downgrade(fed);
                Arc::new(move || {
                    let Some(fed) = fed.upgrade() else {
                        return Vec::new();
                    };
                    fed.report()
                        .members
                        .into_iter()
                        .map(|m| BackendHealth {
                            sessions: fed.member_sessions(&m.name),
                            required: m.fail_mode == mcpwire_federation::FailMode::FailClosed,
                            up: m.health.is_ok(),
                            reason: match m.health {
                                MemberHealth::Ok => None,
                                MemberHealth::Unavailable { reason, .. } => Some(reason),
                            },
                            name: m.name,
                        })
                        .collect()
                })
            }
            None => {
                let backends: Vec<(String, Arc<dyn mcpwire_router::Backend>)> = self
                    .running
                    .iter()
                    .map(|b| (b.spec.name.clone(), b.backend.clone()))
                    .collect();
                Arc::new(move || {
                    backends
                        .iter()
                        .map(|(name, backend)| BackendHealth {
                            name: name.clone(),
                            required: true,
                            up: true,
                            reason: None,
                            sessions: backend.open_sessions(),
                        })
                        .collect()
                })
            }
        }
    }

    /// The configuration as applied.
    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }

    /// The service of listener `i` (in configuration order).
    pub fn service(&self, i: usize) -> Option<&Service> {
        self.services.get(i)
    }

    /// The federation, when the gateway has one.
    pub fn federation(&self) -> Option<&Arc<Federation>> {
        self.federation.as_ref()
    }

    /// Backends that are not running now: name and why (fail-open ones a reload could not
    /// start, and ones down since the start, tried again meanwhile).
    pub fn down(&self) -> Vec<(String, String)> {
        self.down_now()
    }

    fn down_now(&self) -> Vec<(String, String)> {
        let mut down = self.down.clone();
        for late in &self.late {
            let name = late.name();
            if let Some(reason) = late.down_reason()
                && self
                    .running
                    .iter()
                    .any(|r| std::ptr::addr_eq(Arc::as_ptr(&r.backend), Arc::as_ptr(late)))
                && !down.iter().any(|(n, _)| n == name)
            {
                down.push((name.to_owned(), reason));
            }
        }
        down
    }

    /// Listeners, backends (running or not, and why) and the merged catalog.
    pub fn report(&self) -> CheckReport {
        CheckReport::new(
            &self.config,
            &self.down_now(),
            self.federation.as_deref(),
            &CheckCaller::Everything,
        )
    }

    /// Serves every listener at once until the first ends (stdio: stdin closed) or fails,
    /// or `shutdown` is cancelled (`None`: SIGTERM or Ctrl-C); MCPB connections get their
    /// grace period. With a configuration file, SIGHUP — and, unless `reload = false`,
    /// every edit of the file — reloads it meanwhile ([`Gateway::reload`]); the result is
    /// logged. The backends stop with it (tool processes and their process groups end).
    pub async fn serve(mut self, shutdown: Option<CancellationToken>) -> Result<(), GatewayError> {
        let shutdown = match shutdown {
            Some(token) => token,
            None => mcpwire_server::wires::shutdown_on_signals().map_err(GatewayError::Serve)?,
        };
        let admin = match &self.config.admin {
            Some(admin) => {
                let server = AdminServer::bind(admin.listen, self.health_probe(), shutdown.clone())
                    .await
                    .map_err(GatewayError::Serve)?;
                // The recorder is installed now: the federation's search metrics get their help.
                mcpwire_federation::describe_search_metrics();
                let calls = self.calls.clone().unwrap_or_default();
                let console = GatewayConsole::new(
                    &self.config,
                    self.federation.as_ref(),
                    self.auth.clone(),
                    calls.clone(),
                )
                .map_err(|e| GatewayError::Serve(std::io::Error::other(e.0)))?;
                let server = match console {
                    Some(c) => {
                        mcpwire_server::observe::announce(format_args!(
                            "mcpwire: console on http://{}/ui",
                            server.local_addr().map_err(GatewayError::Serve)?
                        ));
                        let c = Arc::new(c);
                        for s in &self.running {
                            if let Some(status) = &s.status {
                                c.set_status(&s.spec.name, status.clone());
                            }
                        }
                        c.set_loads(self.services.iter().map(|s| s.load.clone()).collect());
                        self.console = Some(c.clone());
                        server.with_console(c, calls)
                    }
                    None => server,
                };
                mcpwire_server::observe::announce(format_args!(
                    "mcpwire: admin on http://{} (/metrics, /healthz, /readyz)",
                    server.local_addr().map_err(GatewayError::Serve)?
                ));
                Some(tokio::spawn(server.serve()))
            }
            None => None,
        };
        let http_threads = self
            .config
            .server
            .http_threads
            .unwrap_or_else(runtime_workers);
        let listeners: Vec<_> = self
            .config
            .listeners
            .iter()
            .zip(&self.services)
            .map(|(l, s)| (s.clone(), l.wire(http_threads)))
            .collect();
        let serving = mcpwire_server::wires::serve_listeners(listeners, Some(shutdown.clone()));
        let served = match self.reload_triggers(&shutdown) {
            None => serving.await,
            Some(triggers) => {
                let reloading = async {
                    loop {
                        triggers.notified().await;
                        self.reload_logged().await;
                    }
                };
                tokio::select! {
                    served = serving => served,
                    never = reloading => never,
                }
            }
        };
        shutdown.cancel();
        if let Some(admin) = admin {
            admin.abort();
        }
        let processes = self
            .running
            .iter()
            .any(|m| matches!(m.spec.source, BackendSource::Process(_)));
        drop(self);
        if processes {
            // Give the supervisors a moment to end the process groups politely.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        served.map_err(GatewayError::Serve)
    }

    /// What asks for a reload: SIGHUP, and edits of the configuration file (debounced)
    /// unless `reload = false`. `None` without a configuration file or a federation.
    fn reload_triggers(&self, shutdown: &CancellationToken) -> Option<Arc<Notify>> {
        let Origin::File { path, .. } = &self.config.origin else {
            return None;
        };
        self.federation.as_ref()?;
        let triggers = Arc::new(Notify::new());
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(mut hup) => {
                let (tx, stop) = (triggers.clone(), shutdown.clone());
                tokio::spawn(async move {
                    loop {
                        tokio::select! {
                            _ = stop.cancelled() => return,
                            got = hup.recv() => match got {
                                Some(()) => tx.notify_one(),
                                None => return,
                            },
                        }
                    }
                });
            }
            Err(e) => tracing::warn!("cannot reload on SIGHUP: {e}"),
        }
        if self.config.server.reload {
            let tx = triggers.clone();
            mcpwire_process::watch::watch_file(
                path,
                RELOAD_DEBOUNCE,
                shutdown.clone(),
                move || {
                    tx.notify_one();
                    true
                },
            );
        }
        Some(triggers)
    }

    /// Reloads and says how it went: applied changes on stderr, a refused edit as an error.
    async fn reload_logged(&mut self) {
        let file = match &self.config.origin {
            Origin::File { path, .. } => path.display().to_string(),
            Origin::Flags(_) => "the configuration".into(),
        };
        let outcome = match self.reload().await {
            Ok(plan) => {
                mcpwire_server::observe::announce(format_args!("mcpwire: reloaded {file}: {plan}"));
                let mut said = plan.to_string();
                if !plan.ignored.is_empty() {
                    tracing::warn!(
                        "{file}: changed {} are applied at the next start only",
                        plan.ignored.join(", ")
                    );
                    said += &format!("; at the next start only: {}", plan.ignored.join(", "));
                }
                Ok(said)
            }
            Err(e) => {
                tracing::error!(
                    "{file}: edit refused, still serving the previous configuration: {e}"
                );
                Err(e.to_string())
            }
        };
        if let Some(console) = &self.console {
            console.reloaded(&self.config, outcome);
        }
    }

    /// Reads the configuration file again and applies it ([`Gateway::apply`]).
    pub async fn reload(&mut self) -> Result<ReloadPlan, GatewayError> {
        let Origin::File { path, .. } = &self.config.origin else {
            return Err(self
                .config
                .error_at(
                    &KeyPath::root(),
                    "only a configuration file can be reloaded",
                )
                .into());
        };
        let mut next = GatewayConfig::load(path)?;
        // What the command line added to the file is added again.
        next.add(self.config.additions.clone())?;
        self.apply(next).await
    }

    /// Applies the backends of `next` while serving: new and changed backends are started
    /// first (a failure refuses the whole edit, nothing changes), then removed backends
    /// leave the federation, changed ones replace theirs and new ones join; sessions stay
    /// and are told which lists changed. A changed `[auth]` (still on), `[policy]` or
    /// `[limits]` applies to the requests and connections that start afterwards.
    /// Listeners, server options, views and turning authentication on or off apply at the
    /// next start (the plan lists them as ignored). Backends that did not start before are
    /// tried again; still failing, they stay out without refusing the edit.
    pub async fn apply(&mut self, next: GatewayConfig) -> Result<ReloadPlan, GatewayError> {
        let Some(fed) = self.federation.clone() else {
            return Err(self
                .config
                .error_at(
                    &KeyPath::root(),
                    "a gateway without a federation cannot reload",
                )
                .into());
        };
        next.validate()?;
        let down: Vec<String> = self.down.iter().map(|(n, _)| n.clone()).collect();
        let plan = plan(&self.config, &next, &down);
        // The new verifiers are built (key files read, a JWKS fetched) before anything
        // changes: an `[auth]` that cannot be used refuses the whole edit.
        let next_auth = match plan.auth {
            true => crate::access::authenticator(&next).await?,
            false => None,
        };
        let fresh: Vec<&BackendSpec> = plan
            .add
            .iter()
            .chain(&plan.restart)
            .chain(&plan.retry)
            .collect();
        for spec in &fresh {
            check_supported(&next, spec, &self.natives)?;
        }
        let starting = fresh
            .iter()
            .map(|spec| backends::start(spec, &next.server, &self.natives, &self.consents));
        let mut started: HashMap<String, Started> = HashMap::new();
        let mut still_down = Vec::new();
        for (spec, result) in fresh.iter().zip(join_all(starting).await) {
            match result {
                Ok(s) => {
                    started.insert(spec.name.clone(), s);
                }
                Err(f) if plan.retry.iter().any(|r| r.name == spec.name) => {
                    tracing::error!("{f}; still serving without it");
                    still_down.push((spec.name.clone(), f.reason));
                }
                Err(f) => return Err(f.into()),
            }
        }
        for name in &plan.remove {
            if self.running.iter().any(|s| &s.spec.name == name) {
                fed.replace_member(name, None)
                    .await
                    .map_err(|e| federation_error(&next, e))?;
                self.running.retain(|s| &s.spec.name != name);
            }
            self.down.retain(|(n, _)| n != name);
            self.config.backends.retain(|b| &b.name != name);
        }
        let mut joining: Vec<Started> = plan
            .rejoin
            .iter()
            .filter_map(|spec| {
                let running = self.running.iter().find(|s| s.spec.name == spec.name)?;
                Some(Started {
                    spec: spec.clone(),
                    ..running.clone()
                })
            })
            .collect();
        joining.extend(
            plan.restart
                .iter()
                .chain(&plan.retry)
                .chain(&plan.add)
                .filter_map(|spec| started.remove(&spec.name)),
        );
        // Renames may depend on each other's order: apply what fits, then the rest again,
        // until everything is applied or a pass makes no progress.
        while !joining.is_empty() {
            let before = joining.len();
            let mut refused = Vec::new();
            let mut last_error = None;
            for s in std::mem::take(&mut joining) {
                match fed.replace_member(&s.spec.name, Some(member(&s))).await {
                    Ok(()) => self.joined(s),
                    Err(e) => {
                        last_error = Some(e);
                        refused.push(s);
                    }
                }
            }
            if let Some(e) = last_error
                && refused.len() == before
            {
                return Err(federation_error(&next, e));
            }
            joining = refused;
        }
        for (name, _) in &still_down {
            if let (Some(old), Some(new)) = (
                self.config.backends.iter_mut().find(|b| &b.name == name),
                next.backend(name),
            ) {
                *old = new.clone();
            }
        }
        self.down
            .retain(|(n, _)| !still_down.iter().any(|(d, _)| d == n));
        self.down.extend(still_down);
        // Backends that stayed read their descriptions again (an OpenAPI document).
        for s in &self.running {
            if let Some(reread) = &s.reread
                && !fresh.iter().any(|f| f.name == s.spec.name)
            {
                reread();
            }
        }
        self.apply_sections(&plan, &next, &fed, next_auth.as_deref());
        // The console's admin credentials follow the file (`GatewayConsole::reloaded`).
        if let (Some(admin), Some(n)) = (&mut self.config.admin, &next.admin) {
            admin.console_keys = n.console_keys.clone();
            admin.console_scope = n.console_scope.clone();
        }
        if let Origin::File { .. } = next.origin {
            self.config.origin = next.origin;
        }
        Ok(plan)
    }

    /// Applies the changed `[auth]`, `[policy]` and `[limits]` of `next` to the requests and
    /// connections that start from now on; sessions stay.
    fn apply_sections(
        &mut self,
        plan: &ReloadPlan,
        next: &GatewayConfig,
        fed: &Federation,
        next_auth: Option<&Authenticator>,
    ) {
        if let (Some(current), Some(new)) = (&self.auth, next_auth) {
            current.replace(new);
            self.config.auth = next.auth.clone();
        }
        if plan.policy {
            fed.set_policy(next.policy.clone().unwrap_or_default());
            self.config.policy = next.policy.clone();
        }
        if plan.limits {
            self.rate_limits = self.rate_limits_of(next);
            if let Some(c) = &self.connections {
                c.set_per_ip(next.limits.as_ref().and_then(|l| l.connections_per_ip));
            }
            self.config.limits = next.limits.clone();
        }
    }

    /// Records that `s` is serving (in place of its namesake, or after the others).
    fn joined(&mut self, s: Started) {
        let name = s.spec.name.clone();
        if let (Some(console), Some(status)) = (&self.console, &s.status) {
            console.set_status(&name, status.clone());
        }
        match self.config.backends.iter_mut().find(|b| b.name == name) {
            Some(b) => *b = s.spec.clone(),
            None => self.config.backends.push(s.spec.clone()),
        }
        match self.running.iter_mut().find(|r| r.spec.name == name) {
            Some(r) => *r = s,
            None => self.running.push(s),
        }
        self.down.retain(|(n, _)| n != &name);
    }
}

/// The catalog mode `listener` shows: its own, its view's, or the server's.
fn catalog_mode(config: &GatewayConfig, listener: &crate::listen::ListenerSpec) -> CatalogMode {
    let view = listener.options.view.as_deref();
    let spec = view.and_then(|n| config.views.iter().find(|v| v.name == n));
    listener
        .options
        .catalog
        .or(spec.and_then(|v| v.catalog))
        .unwrap_or(config.server.catalog)
}

/// The listeners' URLs, as the live calls show where a call came in.
fn listeners_label<'a>(listeners: impl Iterator<Item = &'a crate::listen::ListenerSpec>) -> String {
    listeners.map(|l| l.url()).collect::<Vec<_>>().join(", ")
}

/// Whether `config` comes from a file, and so may be reloaded.
fn reloadable(config: &GatewayConfig) -> bool {
    matches!(config.origin, Origin::File { .. })
}

/// A configuration error when the configuration asks for what this build cannot serve.
fn check_supported(
    config: &GatewayConfig,
    spec: &BackendSpec,
    natives: &Natives,
) -> Result<(), ConfigError> {
    backends::supported(spec, natives).map_err(|(key, reason)| {
        let at = if key.is_empty() {
            spec.key.clone()
        } else {
            spec.key.key(key)
        };
        config.error_at(&at, reason)
    })
}

/// The longest wait between two tries of a backend that is down.
const LATE_RETRY_MAX: Duration = Duration::from_secs(10);

/// A backend that failed to start with `f`, as a member that is down and starts itself
/// when the federation lists it again (`late.rs`).
fn late_started(
    spec: &BackendSpec,
    server: &ServerOptions,
    natives: &Natives,
    consents: &Arc<PendingConsents>,
    f: &StartFailure,
) -> (Started, Arc<LateBackend>) {
    let (spec2, server, natives, consents) = (
        spec.clone(),
        server.clone(),
        natives.clone(),
        consents.clone(),
    );
    let start: crate::late::Starter = Arc::new(move || {
        let (spec, server, natives, consents) = (
            spec2.clone(),
            server.clone(),
            natives.clone(),
            consents.clone(),
        );
        Box::pin(async move { backends::start(&spec, &server, &natives, &consents).await })
    });
    let backend = LateBackend::new(&spec.name, f, start);
    let started = Started {
        spec: spec.clone(),
        backend: backend.clone(),
        server_info: Implementation::new(spec.name.clone(), "unknown"),
        instructions: None,
        reread: None,
        status: Some(backend.status()),
    };
    (started, backend)
}

/// How a started backend joins the federation.
fn member(s: &Started) -> Member {
    let options = &s.spec.member;
    Member {
        name: s.spec.name.clone(),
        backend: s.backend.clone(),
        filter: MemberFilter {
            include: options.include.clone(),
            exclude: options.exclude.clone(),
        },
        renames: options.rename.clone(),
        fail_mode: options.fail.into(),
        instructions: s.instructions.clone(),
    }
}

/// A federation's refusal: a fail-closed member that cannot list is a start failure; the
/// rest are configuration errors.
fn federation_error(config: &GatewayConfig, e: FederationError) -> GatewayError {
    match e {
        FederationError::MemberUnavailable { member, reason } => StartFailure {
            backend: member,
            reason: format!("cannot list what it offers (fail = \"closed\"): {reason}"),
            unsupported: false,
        }
        .into(),
        other => config
            .error_at(&KeyPath::root().key("backends"), other.to_string())
            .into(),
    }
}

/// The worker threads of the runtime serving the gateway: what HTTP listeners serve on
/// threads of their own by default (`[server] http_threads`) — one per worker, so each
/// connection stays on one core; 1 on a single-threaded runtime (served on it).
fn runtime_workers() -> usize {
    let runtime = tokio::runtime::Handle::current();
    match runtime.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::CurrentThread => 1,
        _ => runtime.metrics().num_workers(),
    }
}
