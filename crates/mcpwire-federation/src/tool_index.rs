//! The federation's search index over its exposed tools ([`mcpwire_search::Index`]), kept
//! in step with the catalog: at each rebuild only the members whose tools (as exposed) or
//! instructions changed are indexed again. Searches see what the caller's scope admits
//! only (the engine then computes its statistics over those tools alone). With a model
//! (`FederationConfig::search_model`) the changed members are also embedded again
//! (`tool_vectors.rs`) and a search fuses both rankings.

use std::sync::{Arc, PoisonError, RwLock};

use mcpwire_model::{Raw, to_raw};
use mcpwire_router::BoxFuture;
use mcpwire_search::{Embed, FUSE_DEPTH, Fusion, Index, RankingOptions, ToolInput, ToolRef};
use serde_json::Value;

use crate::catalog::{Catalog, Entry, Scope};
use crate::listing::{Item, Kind};
use crate::subset::Sight;
use crate::tool_vectors::ToolVectors;

/// The most tools one search returns (`search_tools`' `limit` is clamped to it).
pub const MAX_SEARCH_LIMIT: usize = 50;

/// How many tools `tools/list` with a `query` (SEP-1821) answers at most.
pub(crate) const QUERY_LIST_LIMIT: usize = 20;

/// Searches answered (`search_tools`, `tools/list` with a `query`), by `ranking`: `lexical`
/// (no model, or the query not embedded) or `fused`.
pub const SEARCHES_TOTAL: &str = "mcpwire_searches_total";
/// Search durations, the query's embedding included, by `ranking` (the admin listener's
/// recorder gives `mcpwire_search_*` histograms buckets from 10 µs).
pub const SEARCH_DURATION: &str = "mcpwire_search_duration_seconds";
/// Query vectors a search used, by `source`: `cache` (a query seen recently) or `model`
/// (embedded for this search).
pub const SEARCH_QUERY_VECTORS_TOTAL: &str = "mcpwire_search_query_vectors_total";
/// Searches a loaded model did not serve (the query's embedding failed): ranked lexically.
pub const SEARCH_MODEL_FALLBACKS_TOTAL: &str = "mcpwire_search_model_fallbacks_total";
/// Describes the search metrics to the installed `metrics` recorder (call it once the
/// recorder is installed; without one it does nothing).
pub fn describe_search_metrics() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_counter!(
        SEARCHES_TOTAL,
        "Tool searches answered by ranking (lexical, fused)"
    );
    describe_histogram!(
        SEARCH_DURATION,
        Unit::Seconds,
        "Tool search durations by ranking, the query's embedding included"
    );
    describe_counter!(
        SEARCH_QUERY_VECTORS_TOTAL,
        "Query vectors used by tool searches, by source (cache, model)"
    );
    describe_counter!(
        SEARCH_MODEL_FALLBACKS_TOTAL,
        "Tool searches ranked lexically because the query could not be embedded"
    );
}

/// The index of one federation's exposed tools: backend = member name, tool = exposed name.
pub(crate) struct ToolIndex {
    index: Index,
    vectors: Option<Arc<ToolVectors>>,
}

impl Default for ToolIndex {
    fn default() -> ToolIndex {
        ToolIndex::new(None)
    }
}

/// What the search index holds (`Federation::search_status`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SearchStatus {
    /// Tools in the lexical index.
    pub tools: usize,
    /// Heap bytes of the lexical index, about.
    pub index_bytes: usize,
    /// Whether a sentence-embedding model re-ranks searches.
    pub model: bool,
    /// Tool vectors ready.
    pub vectors: usize,
    /// Heap bytes of the vectors, about.
    pub vector_bytes: usize,
    /// Members whose tools wait to be embedded (their tools rank lexically until then).
    pub pending: usize,
}

impl ToolIndex {
    /// An empty index; with `model`, tools are also embedded and searches fused.
    pub(crate) fn new(model: Option<Arc<dyn Embed>>) -> ToolIndex {
        ToolIndex {
            index: Index::new(RankingOptions::full()),
            vectors: model.map(|m| Arc::new(ToolVectors::new(m))),
        }
    }

