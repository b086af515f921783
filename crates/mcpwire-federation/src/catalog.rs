//! The merged catalog: built (purely) from the members' listings, with the owner indexes
//! that route every call to exactly one member, and the pages served for `*/list`.
//!
//! Rebuilt whole on every change (a member re-listed, replaced, failing or recovering):
//! merging is cheap CPU work and collisions can shift, while the expensive part — listing —
//! is done only for the member that changed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use mcpwire_model::Raw;
use mcpwire_router::{Backend, offers_tasks_extension};
use mcpwire_wire::json_frame;
use serde_json::Value;

use crate::config::{FailMode, Member, PrefixMode};
use crate::listing::{Item, Kind, Listing};
use crate::naming::{self, Candidate, Collision, NameOrigin};
use crate::pages::paginate;
use crate::report::{CatalogReport, ExposedItem, KindCollision, MemberHealth, MemberReport};
use crate::uri::{self, TemplateMatcher};

/// How names are formed and lists paged.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub prefix: PrefixMode,
    pub separator: String,
    pub page_size: usize,
}

/// One member as the catalog is built from it.
pub(crate) struct MemberInput<'a> {
    pub member: &'a Member,
    pub tag: &'a str,
    pub listing: Option<&'a Listing>,
    pub health: &'a MemberHealth,
}

/// A member as the catalog knows it.
pub(crate) struct CatalogMember {
    pub name: String,
    /// The name again, cheap to hand out per call (a relayed call's route carries it).
    pub name_shared: Arc<str>,
    pub tag: String,
    pub backend: Arc<dyn Backend>,
    pub fail_mode: FailMode,
    pub health: MemberHealth,
    pub instructions: Option<String>,
    /// Whether its items are in the catalog.
    pub listed: bool,
    /// Whether it creates tasks of its own (its results may carry task ids).
    pub offers_tasks: bool,
    /// Items its filter left out.
    pub filtered_out: usize,
    /// Whether a URI of its (resource or template) is exposed as another one: its tools'
    /// results and `_meta.ui.resourceUri` are then rewritten to match.
    pub renamed_uris: bool,
}

/// One exposed item.
pub(crate) struct Entry {
    pub member: usize,
    pub original: String,
    pub exposed: String,
    pub origin: NameOrigin,
    /// The item as listed, under its exposed name or URI.
    pub item: Item,
    /// Templates: the matcher of the exposed `uriTemplate`.
    pub matcher: Option<TemplateMatcher>,
    /// How a relayed call of it names it upstream (tools).
    pub relayed_as: RelayedAs,
}

/// How a relayed `tools/call` names its tool to the member serving it, decided once per
/// catalog generation.
pub(crate) enum RelayedAs {
    /// As exposed: the name is the member's own.
    Exposed,
    /// By the member's own name, written into the frame in place of the exposed one.
    Original(Arc<str>),
    /// Not relayed: the member's own name would need escapes in JSON.
    Never,
}

/// The exposed items of one kind.
#[derive(Default)]
pub(crate) struct KindCatalog {
    pub entries: Vec<Entry>,
    /// Exposed name (or URI, `uriTemplate`) → entry; foldhash (seeded per process): looked
    /// up by a client-given name on every call.
    pub index: HashMap<String, usize, foldhash::fast::RandomState>,
    /// `(member, original)` → entry.
    pub by_original: HashMap<(usize, String), usize>,
    pub collisions: Vec<Collision>,
    pub pages: Arc<Vec<Raw>>,
}

impl KindCatalog {
    pub(crate) fn get(&self, exposed: &str) -> Option<(usize, &Entry)> {
        self.index.get(exposed).map(|&i| (i, &self.entries[i]))
    }
}

/// What a caller may see of the catalog: everything (the federation) or a view's subset.
pub(crate) trait Scope: Send + Sync {
    /// Whether this is the whole catalog.
    fn is_everything(&self) -> bool;
    /// Whether entry `entry` of `kind` is visible.
    fn sees(&self, kind: Kind, entry: usize) -> bool;
    /// Whether anything of member `member` is visible.
    fn sees_member(&self, member: usize) -> bool;
}

/// The whole catalog.
pub(crate) struct Everything;

impl Scope for Everything {
    fn is_everything(&self) -> bool {
        true
    }
    fn sees(&self, _: Kind, _: usize) -> bool {
        true
    }
    fn sees_member(&self, _: usize) -> bool {
        true
    }
}

/// The merged catalog at one moment.
pub(crate) struct Catalog {
    /// Increases with every rebuild.
    pub generation: u64,
    pub prefix: PrefixMode,
    pub prefixed: bool,
    pub separator: String,
    pub members: Vec<CatalogMember>,
    pub kinds: [KindCatalog; 4],
    /// Set while a fail-closed member is unavailable: `*/list` answers this instead.
    pub refusal: Option<String>,
}

