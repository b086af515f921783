//! [`CatalogReport`]: the merged catalog as people (`serve --check`) and tools (JSON) see it.

use std::fmt;

use serde::Serialize;

use crate::config::{FailMode, PrefixMode};
use crate::naming::{Collision, NameOrigin};

/// Whether a member could list what it offers, last time it was asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum MemberHealth {
    /// Listed; its items are in the catalog.
    Ok,
    /// Could not list: left out of the catalog (fail-open) or holding the lists back
    /// (fail-closed); listed again with backoff.
    Unavailable {
        /// Why, for people.
        reason: String,
        /// Failed attempts in a row.
        failures: u32,
    },
}

impl MemberHealth {
    /// Whether the member listed successfully.
    pub fn is_ok(&self) -> bool {
        matches!(self, MemberHealth::Ok)
    }
}

/// One member in a [`CatalogReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberReport {
    /// Its name.
    pub name: String,
    /// Its fail mode.
    pub fail_mode: FailMode,
    /// Its health.
    pub health: MemberHealth,
    /// Tools it contributes.
    pub tools: usize,
    /// Prompts it contributes.
    pub prompts: usize,
    /// Resources it contributes.
    pub resources: usize,
    /// Resource templates it contributes.
    pub templates: usize,
    /// Items its filter left out.
    pub filtered_out: usize,
}

/// One exposed tool, prompt, resource or template and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExposedItem {
    /// The name (or URI, `uriTemplate`) clients see.
    pub exposed: String,
    /// The member behind it.
    pub member: String,
    /// Its name (or URI) in that member.
    pub original: String,
    /// Why `exposed` differs from `original`, if it does.
    pub origin: NameOrigin,
}

/// A collision, with the kind of item it concerns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindCollision {
    /// `tool`, `prompt`, `resource` or `resource template`.
    pub kind: &'static str,
    /// The collision.
    #[serde(flatten)]
    pub collision: Collision,
}

/// The merged catalog: members and their health, every exposed item with its owner and
/// original name, and the collisions. `Serialize` gives the JSON form; `Display` the text
/// `mcpwire serve --check` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CatalogReport {
    /// The prefix mode.
    pub prefix: PrefixMode,
    /// Whether names carry prefixes now (the mode and the number of members).
    pub prefixed: bool,
    /// The prefix separator.
    pub separator: String,
    /// The members, in catalog order.
    pub members: Vec<MemberReport>,
    /// Exposed tools, in listing order.
    pub tools: Vec<ExposedItem>,
    /// Exposed prompts.
    pub prompts: Vec<ExposedItem>,
    /// Exposed resources.
    pub resources: Vec<ExposedItem>,
    /// Exposed resource templates.
    pub templates: Vec<ExposedItem>,
    /// Items that could not have their natural name.
    pub collisions: Vec<KindCollision>,
}

impl CatalogReport {
    /// Items whose exposed name differs from the member's other than by the prefix or a
    /// collision (those are in `collisions`): renamed by configuration, sanitized or
    /// shortened.
    pub fn renamed(&self) -> impl Iterator<Item = (&'static str, &ExposedItem)> {
        let kinds = [
            ("tool", &self.tools),
            ("prompt", &self.prompts),
            ("resource", &self.resources),
            ("resource template", &self.templates),
        ];
        kinds.into_iter().flat_map(|(k, items)| {
            items
                .iter()
                .filter(|i| {
                    matches!(
                        i.origin,
                        NameOrigin::Renamed | NameOrigin::Sanitized | NameOrigin::Shortened
                    )
                })
                .map(move |i| (k, i))
        })
    }
}

impl fmt::Display for CatalogReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix = match (self.prefix, self.prefixed) {
            (PrefixMode::Never, _) => "never".to_owned(),
            (mode, true) => {
                format!("{mode:?}, names are member{}name", self.separator).to_lowercase()
            }
            (mode, false) => format!("{mode:?}, names are unprefixed").to_lowercase(),
        };
        writeln!(
            f,
            "members ({} members, prefix: {prefix}):",
            self.members.len()
        )?;
        for m in &self.members {
            let mode = match m.fail_mode {
                FailMode::FailOpen => "fail-open",
                FailMode::FailClosed => "fail-closed",
            };
            match &m.health {
                MemberHealth::Ok => write!(
                    f,
                    "  {:<16} ok           {} tools, {} prompts, {} resources, {} templates",
                    m.name, m.tools, m.prompts, m.resources, m.templates
                )?,
                MemberHealth::Unavailable { reason, failures } => write!(
                    f,
                    "  {:<16} UNAVAILABLE  {reason} ({failures} failed attempts)",
                    m.name
                )?,
            }
            if m.filtered_out > 0 {
                write!(f, ", {} filtered out", m.filtered_out)?;
            }
            writeln!(f, " [{mode}]")?;
        }
        let sections = [
            ("tools", &self.tools),
            ("prompts", &self.prompts),
            ("resources", &self.resources),
            ("resource templates", &self.templates),
        ];
        for (title, items) in sections {
            if items.is_empty() {
                continue;
            }
            writeln!(f, "{title} ({}):", items.len())?;
            let width = items
                .iter()
                .map(|i| i.exposed.len())
                .max()
                .unwrap_or(0)
                .min(64);
            for i in items {
                writeln!(f, "  {:<width$}  ← {}: {}", i.exposed, i.member, i.original)?;
            }
        }
        let renamed: Vec<_> = self.renamed().collect();
        if !renamed.is_empty() {
            writeln!(f, "renamed ({}):", renamed.len())?;
            for (kind, i) in renamed {
                let why = serde_json::to_value(i.origin)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                writeln!(
                    f,
                    "  {kind} {}/{} → {} ({why})",
                    i.member, i.original, i.exposed
                )?;
            }
        }
        if !self.collisions.is_empty() {
            writeln!(f, "collisions ({}):", self.collisions.len())?;
            for KindCollision { kind, collision: c } in &self.collisions {
                match &c.exposed_as {
                    Some(e) => writeln!(
                        f,
                        "  {kind} {:?}: kept by {}; {}'s {:?} is exposed as {e:?}",
                        c.name, c.kept_by, c.member, c.original
                    )?,
                    None => writeln!(
                        f,
                        "  {kind} {:?}: {} lists it more than once; only the first is exposed",
                        c.name, c.member
                    )?,
                }
            }
        }
        Ok(())
    }
}