    /// What the index holds.
    pub(crate) fn status(&self) -> SearchStatus {
        let (vectors, vector_bytes) = self.vectors.as_ref().map_or((0, 0), |v| v.size());
        SearchStatus {
            tools: self.index.len(),
            index_bytes: self.index.approx_bytes(),
            model: self.vectors.is_some(),
            vectors,
            vector_bytes,
            pending: self.vectors.as_ref().map_or(0, |v| v.pending()),
        }
    }

    /// Brings the index from catalog `old` (what it holds now) to catalog `new`: members
    /// whose exposed tools or instructions differ are indexed again, members gone are
    /// removed, the others are left alone. Returns the names of the members indexed again
    /// or removed, in catalog order.
    pub(crate) fn update(&mut self, old: &Catalog, new: &Catalog) -> Vec<String> {
        let old_tools = tools_by_member(old);
        let new_tools = tools_by_member(new);
        let mut touched = Vec::new();
        for (m, member) in old.members.iter().enumerate() {
            if new.member_named(&member.name).is_none() && !old_tools[m].is_empty() {
                self.index.remove_backend(&member.name);
                if let Some(v) = &self.vectors {
                    v.remove_member(&member.name);
                }
                touched.push(member.name.clone());
            }
        }
        for (m, member) in new.members.iter().enumerate() {
            let tools = &new_tools[m];
            let before = old.member_named(&member.name);
            let unchanged = match before {
                Some(o) => {
                    old.members[o].instructions == member.instructions
                        && same_tools(old, &old_tools[o], new, tools)
                }
                None => tools.is_empty(),
            };
            if unchanged {
                continue;
            }
            touched.push(member.name.clone());
            if tools.is_empty() {
                self.index.remove_backend(&member.name);
                if let Some(v) = &self.vectors {
                    v.remove_member(&member.name);
                }
                continue;
            }
            let entries = &new.kind(Kind::Tools).entries;
            let inputs = tools.iter().map(|&i| tool_input(&entries[i]));
            let instructions = member.instructions.as_deref().unwrap_or_default();
            self.index
                .replace_backend(&member.name, instructions, inputs);
            if let Some(v) = &self.vectors {
                // Keyed by the exposed name; the text reads the tool's own name.
                v.replace_member(
                    &member.name,
                    tools.iter().map(|&i| {
                        let e = &entries[i];
                        let own = ToolInput {
                            name: &e.original,
                            ..tool_input(e)
                        };
                        (e.exposed.as_str(), own)
                    }),
                );
            }
        }
        touched
    }

    /// The tools of `catalog` that `scope` sees, best first for `query`: at most `limit`,
    /// as indexes into the catalog's tool entries. A tool the scope hides is never
    /// returned and weighs in nothing (the engine's statistics are over the visible ones;
    /// a cosine depends on two vectors only). With `query_vector` (a model is loaded) the
    /// lexical and semantic rankings are fused ([`Fusion::default`]).
    pub(crate) fn search(
        &self,
        catalog: &Catalog,
        scope: &dyn Scope,
        query: &str,
        query_vector: Option<&[f32]>,
        limit: usize,
    ) -> Vec<usize> {
        let tools = catalog.kind(Kind::Tools);
        let entry = |t: ToolRef<'_>| {
            tools.get(t.name).and_then(|(i, e)| {
                let owner = catalog.members.get(e.member)?;
                (owner.name == t.backend && scope.sees(Kind::Tools, i)).then_some(i)
            })
        };
        let visible = |t: ToolRef<'_>| entry(t).is_some();
        let limit = limit.min(MAX_SEARCH_LIMIT);
        let to_entry = |hit: &mcpwire_search::Hit<'_>| {
            entry(ToolRef {
                backend: hit.backend,
                name: hit.name,
            })
        };
        if let (Some(vectors), Some(q)) = (&self.vectors, query_vector) {
            let depth = limit.max(FUSE_DEPTH);
            let lexical = self.index.search(query, depth, &visible);
            return vectors.search(q, depth, &visible, |semantic| {
                Fusion::default()
                    .fuse(&lexical, semantic)
                    .iter()
                    .take(limit)
                    .filter_map(to_entry)
                    .collect()
            });
        }
        self.index
            .search(query, limit, &visible)
            .iter()
            .filter_map(to_entry)
            .collect()
    }

    /// The semantic side, when a model is loaded.
    pub(crate) fn vectors(&self) -> Option<Arc<ToolVectors>> {
        self.vectors.clone()
    }

    /// How many tools are indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }
}