impl Catalog {
    /// The items of `kind`.
    pub(crate) fn kind(&self, kind: Kind) -> &KindCatalog {
        &self.kinds[kind.index()]
    }

    /// The pages of every list, in `Kind::ALL` order.
    pub(crate) fn pages(&self) -> [Arc<Vec<Raw>>; 4] {
        Kind::ALL.map(|k| self.kind(k).pages.clone())
    }

    /// Merges the members' listings, in member order then each member's own order.
    pub(crate) fn build(generation: u64, inputs: &[MemberInput<'_>], s: &Settings) -> Catalog {
        let prefixed = match s.prefix {
            PrefixMode::Always => true,
            PrefixMode::Never => false,
            PrefixMode::Conditional => inputs.len() >= 2,
        };
        let mut members: Vec<CatalogMember> = inputs
            .iter()
            .map(|m| {
                let caps = &m.member.backend.info().capabilities;
                let offers_tasks = caps.tasks.is_some() || offers_tasks_extension(caps);
                CatalogMember {
                    name: m.member.name.clone(),
                    name_shared: Arc::from(m.member.name.as_str()),
                    tag: m.tag.to_owned(),
                    backend: m.member.backend.clone(),
                    fail_mode: m.member.fail_mode,
                    health: m.health.clone(),
                    instructions: m.member.instructions.clone(),
                    listed: false,
                    offers_tasks,
                    filtered_out: 0,
                    renamed_uris: false,
                }
            })
            .collect();
        // What each member contributes: its listing when healthy; a fail-closed member
        // keeps its last one while unavailable (its calls still route), a fail-open one
        // is left out.
        let contributed: Vec<Option<&Listing>> = inputs
            .iter()
            .map(|m| match (m.health, m.member.fail_mode) {
                (MemberHealth::Ok, _) | (_, FailMode::FailClosed) => m.listing,
                (MemberHealth::Unavailable { .. }, FailMode::FailOpen) => None,
            })
            .collect();
        for (m, c) in members.iter_mut().zip(&contributed) {
            m.listed = c.is_some();
        }
        let mut kinds: [KindCatalog; 4] = Default::default();
        for kind in Kind::ALL {
            let mut items: Vec<(usize, &str, &Item)> = Vec::new();
            for (mi, (input, listing)) in inputs.iter().zip(&contributed).enumerate() {
                for item in listing.map(|l| l.of(kind)).unwrap_or_default() {
                    let original = item
                        .get(kind.key())
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if input.member.filter.allows(original) {
                        items.push((mi, original, item));
                    } else {
                        members[mi].filtered_out += 1;
                    }
                }
            }
            kinds[kind.index()] = match kind {
                Kind::Tools | Kind::Prompts => name_kind(kind, &items, inputs, prefixed, s),
                Kind::Resources | Kind::Templates => uri_kind(kind, &items, inputs, s),
            };
        }
        let refusal = members
            .iter()
            .find(|m| m.fail_mode == FailMode::FailClosed && !m.health.is_ok())
            .map(|m| match &m.health {
                MemberHealth::Unavailable { reason, .. } => {
                    format!("member {} (fail-closed) is unavailable: {reason}", m.name)
                }
                MemberHealth::Ok => String::new(),
            });
        for kind in [Kind::Resources, Kind::Templates] {
            for e in kinds[kind.index()].entries.iter() {
                if e.exposed != e.original {
                    members[e.member].renamed_uris = true;
                }
            }
        }
        let mut catalog = Catalog {
            generation,
            prefix: s.prefix,
            prefixed,
            separator: s.separator.clone(),
            members,
            kinds,
            refusal,
        };
        catalog.expose_ui_references(s.page_size);
        catalog
    }

    /// Points the `_meta.ui.resourceUri` of tools (MCP Apps) of members whose URIs were
    /// renamed at the URIs their resources are exposed as, and pages the tools again.
    fn expose_ui_references(&mut self, page_size: usize) {
        if !self.members.iter().any(|m| m.renamed_uris) {
            return;
        }
        let mut changed = false;
        let tools = Kind::Tools.index();
        for i in 0..self.kinds[tools].entries.len() {
            let e = &self.kinds[tools].entries[i];
            if !self.members[e.member].renamed_uris {
                continue;
            }
            let Some(original) = ui_resource_uri(&e.item) else {
                continue;
            };
            let Some(exposed) = self.expose_uri(e.member, original) else {
                continue;
            };
            if exposed != original {
                set_ui_resource_uri(&mut self.kinds[tools].entries[i].item, exposed);
                changed = true;
            }
        }
        if changed {
            let k = &mut self.kinds[tools];
            k.pages = paginate(
                Kind::Tools.field(),
                k.entries.iter().map(|e| &e.item),
                page_size,
            );
        }
    }

    /// Routes a resource URI to `(member, original URI)`: a listed resource, then a
    /// template it expands (catalog order), then — for the whole catalog only — the
    /// rewritten form of a member's URI, then the only member offering resources.
    pub(crate) fn route_uri(&self, uri: &str, scope: &dyn Scope) -> Option<(usize, String)> {
        let resources = self.kind(Kind::Resources);
        if let Some((i, e)) = resources.get(uri)
            && scope.sees(Kind::Resources, i)
        {
            return Some((e.member, e.original.clone()));
        }
        let templates = self.kind(Kind::Templates);
        for (i, e) in templates.entries.iter().enumerate() {
            if scope.sees(Kind::Templates, i) && e.matcher.as_ref().is_some_and(|m| m.matches(uri))
            {
                let original = if e.exposed == e.original {
                    uri.to_owned()
                } else {
                    uri::split_rewritten(uri)
                        .map_or_else(|| uri.to_owned(), |(_, o)| o.into_owned())
                };
                return Some((e.member, original));
            }
        }
        if !scope.is_everything() {
            return None;
        }
        if let Some((tag, original)) = uri::split_rewritten(uri)
            && let Some(m) = self.members.iter().position(|m| m.tag == tag && m.listed)
        {
            return Some((m, original.into_owned()));
        }
        let mut offering = self
            .members
            .iter()
            .enumerate()
            .filter(|(_, m)| m.listed && m.backend.info().capabilities.resources.is_some());
        match (offering.next(), offering.next()) {
            (Some((m, _)), None) => Some((m, uri.to_owned())),
            _ => None,
        }
    }

    /// The URI clients know member `member`'s resource `original` by: its listed exposed
    /// URI, else the URI itself when it routes back to the member, else its rewritten
    /// form. `None` when the member is not in the catalog.
    pub(crate) fn expose_uri(&self, member: usize, original: &str) -> Option<String> {
        let m = self.members.get(member).filter(|m| m.listed)?;
        let resources = self.kind(Kind::Resources);
        if let Some(&i) = resources.by_original.get(&(member, original.to_owned())) {
            return Some(resources.entries[i].exposed.clone());
        }
        match self.route_uri(original, &Everything) {
            Some((owner, o)) if owner == member && o == original => Some(original.to_owned()),
            _ => Some(uri::rewrite(&m.tag, original)),
        }
    }

    /// The member called `name`.
    pub(crate) fn member_named(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|m| m.name == name)
    }

