//! [`Federation`]: the members, their health, the current catalog, and the `Backend` that
//! serves it.

use arc_swap::ArcSwap;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use mcpwire_model::types::{
    Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{BackendEvent, McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, TASKS_EXTENSION, ToolRouting,
};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::task::AbortHandle;

use crate::catalog::{Catalog, Everything, MemberInput, Scope, Settings};
use crate::config::{FailMode, FederationConfig, FederationError, Member};
use crate::dispatch;
use crate::listing::{self, Kind, ListLimits, Listing};
use crate::pages;
use crate::policy::Policy;
use crate::pump::{self, Follow};
use crate::report::{CatalogReport, MemberHealth};
use crate::subset::Subsets;
use crate::tool_index::{SearchStatus, ToolIndex};
use crate::uri::member_tag;

/// Events buffered for each subscriber (session) before the slowest loses old ones.
const EVENT_CAPACITY: usize = 256;

/// A backend composing named member backends into one catalog.
///
/// Built with [`Federation::new`], which lists every member concurrently; from then on a
/// member's `list_changed` re-lists only that member, and one `list_changed` is forwarded
/// when the merged list really changed. Calls go to the one member that owns the name, URI
/// or task id (an owner index: nothing ever fans out), with the caller's `CallCtx` and raw
/// arguments. See the crate documentation for the naming, URI and task id rules.
pub struct Federation {
    /// Itself, for the tasks and views it hands out.
    pub(crate) me: Weak<Federation>,
    settings: Settings,
    limits: ListLimits,
    retry_initial: Duration,
    retry_max: Duration,
    server_info: Implementation,
    info: BackendInfo,
    state: Mutex<State>,
    catalog: ArcSwap<Catalog>,
    events: broadcast::Sender<BackendEvent>,
    /// Who sees what (see `policed.rs`); replaced whole by [`Federation::set_policy`].
    policy: ArcSwap<Policy>,
    /// How many times the policy was replaced (views announce list changes on a change).
    policy_epoch: AtomicU64,
    /// The policy's subsets of the current catalog, per audience.
    pub(crate) subsets: Subsets,
    /// The search index over the exposed tools, updated with every catalog.
    tool_index: Arc<RwLock<ToolIndex>>,
}

impl std::fmt::Debug for Federation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Federation")
            .field("name", &self.info.name)
            .field("members", &self.member_names())
            .finish()
    }
}

struct State {
    slots: Vec<Slot>,
    next_id: u64,
    generation: u64,
}

/// A member and what the federation knows of it. Replacing a member makes a new slot
/// (a new id), so late results for the old one are recognized and dropped.
struct Slot {
    id: u64,
    member: Member,
    tag: String,
    /// The last good listing (kept while a fail-closed member is unavailable).
    listing: Option<Arc<Listing>>,
    health: MemberHealth,
    pump: Option<AbortHandle>,
}

impl State {
    fn slot(&self, id: u64) -> Option<&Slot> {
        self.slots.iter().find(|s| s.id == id)
    }

    fn slot_mut(&mut self, id: u64) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.id == id)
    }
}

impl Drop for Federation {
    fn drop(&mut self) {
        for slot in &self.lock().slots {
            if let Some(p) = &slot.pump {
                p.abort();
            }
        }
    }
}

