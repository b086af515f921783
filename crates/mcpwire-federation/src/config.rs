//! What a federation is built from: [`FederationConfig`], its [`Member`]s and their
//! options, and [`ViewSpec`]s; the errors a bad configuration gets.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::Implementation;
use mcpwire_router::Backend;
use serde::{Deserialize, Serialize};

use crate::glob::Glob;
use crate::naming::is_valid_name;
use crate::policy::Policy;

/// When exposed tool and prompt names carry their member's name as a prefix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefixMode {
    /// Only when the federation has two or more members (configured, healthy or not).
    #[default]
    Conditional,
    /// Always, even with one member.
    Always,
    /// Never: names stay as the members list them; a later member's name that is taken
    /// is prefixed (then hashed), and the collision reported.
    Never,
}

/// What happens to the catalog when a member cannot list what it offers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// The catalog is served without the member (a warning is logged, the report shows
    /// it unavailable) and the member is listed again with backoff until it answers.
    #[default]
    FailOpen,
    /// No partial catalog: [`crate::Federation::new`] fails when the member cannot list,
    /// and while it is unavailable later on, `*/list` requests answer an error naming it
    /// (calls to the other members still work).
    FailClosed,
}

/// Which of a member's tools, prompts, resources and templates enter the catalog: those
/// matching any `include` pattern (all when `include` is empty) and no `exclude` pattern.
/// Patterns are matched against the member's own names (tools, prompts) and URIs
/// (resources, and templates by their `uriTemplate` text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberFilter {
    /// Kept when matching any of these (everything when empty).
    #[serde(default)]
    pub include: Vec<Glob>,
    /// Dropped when matching any of these.
    #[serde(default)]
    pub exclude: Vec<Glob>,
}

impl MemberFilter {
    /// Whether an item called `name` (or at URI `name`) passes.
    pub fn allows(&self, name: &str) -> bool {
        (self.include.is_empty() || crate::glob::any_matches(&self.include, name))
            && !crate::glob::any_matches(&self.exclude, name)
    }
}

/// One backend of a federation, under a name.
#[derive(Clone)]
pub struct Member {
    /// The member's name: `[a-zA-Z0-9_-]{1,64}`, unique in the federation; the prefix of
    /// its names and the attribution of its logs.
    pub name: String,
    /// The backend.
    pub backend: Arc<dyn Backend>,
    /// Which of its items are exposed.
    pub filter: MemberFilter,
    /// Exposed names set by configuration: the member's tool or prompt name → the exact
    /// name clients see (no prefix is added). Targets must be valid names.
    pub renames: BTreeMap<String, String>,
    /// Whether the catalog is served without this member when it cannot list.
    pub fail_mode: FailMode,
    /// The member's own `instructions` for the model, if it has any; the federation's
    /// instructions include them under the member's name.
    pub instructions: Option<String>,
}

impl fmt::Debug for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("name", &self.name)
            .field("backend", &self.backend.info().name)
            .field("filter", &self.filter)
            .field("renames", &self.renames)
            .field("fail_mode", &self.fail_mode)
            .finish()
    }
}

impl Member {
    /// A fail-open member exposing everything `backend` offers, under `name`.
    pub fn new(name: impl Into<String>, backend: Arc<dyn Backend>) -> Member {
        Member {
            name: name.into(),
            backend,
            filter: MemberFilter::default(),
            renames: BTreeMap::new(),
            fail_mode: FailMode::FailOpen,
            instructions: None,
        }
    }

    /// Keeps only items matching `pattern` (or another `include`).
    pub fn include(mut self, pattern: Glob) -> Member {
        self.filter.include.push(pattern);
        self
    }

    /// Drops items matching `pattern`.
    pub fn exclude(mut self, pattern: Glob) -> Member {
        self.filter.exclude.push(pattern);
        self
    }

    /// Exposes the member's tool or prompt `original` as exactly `exposed`.
    pub fn rename(mut self, original: impl Into<String>, exposed: impl Into<String>) -> Member {
        self.renames.insert(original.into(), exposed.into());
        self
    }

    /// Sets the fail mode.
    pub fn fail_mode(mut self, mode: FailMode) -> Member {
        self.fail_mode = mode;
        self
    }

    /// Sets the member's instructions for the model.
    pub fn instructions(mut self, text: impl Into<String>) -> Member {
        self.instructions = Some(text.into());
        self
    }

