//! Hot reload, the pure part: what changed between the configuration being served and the
//! one just read ([`plan`]), as a [`ReloadPlan`] the gateway applies to its federation.

use std::fmt;

use crate::config::{BackendSpec, GatewayConfig};

/// What a reload does to the backends, and what it cannot apply while serving.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReloadPlan {
    /// Backends to start and add (at the end of the catalog order).
    pub add: Vec<BackendSpec>,
    /// Backends whose source changed: a new one is started and replaces the old.
    pub restart: Vec<BackendSpec>,
    /// Backends whose filters, renames or fail mode changed: the running backend stays
    /// and rejoins the catalog with the new options.
    pub rejoin: Vec<BackendSpec>,
    /// Backends to remove.
    pub remove: Vec<String>,
    /// Backends that did not start before and are unchanged: tried again.
    pub retry: Vec<BackendSpec>,
    /// `[auth]` changed (still on): the verifiers are swapped for new requests.
    pub auth: bool,
    /// `[policy]` changed: lists and calls follow the new rules from now on.
    pub policy: bool,
    /// `[limits]` changed: new limits for new calls and connections (unchanged rules keep
    /// their buckets).
    pub limits: bool,
    /// Changes that need a restart (listeners, server options, views), in words.
    pub ignored: Vec<String>,
}

impl ReloadPlan {
    /// Whether the reload changes no backend (`[auth]`, `[policy]` and `[limits]` aside).
    pub fn is_empty(&self) -> bool {
        self.add.is_empty()
            && self.restart.is_empty()
            && self.rejoin.is_empty()
            && self.remove.is_empty()
            && self.retry.is_empty()
    }
}

impl fmt::Display for ReloadPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |v: &[BackendSpec]| -> String {
            v.iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut parts = Vec::new();
        if !self.add.is_empty() {
            parts.push(format!("added {}", names(&self.add)));
        }
        if !self.restart.is_empty() {
            parts.push(format!("restarted {}", names(&self.restart)));
        }
        if !self.rejoin.is_empty() {
            parts.push(format!("re-filtered {}", names(&self.rejoin)));
        }
        if !self.remove.is_empty() {
            parts.push(format!("removed {}", self.remove.join(", ")));
        }
        if !self.retry.is_empty() {
            parts.push(format!("retried {}", names(&self.retry)));
        }
        if parts.is_empty() {
            parts.push("no backend changed".into());
        }
        let sections: Vec<&str> = [
            (self.auth, "[auth]"),
            (self.policy, "[policy]"),
            (self.limits, "[limits]"),
        ]
        .into_iter()
        .filter_map(|(changed, name)| changed.then_some(name))
        .collect();
        if !sections.is_empty() {
            parts.push(format!("applied {}", sections.join(", ")));
        }
        f.write_str(&parts.join("; "))
    }
}

/// What turns `serving` into `next`. `down` names the backends of `serving` that are not
/// running (they did not start): unchanged, they are tried again.
pub fn plan(serving: &GatewayConfig, next: &GatewayConfig, down: &[String]) -> ReloadPlan {
    let mut plan = ReloadPlan::default();
    for b in &next.backends {
        match serving.backend(&b.name) {
            None => plan.add.push(b.clone()),
            Some(_) if down.contains(&b.name) => plan.retry.push(b.clone()),
            Some(old) if old.source != b.source => plan.restart.push(b.clone()),
            Some(old) if old.member != b.member => plan.rejoin.push(b.clone()),
            Some(_) => {}
        }
    }
    for b in &serving.backends {
        if next.backend(&b.name).is_none() {
            plan.remove.push(b.name.clone());
        }
    }
    if serving.listeners != next.listeners {
        plan.ignored.push("listeners".into());
    }
    // Authentication on or off changes what each listener serves (metadata, challenges):
    // that is for the next start; a changed `[auth]` is applied.
    if serving.auth.is_some() != next.auth.is_some() {
        plan.ignored.push("auth (turned on or off)".into());
    } else if serving.auth != next.auth {
        plan.auth = true;
    }
    plan.policy = serving.policy != next.policy;
    plan.limits = serving.limits != next.limits;
    if serving.cluster != next.cluster {
        plan.ignored.push("cluster".into());
    }
    if serving.server != next.server {
        plan.ignored.push("[server] options".into());
    }
    if serving.views != next.views {
        plan.ignored.push("views".into());
    }
    let admin_listen = |c: &GatewayConfig| c.admin.as_ref().map(|a| a.listen);
    if admin_listen(serving) != admin_listen(next) {
        plan.ignored.push("[admin] listen".into());
    }
    if serving.telemetry != next.telemetry {
        plan.ignored.push("telemetry".into());
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn config(text: &str) -> GatewayConfig {
        GatewayConfig::from_toml(Path::new("g.toml"), text).expect(text)
    }

    const BASE: &str = r#"
[[listen]]
url = "http://127.0.0.1:0/mcp"
[backends.a]
native = "demo"
[backends.b]
process = "b.py"
[backends.c]
process = "c.py"
[backends.d]
native = "demo"
"#;

    #[test]
    fn a_reload_plan() {
        let next = BASE
            .replace("process = \"b.py\"", "process = \"b2.py\"")
            .replace(
                "process = \"c.py\"",
                "process = \"c.py\"\nexclude = [\"x*\"]",
            )
            .replace(
                "[backends.d]\nnative = \"demo\"\n",
                "[backends.e]\nnative = \"demo\"\n",
            )
            .replace("127.0.0.1:0", "127.0.0.1:1");
        let p = plan(&config(BASE), &config(&next), &[]);
        let names = |v: &[BackendSpec]| v.iter().map(|b| b.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&p.add), ["e"]);
        assert_eq!(names(&p.restart), ["b"]);
        assert_eq!(names(&p.rejoin), ["c"]);
        assert_eq!(p.remove, ["d"]);
        assert_eq!(p.ignored, ["listeners"]);
        assert_eq!(
            p.to_string(),
            "added e; restarted b; re-filtered c; removed d"
        );
    }

    #[test]
    fn unchanged_is_empty_but_down_backends_are_retried() {
        let p = plan(&config(BASE), &config(BASE), &[]);
        assert!(p.is_empty() && p.ignored.is_empty(), "{p:?}");
        let p = plan(&config(BASE), &config(BASE), &["b".into()]);
        assert_eq!(p.retry.len(), 1);
        assert_eq!(p.to_string(), "retried b");
    }
}