impl Federation {
    /// Checks `config`, lists every member (concurrently, each within `list_timeout`) and
    /// starts following their events. A fail-open member that cannot list is left out
    /// with a warning (and listed again with backoff); a fail-closed one fails the build.
    /// Must run inside a tokio runtime.
    pub async fn new(config: FederationConfig) -> Result<Arc<Federation>, FederationError> {
        config.validate()?;
        let limits = ListLimits {
            timeout: config.list_timeout,
            max_items: config.max_items_per_member,
        };
        // Listen first, so that no change between the listing and the listening is lost.
        let receivers: Vec<_> = config.members.iter().map(|m| m.backend.events()).collect();
        let listings = futures::future::join_all(
            config
                .members
                .iter()
                .map(|m| list_member(&m.backend, limits)),
        )
        .await;
        for (m, l) in config.members.iter().zip(&listings) {
            if let (Err(reason), FailMode::FailClosed, false) =
                (l, m.fail_mode, config.wait_for_required)
            {
                return Err(FederationError::MemberUnavailable {
                    member: m.name.clone(),
                    reason: reason.clone(),
                });
            }
        }
        let mut tags = HashSet::new();
        let mut slots = Vec::new();
        for (id, (member, listing)) in config.members.iter().zip(listings).enumerate() {
            let tag = member_tag(&member.name, &tags);
            tags.insert(tag.clone());
            let (listing, health) = settle(member, listing, 0);
            slots.push(Slot {
                id: id as u64,
                member: member.clone(),
                tag,
                listing,
                health,
                pump: None,
            });
        }
        let capabilities = merged_capabilities(&config.members, config.advertise_all);
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let settings = Settings {
            prefix: config.prefix,
            separator: config.separator.clone(),
            page_size: config.page_size,
        };
        let empty = Catalog::build(0, &[], &settings);
        let fed = Arc::new_cyclic(|me| Federation {
            me: me.clone(),
            settings,
            limits,
            retry_initial: config.retry_initial,
            retry_max: config.retry_max,
            info: BackendInfo {
                name: config.server_info.name.clone(),
                capabilities,
            },
            server_info: config.server_info,
            policy: ArcSwap::from_pointee(config.policy),
            policy_epoch: AtomicU64::new(0),
            subsets: Subsets::default(),
            state: Mutex::new(State {
                next_id: slots.len() as u64,
                slots,
                generation: 0,
            }),
            catalog: ArcSwap::from_pointee(empty),
            events,
            tool_index: Arc::new(RwLock::new(ToolIndex::new(config.search_model.clone()))),
        });
        {
            let mut st = fed.lock();
            fed.publish(&mut st);
            for (slot, rx) in st.slots.iter_mut().zip(receivers) {
                slot.pump = Some(fed.spawn_pump(slot.id, &slot.member.name, rx));
            }
        }
        Ok(fed)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current catalog.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        self.catalog.load_full()
    }

    /// The current catalog, borrowed (what a call reads without touching its count).
    pub(crate) fn catalog_now(&self) -> arc_swap::Guard<Arc<Catalog>> {
        self.catalog.load()
    }

    /// The policy in force.
    pub(crate) fn policy(&self) -> arc_swap::Guard<Arc<Policy>> {
        self.policy.load()
    }

    /// How many times the policy was replaced.
    pub(crate) fn policy_epoch(&self) -> u64 {
        self.policy_epoch.load(Ordering::Acquire)
    }

    /// Applies `policy` from now on (hot reload of `[policy]`): every list and call that
    /// starts after it — the federation's and its views' — follows it; calls under way
    /// finish under the old one; sessions stay and are told every list may have changed.
    pub fn set_policy(&self, policy: Policy) {
        let mut st = self.lock();
        self.policy.store(Arc::new(policy));
        self.policy_epoch.fetch_add(1, Ordering::AcqRel);
        // A new generation: the per-audience subsets built under the old policy are
        // dropped (the federation's and each view's caches are keyed by generation).
        self.publish(&mut st);
        for event in [
            BackendEvent::ToolsListChanged,
            BackendEvent::PromptsListChanged,
            BackendEvent::ResourcesListChanged,
        ] {
            let _ = self.events.send(event);
        }
    }

    /// Sessions member `name` holds open for downstream sessions now
    /// ([`Backend::open_sessions`]).
    pub fn member_sessions(&self, name: &str) -> Option<usize> {
        let backend = {
            let st = self.lock();
            st.slots
                .iter()
                .find(|s| s.member.name == name)?
                .member
                .backend
                .clone()
        };
        backend.open_sessions()
    }

    /// Subscribes to the federation's events (for views).
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<BackendEvent> {
        self.events.subscribe()
    }

    /// The search index over the exposed tools.
    pub(crate) fn tool_index(&self) -> &Arc<RwLock<ToolIndex>> {
        &self.tool_index
    }

