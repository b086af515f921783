//! Exposed names for tools and prompts: prefixes, renames, shortening and collisions.
//!
//! Pure: a list of candidates in catalog order in, one exposed name each out. Every exposed
//! name matches `^[a-zA-Z0-9_-]{1,64}$`, no two are equal, and the result depends only on
//! the candidates and their order (property-tested below).

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

/// The longest exposed name.
pub const NAME_MAX: usize = 64;
/// Hex digits of the stable hash suffix.
const HASH_LEN: usize = 8;

/// Whether `s` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_name(s: &str) -> bool {
    (1..=NAME_MAX).contains(&s.len()) && s.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// `s` with every character outside `[a-zA-Z0-9_-]` replaced by `_` (`_` when empty).
fn sanitize(s: &str) -> String {
    if s.is_empty() {
        return "_".into();
    }
    s.chars()
        .map(|c| {
            if c.is_ascii() && is_name_byte(c as u8) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Eight hex digits of SHA-256 over `parts` (NUL-separated): stable across runs, builds
/// and platforms, unlike `std`'s hasher.
pub(crate) fn stable_hash(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize()
        .iter()
        .take(HASH_LEN / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `head` cut so that `head-HASH` fits in [`NAME_MAX`], then `-HASH`. `head` is ASCII.
fn with_hash(head: &str, hash: &str) -> String {
    let keep = head.len().min(NAME_MAX - HASH_LEN - 1);
    format!("{}-{hash}", &head[..keep])
}

/// How an exposed name came about (the most telling reason when several apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NameOrigin {
    /// The member's own name, unchanged.
    Original,
    /// The member's name under its prefix.
    Prefixed,
    /// Characters outside `[a-zA-Z0-9_-]` were replaced by `_`.
    Sanitized,
    /// Longer than 64 characters: cut and given a stable hash suffix.
    Shortened,
    /// Renamed by the configuration.
    Renamed,
    /// The natural name was taken by an item listed earlier (or by a rename).
    Collision,
}

/// One item to name: whose it is, what it is called there, and how the configuration
/// wants it named.
#[derive(Debug, Clone)]
pub(crate) struct Candidate<'a> {
    pub member: &'a str,
    pub original: &'a str,
    /// An exposed name set by the configuration (already valid).
    pub rename: Option<&'a str>,
    /// Whether the natural name carries the member prefix.
    pub prefixed: bool,
}

/// The name an item is exposed under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Assigned {
    pub exposed: String,
    pub origin: NameOrigin,
}

/// An item that could not have its natural name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Collision {
    /// The name both wanted.
    pub name: String,
    /// The member that kept it.
    pub kept_by: String,
    /// The member that gave way.
    pub member: String,
    /// Its item's name in that member.
    pub original: String,
    /// What it is exposed as instead; `None` when it is not exposed at all (the member
    /// listed the same name twice: only its first is reachable).
    pub exposed_as: Option<String>,
}

/// Names every candidate, in order: configured renames first (they are the operator's
/// intent), then natural names (`member{sep}original` when prefixed, else `original`,
/// sanitized and shortened). A taken natural name falls back to the prefixed name, then to
/// a hashed one; a member listing the same original name twice keeps only the first.
pub(crate) fn assign(
    candidates: &[Candidate<'_>],
    separator: &str,
) -> (Vec<Option<Assigned>>, Vec<Collision>) {
    let mut out: Vec<Option<Assigned>> = vec![None; candidates.len()];
    let mut collisions = Vec::new();
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut duplicate = vec![false; candidates.len()];
    for (i, c) in candidates.iter().enumerate() {
        if !seen.insert((c.member, c.original)) {
            duplicate[i] = true;
            collisions.push(Collision {
                name: c.original.to_owned(),
                kept_by: c.member.to_owned(),
                member: c.member.to_owned(),
                original: c.original.to_owned(),
                exposed_as: None,
            });
        }
    }
    for (i, c) in candidates.iter().enumerate() {
        if let (Some(r), false) = (c.rename, duplicate[i])
            && !taken.contains_key(r)
        {
            taken.insert(r.to_owned(), i);
            out[i] = Some(Assigned {
                exposed: r.to_owned(),
                origin: NameOrigin::Renamed,
            });
        }
    }
    for (i, c) in candidates.iter().enumerate() {
        if out[i].is_some() || duplicate[i] {
            continue;
        }
        let prefixed = format!("{}{separator}{}", c.member, c.original);
        let natural = if c.prefixed { &prefixed } else { c.original };
        let (name, origin) = match c.rename {
            // A rename whose target an earlier rename holds: a collision like any other.
            Some(r) => (r.to_owned(), NameOrigin::Renamed),
            None => fit(natural, c),
        };
        if !taken.contains_key(&name) {
            let origin = if c.prefixed && origin == NameOrigin::Original {
                NameOrigin::Prefixed
            } else {
                origin
            };
            taken.insert(name.clone(), i);
            out[i] = Some(Assigned {
                exposed: name,
                origin,
            });
            continue;
        }
        let kept_by = candidates[taken[&name]].member.to_owned();
        let mut exposed = None;
        if !c.prefixed {
            let (p, _) = fit(&prefixed, c);
            if !taken.contains_key(&p) {
                exposed = Some(p);
            }
        }
        let head = sanitize(&prefixed);
        let mut salt = 0u64;
        while exposed.is_none() {
            let salt_text = salt.to_string();
            let hash = stable_hash(&[c.member, c.original, &salt_text]);
            let h = with_hash(&head, &hash);
            if !taken.contains_key(&h) {
                exposed = Some(h);
            }
            salt += 1;
        }
        let exposed = exposed.unwrap_or_default();
        taken.insert(exposed.clone(), i);
        collisions.push(Collision {
            name,
            kept_by,
            member: c.member.to_owned(),
            original: c.original.to_owned(),
            exposed_as: Some(exposed.clone()),
        });
        out[i] = Some(Assigned {
            exposed,
            origin: NameOrigin::Collision,
        });
    }
    (out, collisions)
}

/// `name` sanitized and, when too long, cut with a hash of the candidate's identity.
fn fit(name: &str, c: &Candidate<'_>) -> (String, NameOrigin) {
    let clean = sanitize(name);
    if clean.len() > NAME_MAX {
        let hash = stable_hash(&[c.member, c.original]);
        (with_hash(&clean, &hash), NameOrigin::Shortened)
    } else if clean != name {
        (clean, NameOrigin::Sanitized)
    } else {
        (clean, NameOrigin::Original)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand<'a>(member: &'a str, original: &'a str, prefixed: bool) -> Candidate<'a> {
        Candidate {
            member,
            original,
            rename: None,
            prefixed,
        }
    }

    fn names(c: &[Candidate<'_>]) -> Vec<Option<String>> {
        assign(c, "_")
            .0
            .into_iter()
            .map(|a| a.map(|a| a.exposed))
            .collect()
    }

    #[test]
    fn prefixes_and_collisions() {
        let c = [
            cand("a", "search", false),
            cand("b", "search", false),
            cand("b", "b_search", false),
        ];
        let (out, collisions) = assign(&c, "_");
        let exposed: Vec<_> = out
            .iter()
            .map(|a| a.as_ref().unwrap().exposed.clone())
            .collect();
        assert_eq!(exposed[0], "search");
        assert_eq!(exposed[1], "b_search");
        // b's own `b_search` was taken by the fallback: prefixed in turn.
        assert_eq!(exposed[2], "b_b_search");
        assert_eq!(collisions.len(), 2);
        assert_eq!(collisions[0].kept_by, "a");
        assert_eq!(collisions[0].exposed_as.as_deref(), Some("b_search"));
    }

    #[test]
    fn prefixed_collisions_are_hashed() {
        // `a` + `b_c` and `a_b` + `c` both want `a_b_c`.
        let c = [cand("a", "b_c", true), cand("a_b", "c", true)];
        let (out, collisions) = assign(&c, "_");
        assert_eq!(out[0].as_ref().unwrap().exposed, "a_b_c");
        let second = &out[1].as_ref().unwrap().exposed;
        assert!(
            second.starts_with("a_b_c-") && second.len() == "a_b_c-".len() + 8,
            "{second}"
        );
        assert_eq!(collisions[0].kept_by, "a");
    }

    #[test]
    fn prefixed_names() {
        let c = [cand("fs", "read", true), cand("gh", "read", true)];
        assert_eq!(
            names(&c),
            vec![Some("fs_read".into()), Some("gh_read".into())]
        );
        assert_eq!(
            assign(&c, "_").0[0].as_ref().unwrap().origin,
            NameOrigin::Prefixed
        );
    }

    #[test]
    fn long_and_odd_names() {
        let long = "x".repeat(100);
        let c = [
            cand("m", &long, true),
            cand("m", "a.b/c", false),
            cand("m", "", false),
        ];
        let (out, _) = assign(&c, "_");
        let a = out[0].as_ref().unwrap();
        assert_eq!(a.exposed.len(), 64);
        assert_eq!(a.origin, NameOrigin::Shortened);
        assert_eq!(out[1].as_ref().unwrap().exposed, "a_b_c");
        assert_eq!(out[1].as_ref().unwrap().origin, NameOrigin::Sanitized);
        assert_eq!(out[2].as_ref().unwrap().exposed, "_");
        // Stable: the same input gives the same hash, run after run.
        assert_eq!(assign(&c, "_").0[0].as_ref().unwrap().exposed, a.exposed);
    }

    #[test]
    fn renames_win_and_duplicates_are_dropped() {
        let c = [
            cand("a", "search", false),
            Candidate {
                rename: Some("search"),
                ..cand("b", "find", false)
            },
            cand("b", "find", false),
        ];
        let (out, collisions) = assign(&c, "_");
        assert_eq!(out[1].as_ref().unwrap().exposed, "search");
        assert_eq!(out[1].as_ref().unwrap().origin, NameOrigin::Renamed);
        assert_eq!(out[0].as_ref().unwrap().exposed, "a_search");
        assert!(out[2].is_none());
        assert!(collisions.iter().any(|c| c.exposed_as.is_none()));
    }

    fn member() -> impl Strategy<Value = String> {
        "[a-zA-Z0-9_-]{1,20}"
    }

    fn original() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_]{1,12}",
            "[a-z]{0,3}",
            ".{0,80}",
            "[a-zA-Z0-9_-]{60,70}",
        ]
    }

    proptest! {
        #[test]
        fn exposed_names_are_valid_unique_and_reversible(
            items in proptest::collection::vec((0usize..4, original(), any::<bool>()), 0..60),
            members in proptest::collection::vec(member(), 4),
            renames in proptest::collection::vec(proptest::option::of("[a-z]{1,4}"), 60),
            prefixed in any::<bool>(),
        ) {
            let cands: Vec<Candidate<'_>> = items
                .iter()
                .enumerate()
                .map(|(i, (m, o, renamed))| Candidate {
                    member: &members[*m],
                    original: o,
                    rename: if *renamed { renames[i].as_deref() } else { None },
                    prefixed,
                })
                .collect();
            let (out, _) = assign(&cands, "_");
            let mut owner = HashMap::new();
            for (c, a) in cands.iter().zip(&out) {
                let Some(a) = a else {
                    // Only a member's repeated name goes unexposed.
                    prop_assert!(cands.iter().filter(|d| (d.member, d.original) == (c.member, c.original)).count() > 1);
                    continue;
                };
                prop_assert!(is_valid_name(&a.exposed), "{:?}", a.exposed);
                let prev = owner.insert(a.exposed.clone(), (c.member, c.original));
                prop_assert!(prev.is_none(), "{} exposed twice", a.exposed);
            }
            // The reverse map (the owner index) leads every exposed name back to its item,
            // and every distinct item is exposed.
            for (c, a) in cands.iter().zip(&out) {
                if let Some(a) = a {
                    prop_assert_eq!(owner[&a.exposed], (c.member, c.original));
                }
            }
            let distinct: HashSet<_> = cands.iter().map(|c| (c.member, c.original)).collect();
            prop_assert_eq!(owner.len(), distinct.len());
            // Deterministic.
            prop_assert_eq!(assign(&cands, "_").0, out);
        }

        #[test]
        fn appending_a_member_keeps_earlier_names(
            first in proptest::collection::vec((0usize..3, original()), 0..30),
            appended in proptest::collection::vec(original(), 0..10),
            members in proptest::collection::vec(member(), 3),
            prefixed in any::<bool>(),
        ) {
            let cands: Vec<Candidate<'_>> = first
                .iter()
                .map(|(m, o)| cand(&members[*m], o, prefixed))
                .collect();
            let mut more = cands.clone();
            more.extend(appended.iter().map(|o| cand("appended", o, prefixed)));
            let before = names(&cands);
            let after = names(&more);
            prop_assert_eq!(&after[..before.len()], &before[..]);
        }
    }
}
