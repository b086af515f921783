//! [`View`]: a named subset of a federation's catalog, served as a backend of its own.
//!
//! What a view shows is decided against each catalog as it is published (cached per
//! catalog generation): its lists are paged from the visible items only, and names, URIs
//! and task ids outside it answer exactly as unknown ones do — a view never tells that
//! something exists beyond it. Its events are the federation's, filtered: a list change is
//! announced only when the view's own list changed.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use mcpwire_model::types::Implementation;
use mcpwire_model::{BackendEvent, McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, ToolRouting,
};
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::task::AbortHandle;

use crate::catalog::{Catalog, Scope};
use crate::config::ViewSpec;
use crate::dispatch;
use crate::federation::{Federation, describe, instructions};
use crate::glob::any_matches;
use crate::listing::Kind;
use crate::pages::list_changes;
use crate::report::CatalogReport;
use crate::subset::{Subset, Subsets};

/// Events buffered for each of the view's subscribers.
const EVENT_CAPACITY: usize = 256;

/// A named subset of a [`Federation`]'s catalog (see [`Federation::view`]).
pub struct View {
    /// Itself, for the search-mode catalog it hands out.
    pub(crate) me: Weak<View>,
    fed: Arc<Federation>,
    spec: ViewSpec,
    info: BackendInfo,
    current: Mutex<Option<Arc<Subset>>>,
    subsets: Subsets,
    events: OnceLock<broadcast::Sender<BackendEvent>>,
    pump: Mutex<Option<AbortHandle>>,
}

impl std::fmt::Debug for View {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("View").field("spec", &self.spec).finish()
    }
}

impl Drop for View {
    fn drop(&mut self) {
        if let Some(p) = self
            .pump
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            p.abort();
        }
    }
}

/// What the view sees of one catalog: everything of its members, plus the items its
/// globs name.
fn view_subset(catalog: Arc<Catalog>, spec: &ViewSpec, page_size: usize) -> Subset {
    let whole: Vec<bool> = catalog
        .members
        .iter()
        .map(|m| spec.members.contains(&m.name))
        .collect();
    let seed = whole.clone();
    Subset::build(catalog, page_size, seed, |kind, _, e| {
        let patterns = match kind {
            Kind::Tools => &spec.tools,
            Kind::Prompts => &spec.prompts,
            Kind::Resources | Kind::Templates => &spec.resources,
        };
        whole.get(e.member).copied().unwrap_or(false) || any_matches(patterns, &e.exposed)
    })
}

impl Federation {
    /// A named subset of the catalog served as a backend of its own. Calls outside the
    /// view answer as if the item did not exist. The view follows the catalog as it
    /// changes (and announces changes to its own lists only).
    pub fn view(&self, spec: &ViewSpec) -> Arc<View> {
        let fed = self.me.upgrade().expect("a federation is always in an Arc");
        View::new(fed, spec.clone())
    }
}

impl View {
    fn new(fed: Arc<Federation>, spec: ViewSpec) -> Arc<View> {
        let info = BackendInfo {
            name: spec.name.clone(),
            capabilities: fed.info().capabilities.clone(),
        };
        Arc::new_cyclic(|me| View {
            me: me.clone(),
            fed,
            spec,
            info,
            current: Mutex::new(None),
            subsets: Subsets::default(),
            events: OnceLock::new(),
            pump: Mutex::new(None),
        })
    }

    /// What the view sees of the current catalog (before the policy).
    pub(crate) fn scope(&self) -> Arc<Subset> {
        let catalog = self.fed.catalog();
        let mut current = self.current.lock().unwrap_or_else(PoisonError::into_inner);
        match &*current {
            Some(s) if s.catalog.generation == catalog.generation => s.clone(),
            _ => {
                let s = Arc::new(view_subset(catalog, &self.spec, self.fed.page_size()));
                *current = Some(s.clone());
                s
            }
        }
    }

    /// The federation the view shows part of.
    pub(crate) fn federation(&self) -> &Federation {
        &self.fed
    }

    /// The policy's subsets of the view, per audience.
    pub(crate) fn subsets(&self) -> &Subsets {
        &self.subsets
    }

    /// The view's spec.
    pub fn spec(&self) -> &ViewSpec {
        &self.spec
    }

