//! The per-call stack of every listener, built here once from the configuration (and again
//! on a reload that changes it). A call meets, from the outside in:
//!
//! 1. the listener's admission — connections per client IP ([`ConnectionLimits`]), and for a
//!    TLS listener the handshake;
//! 2. authentication — the `[auth]` authenticator as the listener's `Service::auth`
//!    (`access.rs`), unless the listener opts out (`auth = false`) or is stdio;
//! 3. the session's own parts — where its sessions live in a replica set (`[cluster]`,
//!    `cluster::in_cluster`) and the pages served beside the endpoint (the OAuth redirect);
//! 4. in the driver, for every call: metrics and the request span (`mcpwire-server`'s
//!    `Calls`);
//! 5. the router and its tasks layer;
//! 6. in `search` catalog mode, the meta-tools (`SearchCatalog`: `search_tools`,
//!    `call_tool`, the session's disclosed tools);
//! 7. rate limits ([`Limited`], `[limits]`): inside the router, so a call a task runs is
//!    counted once, and a forwarded call keeps its fast path; inside the meta-tools, so
//!    `call_tool` counts as the tool it calls;
//! 8. policy and views — the federation's subset for the caller (`[policy]`, `view = …`),
//!    then the federation and the member that owns the tool.
//!
//! [`Shared::catalog`] builds the inner part (5–8) once per catalog a listener can show
//! (the whole catalog or a view, in one catalog mode); [`Shared::listener`] adds one listener's outer parts
//! (1–3) to it.

use crate::recorded::{Recorded, RecordedAuth};
use mcpwire_server::admin::console::calls::CallLog;
use std::sync::{Arc, Weak};

use mcpwire_federation::{CatalogMode, Federation, SearchCatalog, View};
use mcpwire_model::types::Implementation;
use mcpwire_proto_mcp::ProtoToolSchemas;
use mcpwire_router::{Backend, Router, TaskConfig};
use mcpwire_server::limits::ConnectionLimits;
use mcpwire_server::{HttpRoute, Service};

use crate::auth::Authenticator;
use crate::cluster::Cluster;
use crate::config::{GatewayConfig, ServerOptions};
use crate::error::ConfigError;
use crate::key_path::KeyPath;
use crate::limits::{Limited, SharedRateLimits};
use crate::listen::ListenerSpec;

/// The catalog a listener shows: the whole federation's or a view's.
#[derive(Clone, Copy)]
pub(crate) enum Shown<'a> {
    /// The whole catalog.
    Federation(&'a Arc<Federation>),
    /// A view of it.
    View(&'a Arc<View>),
}

/// What every listener's stack shares: built from the configuration by the gateway.
pub(crate) struct Shared<'a> {
    /// The configuration.
    pub(crate) config: &'a GatewayConfig,
    /// `[limits]`'s call rates (reloadable in place).
    pub(crate) rate_limits: Option<&'a SharedRateLimits>,
    /// `[auth]`'s authenticator (reloadable in place).
    pub(crate) auth: Option<&'a Arc<Authenticator>>,
    /// `[limits] connections_per_ip`, one count for every network listener.
    pub(crate) connections: Option<&'a Arc<ConnectionLimits>>,
    /// `[cluster]`: this gateway as one replica of several.
    pub(crate) cluster: Option<&'a Arc<Cluster>>,
    /// Pages every HTTP listener serves beside its endpoint (the OAuth redirect).
    pub(crate) pages: Vec<HttpRoute>,
    /// The console's live calls, when there is a console.
    pub(crate) calls: Option<&'a Arc<CallLog>>,
    /// Where the live calls look up a tool's backend (none: one backend served alone).
    pub(crate) federation: Weak<Federation>,
}

