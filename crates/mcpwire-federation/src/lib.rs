//! One catalog over many backends: a [`Federation`] is itself a
//! [`Backend`](mcpwire_router::Backend) composing named members (native servers, tool
//! processes, upstream MCP servers, other federations).
//!
//! **Is:** the merge of the members' tools, prompts, resources, resource templates and
//! completions into one catalog with names that are always valid and unique; the owner
//! index that sends every call to exactly one member; the event plumbing (a member's
//! `list_changed` re-lists only that member); member filters, renames, fail modes, views
//! and hot replacement of members; the [`CatalogReport`] behind `mcpwire serve --check`.
//!
//! **Is not:** a client or a transport (members are backends already), a session, or
//! configuration parsing (the `serve` command reads its TOML and builds a
//! [`FederationConfig`]).
//!
//! # Rules
//! - **Names.** Tools and prompts are exposed as `member{separator}name` when prefixed
//!   ([`PrefixMode`]: `Conditional` prefixes with two or more members), else as the
//!   member's name. Characters outside `[a-zA-Z0-9_-]` become `_`; a name over 64
//!   characters is cut and ends in `-` and 8 hex digits of a stable hash. Configured
//!   renames are exact and claimed first; then items are named in catalog order (members
//!   in configuration order, then each member's own order), and a name already taken falls
//!   back to the prefixed name, then to a hashed one — every such case is a reported
//!   collision. Exposed names always match `^[a-zA-Z0-9_-]{1,64}$`.
//! - **URIs.** Resource URIs and templates are exposed unchanged unless an earlier member
//!   holds the same one; the later one becomes `mcpwire+{member tag}:{original}` (a valid
//!   URI; stripping the prefix gives the original back, for template expansions too).
//!   `resources/read`, `subscribe` and `unsubscribe` go to the member of the listed
//!   resource, else of the first template the URI expands, else of the rewritten prefix,
//!   else to the only member offering resources; `notifications/resources/updated` comes
//!   back under the exposed URI.
//! - **Task ids** from members that create tasks themselves are exposed as
//!   `{member}.{id}`; `tasks/*` requests go back to that member under its own id.
//! - **Completions** go to the member owning the prompt or template they refer to.
//! - **Order and pages.** Lists keep catalog order and are served in pages of
//!   `page_size` (cursor: the page number); pages are serialized once per change.
//! - **Calls** carry the caller's `CallCtx` unchanged (progress, cancellation, asks reach
//!   the downstream client) and raw arguments; errors keep their `McpError` variant and
//!   name the exposed item.
//!
//! # Example
//! ```
//! use mcpwire_federation::{Federation, FederationConfig, Member};
//! use mcpwire_model::types::Implementation;
//! use mcpwire_router::{CallCtx, Server, ToolError, tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Text { text: String }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! let echo = |name: &str| Server::builder(Implementation::new(name, "1"))
//!     .tool(tool("echo", |_: CallCtx, a: Text| async move { Ok::<_, ToolError>(a.text) }))
//!     .build();
//! let config = FederationConfig::new(Implementation::new("gateway", "1"))
//!     .member(Member::new("a", echo("a")))
//!     .member(Member::new("b", echo("b")));
//! let fed = Federation::new(config).await.unwrap();
//! let names: Vec<_> = fed.report().tools.into_iter().map(|t| t.exposed).collect();
//! assert_eq!(names, ["a_echo", "b_echo"]);
//! # }
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod catalog;
mod config;
mod disclosure;
mod dispatch;
mod federation;
mod glob;
mod listing;
mod naming;
mod pages;
mod policed;
mod policy;
mod pump;
mod report;
mod search_catalog;
mod subset;
mod tool_index;
mod tool_vectors;
mod uri;
mod view;

pub use config::{
    CatalogMode, FailMode, FederationConfig, FederationError, MAX_PAGE_SIZE, Member, MemberFilter,
    PrefixMode, ViewSpec,
};
pub use disclosure::{MAX_DISCLOSED_BYTES, MAX_DISCLOSED_PER_SESSION};
pub use federation::Federation;
pub use glob::{Glob, GlobError};
pub use mcpwire_search::Embed;
pub use naming::{Collision, NAME_MAX, NameOrigin, is_valid_name};
pub use policy::{Audience, Callers, Effect, Policy, PolicyItem, PolicyRule, Targets};
pub use report::{CatalogReport, ExposedItem, KindCollision, MemberHealth, MemberReport};
pub use search_catalog::{CALL_TOOL, DEFAULT_SEARCH_LIMIT, SEARCH_TOOLS, SearchCatalog};
pub use tool_index::{
    MAX_SEARCH_LIMIT, SEARCH_DURATION, SEARCH_MODEL_FALLBACKS_TOTAL, SEARCH_QUERY_VECTORS_TOTAL,
    SEARCHES_TOTAL, SearchStatus, describe_search_metrics,
};
pub use view::View;
