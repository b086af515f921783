//! [`Policy`]: per-caller allow/deny rules over the catalog — one rule language for every
//! wire, decided on names and the caller's [`Identity`], never on wire details.
//!
//! A rule names **who** (callers: subjects, API key names, scopes, claims, or the anonymous
//! caller) and **what** (backends — federation members — and tools, prompts and resources
//! by exposed name or URI, as globs). For an item, the first rule (in order) that matches
//! both the caller and the item decides; when none does, the policy's default does. The
//! federation applies the decision to lists (hidden items are not listed) and to requests
//! (a hidden item answers exactly as an unknown one).
//!
//! Pure: no I/O, no clock. Decisions about one caller depend only on which rules' callers
//! match it — its [`Audience`] — so lists are paged once per audience, not per caller.

use std::sync::Arc;

use mcpwire_router::Identity;
use serde_json::Value;

use crate::glob::{Glob, any_matches};

/// Allow or deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Effect {
    /// The item is visible and callable.
    #[default]
    Allow,
    /// The item is hidden: not listed, and requests naming it answer as for an unknown one.
    Deny,
}

/// The kinds of items a rule can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyItem {
    /// A tool, by exposed name.
    Tool,
    /// A prompt, by exposed name.
    Prompt,
    /// A resource or resource template, by exposed URI or template text.
    Resource,
}

/// Which callers a rule is about. Every field given must hold; an empty `Callers` matches
/// every caller, the anonymous one included.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Callers {
    /// The caller's subject matches one of these (a token's `sub`, `key:NAME` for a key).
    pub subjects: Vec<Glob>,
    /// The caller used an API key whose name matches one of these.
    pub keys: Vec<Glob>,
    /// The caller was granted every one of these scopes.
    pub scopes: Vec<String>,
    /// Each claim equals the value (or, for an array claim, contains it).
    pub claims: Vec<(String, Value)>,
    /// `Some(true)`: only the anonymous caller (stdio, listeners without auth);
    /// `Some(false)`: only authenticated callers.
    pub anonymous: Option<bool>,
}

impl Callers {
    /// Whether `who` (`None`: the anonymous caller) is one of these callers.
    pub fn matches(&self, who: Option<&Identity>) -> bool {
        if let Some(anonymous) = self.anonymous
            && anonymous != who.is_none()
        {
            return false;
        }
        let asks_identity = !self.subjects.is_empty()
            || !self.keys.is_empty()
            || !self.scopes.is_empty()
            || !self.claims.is_empty();
        let Some(id) = who else {
            return !asks_identity;
        };
        (self.subjects.is_empty() || any_matches(&self.subjects, id.subject()))
            && (self.keys.is_empty() || id.key_name().is_some_and(|k| any_matches(&self.keys, k)))
            && self.scopes.iter().all(|s| id.has_scope(s))
            && self
                .claims
                .iter()
                .all(|(name, want)| id.claim(name).is_some_and(|got| claim_holds(got, want)))
    }
}

/// A claim equals `want`, or is an array containing it.
fn claim_holds(got: &Value, want: &Value) -> bool {
    got == want || matches!(got, Value::Array(items) if items.contains(want))
}

/// Which items a rule is about. `backends` empty: every backend. Each kind's patterns:
/// `None` for every item of that kind when no kind has patterns, else for none of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Targets {
    /// Federation members by name.
    pub backends: Vec<Glob>,
    /// Tools by exposed name.
    pub tools: Option<Vec<Glob>>,
    /// Prompts by exposed name.
    pub prompts: Option<Vec<Glob>>,
    /// Resources and templates by exposed URI or template text.
    pub resources: Option<Vec<Glob>>,
}

impl Targets {
    /// Whether the rule names no kind of item (it is about whole backends).
    fn whole_backends(&self) -> bool {
        self.tools.is_none() && self.prompts.is_none() && self.resources.is_none()
    }

    fn covers_backend(&self, member: &str) -> bool {
        self.backends.is_empty() || any_matches(&self.backends, member)
    }

    /// Whether the rule is about `name` (a `kind` item of `member`).
    pub fn covers(&self, member: &str, kind: PolicyItem, name: &str) -> bool {
        if !self.covers_backend(member) {
            return false;
        }
        if self.whole_backends() {
            return true;
        }
        let patterns = match kind {
            PolicyItem::Tool => &self.tools,
            PolicyItem::Prompt => &self.prompts,
            PolicyItem::Resource => &self.resources,
        };
        patterns.as_deref().is_some_and(|p| any_matches(p, name))
    }
}