impl Shared<'_> {
    /// The inner stack over `shown` (the federation or a view) in catalog mode `mode`:
    /// rate limits around it, in `search` mode the meta-tools around those (so `call_tool`
    /// is limited as the tool it calls), then [`Shared::catalog_of`]'s router and options.
    /// `via` names the listeners that show it (the live calls' listener column).
    pub(crate) fn catalog(
        &self,
        shown: Shown<'_>,
        mode: CatalogMode,
        info: Implementation,
        instructions: String,
        via: &str,
    ) -> Result<Service, ConfigError> {
        let backend: Arc<dyn Backend> = match shown {
            Shown::Federation(f) => f.clone(),
            Shown::View(v) => v.clone(),
        };
        let limited = self.limited(backend, via);
        let (backend, instructions): (Arc<dyn Backend>, String) = match (mode, shown) {
            (CatalogMode::Full, _) => (limited, instructions),
            (CatalogMode::Search, Shown::Federation(f)) => (
                f.search_catalog(limited),
                SearchCatalog::instructions(&instructions),
            ),
            (CatalogMode::Search, Shown::View(v)) => (
                v.search_catalog(limited),
                SearchCatalog::instructions(&instructions),
            ),
        };
        self.routed(backend, info, Some(instructions))
    }

    /// The inner stack over the one backend served as itself: rate limits, then the
    /// router and options of [`Shared::routed`].
    pub(crate) fn catalog_of(
        &self,
        backend: Arc<dyn Backend>,
        info: Implementation,
        instructions: Option<String>,
        via: &str,
    ) -> Result<Service, ConfigError> {
        let backend = self.limited(backend, via);
        self.routed(backend, info, instructions)
    }

    /// `backend` behind `[limits]`' call rates, when there are any, and the console's
    /// recording (as reached through `via`) when there is a console.
    fn limited(&self, backend: Arc<dyn Backend>, via: &str) -> Arc<dyn Backend> {
        let backend: Arc<dyn Backend> = match self.rate_limits {
            Some(limits) => Arc::new(Limited::shared(backend, limits.clone())),
            None => backend,
        };
        match self.calls {
            Some(log) => Arc::new(Recorded::new(
                backend,
                log.clone(),
                Arc::from(via),
                self.federation.clone(),
                Arc::from(self.config.backends.first().map_or("", |b| b.name.as_str())),
            )),
            None => backend,
        }
    }

    /// The router with tasks over `backend`, the session and codec limits and the
    /// proto-mcp schemas of `[server]`.
    fn routed(
        &self,
        backend: Arc<dyn Backend>,
        info: Implementation,
        instructions: Option<String>,
    ) -> Result<Service, ConfigError> {
        let ServerOptions {
            max_message_bytes,
            max_in_flight,
            busy_poll,
            call_timeout,
            schema_registry,
            ..
        } = &self.config.server;
        let router = Router::new(backend).with_tasks(TaskConfig::default());
        let mut service = Service::new(router, info, instructions);
        service.limits.max_message_bytes = *max_message_bytes;
        service.busy_poll = *busy_poll;
        let limits = &mut Arc::make_mut(&mut service.config).limits;
        limits.max_in_flight = *max_in_flight;
        limits.request_timeout = *call_timeout;
        if let Some(dir) = schema_registry {
            let converter =
                mcpwire_server::proto_mcp::converter_with_registry(dir).map_err(|e| {
                    self.config.error_at(
                        &KeyPath::root().key("server").key("schema_registry"),
                        format!("loading the schema registry {}: {e}", dir.display()),
                    )
                })?;
            service.proto = Arc::new(ProtoToolSchemas::new(converter));
        }
        Ok(service)
    }

    /// Listener `listener`'s service over `catalog`: its own outer parts.
    pub(crate) fn listener(&self, catalog: &Service, listener: &ListenerSpec) -> Service {
        let mut service = catalog.clone();
        if let Some(auth) = self.auth
            && !listener.is_stdio()
            && listener.options.auth != Some(false)
        {
            service = match self.calls {
                Some(log) => service.with_auth(Arc::new(RecordedAuth::new(
                    auth.clone(),
                    log.clone(),
                    Arc::from(listener.url()),
                ))),
                None => service.with_auth(auth.clone()),
            };
        }
        service.connections = self.connections.cloned();
        if self.calls.is_some() {
            // The console shows each listener's sessions, connections and stateless
            // requests, and names it as each call's listener.
            service.load = Some(Arc::new(mcpwire_server::ListenerLoad::new(listener.url())));
        }
        service.http_routes.extend(self.pages.iter().cloned());
        match self.cluster {
            Some(cluster) => crate::cluster::in_cluster(service, cluster.clone()),
            None => service,
        }
    }
}