    /// What the tool search index holds: tools, bytes, and with a model its vectors.
    pub fn search_status(&self) -> SearchStatus {
        self.tool_index
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .status()
    }

    /// The page size.
    pub(crate) fn page_size(&self) -> usize {
        self.settings.page_size
    }

    /// Rebuilds the catalog from the slots, swaps it in and announces the lists that
    /// changed. Called with the state locked, so rebuilds happen in order.
    fn publish(&self, st: &mut State) {
        st.generation += 1;
        let inputs: Vec<MemberInput<'_>> = st
            .slots
            .iter()
            .map(|s| MemberInput {
                member: &s.member,
                tag: &s.tag,
                listing: s.listing.as_deref(),
                health: &s.health,
            })
            .collect();
        let new = Arc::new(Catalog::build(st.generation, &inputs, &self.settings));
        let indexed = self
            .tool_index
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .update(&self.catalog(), &new);
        if !indexed.is_empty() {
            tracing::debug!(members = ?indexed, "tool search index updated");
        }
        let old = self.catalog.swap(new.clone());
        let refusal = old.refusal != new.refusal;
        for event in pages::list_changes(&old.pages(), &new.pages(), refusal) {
            let _ = self.events.send(event);
        }
    }

    /// Lists member `id` again (`kinds`, or everything it offers) and publishes the result.
    async fn relist_member(&self, id: u64, kinds: Option<&[Kind]>) {
        let (backend, partial) = {
            let st = self.lock();
            let Some(slot) = st.slot(id) else { return };
            (
                slot.member.backend.clone(),
                slot.listing.is_some() && slot.health.is_ok(),
            )
        };
        let offered = Kind::offered(&backend.info().capabilities);
        let kinds: Vec<Kind> = match kinds {
            Some(k) if partial => offered.into_iter().filter(|o| k.contains(o)).collect(),
            _ => offered,
        };
        let result = listing::list(&backend, &kinds, self.limits).await;
        let mut st = self.lock();
        let Some(slot) = st.slot_mut(id) else { return };
        let failures = match &slot.health {
            MemberHealth::Unavailable { failures, .. } => *failures,
            MemberHealth::Ok => 0,
        };
        let merged = result.map(|lists| {
            let mut l = match (&slot.listing, partial) {
                (Some(prev), true) => (**prev).clone(),
                _ => Listing::default(),
            };
            for (k, items) in lists {
                l.lists[k.index()] = items;
            }
            l
        });
        let was_ok = slot.health.is_ok();
        let (listing, health) = settle(&slot.member, merged, failures);
        if health.is_ok() && !was_ok {
            tracing::info!(member = %slot.member.name, "member is available again");
        }
        match listing {
            Some(l) => slot.listing = Some(l),
            // A fail-closed member keeps its last listing: its calls still route.
            None if slot.member.fail_mode == FailMode::FailClosed => {}
            None => slot.listing = None,
        }
        slot.health = health;
        self.publish(&mut st);
    }

    /// How long the pump of member `id` waits before listing it again: `None` while it
    /// is healthy.
    fn member_retry_delay(&self, id: u64) -> Option<Duration> {
        let st = self.lock();
        match &st.slot(id)?.health {
            MemberHealth::Ok => None,
            MemberHealth::Unavailable { failures, .. } => {
                let doublings = failures.saturating_sub(1).min(16);
                Some((self.retry_initial * 2u32.pow(doublings)).min(self.retry_max))
            }
        }
    }

    /// Forwards an event of member `name` that is not a list change: a resource update
    /// under its exposed URI, a log with the member's name in front of its logger.
    fn forward_member_event(&self, name: &str, event: BackendEvent) {
        let event = match event {
            BackendEvent::ResourceUpdated { uri } => {
                let catalog = self.catalog();
                let Some(uri) = catalog
                    .member_named(name)
                    .and_then(|m| catalog.expose_uri(m, &uri))
                else {
                    return;
                };
                BackendEvent::ResourceUpdated { uri }
            }
            BackendEvent::Log(mut entry) => {
                entry.logger = Some(match entry.logger {
                    Some(l) => format!("{name}.{l}"),
                    None => name.to_owned(),
                });
                BackendEvent::Log(entry)
            }
            other => other,
        };
        let _ = self.events.send(event);
    }