/// One rule: its effect on the items it targets, for the callers it names.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyRule {
    /// Allow or deny.
    pub effect: Effect,
    /// Who.
    pub callers: Callers,
    /// What.
    pub targets: Targets,
}

/// Allow/deny rules, first match wins, then the default.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Policy {
    /// What applies when no rule matches.
    pub default: Effect,
    /// The rules, in order.
    pub rules: Vec<PolicyRule>,
}

/// Which of a policy's rules are about one caller: callers with equal audiences see the
/// same items. Cheap to clone and hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Audience(Arc<[bool]>);

impl Audience {
    /// An audience of the given rule matches (for tests of what is kept per audience).
    #[cfg(test)]
    pub(crate) fn from_bits(bits: Vec<bool>) -> Audience {
        Audience(bits.into())
    }
}

impl Policy {
    /// Whether the policy allows everything (no rules, default allow).
    pub fn is_open(&self) -> bool {
        self.rules.is_empty() && self.default == Effect::Allow
    }

    /// The rules about `who` (`None`: the anonymous caller).
    pub fn audience(&self, who: Option<&Identity>) -> Audience {
        Audience(self.rules.iter().map(|r| r.callers.matches(who)).collect())
    }

    fn rules_for<'a>(&'a self, audience: &'a Audience) -> impl Iterator<Item = &'a PolicyRule> {
        self.rules
            .iter()
            .zip(audience.0.iter())
            .filter(|(_, mine)| **mine)
            .map(|(r, _)| r)
    }

    /// Whether `audience` may see `name`, a `kind` item of backend `member`.
    pub fn admits(&self, audience: &Audience, member: &str, kind: PolicyItem, name: &str) -> bool {
        let effect = self
            .deciding_rule(audience, member, kind, name)
            .map_or(self.default, |i| self.rules[i].effect);
        effect == Effect::Allow
    }

    /// Which rule decides about `name` (a `kind` item of `member`) for `audience`: its
    /// index in [`Policy::rules`], `None` when the default does.
    pub fn deciding_rule(
        &self,
        audience: &Audience,
        member: &str,
        kind: PolicyItem,
        name: &str,
    ) -> Option<usize> {
        self.rules
            .iter()
            .zip(audience.0.iter())
            .position(|(r, mine)| *mine && r.targets.covers(member, kind, name))
    }

