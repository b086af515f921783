//! [`Subset`]: the part of one catalog a caller sees — a view's items, or those a
//! [`Policy`] leaves an audience — with its own pages; and [`Subsets`], the bounded cache of
//! one subset per audience for the current catalog.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::{ArcSwap, ArcSwapOption};

use mcpwire_model::Raw;
use mcpwire_router::Identity;

use crate::catalog::{Catalog, Entry, Everything, Scope};
use crate::listing::Kind;
use crate::pages::paginate;
use crate::policy::{Audience, Policy, PolicyItem};

/// Audiences whose subsets are kept per catalog; past that, one is dropped (and rebuilt
/// when next needed).
const MAX_AUDIENCES: usize = 64;

/// Slots of callers (identities) whose subset is remembered, so their calls skip working
/// out their audience: a caller has one slot (by its identity instance), and a caller
/// landing in a taken slot takes it over.
const KNOWN_CALLER_SLOTS: usize = 64;

/// The visible part of one catalog, paged.
pub(crate) struct Subset {
    pub catalog: Arc<Catalog>,
    visible: [Vec<bool>; 4],
    members: Vec<bool>,
    pub pages: [Arc<Vec<Raw>>; 4],
}

impl Subset {
    /// The entries `sees` (kind, index, entry) admits; a member is seen when `members` says so or one of its
    /// entries is visible.
    pub(crate) fn build(
        catalog: Arc<Catalog>,
        page_size: usize,
        mut members: Vec<bool>,
        sees: impl Fn(Kind, usize, &Entry) -> bool,
    ) -> Subset {
        let visible = Kind::ALL.map(|kind| {
            catalog
                .kind(kind)
                .entries
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    let seen = sees(kind, i, e);
                    if seen && let Some(m) = members.get_mut(e.member) {
                        *m = true;
                    }
                    seen
                })
                .collect::<Vec<bool>>()
        });
        let pages = Kind::ALL.map(|kind| {
            let shown = catalog
                .kind(kind)
                .entries
                .iter()
                .zip(&visible[kind.index()])
                .filter(|(_, v)| **v)
                .map(|(e, _)| &e.item);
            paginate(kind.field(), shown, page_size)
        });
        Subset {
            catalog,
            visible,
            members,
            pages,
        }
    }

    /// What `base` shows of `catalog`, less what `policy` hides from `audience`.
    pub(crate) fn policed(
        catalog: Arc<Catalog>,
        base: &dyn Scope,
        policy: &Policy,
        audience: &Audience,
        page_size: usize,
    ) -> Subset {
        let members = catalog
            .members
            .iter()
            .enumerate()
            .map(|(i, m)| base.sees_member(i) && policy.admits_backend(audience, &m.name))
            .collect();
        let names: Vec<&str> = catalog.members.iter().map(|m| m.name.as_str()).collect();
        let sees = |kind: Kind, i: usize, e: &Entry| {
            let item = match kind {
                Kind::Tools => PolicyItem::Tool,
                Kind::Prompts => PolicyItem::Prompt,
                Kind::Resources | Kind::Templates => PolicyItem::Resource,
            };
            base.sees(kind, i)
                && names
                    .get(e.member)
                    .is_some_and(|m| policy.admits(audience, m, item, &e.exposed))
        };
        Subset::build(catalog.clone(), page_size, members, sees)
    }
}

impl Scope for Subset {
    fn is_everything(&self) -> bool {
        false
    }
    fn sees(&self, kind: Kind, entry: usize) -> bool {
        self.visible[kind.index()]
            .get(entry)
            .copied()
            .unwrap_or(false)
    }
    fn sees_member(&self, member: usize) -> bool {
        self.members.get(member).copied().unwrap_or(false)
    }
}

/// The catalog as one caller sees it: all of it (no view, an open policy) or a subset.
#[derive(Clone)]
pub(crate) struct Sight {
    /// The catalog seen.
    pub catalog: Arc<Catalog>,
    /// The part seen; `None`: everything.
    pub(crate) subset: Option<Arc<Subset>>,
}

impl Sight {
    /// What the caller may see.
    pub(crate) fn scope(&self) -> &dyn Scope {
        match &self.subset {
            Some(s) => &**s,
            None => &Everything,
        }
    }

    /// The pages of the caller's lists (`None`: the catalog's own).
    pub(crate) fn pages(&self) -> Option<&[Arc<Vec<Raw>>; 4]> {
        self.subset.as_ref().map(|s| &s.pages)
    }
}

