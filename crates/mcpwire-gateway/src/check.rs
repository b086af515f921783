//! [`CheckReport`]: what `mcpwire serve --check` prints — listeners, backends (running or
//! not, and why), the merged catalog with its renames, collisions and member health, and
//! what each view shows. `Display` for people, `Serialize` for `--json`.

use std::fmt;

use mcpwire_federation::{CatalogReport, Federation};
use mcpwire_router::Identity;
use serde::Serialize;

use crate::config::{BackendSource, GatewayConfig};

/// Whose catalog `--check` reports: everything, or what one caller may see and call
/// (`--as`, `--as-key`, `--as-anonymous`) under `[policy]`.
#[derive(Debug, Clone, Default)]
pub enum CheckCaller {
    /// The whole catalog, policy aside.
    #[default]
    Everything,
    /// The anonymous caller (stdio, listeners without authentication).
    Anonymous,
    /// An authenticated caller.
    Identity(Identity),
}

impl CheckCaller {
    /// How the report names the caller (`None` for everything).
    fn describe(&self) -> Option<String> {
        match self {
            CheckCaller::Everything => None,
            CheckCaller::Anonymous => Some("the anonymous caller".into()),
            CheckCaller::Identity(id) => {
                let mut s = format!("`{}`", id.subject());
                if !id.scopes().is_empty() {
                    s.push_str(&format!(" with scopes {}", id.scopes().join(" ")));
                }
                for (k, v) in id.claims().iter().filter(|(k, _)| *k != "sub") {
                    s.push_str(&format!(", {k} = {v}"));
                }
                Some(s)
            }
        }
    }

    /// The catalog `fed` (or one of its views) shows this caller.
    fn report(
        &self,
        everything: CatalogReport,
        as_caller: impl Fn(Option<&Identity>) -> CatalogReport,
    ) -> CatalogReport {
        match self {
            CheckCaller::Everything => everything,
            CheckCaller::Anonymous => as_caller(None),
            CheckCaller::Identity(id) => as_caller(Some(id)),
        }
    }
}

/// The gateway as `--check` sees it.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// Whose catalog this is (`None`: the whole catalog, policy aside).
    pub caller: Option<String>,
    /// Where it would listen.
    pub listeners: Vec<ListenerCheck>,
    /// What it serves, in catalog order.
    pub backends: Vec<BackendCheck>,
    /// The merged catalog (none for a backend served alone, without a federation).
    pub catalog: Option<CatalogReport>,
    /// What each view shows.
    pub views: Vec<ViewCheck>,
}

/// One listener.
#[derive(Debug, Clone, Serialize)]
pub struct ListenerCheck {
    /// Its URL.
    pub url: String,
    /// The view it serves, if not the whole catalog.
    pub view: Option<String>,
}

/// One backend.
#[derive(Debug, Clone, Serialize)]
pub struct BackendCheck {
    /// Its name.
    pub name: String,
    /// `native`, `process` or `upstream`.
    pub kind: &'static str,
    /// The native server, tool file, command line or URL.
    pub source: String,
    /// Whether it is running.
    pub started: bool,
    /// Why it is not.
    pub error: Option<String>,
}

/// One view: the exposed names it shows.
#[derive(Debug, Clone, Serialize)]
pub struct ViewCheck {
    /// Its name.
    pub name: String,
    /// Tools.
    pub tools: Vec<String>,
    /// Prompts.
    pub prompts: Vec<String>,
    /// Resources and resource templates.
    pub resources: Vec<String>,
}

impl CheckReport {
    pub(crate) fn new(
        config: &GatewayConfig,
        down: &[(String, String)],
        federation: Option<&Federation>,
        caller: &CheckCaller,
    ) -> CheckReport {
        let listeners = config
            .listeners
            .iter()
            .map(|l| ListenerCheck {
                url: l.url(),
                view: l.options.view.clone(),
            })
            .collect();
        let backends = config
            .backends
            .iter()
            .map(|b| {
                let error = down
                    .iter()
                    .find(|(n, _)| n == &b.name)
                    .map(|(_, e)| e.clone());
                BackendCheck {
                    name: b.name.clone(),
                    kind: b.source.kind(),
                    source: match &b.source {
                        BackendSource::Native { server } => server.clone(),
                        BackendSource::Process(p) => p.file.display().to_string(),
                        BackendSource::Upstream(t) => t.to_string(),
                        BackendSource::OpenApi(o) => o.document.clone(),
                        BackendSource::Grpc(g) => g.url.clone(),
                    },
                    started: error.is_none(),
                    error,
                }
            })
            .collect();
        let views = match federation {
            Some(fed) => config
                .views
                .iter()
                .map(|spec| {
                    let view = fed.view(spec);
                    let r = caller.report(view.report(), |who| view.report_as(who));
                    let names = |items: &[mcpwire_federation::ExposedItem]| {
                        items.iter().map(|i| i.exposed.clone()).collect::<Vec<_>>()
                    };
                    let mut resources = names(&r.resources);
                    resources.extend(names(&r.templates));
                    ViewCheck {
                        name: spec.name.clone(),
                        tools: names(&r.tools),
                        prompts: names(&r.prompts),
                        resources,
                    }
                })
                .collect(),
            None => Vec::new(),
        };
        CheckReport {
            caller: caller.describe(),
            listeners,
            backends,
            catalog: federation.map(|fed| caller.report(fed.report(), |who| fed.report_as(who))),
            views,
        }
    }

    /// Whether every backend is running and could list what it offers.
    pub fn healthy(&self) -> bool {
        self.backends.iter().all(|b| b.started)
            && self
                .catalog
                .as_ref()
                .is_none_or(|c| c.members.iter().all(|m| m.health.is_ok()))
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "listeners ({}):", self.listeners.len())?;
        for l in &self.listeners {
            match &l.view {
                Some(v) => writeln!(f, "  {}  (view {v})", l.url)?,
                None => writeln!(f, "  {}", l.url)?,
            }
        }
        writeln!(f, "backends ({}):", self.backends.len())?;
        let width = self
            .backends
            .iter()
            .map(|b| b.name.len())
            .max()
            .unwrap_or(0);
        for b in &self.backends {
            write!(f, "  {:<width$}  {:<8}  {}", b.name, b.kind, b.source)?;
            match &b.error {
                Some(e) => writeln!(f, "  NOT STARTED: {e}")?,
                None => writeln!(f)?,
            }
        }
        if let Some(caller) = &self.caller {
            writeln!(f, "as {caller} (what this caller may list and call):")?;
        }
        if let Some(catalog) = &self.catalog {
            write!(f, "{catalog}")?;
        }
        for v in &self.views {
            writeln!(
                f,
                "view {}: {} tools, {} prompts, {} resources",
                v.name,
                v.tools.len(),
                v.prompts.len(),
                v.resources.len()
            )?;
            for t in &v.tools {
                writeln!(f, "  {t}")?;
            }
        }
        Ok(())
    }
}