    /// Checks the name and the renames.
    pub(crate) fn validate(&self) -> Result<(), FederationError> {
        if !is_valid_name(&self.name) {
            return Err(FederationError::InvalidMemberName(self.name.clone()));
        }
        let mut targets = BTreeMap::new();
        for (original, exposed) in &self.renames {
            if !is_valid_name(exposed) {
                return Err(FederationError::InvalidRename {
                    member: self.name.clone(),
                    original: original.clone(),
                    exposed: exposed.clone(),
                });
            }
            if let Some(other) = targets.insert(exposed, original) {
                return Err(FederationError::RenameConflict {
                    exposed: exposed.clone(),
                    first: format!("{}/{other}", self.name),
                    second: format!("{}/{original}", self.name),
                });
            }
        }
        Ok(())
    }
}

/// How a federation behaves.
#[derive(Debug, Clone)]
pub struct FederationConfig {
    /// Who the federation says it is (`serverInfo`); its `description` is filled with the
    /// members behind it when unset (see [`crate::Federation::server_info`]).
    pub server_info: Implementation,
    /// The members, in catalog order.
    pub members: Vec<Member>,
    /// When names carry the member prefix.
    pub prefix: PrefixMode,
    /// Between prefix and name: `[a-zA-Z0-9_-]{1,8}`, `_` by default.
    pub separator: String,
    /// Items per `*/list` page (1 to [`MAX_PAGE_SIZE`]; 500 by default).
    pub page_size: usize,
    /// How long listing one member (every page of every kind) may take.
    pub list_timeout: Duration,
    /// Most items of one kind taken from one member (more is a listing failure).
    pub max_items_per_member: usize,
    /// The first delay before listing an unavailable member again; it doubles up to
    /// `retry_max`.
    pub retry_initial: Duration,
    /// The longest delay between attempts to list an unavailable member.
    pub retry_max: Duration,
    /// Offer tools, prompts, resources (with subscriptions), completions and the tasks
    /// extension even when no member does yet, for catalogs that grow at run time (hot
    /// reload): capabilities are fixed when a client connects.
    pub advertise_all: bool,
    /// A fail-closed member that cannot list at the start does not fail
    /// [`Federation::new`](crate::Federation::new): the federation starts refusing lists and
    /// calls (as when such a member goes down later) and lists it again with backoff until
    /// it answers — a server started before its upstreams (default: `false`, the start
    /// fails).
    pub wait_for_required: bool,
    /// Per-caller allow/deny rules over the catalog (open by default): hidden items are
    /// not listed and answer as unknown ones, for the federation and every view.
    pub policy: Policy,
    /// A sentence-embedding model that re-ranks tool searches (`search_tools`, `tools/list`
    /// with a `query`) together with the lexical index; `None` (the default): lexical only.
    /// Tools are embedded on a thread of their own when their member's listing changes.
    pub search_model: Option<std::sync::Arc<dyn mcpwire_search::Embed>>,
}

/// The largest page a federation serves.
pub const MAX_PAGE_SIZE: usize = 1000;

impl FederationConfig {
    /// Defaults: conditional prefixes with `_`, pages of 500, 10 s to list a member,
    /// 10,000 items per kind and member, retries from 1 s up to 60 s.
    pub fn new(server_info: Implementation) -> FederationConfig {
        FederationConfig {
            server_info,
            members: Vec::new(),
            prefix: PrefixMode::Conditional,
            separator: "_".into(),
            page_size: 500,
            list_timeout: Duration::from_secs(10),
            max_items_per_member: 10_000,
            retry_initial: Duration::from_secs(1),
            retry_max: Duration::from_secs(60),
            wait_for_required: false,
            advertise_all: false,
            policy: Policy::default(),
            search_model: None,
        }
    }

    /// Sets the policy.
    pub fn policy(mut self, policy: Policy) -> FederationConfig {
        self.policy = policy;
        self
    }

    /// Adds a member (after the others).
    pub fn member(mut self, member: Member) -> FederationConfig {
        self.members.push(member);
        self
    }

    /// Sets the prefix mode.
    pub fn prefix(mut self, mode: PrefixMode) -> FederationConfig {
        self.prefix = mode;
        self
    }

    /// Checks everything that can be checked without listing the members.
    pub(crate) fn validate(&self) -> Result<(), FederationError> {
        let sep_ok = (1..=8).contains(&self.separator.len()) && is_valid_name(&self.separator);
        if !sep_ok {
            return Err(FederationError::InvalidSeparator(self.separator.clone()));
        }
        if !(1..=MAX_PAGE_SIZE).contains(&self.page_size) {
            return Err(FederationError::InvalidPageSize(self.page_size));
        }
        let mut names = std::collections::HashSet::new();
        let mut targets: BTreeMap<&str, String> = BTreeMap::new();
        for m in &self.members {
            m.validate()?;
            if !names.insert(m.name.as_str()) {
                return Err(FederationError::DuplicateMember(m.name.clone()));
            }
            for (original, exposed) in &m.renames {
                let here = format!("{}/{original}", m.name);
                if let Some(first) = targets.insert(exposed, here.clone()) {
                    return Err(FederationError::RenameConflict {
                        exposed: exposed.clone(),
                        first,
                        second: here,
                    });
                }
            }
        }
        Ok(())
    }
}

