//! Tool search for a gateway's catalog: which of hundreds of tools fit a request.
//!
//! **Is:** a sans-IO, in-memory BM25F index over tool definitions — the name split into
//! words, title, description, parameter names and descriptions, and the backend's name and
//! instructions — with light English stemming, ASCII folding, stop words and a small
//! hand-written synonym table, each switchable ([`RankingOptions`]). Backends are indexed,
//! replaced and removed one at a time; a search sees only the tools its visibility filter
//! accepts. Semantic ranking plugs in through [`Embed`] and [`VectorIndex`], fused with the
//! lexical ranks ([`Fusion`]); the model itself is the `semantic` feature's. **Is not:** a
//! persistent store, or the
//! `search_tools` meta-tool itself (the gateway builds that on this).
//!
//! ```
//! use mcpwire_search::{Index, RankingOptions, ToolInput};
//!
//! let mut index = Index::new(RankingOptions::full());
//! let tools = [
//!     ToolInput { name: "create_issue", description: Some("Open a new issue"), ..Default::default() },
//!     ToolInput { name: "list_commits", description: Some("Commits of a branch"), ..Default::default() },
//! ];
//! index.replace_backend("github", "", tools);
//! let hits = index.search("file a bug about the login page", 5, &|_| true);
//! assert_eq!(hits[0].name, "create_issue");
//! ```
//!
//! The model, the weights and the measured quality are in `docs/design/search.md`.

mod analyze;
mod index;
mod input;
mod options;
mod search;
#[cfg(feature = "semantic")]
pub mod semantic;
mod synonyms;
mod vectors;
mod words;

pub use index::{Index, MAX_FIELD_TERMS};
pub use input::{MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, ToolInput};
pub use options::{FIELD_COUNT, Field, FieldMode, FieldParams, RankingOptions};
pub use search::{Hit, MAX_EXPANSIONS, MAX_QUERY_BYTES, MAX_QUERY_TERMS, ToolRef};
pub use vectors::{
    Embed, EmbedError, FUSE_DEPTH, Fusion, MAX_TOOL_TEXT_BYTES, TextOptions, VectorIndex, cosine,
    fuse, tool_text,
};

/// What can go wrong reading a tool definition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchError {
    /// The tool definition is not a JSON object.
    #[error("a tool definition must be a JSON object")]
    NotAnObject,
    /// The tool definition has no string `name`.
    #[error("a tool definition needs a string `name`")]
    MissingName,
}