    fn spawn_pump(
        &self,
        id: u64,
        name: &str,
        rx: Option<broadcast::Receiver<BackendEvent>>,
    ) -> AbortHandle {
        tokio::spawn(pump::pump(self.me.clone(), id, name.to_owned(), rx)).abort_handle()
    }

    /// Replaces member `name` with `member` (added at the end when no member has that
    /// name), or removes it (`None`), for hot reload. The new member is listed first: a
    /// fail-closed member that cannot list is refused and the old one keeps serving.
    /// Everything else in the catalog stays; sessions stay; the lists that changed are
    /// announced with `list_changed`.
    pub async fn replace_member(
        &self,
        name: &str,
        member: Option<Member>,
    ) -> Result<(), FederationError> {
        let Some(member) = member else {
            let mut st = self.lock();
            let pos = st
                .slots
                .iter()
                .position(|s| s.member.name == name)
                .ok_or_else(|| FederationError::UnknownMember(name.to_owned()))?;
            let slot = st.slots.remove(pos);
            if let Some(p) = slot.pump {
                p.abort();
            }
            self.publish(&mut st);
            return Ok(());
        };
        member.validate()?;
        fits(&self.lock(), name, &member)?;
        let rx = member.backend.events();
        let listing = list_member(&member.backend, self.limits).await;
        if let (Err(reason), FailMode::FailClosed) = (&listing, member.fail_mode) {
            return Err(FederationError::MemberUnavailable {
                member: member.name.clone(),
                reason: reason.clone(),
            });
        }
        let mut st = self.lock();
        fits(&st, name, &member)?;
        let pos = st.slots.iter().position(|s| s.member.name == name);
        let tags: HashSet<String> = st
            .slots
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != pos)
            .map(|(_, s)| s.tag.clone())
            .collect();
        let (listing, health) = settle(&member, listing, 0);
        let id = st.next_id;
        st.next_id += 1;
        let pump = self.spawn_pump(id, &member.name, rx);
        let slot = Slot {
            id,
            tag: member_tag(&member.name, &tags),
            member,
            listing,
            health,
            pump: Some(pump),
        };
        match pos {
            Some(p) => {
                let old = std::mem::replace(&mut st.slots[p], slot);
                if let Some(p) = old.pump {
                    p.abort();
                }
            }
            None => st.slots.push(slot),
        }
        self.publish(&mut st);
        Ok(())
    }

    /// The merged catalog: every exposed item with its member and original name, renames,
    /// collisions and the members' health.
    pub fn report(&self) -> CatalogReport {
        self.catalog().report(&Everything)
    }

    /// The member behind exposed tool `exposed`, if any (the console's live calls).
    pub fn tool_member(&self, exposed: &str) -> Option<Arc<str>> {
        let catalog = self.catalog();
        let (_, entry) = catalog.kind(Kind::Tools).get(exposed)?;
        catalog
            .members
            .get(entry.member)
            .map(|m| m.name_shared.clone())
    }

    /// The members' names, in catalog order.
    pub fn member_names(&self) -> Vec<String> {
        self.lock()
            .slots
            .iter()
            .map(|s| s.member.name.clone())
            .collect()
    }

    /// Who the federation says it is: the configured `serverInfo`, its `description`
    /// naming the members behind it when the configuration left it unset.
    pub fn server_info(&self) -> Implementation {
        describe(&self.server_info, &self.catalog(), &Everything)
    }

    /// `instructions` for the model: which members are behind the federation, how their
    /// names are prefixed, and each member's own instructions under its name.
    pub fn instructions(&self) -> String {
        instructions(&self.catalog(), &Everything)
    }

    /// The configured `serverInfo`.
    pub(crate) fn configured_info(&self) -> &Implementation {
        &self.server_info
    }
}