/// One [`Subset`] per audience of the current catalog (at most [`MAX_AUDIENCES`]). Every
/// call reads it, so reading takes no lock: the kept subsets are an immutable map swapped
/// whole when one is added (once per audience and catalog generation).
#[derive(Default)]
pub(crate) struct Subsets {
    kept: ArcSwap<Kept>,
    /// Held while a subset is built and added (one writer at a time).
    adding: Mutex<()>,
    /// The subsets of recent callers, one slot each by identity instance: read by every
    /// call without a lock (a lock every call shares moves between cores at each call),
    /// and a miss replaces one slot — never copies the others (callers beyond the slots
    /// would otherwise copy them at every call).
    known: KnownCallers,
}

/// A caller's subset of one catalog generation: a caller's requests share one verified
/// [`Identity`], so finding it by pointer is cheaper than matching its claims against
/// every rule again.
struct KnownCaller {
    generation: u64,
    /// `None`: the anonymous caller.
    who: Option<Identity>,
    subset: Arc<Subset>,
}

/// The slots of [`Subsets::known`].
struct KnownCallers([ArcSwapOption<KnownCaller>; KNOWN_CALLER_SLOTS]);

impl Default for KnownCallers {
    fn default() -> KnownCallers {
        KnownCallers(std::array::from_fn(|_| ArcSwapOption::empty()))
    }
}

impl KnownCallers {
    /// The slot of caller `who`.
    fn slot(&self, who: Option<&Identity>) -> &ArcSwapOption<KnownCaller> {
        &self.0[known_slot(who)]
    }
}

/// The slot of caller `who` in [`Subsets::known`]: by its identity instance's address.
fn known_slot(who: Option<&Identity>) -> usize {
    who.map_or(0, |w| {
        let at = w.instance_address();
        // Allocations are aligned: the low bits say nothing; mix the rest.
        (at >> 4 ^ at >> 10) % KNOWN_CALLER_SLOTS
    })
}

fn same_caller(a: Option<&Identity>, b: Option<&Identity>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same_instance(b),
        _ => false,
    }
}

/// The subsets of one catalog generation.
#[derive(Default)]
struct Kept {
    generation: u64,
    by_audience: HashMap<Audience, Arc<Subset>>,
}

impl Kept {
    fn find(&self, generation: u64, audience: &Audience) -> Option<Arc<Subset>> {
        if self.generation != generation {
            return None;
        }
        self.by_audience.get(audience).cloned()
    }
}

impl Subsets {
    /// `who`'s subset of catalog generation `generation`: remembered for that identity,
    /// else the subset of its audience (worked out by `audience`), built by `build` unless
    /// kept.
    pub(crate) fn for_caller(
        &self,
        generation: u64,
        who: Option<&Identity>,
        audience: impl FnOnce() -> Audience,
        build: impl FnOnce(&Audience) -> Subset,
    ) -> Arc<Subset> {
        self.with_caller(generation, who, audience, build, Arc::clone)
    }

    /// [`Subsets::for_caller`] lent to `f` rather than cloned (a remembered caller's
    /// subset: its count is not touched).
    pub(crate) fn with_caller<R>(
        &self,
        generation: u64,
        who: Option<&Identity>,
        audience: impl FnOnce() -> Audience,
        build: impl FnOnce(&Audience) -> Subset,
        f: impl FnOnce(&Arc<Subset>) -> R,
    ) -> R {
        let slot = self.known.slot(who);
        if let Some(known) = &*slot.load()
            && known.generation == generation
            && same_caller(known.who.as_ref(), who)
        {
            return f(&known.subset);
        }
        let audience = audience();
        let s = self.get(generation, &audience, || build(&audience));
        slot.store(Some(Arc::new(KnownCaller {
            generation,
            who: who.cloned(),
            subset: s.clone(),
        })));
        f(&s)
    }