/// Searches what `sight` shows for `query` in `index` (at most `limit` tools, as indexes
/// into `sight.catalog`'s tool entries). With a model, the query's vector is computed first
/// on a blocking thread (or found in the cache); if that fails the search is lexical.
pub(crate) fn search(
    index: &Arc<RwLock<ToolIndex>>,
    sight: Sight,
    query: String,
    limit: usize,
) -> BoxFuture<'static, (Sight, Vec<usize>)> {
    let index = index.clone();
    let vectors = index
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .vectors();
    Box::pin(async move {
        let started = std::time::Instant::now();
        let vector = match &vectors {
            Some(v) => query_vector(v, &query).await,
            None => None,
        };
        let found = index.read().unwrap_or_else(PoisonError::into_inner).search(
            &sight.catalog,
            sight.scope(),
            &query,
            vector.as_deref(),
            limit,
        );
        let ranking = if vector.is_some() { "fused" } else { "lexical" };
        metrics::counter!(SEARCHES_TOTAL, "ranking" => ranking).increment(1);
        metrics::histogram!(SEARCH_DURATION, "ranking" => ranking).record(started.elapsed());
        (sight, found)
    })
}

/// `query`'s vector: cached, else embedded on a blocking thread; `None` if that fails.
async fn query_vector(vectors: &Arc<ToolVectors>, query: &str) -> Option<Arc<[f32]>> {
    if let Some(v) = vectors.cached_query(query) {
        metrics::counter!(SEARCH_QUERY_VECTORS_TOTAL, "source" => "cache").increment(1);
        return Some(v);
    }
    let model = vectors.model().clone();
    let text = query.to_owned();
    let embedded = match tokio::runtime::Handle::try_current() {
        Ok(rt) => rt
            .spawn_blocking(move || model.embed(&text))
            .await
            .map_err(|e| mcpwire_search::EmbedError(e.to_string()))
            .and_then(|r| r),
        Err(_) => model.embed(&text),
    };
    match embedded {
        Ok(v) => {
            metrics::counter!(SEARCH_QUERY_VECTORS_TOTAL, "source" => "model").increment(1);
            let v: Arc<[f32]> = v.into();
            vectors.cache_query(query, v.clone());
            Some(v)
        }
        Err(e) => {
            metrics::counter!(SEARCH_MODEL_FALLBACKS_TOTAL).increment(1);
            tracing::warn!(error = %e, "query not embedded: lexical search only");
            None
        }
    }
}

/// The tool entries of each member, in catalog order.
fn tools_by_member(catalog: &Catalog) -> Vec<Vec<usize>> {
    let mut by_member = vec![Vec::new(); catalog.members.len()];
    for (i, e) in catalog.kind(Kind::Tools).entries.iter().enumerate() {
        if let Some(tools) = by_member.get_mut(e.member) {
            tools.push(i);
        }
    }
    by_member
}

/// Whether two lists of tool entries expose the same tools, the same way.
fn same_tools(old: &Catalog, a: &[usize], new: &Catalog, b: &[usize]) -> bool {
    let (ea, eb) = (
        &old.kind(Kind::Tools).entries,
        &new.kind(Kind::Tools).entries,
    );
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&x, &y)| ea[x].exposed == eb[y].exposed && ea[x].item == eb[y].item)
}