/// Lists everything `backend` offers.
async fn list_member(backend: &Arc<dyn Backend>, limits: ListLimits) -> Result<Listing, String> {
    let kinds = Kind::offered(&backend.info().capabilities);
    let lists = listing::list(backend, &kinds, limits).await?;
    let mut l = Listing::default();
    for (k, items) in lists {
        l.lists[k.index()] = items;
    }
    Ok(l)
}

/// A listing result as the slot keeps it, logging failures.
fn settle(
    member: &Member,
    result: Result<Listing, String>,
    failures: u32,
) -> (Option<Arc<Listing>>, MemberHealth) {
    match result {
        Ok(l) => (Some(Arc::new(l)), MemberHealth::Ok),
        Err(reason) => {
            let name = &member.name;
            match member.fail_mode {
                FailMode::FailOpen => {
                    tracing::warn!(member = %name, %reason, "cannot list member; serving the catalog without it until it answers")
                }
                FailMode::FailClosed => {
                    tracing::error!(member = %name, %reason, "cannot list fail-closed member; lists answer an error until it answers")
                }
            }
            let failures = failures + 1;
            (None, MemberHealth::Unavailable { reason, failures })
        }
    }
}

/// Whether `member` can take the place of member `name`: no other member has its name,
/// and none of its renames gives a name another member's rename gives.
fn fits(st: &State, name: &str, member: &Member) -> Result<(), FederationError> {
    let others = st.slots.iter().filter(|s| s.member.name != name);
    for other in others {
        if other.member.name == member.name {
            return Err(FederationError::DuplicateMember(member.name.clone()));
        }
        for (original, exposed) in &member.renames {
            if let Some((theirs, _)) = other.member.renames.iter().find(|(_, e)| *e == exposed) {
                return Err(FederationError::RenameConflict {
                    exposed: exposed.clone(),
                    first: format!("{}/{theirs}", other.member.name),
                    second: format!("{}/{original}", member.name),
                });
            }
        }
    }
    Ok(())
}