    /// The report of this catalog, as `scope` sees it.
    pub(crate) fn report(&self, scope: &dyn Scope) -> CatalogReport {
        let items = |kind: Kind| -> Vec<ExposedItem> {
            let k = self.kind(kind);
            k.entries
                .iter()
                .enumerate()
                .filter(|(i, _)| scope.sees(kind, *i))
                .map(|(_, e)| ExposedItem {
                    exposed: e.exposed.clone(),
                    member: self.members[e.member].name.clone(),
                    original: e.original.clone(),
                    origin: e.origin,
                })
                .collect()
        };
        let count = |kind: Kind, member: usize| {
            let k = self.kind(kind);
            k.entries
                .iter()
                .enumerate()
                .filter(|(i, e)| e.member == member && scope.sees(kind, *i))
                .count()
        };
        let members = self
            .members
            .iter()
            .enumerate()
            .filter(|(i, _)| scope.is_everything() || scope.sees_member(*i))
            .map(|(i, m)| MemberReport {
                name: m.name.clone(),
                fail_mode: m.fail_mode,
                health: m.health.clone(),
                tools: count(Kind::Tools, i),
                prompts: count(Kind::Prompts, i),
                resources: count(Kind::Resources, i),
                templates: count(Kind::Templates, i),
                filtered_out: m.filtered_out,
            })
            .collect();
        let visible_member = |name: &str| {
            scope.is_everything()
                || self
                    .member_named(name)
                    .is_some_and(|i| scope.sees_member(i))
        };
        let collisions = Kind::ALL
            .iter()
            .flat_map(|&kind| {
                self.kind(kind)
                    .collisions
                    .iter()
                    .map(move |c| KindCollision {
                        kind: kind.noun(),
                        collision: c.clone(),
                    })
            })
            .filter(|c| visible_member(&c.collision.member) && visible_member(&c.collision.kept_by))
            .collect();
        CatalogReport {
            prefix: self.prefix,
            prefixed: self.prefixed,
            separator: self.separator.clone(),
            members,
            tools: items(Kind::Tools),
            prompts: items(Kind::Prompts),
            resources: items(Kind::Resources),
            templates: items(Kind::Templates),
            collisions,
        }
    }
}