    /// `audience`'s subset of catalog generation `generation`, built by `build` unless kept.
    pub(crate) fn get(
        &self,
        generation: u64,
        audience: &Audience,
        build: impl FnOnce() -> Subset,
    ) -> Arc<Subset> {
        if let Some(s) = self.kept.load().find(generation, audience) {
            return s;
        }
        let _adding = self.adding.lock().unwrap_or_else(PoisonError::into_inner);
        let kept = self.kept.load_full();
        if let Some(s) = kept.find(generation, audience) {
            return s;
        }
        let s = Arc::new(build());
        let mut by_audience = if kept.generation == generation {
            kept.by_audience.clone()
        } else {
            HashMap::new()
        };
        if by_audience.len() >= MAX_AUDIENCES
            && let Some(old) = by_audience.keys().next().cloned()
        {
            by_audience.remove(&old);
        }
        by_audience.insert(audience.clone(), s.clone());
        self.kept.store(Arc::new(Kept {
            generation,
            by_audience,
        }));
        s
    }

    /// How many audiences are kept (for tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.load().by_audience.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Everything, Settings};
    use crate::config::PrefixMode;

    /// An empty catalog, an open policy and no subsets kept yet.
    fn empty() -> (Arc<Catalog>, Policy, Subsets) {
        let settings = Settings {
            prefix: PrefixMode::Conditional,
            separator: "_".into(),
            page_size: 10,
        };
        let catalog = Arc::new(Catalog::build(1, &[], &settings));
        (catalog, Policy::default(), Subsets::default())
    }

    #[test]
    fn one_subset_per_audience_and_generation_within_the_bound() {
        let (catalog, policy, subsets) = empty();
        let mut built = 0;
        for i in 0..200u32 {
            let audience = Audience::from_bits((0..8).map(|b| i & (1 << b) != 0).collect());
            subsets.get(1, &audience, || {
                built += 1;
                Subset::policed(catalog.clone(), &Everything, &policy, &audience, 10)
            });
            assert!(subsets.len() <= MAX_AUDIENCES);
        }
        assert_eq!(built, 200);
        let again = Audience::from_bits(vec![false; 8]);
        let first = subsets.get(2, &again, || {
            Subset::build(catalog.clone(), 10, vec![], |_, _, _| true)
        });
        let kept = subsets.get(2, &again, || unreachable!("kept for this generation"));
        assert!(Arc::ptr_eq(&first, &kept));
        assert_eq!(subsets.len(), 1, "a new generation starts afresh");
    }

    #[test]
    fn a_callers_subset_is_remembered_by_identity_within_the_bound() {
        let (catalog, policy, subsets) = empty();
        let audiences = std::cell::Cell::new(0);
        let get = |generation: u64, who: Option<&Identity>| {
            subsets.for_caller(
                generation,
                who,
                || {
                    audiences.set(audiences.get() + 1);
                    policy.audience(who)
                },
                |a| Subset::policed(catalog.clone(), &Everything, &policy, a, 10),
            )
        };
        let alice = Identity::bearer("alice", None, vec![], serde_json::Map::new());
        let twin = Identity::bearer("alice", None, vec![], serde_json::Map::new());
        get(1, Some(&alice));
        get(1, Some(&alice.clone()));
        get(1, None);
        get(1, None);
        assert_eq!(
            audiences.get(),
            2,
            "once for alice, once for the anonymous caller"
        );
        get(1, Some(&twin));
        assert_eq!(
            audiences.get(),
            3,
            "an equal identity verified apart is worked out"
        );
        get(2, Some(&alice));
        assert_eq!(
            audiences.get(),
            4,
            "a new generation (catalog or policy) starts afresh"
        );
        let many: Vec<Identity> = (0..KNOWN_CALLER_SLOTS * 3)
            .map(|i| Identity::bearer(format!("u{i}"), None, vec![], serde_json::Map::new()))
            .collect();
        for id in &many {
            get(2, Some(id));
        }
        let held = subsets
            .known
            .0
            .iter()
            .filter(|k| k.load().is_some())
            .count();
        assert!(held <= KNOWN_CALLER_SLOTS);
        let before = audiences.get();
        get(2, many.last());
        assert_eq!(audiences.get(), before, "the newest caller is kept");
        let worked_out = |ids: &[Identity]| {
            let before = audiences.get();
            for id in ids {
                get(2, Some(id));
            }
            audiences.get() - before
        };
        assert!(
            worked_out(&many) > 0,
            "more callers than slots: some were forgotten"
        );
        let mut slots = std::collections::HashSet::new();
        let few: Vec<Identity> = many
            .iter()
            .filter(|id| slots.insert(known_slot(Some(id))))
            .take(4)
            .cloned()
            .collect();
        worked_out(&few);
        assert_eq!(
            worked_out(&few),
            0,
            "callers in slots of their own stay remembered"
        );
    }
}