/// The union of the members' capabilities. Lists are announced as changing (members come
/// and go); with `all`, every list is offered even when no member offers it yet.
fn merged_capabilities(members: &[Member], all: bool) -> ServerCapabilities {
    let caps: Vec<&ServerCapabilities> = members
        .iter()
        .map(|m| &m.backend.info().capabilities)
        .collect();
    let any = |f: &dyn Fn(&ServerCapabilities) -> bool| all || caps.iter().any(|c| f(c));
    let changing = || ListChangedCapability {
        list_changed: Some(true),
    };
    let merge_objects = |f: &dyn Fn(&ServerCapabilities) -> Option<&Value>| {
        let mut merged = serde_json::Map::new();
        for v in caps.iter().filter_map(|c| f(c)) {
            if let Some(o) = v.as_object() {
                for (k, v) in o {
                    merged.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        (!merged.is_empty()).then_some(Value::Object(merged))
    };
    ServerCapabilities {
        tools: any(&|c| c.tools.is_some()).then(changing),
        prompts: any(&|c| c.prompts.is_some()).then(changing),
        resources: any(&|c| c.resources.is_some()).then(|| ResourcesCapability {
            subscribe: Some(any(&|c| {
                c.resources
                    .as_ref()
                    .is_some_and(|r| r.subscribe == Some(true))
            })),
            list_changed: Some(true),
        }),
        logging: any(&|c| c.logging.is_some()).then(|| Value::Object(Default::default())),
        completions: any(&|c| c.completions.is_some()).then(|| Value::Object(Default::default())),
        tasks: caps.iter().find_map(|c| c.tasks.clone()),
        experimental: merge_objects(&|c| c.experimental.as_ref()),
        extensions: with_tasks_extension(merge_objects(&|c| c.extensions.as_ref()), all),
    }
}

/// `extensions`, with the tasks extension when `all` (a member that runs tasks itself may
/// join later, and the router in front passes its tasks through only to a federation that
/// offers the extension).
fn with_tasks_extension(extensions: Option<Value>, all: bool) -> Option<Value> {
    if !all {
        return extensions;
    }
    let mut map = match extensions {
        Some(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    map.entry(TASKS_EXTENSION)
        .or_insert_with(|| Value::Object(Default::default()));
    Some(Value::Object(map))
}

/// `info` with its description naming the members `scope` sees, unless already set.
pub(crate) fn describe(
    info: &Implementation,
    catalog: &Catalog,
    scope: &dyn Scope,
) -> Implementation {
    let mut info = info.clone();
    if info.description.is_none() {
        let names: Vec<&str> = visible_members(catalog, scope)
            .map(|(_, m)| m.name.as_str())
            .collect();
        info.description = Some(format!("mcpwire gateway to {}", names.join(", ")));
    }
    info
}

fn visible_members<'a>(
    catalog: &'a Catalog,
    scope: &'a dyn Scope,
) -> impl Iterator<Item = (usize, &'a crate::catalog::CatalogMember)> + 'a {
    catalog
        .members
        .iter()
        .enumerate()
        .filter(move |(i, _)| scope.is_everything() || scope.sees_member(*i))
}

/// The instructions for the members `scope` sees.
pub(crate) fn instructions(catalog: &Catalog, scope: &dyn Scope) -> String {
    let members: Vec<_> = visible_members(catalog, scope).collect();
    let names: Vec<String> = members
        .iter()
        .map(|(_, m)| {
            if m.listed {
                format!("`{}`", m.name)
            } else {
                format!("`{}` (unavailable)", m.name)
            }
        })
        .collect();
    let servers = if names.len() == 1 {
        "server"
    } else {
        "servers"
    };
    let mut text = format!(
        "This is an MCP gateway (mcpwire): its tools, prompts and resources come from {} {servers} behind it: {}.",
        names.len(),
        names.join(", ")
    );
    if catalog.prefixed {
        text.push_str(&format!(
            " Tool and prompt names start with the server's name and {:?}.",
            catalog.separator
        ));
    }
    for (_, m) in &members {
        if let Some(i) = m.instructions.as_deref().filter(|i| !i.trim().is_empty()) {
            text.push_str(&format!("\n\n## {}\n{}", m.name, i.trim()));
        }
    }
    text
}

impl Follow for Federation {
    fn retry_delay(&self, id: u64) -> Option<Duration> {
        self.member_retry_delay(id)
    }

    fn forward(&self, name: &str, event: BackendEvent) {
        self.forward_member_event(name, event)
    }

    fn relist<'a>(&'a self, id: u64, kinds: Option<&'a [Kind]>) -> BoxFuture<'a, ()> {
        Box::pin(self.relist_member(id, kinds))
    }
}

impl Backend for Federation {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let sight = self.sight(ctx.identity());
        dispatch::answer(&sight, &self.tool_index, ctx, req)
    }

    fn forwards_tool_calls(&self) -> bool {
        self.catalog()
            .members
            .iter()
            .any(|m| m.backend.forwards_tool_calls())
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        // The policy decides per caller, from the subset kept for the catalog generation.
        let sight = self.sight(call.ctx.identity());
        dispatch::forward_tool_call(&sight, call)
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        // Borrowed, not cloned: every call on every core reads the catalog and the
        // caller's subset, and a reference count they all bump moves between cores.
        let catalog = self.catalog_now();
        let policy = self.policy();
        if policy.is_open() {
            return dispatch::relay_route(&catalog, &Everything, name, caller);
        }
        let who = caller.identity;
        self.subsets.with_caller(
            catalog.generation,
            who,
            || policy.audience(who),
            |audience| {
                crate::subset::Subset::policed(
                    Arc::clone(&catalog),
                    &Everything,
                    &policy,
                    audience,
                    self.page_size(),
                )
            },
            |subset| dispatch::relay_route(&subset.catalog, &**subset, name, caller),
        )
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        let catalog = self.catalog();
        let (_, e) = catalog.kind(Kind::Tools).get(name)?;
        catalog.members[e.member].backend.tool_routing(&e.original)
    }

    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        Some(self.events.subscribe())
    }
}