    /// The part of the federation's report this view sees.
    pub fn report(&self) -> CatalogReport {
        let s = self.scope();
        s.catalog.report(&*s)
    }

    /// `serverInfo` for the view: the federation's, under the view's name.
    pub fn server_info(&self) -> Implementation {
        let s = self.scope();
        let mut info = self.fed.configured_info().clone();
        info.name = self.spec.name.clone();
        describe(&info, &s.catalog, &*s)
    }

    /// `instructions` naming the members the view shows.
    pub fn instructions(&self) -> String {
        let s = self.scope();
        instructions(&s.catalog, &*s)
    }
}

impl Backend for View {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let sight = self.sight(ctx.identity());
        dispatch::answer(&sight, self.fed.tool_index(), ctx, req)
    }

    fn forwards_tool_calls(&self) -> bool {
        self.fed.forwards_tool_calls()
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        let sight = self.sight(call.ctx.identity());
        dispatch::forward_tool_call(&sight, call)
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        let sight = self.sight(caller.identity);
        dispatch::relay_route(&sight.catalog, sight.scope(), name, caller)
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        let s = self.scope();
        let (i, e) = s.catalog.kind(Kind::Tools).get(name)?;
        if !s.sees(Kind::Tools, i) {
            return None;
        }
        s.catalog.members[e.member]
            .backend
            .tool_routing(&e.original)
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        let tx = self.events.get_or_init(|| {
            let (tx, _) = broadcast::channel(EVENT_CAPACITY);
            // The pump starts with the first subscriber, inside the runtime serving it.
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                let rx = self.fed.subscribe();
                let first = (self.scope(), self.fed.policy_epoch());
                let task = rt.spawn(pump(self.me.clone(), rx, tx.clone(), first));
                *self.pump.lock().unwrap_or_else(PoisonError::into_inner) =
                    Some(task.abort_handle());
            }
            tx
        });
        Some(tx.subscribe())
    }
}

/// Filters the federation's events for the view, starting from what was announced when
/// the first session subscribed (`first`: the view's scope and the policy epoch then).
async fn pump(
    view: Weak<View>,
    mut rx: broadcast::Receiver<BackendEvent>,
    tx: broadcast::Sender<BackendEvent>,
    first: (Arc<Subset>, u64),
) {
    let (mut announced, mut epoch) = first;
    loop {
        let event = rx.recv().await;
        let Some(view) = view.upgrade() else { return };
        let s = view.scope();
        // The policy was replaced: what each caller sees may have changed whatever the
        // view's own lists did, so every list is announced.
        let now = view.federation().policy_epoch();
        if now != epoch && matches!(event, Ok(BackendEvent::ToolsListChanged)) {
            epoch = now;
            for event in [
                BackendEvent::ToolsListChanged,
                BackendEvent::PromptsListChanged,
                BackendEvent::ResourcesListChanged,
            ] {
                let _ = tx.send(event);
            }
            announced = s;
            continue;
        }
        let forward = match event {
            Err(RecvError::Closed) => return,
            Ok(
                BackendEvent::ToolsListChanged
                | BackendEvent::PromptsListChanged
                | BackendEvent::ResourcesListChanged,
            )
            | Err(RecvError::Lagged(_)) => {
                let refusal = announced.catalog.refusal != s.catalog.refusal;
                for event in list_changes(&announced.pages, &s.pages, refusal) {
                    let _ = tx.send(event);
                }
                announced = s;
                continue;
            }
            Ok(BackendEvent::ResourceUpdated { uri }) => s
                .catalog
                .route_uri(&uri, &*s)
                .map(|_| BackendEvent::ResourceUpdated { uri }),
            Ok(BackendEvent::Log(entry)) => {
                // Logs carry their member's name first (see the federation's pump).
                let member = entry
                    .logger
                    .as_deref()
                    .map(|l| l.split('.').next().unwrap_or(l));
                let shown = member
                    .is_none_or(|m| s.catalog.member_named(m).is_some_and(|i| s.sees_member(i)));
                shown.then_some(BackendEvent::Log(entry))
            }
        };
        if let Some(event) = forward {
            let _ = tx.send(event);
        }
    }
}
