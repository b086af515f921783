//! `[policy]`: who may see and call what, for every listener of `mcpwire serve` (stdio and
//! listeners without authentication are the anonymous caller). Read from the file here into
//! the federation's [`Policy`]; the rules are applied by the federation and its views.
//! Decisions: `docs/design/policy.md`.
//!
//! ```toml
//! [policy]
//! default = "allow"                 # what applies when no rule matches ("allow" | "deny")
//!
//! [[policy.rules]]                  # the first rule matching the caller and the item decides
//! effect = "allow"
//! subjects = ["alice", "key:ci-*"]  # who (every key given must hold; none: everyone)
//! keys = ["ci-*"]                   #   API key names
//! scopes = ["admin"]                #   every scope granted
//! claims = { team = "payments" }    #   claim equals (or, for an array claim, contains)
//! anonymous = false                 #   true: only the anonymous caller; false: only others
//! backends = ["github"]             # what (none: every backend)
//! tools = ["*_delete*"]             #   exposed names / URIs; without any of tools, prompts
//! prompts = ["*"]                   #   and resources the rule is about every item of
//! resources = ["file:///secret/*"]  #   its backends
//! ```

use std::collections::BTreeMap;

use mcpwire_federation::{Callers, Effect, Glob, Policy, PolicyRule, Targets};
use serde::Deserialize;
use serde_json::Value;

/// `[policy]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    #[serde(default)]
    default: RawEffect,
    #[serde(default)]
    rules: Vec<RawRule>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RawEffect {
    #[default]
    Allow,
    Deny,
}

impl From<RawEffect> for Effect {
    fn from(e: RawEffect) -> Effect {
        match e {
            RawEffect::Allow => Effect::Allow,
            RawEffect::Deny => Effect::Deny,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    effect: RawEffect,
    #[serde(default)]
    subjects: Vec<Glob>,
    #[serde(default)]
    keys: Vec<Glob>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    claims: BTreeMap<String, Value>,
    anonymous: Option<bool>,
    #[serde(default)]
    backends: Vec<Glob>,
    tools: Option<Vec<Glob>>,
    prompts: Option<Vec<Glob>>,
    resources: Option<Vec<Glob>>,
}

/// The key at fault (below `policy`) and why.
type Refusal = (String, String);

impl RawPolicy {
    /// The checked policy; `backends` are the configured backend names (a rule naming a
    /// backend literally must name one of them).
    pub(crate) fn check(self, backends: &[&str]) -> Result<Policy, Refusal> {
        let mut rules = Vec::new();
        for (i, r) in self.rules.into_iter().enumerate() {
            let at = |key: &str, m: String| (format!("rules.{i}.{key}"), m);
            for (key, list) in [("tools", &r.tools), ("prompts", &r.prompts)]
                .into_iter()
                .chain([("resources", &r.resources)])
            {
                if list.as_ref().is_some_and(Vec::is_empty) {
                    return Err(at(
                        key,
                        "an empty list matches nothing: leave the key out".into(),
                    ));
                }
            }
            if let Some(b) = r
                .backends
                .iter()
                .find(|b| b.is_literal() && !backends.contains(&b.as_str()))
            {
                return Err(at(
                    "backends",
                    format!("no backend is named `{}`", b.as_str()),
                ));
            }
            if r.anonymous == Some(true)
                && !(r.subjects.is_empty()
                    && r.keys.is_empty()
                    && r.scopes.is_empty()
                    && r.claims.is_empty())
            {
                return Err(at(
                    "anonymous",
                    "the anonymous caller has no subject, key, scopes or claims: this rule \
                     would match nobody"
                        .into(),
                ));
            }
            let mut claims = Vec::new();
            for (name, value) in r.claims {
                if matches!(value, Value::Array(_) | Value::Object(_)) {
                    return Err(at(
                        &format!("claims.{name}"),
                        "compare a claim with a string, number or boolean".into(),
                    ));
                }
                claims.push((name, value));
            }
            rules.push(PolicyRule {
                effect: r.effect.into(),
                callers: Callers {
                    subjects: r.subjects,
                    keys: r.keys,
                    scopes: r.scopes,
                    claims,
                    anonymous: r.anonymous,
                },
                targets: Targets {
                    backends: r.backends,
                    tools: r.tools,
                    prompts: r.prompts,
                    resources: r.resources,
                },
            });
        }
        Ok(Policy {
            default: self.default.into(),
            rules,
        })
    }
}

/// `[policy]`'s tables and their keys, for the check of `docs/config.md`.
#[cfg(test)]
pub(crate) fn doc_sections() -> Vec<(&'static str, &'static [&'static str])> {
    use crate::serde_fields::fields_of;
    vec![
        ("`[policy]`", fields_of::<RawPolicy>()),
        ("`[[policy.rules]]`", fields_of::<RawRule>()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<Policy, Refusal> {
        toml::from_str::<RawPolicy>(text)
            .unwrap()
            .check(&["fs", "gh"])
    }

    #[test]
    fn rules_as_written() {
        let p = check(
            r#"
            default = "deny"
            [[rules]]
            effect = "allow"
            subjects = ["alice"]
            claims = { team = "pay", level = 3 }
            backends = ["gh*"]
            tools = ["*_read"]
            "#,
        )
        .unwrap();
        assert_eq!(p.default, Effect::Deny);
        let r = &p.rules[0];
        assert_eq!(r.effect, Effect::Allow);
        assert_eq!(r.callers.claims[0], ("level".into(), Value::from(3)));
        assert!(r.targets.prompts.is_none());
    }

    #[test]
    fn refusals_name_the_key() {
        let at = |text: &str| check(text).unwrap_err().0;
        assert_eq!(
            at("[[rules]]\neffect = \"deny\"\ntools = []\n"),
            "rules.0.tools"
        );
        assert_eq!(
            at("[[rules]]\neffect = \"deny\"\nbackends = [\"nope\"]\n"),
            "rules.0.backends"
        );
        assert_eq!(
            at("[[rules]]\neffect = \"deny\"\nclaims = { g = [1] }\n"),
            "rules.0.claims.g"
        );
        assert_eq!(
            at("[[rules]]\neffect = \"deny\"\nanonymous = true\nscopes = [\"a\"]\n"),
            "rules.0.anonymous"
        );
        assert!(toml::from_str::<RawPolicy>("[[rules]]\neffect = \"maybe\"\n").is_err());
        assert!(
            toml::from_str::<RawPolicy>("[[rules]]\neffect = \"deny\"\nuser = \"x\"\n").is_err()
        );
    }
}