/// Tools or prompts: exposed names from [`naming::assign`].
fn name_kind(
    kind: Kind,
    items: &[(usize, &str, &Item)],
    inputs: &[MemberInput<'_>],
    prefixed: bool,
    s: &Settings,
) -> KindCatalog {
    let candidates: Vec<Candidate<'_>> = items
        .iter()
        .map(|&(mi, original, _)| Candidate {
            member: &inputs[mi].member.name,
            original,
            rename: inputs[mi].member.renames.get(original).map(String::as_str),
            prefixed,
        })
        .collect();
    let (assigned, collisions) = naming::assign(&candidates, &s.separator);
    let mut k = KindCatalog {
        collisions,
        ..KindCatalog::default()
    };
    for (&(mi, original, item), a) in items.iter().zip(assigned) {
        let Some(a) = a else { continue };
        push(&mut k, kind, mi, original, item, a.exposed, a.origin);
    }
    k.pages = paginate(kind.field(), k.entries.iter().map(|e| &e.item), s.page_size);
    k
}

/// Resources or templates: URIs kept unless an earlier member holds them, then rewritten.
fn uri_kind(
    kind: Kind,
    items: &[(usize, &str, &Item)],
    inputs: &[MemberInput<'_>],
    s: &Settings,
) -> KindCatalog {
    let mut k = KindCatalog::default();
    let mut seen: HashSet<(usize, &str)> = HashSet::new();
    for &(mi, original, item) in items {
        let member = &inputs[mi].member.name;
        let holder = k.index.get(original).map(|&i| k.entries[i].member);
        if !seen.insert((mi, original)) || holder.is_some() {
            let rewritten = uri::rewrite(inputs[mi].tag, original);
            let exposed =
                (holder != Some(mi) && !k.index.contains_key(&rewritten)).then_some(rewritten);
            k.collisions.push(Collision {
                name: original.to_owned(),
                kept_by: holder.map_or_else(|| member.clone(), |h| inputs[h].member.name.clone()),
                member: member.clone(),
                original: original.to_owned(),
                exposed_as: exposed.clone(),
            });
            if let Some(e) = exposed {
                push(&mut k, kind, mi, original, item, e, NameOrigin::Collision);
            }
            continue;
        }
        push(
            &mut k,
            kind,
            mi,
            original,
            item,
            original.to_owned(),
            NameOrigin::Original,
        );
    }
    k.pages = paginate(kind.field(), k.entries.iter().map(|e| &e.item), s.page_size);
    k
}

fn push(
    k: &mut KindCatalog,
    kind: Kind,
    member: usize,
    original: &str,
    item: &Item,
    exposed: String,
    origin: NameOrigin,
) {
    let mut item = item.clone();
    if exposed != original {
        item.insert(kind.key().to_owned(), Value::String(exposed.clone()));
    }
    let matcher = (kind == Kind::Templates)
        .then(|| TemplateMatcher::parse(&exposed))
        .flatten();
    let i = k.entries.len();
    k.index.insert(exposed.clone(), i);
    k.by_original.insert((member, original.to_owned()), i);
    let relayed_as = if exposed == original {
        RelayedAs::Exposed
    } else if json_frame::writes_as_is(original) {
        RelayedAs::Original(original.into())
    } else {
        RelayedAs::Never
    };
    k.entries.push(Entry {
        member,
        original: original.to_owned(),
        exposed,
        origin,
        item,
        matcher,
        relayed_as,
    });
}

/// A tool's MCP Apps resource: `_meta.ui.resourceUri`, or the older `_meta["ui/resourceUri"]`.
pub(crate) fn ui_resource_uri(tool: &Item) -> Option<&str> {
    let meta = tool.get("_meta")?;
    meta.pointer("/ui/resourceUri")
        .or_else(|| meta.get("ui/resourceUri"))
        .and_then(Value::as_str)
}

/// Sets whichever of the two keys [`ui_resource_uri`] read to `uri`.
fn set_ui_resource_uri(tool: &mut Item, uri: String) {
    let Some(meta) = tool.get_mut("_meta") else {
        return;
    };
    if let Some(slot) = meta.pointer_mut("/ui/resourceUri") {
        *slot = Value::String(uri);
    } else if let Some(slot) = meta.get_mut("ui/resourceUri") {
        *slot = Value::String(uri);
    }
}