/// What the index reads of an exposed tool.
fn tool_input(e: &Entry) -> ToolInput<'_> {
    let item = &e.item;
    ToolInput {
        name: &e.exposed,
        title: item.get("title").and_then(Value::as_str).or_else(|| {
            item.get("annotations")
                .and_then(|a| a.get("title"))
                .and_then(Value::as_str)
        }),
        description: item.get("description").and_then(Value::as_str),
        input_schema: item.get("inputSchema"),
    }
}

/// The exposed tool objects of `entries`, in that order.
pub(crate) fn tool_items<'a>(catalog: &'a Catalog, entries: &[usize]) -> Vec<&'a Item> {
    let tools = &catalog.kind(Kind::Tools).entries;
    entries
        .iter()
        .filter_map(|&i| tools.get(i).map(|e| &e.item))
        .collect()
}

/// A `tools/list` result holding `tools` (one page, no cursor).
pub(crate) fn tools_page(tools: &[&Item]) -> Raw {
    #[derive(serde::Serialize)]
    struct Page<'a> {
        tools: &'a [&'a Item],
    }
    to_raw(&Page { tools })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Everything, MemberInput, Settings};
    use crate::config::{Member, PrefixMode};
    use crate::listing::Listing;
    use crate::report::MemberHealth;
    use mcpwire_model::types::Implementation;
    use mcpwire_router::Server;
    use serde_json::json;

    fn settings() -> Settings {
        Settings {
            prefix: PrefixMode::Conditional,
            separator: "_".into(),
            page_size: 100,
        }
    }

    fn listing(tools: &[(&str, &str)]) -> Listing {
        let mut l = Listing::default();
        l.lists[Kind::Tools.index()] = tools
            .iter()
            .map(|(n, d)| {
                json!({"name": n, "description": d, "inputSchema": {"type": "object"}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        l
    }

    fn catalog(generation: u64, members: &[(&Member, &Listing)]) -> Catalog {
        let ok = MemberHealth::Ok;
        let inputs: Vec<MemberInput<'_>> = members
            .iter()
            .map(|(m, l)| MemberInput {
                member: m,
                tag: &m.name,
                listing: Some(l),
                health: &ok,
            })
            .collect();
        Catalog::build(generation, &inputs, &settings())
    }

    fn member(name: &str) -> Member {
        Member::new(
            name,
            Server::builder(Implementation::new(name, "1")).build(),
        )
    }

    #[test]
    fn only_the_changed_member_is_indexed_again() {
        let (fs, git) = (member("fs"), member("git"));
        let fs_tools = listing(&[("read_file", "Read a file"), ("write_file", "Write a file")]);
        let git_tools = listing(&[("commit", "Record changes to the repository")]);
        let empty = catalog(0, &[]);
        let first = catalog(1, &[(&fs, &fs_tools), (&git, &git_tools)]);
        let mut index = ToolIndex::default();
        assert_eq!(index.update(&empty, &first), ["fs", "git"]);
        assert_eq!(index.len(), 3);
        let git_more = listing(&[
            ("commit", "Record changes to the repository"),
            ("log", "Show commit logs"),
        ]);
        let second = catalog(2, &[(&fs, &fs_tools), (&git, &git_more)]);
        assert_eq!(index.update(&first, &second), ["git"]);
        assert_eq!(index.len(), 4);
        let third = catalog(3, &[(&fs, &fs_tools), (&git, &git_more)]);
        assert!(index.update(&second, &third).is_empty(), "nothing changed");
        let fourth = catalog(4, &[(&git, &git_more)]);
        // fs is gone; git's names lose their prefix (one member left): both change.
        assert_eq!(index.update(&third, &fourth), ["fs", "git"]);
        assert_eq!(index.len(), 2);
        let hits = index.search(&fourth, &Everything, "show the commit history", None, 5);
        let names: Vec<&str> = tool_items(&fourth, &hits)
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str))
            .collect();
        assert_eq!(names.first(), Some(&"log"));
    }
}