    /// Whether `audience` may see backend `member` as a whole (its logs, tasks, its name
    /// among the members), judged by the rules about whole backends. A backend with a
    /// visible item is seen regardless.
    pub fn admits_backend(&self, audience: &Audience, member: &str) -> bool {
        let effect = self
            .rules_for(audience)
            .find(|r| r.targets.whole_backends() && r.targets.covers_backend(member))
            .map_or(self.default, |r| r.effect);
        effect == Effect::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(p: &[&str]) -> Vec<Glob> {
        p.iter().map(|s| Glob::new(s).unwrap()).collect()
    }

    fn bearer(sub: &str, scopes: &[&str], claims: Value) -> Identity {
        let Value::Object(claims) = claims else {
            panic!("claims are an object")
        };
        let scopes = scopes.iter().map(|s| s.to_string()).collect();
        Identity::bearer(sub, None, scopes, claims)
    }

    fn rule(effect: Effect, callers: Callers, targets: Targets) -> PolicyRule {
        PolicyRule {
            effect,
            callers,
            targets,
        }
    }

    #[test]
    fn the_deciding_rule_is_named() {
        let deny_tool = Targets {
            tools: Some(globs(&["secret*"])),
            ..Targets::default()
        };
        let policy = Policy {
            default: Effect::Deny,
            rules: vec![
                rule(
                    Effect::Allow,
                    Callers {
                        anonymous: Some(false),
                        ..Callers::default()
                    },
                    Targets::default(),
                ),
                rule(Effect::Deny, Callers::default(), deny_tool),
            ],
        };
        let anon = policy.audience(None);
        assert_eq!(
            policy.deciding_rule(&anon, "b", PolicyItem::Tool, "secret_x"),
            Some(1)
        );
        assert_eq!(
            policy.deciding_rule(&anon, "b", PolicyItem::Tool, "open"),
            None
        );
        let key = Identity::api_key("ci", Vec::new());
        let known = policy.audience(Some(&key));
        assert_eq!(
            policy.deciding_rule(&known, "b", PolicyItem::Tool, "secret_x"),
            Some(0)
        );
    }

    #[test]
    fn first_matching_rule_decides_then_the_default() {
        let policy = Policy {
            default: Effect::Allow,
            rules: vec![
                rule(
                    Effect::Allow,
                    Callers {
                        subjects: globs(&["alice"]),
                        ..Callers::default()
                    },
                    Targets::default(),
                ),
                rule(
                    Effect::Deny,
                    Callers::default(),
                    Targets {
                        tools: Some(globs(&["*delete*"])),
                        ..Targets::default()
                    },
                ),
            ],
        };
        let alice = policy.audience(Some(&bearer(
            "alice",
            &[],
            Value::Object(Default::default()),
        )));
        let bob = policy.audience(Some(&bearer("bob", &[], serde_json::json!({}))));
        let anon = policy.audience(None);
        for a in [&alice, &bob, &anon] {
            assert!(policy.admits(a, "fs", PolicyItem::Tool, "fs_read"));
            assert!(policy.admits(a, "fs", PolicyItem::Prompt, "delete_all"));
        }
        assert!(policy.admits(&alice, "fs", PolicyItem::Tool, "fs_delete"));
        assert!(!policy.admits(&bob, "fs", PolicyItem::Tool, "fs_delete"));
        assert!(!policy.admits(&anon, "fs", PolicyItem::Tool, "fs_delete"));
        assert_eq!(bob, anon, "bob and the anonymous caller are one audience");
    }

    #[test]
    fn callers_by_key_scope_claim_and_anonymity() {
        let key = Identity::api_key("ci-7", vec!["deploy".into()]);
        let jwt = bearer(
            "u1",
            &["read"],
            serde_json::json!({"team": "pay", "groups": ["a", "b"]}),
        );
        let c = |f: fn(&mut Callers)| {
            let mut c = Callers::default();
            f(&mut c);
            c
        };
        let by_key = c(|c| c.keys = globs(&["ci-*"]));
        assert!(by_key.matches(Some(&key)) && !by_key.matches(Some(&jwt)) && !by_key.matches(None));
        let by_subject = c(|c| c.subjects = globs(&["key:ci-*"]));
        assert!(by_subject.matches(Some(&key)));
        let scoped = c(|c| c.scopes = vec!["deploy".into()]);
        assert!(scoped.matches(Some(&key)) && !scoped.matches(Some(&jwt)));
        let team = c(|c| c.claims = vec![("team".into(), "pay".into())]);
        assert!(team.matches(Some(&jwt)) && !team.matches(Some(&key)));
        let group = c(|c| c.claims = vec![("groups".into(), "b".into())]);
        assert!(group.matches(Some(&jwt)));
        let other = c(|c| c.claims = vec![("groups".into(), "z".into())]);
        assert!(!other.matches(Some(&jwt)));
        let anon = c(|c| c.anonymous = Some(true));
        assert!(anon.matches(None) && !anon.matches(Some(&key)));
        let authed = c(|c| c.anonymous = Some(false));
        assert!(!authed.matches(None) && authed.matches(Some(&jwt)));
        assert!(Callers::default().matches(None));
    }

    #[test]
    fn targets_by_backend_and_kind() {
        let t = Targets {
            backends: globs(&["github"]),
            tools: Some(globs(&["*_write"])),
            ..Targets::default()
        };
        assert!(t.covers("github", PolicyItem::Tool, "github_write"));
        assert!(!t.covers("fs", PolicyItem::Tool, "fs_write"));
        assert!(!t.covers("github", PolicyItem::Prompt, "github_write"));
        let whole = Targets {
            backends: globs(&["github"]),
            ..Targets::default()
        };
        assert!(whole.covers("github", PolicyItem::Resource, "gh://x"));
        let policy = Policy {
            default: Effect::Deny,
            rules: vec![rule(Effect::Allow, Callers::default(), t)],
        };
        let a = policy.audience(None);
        assert!(!policy.admits_backend(&a, "github"));
        assert!(policy.admits(&a, "github", PolicyItem::Tool, "github_write"));
        assert!(Policy::default().is_open() && !policy.is_open());
    }
}