/// What `tools/list` shows the clients of a listener or a view.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatalogMode {
    /// Every tool the caller may see: the usual listing.
    #[default]
    Full,
    /// The meta-tools `search_tools` and `call_tool`, then the tools this session's
    /// searches disclosed (see [`crate::SearchCatalog`]); calls by exact name still work.
    Search,
}

/// A named subset of the catalog, served as a backend of its own (a "virtual server"):
/// everything of the listed `members`, plus the tools, prompts and resources (resources
/// and templates, by exposed URI or `uriTemplate`) matching the patterns, by their exposed
/// names. A kind with no pattern contributes nothing beyond the members'.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewSpec {
    /// The view's name (its `serverInfo` name and logs).
    pub name: String,
    /// Members whose every item is in the view.
    #[serde(default)]
    pub members: Vec<String>,
    /// Tools by exposed name.
    #[serde(default)]
    pub tools: Vec<Glob>,
    /// Prompts by exposed name.
    #[serde(default)]
    pub prompts: Vec<Glob>,
    /// Resources and templates by exposed URI / `uriTemplate`.
    #[serde(default)]
    pub resources: Vec<Glob>,
    /// What the view's `tools/list` shows (`None`: as the listener's server options say).
    #[serde(default)]
    pub catalog: Option<CatalogMode>,
}

impl ViewSpec {
    /// An empty view called `name`.
    pub fn new(name: impl Into<String>) -> ViewSpec {
        ViewSpec {
            name: name.into(),
            ..ViewSpec::default()
        }
    }

    /// Adds everything of `member`.
    pub fn member(mut self, member: impl Into<String>) -> ViewSpec {
        self.members.push(member.into());
        self
    }

    /// Adds the tools matching `pattern`.
    pub fn tools(mut self, pattern: Glob) -> ViewSpec {
        self.tools.push(pattern);
        self
    }

    /// Adds the prompts matching `pattern`.
    pub fn prompts(mut self, pattern: Glob) -> ViewSpec {
        self.prompts.push(pattern);
        self
    }

    /// Adds the resources and templates matching `pattern`.
    pub fn resources(mut self, pattern: Glob) -> ViewSpec {
        self.resources.push(pattern);
        self
    }

    /// Sets what the view's `tools/list` shows.
    pub fn catalog(mut self, mode: CatalogMode) -> ViewSpec {
        self.catalog = Some(mode);
        self
    }
}

/// Why a federation could not be built or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FederationError {
    /// A member name is not `[a-zA-Z0-9_-]{1,64}`.
    #[error("invalid member name {0:?}: use 1 to 64 of a-z, A-Z, 0-9, '_' and '-'")]
    InvalidMemberName(String),
    /// Two members have the same name.
    #[error("two members are named {0:?}")]
    DuplicateMember(String),
    /// The separator is not `[a-zA-Z0-9_-]{1,8}`.
    #[error("invalid prefix separator {0:?}: use 1 to 8 of a-z, A-Z, 0-9, '_' and '-'")]
    InvalidSeparator(String),
    /// The page size is out of range.
    #[error("invalid page size {0}: use 1 to {MAX_PAGE_SIZE}")]
    InvalidPageSize(usize),
    /// A rename's target is not a valid name.
    #[error(
        "member {member}: cannot rename {original:?} to {exposed:?}: names are 1 to 64 of a-z, A-Z, 0-9, '_' and '-'"
    )]
    InvalidRename {
        /// The member.
        member: String,
        /// Its item.
        original: String,
        /// The refused name.
        exposed: String,
    },
    /// Two renames give the same name.
    #[error("{first} and {second} are both renamed to {exposed:?}")]
    RenameConflict {
        /// The contested name.
        exposed: String,
        /// `member/original` of the first rename.
        first: String,
        /// `member/original` of the second.
        second: String,
    },
    /// A fail-closed member could not list what it offers.
    #[error("member {member} (fail-closed) is unavailable: {reason}")]
    MemberUnavailable {
        /// The member.
        member: String,
        /// Why.
        reason: String,
    },
    /// [`crate::Federation::replace_member`] named no member and gave none to add.
    #[error("no member is named {0:?}")]
    UnknownMember(String),
}
