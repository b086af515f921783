//! Semantic ranking without the model: the [`Embed`] trait a sentence-embedding model
//! implements (the `semantic` feature's `Embedder`, or a test's fake), the text embedded per
//! tool ([`tool_text`]), a per-backend store of tool vectors ([`VectorIndex`]) searched
//! through the same visibility filter as the lexical index, and the fusion of both rankings
//! ([`fuse`], [`Fusion`]).

use std::collections::HashMap;
use std::hash::Hash;

use crate::ToolInput;
use crate::search::{Hit, ToolRef};

/// Bytes of text [`tool_text`] builds at most (a model reads ~128 tokens anyway).
pub const MAX_TOOL_TEXT_BYTES: usize = 2048;

/// An embedding model failed on a text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("embedding failed: {0}")]
pub struct EmbedError(pub String);

/// A sentence-embedding model: texts to L2-normalized vectors of [`Embed::dimensions`]
/// floats, so that a dot product is their cosine. CPU-bound (milliseconds per text): call it
/// off an async runtime's worker threads.
pub trait Embed: Send + Sync + std::fmt::Debug {
    /// The length of every vector.
    fn dimensions(&self) -> usize;
    /// The normalized embedding of `text`.
    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError>;
}

/// What [`tool_text`] puts in a tool's text besides its backend, name, title and
/// description.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextOptions {
    /// Top-level parameter names, split into words.
    pub param_names: bool,
}

impl Default for TextOptions {
    /// What the gateway embeds.
    fn default() -> Self {
        TextOptions { param_names: false }
    }
}

/// The text embedded for a tool: `backend: name in words. title. description` (and the
/// parameter names when `options` says so), at most [`MAX_TOOL_TEXT_BYTES`].
pub fn tool_text(backend: &str, tool: &ToolInput<'_>, options: TextOptions) -> String {
    let mut text = format!("{backend}: {}.", words_of(tool.name));
    for part in [tool.title, tool.description].into_iter().flatten() {
        let part = part.trim();
        if !part.is_empty() {
            text.push(' ');
            text.push_str(part);
            if !part.ends_with('.') {
                text.push('.');
            }
        }
    }
    if options.param_names
        && let Some(properties) = tool
            .input_schema
            .and_then(|s| s.get("properties"))
            .and_then(serde_json::Value::as_object)
        && !properties.is_empty()
    {
        text.push_str(" Parameters:");
        for name in properties.keys().take(32) {
            text.push(' ');
            text.push_str(&words_of(name));
            text.push(',');
        }
        text.pop();
        text.push('.');
    }
    let mut end = text.len().min(MAX_TOOL_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text
}

/// An identifier as words: `_`, `-`, `.` become spaces, `aB` is split.
fn words_of(name: &str) -> String {
    let mut words = String::with_capacity(name.len() + 4);
    let mut previous = ' ';
    for c in name.chars() {
        if c == '_' || c == '-' || c == '.' {
            words.push(' ');
        } else {
            if c.is_uppercase() && previous.is_lowercase() {
                words.push(' ');
            }
            words.push(c);
        }
        previous = c;
    }
    words
}

/// The cosine of two normalized embeddings (their dot product); 0 for different lengths.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The tool vectors of a catalog, by backend (one vector per tool, keyed by name).
#[derive(Debug, Default)]
pub struct VectorIndex {
    backends: HashMap<String, Vec<(String, Vec<f32>)>>,
}

impl VectorIndex {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces `backend`'s vectors with `tools` (name, vector).
    pub fn replace_backend(&mut self, backend: &str, tools: Vec<(String, Vec<f32>)>) {
        if tools.is_empty() {
            self.backends.remove(backend);
        } else {
            self.backends.insert(backend.to_owned(), tools);
        }
    }

    /// Forgets `backend`'s vectors; whether it had any.
    pub fn remove_backend(&mut self, backend: &str) -> bool {
        self.backends.remove(backend).is_some()
    }

    /// Whether `backend` has vectors.
    pub fn has_backend(&self, backend: &str) -> bool {
        self.backends.contains_key(backend)
    }

    /// How many vectors are held.
    pub fn len(&self) -> usize {
        self.backends.values().map(Vec::len).sum()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// Heap bytes held, about.
    pub fn approx_bytes(&self) -> usize {
        self.backends
            .iter()
            .map(|(b, tools)| {
                b.len()
                    + tools
                        .iter()
                        .map(|(n, v)| n.len() + 48 + v.len() * 4)
                        .sum::<usize>()
            })
            .sum()
    }

    /// The `depth` tools `visible` admits that are closest to `query`, best first, with
    /// their cosines (ties by backend, then name). A cosine depends on the two vectors only,
    /// so hidden tools weigh in nothing.
    pub fn search<'i>(
        &'i self,
        query: &[f32],
        depth: usize,
        visible: &dyn Fn(ToolRef<'_>) -> bool,
    ) -> Vec<Hit<'i>> {
        let mut scored: Vec<Hit<'i>> = Vec::new();
        for (backend, tools) in &self.backends {
            for (name, vector) in tools {
                if visible(ToolRef { backend, name }) {
                    scored.push(Hit {
                        backend,
                        name,
                        score: cosine(query, vector),
                    });
                }
            }
        }
        let order = |a: &Hit<'_>, b: &Hit<'_>| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.backend.cmp(b.backend))
                .then_with(|| a.name.cmp(b.name))
        };
        if scored.len() > depth && depth > 0 {
            scored.select_nth_unstable_by(depth - 1, order);
        }
        scored.truncate(depth);
        scored.sort_unstable_by(order);
        scored
    }
}

/// How a lexical and a semantic ranking are combined.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fusion {
    /// Weighted reciprocal rank fusion: `Σ w / (k + rank)`, the lexical side weighing 1.
    Rrf {
        /// The constant `k` (60 in the literature).
        k: f32,
        /// The semantic side's weight.
        semantic_weight: f32,
    },
    /// Scores: the lexical score divided by the best lexical score, plus `semantic_weight`
    /// times the cosine's place between the worst and best cosine of the semantic hits.
    Scores {
        /// The semantic side's weight.
        semantic_weight: f32,
    },
}

impl Default for Fusion {
    /// What the gateway uses: scores, weight 1 (the best MRR on the tuned request set of a
    /// grid fixed beforehand; `docs/design/search.md` § The model in the gateway).
    fn default() -> Self {
        Fusion::Scores {
            semantic_weight: 1.0,
        }
    }
}

/// How many hits of each side [`Fusion::fuse`] is meant to read.
pub const FUSE_DEPTH: usize = 30;

impl Fusion {
    /// `lexical` and `semantic` (each best first) fused, best first; ties keep the lexical
    /// order, then the semantic one.
    pub fn fuse<'i>(&self, lexical: &[Hit<'i>], semantic: &[Hit<'i>]) -> Vec<Hit<'i>> {
        let key = |h: &Hit<'i>| (h.backend, h.name);
        let lex: Vec<(&str, &str)> = lexical.iter().map(key).collect();
        let sem: Vec<(&str, &str)> = semantic.iter().map(key).collect();
        let fused = match *self {
            Fusion::Rrf { k, semantic_weight } => {
                fuse(&[(&lex[..], 1.0), (&sem[..], semantic_weight)], k)
            }
            Fusion::Scores { semantic_weight } => {
                let top = lexical
                    .first()
                    .map_or(1.0, |h| h.score.max(f32::MIN_POSITIVE));
                let (lo, hi) = semantic.iter().fold((f32::MAX, f32::MIN), |(lo, hi), h| {
                    (lo.min(h.score), hi.max(h.score))
                });
                let span = (hi - lo).max(f32::MIN_POSITIVE);
                let lex_scores: Vec<f32> = lexical.iter().map(|h| h.score / top).collect();
                let sem_scores: Vec<f32> = semantic
                    .iter()
                    .map(|h| semantic_weight * (h.score - lo) / span)
                    .collect();
                add_scores(&[(&lex[..], &lex_scores[..]), (&sem[..], &sem_scores[..])])
            }
        };
        fused
            .into_iter()
            .map(|((backend, name), score)| Hit {
                backend,
                name,
                score,
            })
            .collect()
    }
}

/// Sums per-key scores over rankings, best first; ties keep first-seen order.
fn add_scores<K: Eq + Hash + Clone>(rankings: &[(&[K], &[f32])]) -> Vec<(K, f32)> {
    let mut scores: HashMap<K, (f32, usize)> = HashMap::new();
    let mut order = 0;
    for (keys, values) in rankings {
        for (key, value) in keys.iter().zip(values.iter()) {
            let entry = scores.entry(key.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += value;
        }
    }
    let mut fused: Vec<(K, f32, usize)> = scores
        .into_iter()
        .map(|(key, (s, o))| (key, s, o))
        .collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(key, s, _)| (key, s)).collect()
}

/// Weighted reciprocal rank fusion: each key scores `Σ weight / (k + rank)` over the rankings
/// it appears in (rank 1-based), best first; ties keep the first ranking's order.
pub fn fuse<K: Eq + Hash + Clone>(rankings: &[(&[K], f32)], k: f32) -> Vec<(K, f32)> {
    let values: Vec<Vec<f32>> = rankings
        .iter()
        .map(|(ranking, weight)| {
            (0..ranking.len())
                .map(|at| weight / (k + at as f32 + 1.0))
                .collect()
        })
        .collect();
    let pairs: Vec<(&[K], &[f32])> = rankings
        .iter()
        .zip(&values)
        .map(|((ranking, _), v)| (*ranking, v.as_slice()))
        .collect();
    add_scores(&pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fusion_adds_reciprocal_ranks() {
        let lexical = ["a", "b", "c"];
        let semantic = ["c", "a"];
        let fused = fuse(&[(&lexical[..], 1.0), (&semantic[..], 1.0)], 60.0);
        let order: Vec<&str> = fused.iter().map(|(k, _)| *k).collect();
        assert_eq!(order, ["a", "c", "b"]);
        assert!((fused[0].1 - (1.0 / 61.0 + 1.0 / 62.0)).abs() < 1e-6);
    }

    #[test]
    fn cosine_of_different_lengths_is_zero() {
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        assert!((cosine(&[0.6, 0.8], &[0.6, 0.8]) - 1.0).abs() < 1e-6);
    }

    fn hit<'a>(backend: &'a str, name: &'a str, score: f32) -> Hit<'a> {
        Hit {
            backend,
            name,
            score,
        }
    }

    #[test]
    fn score_fusion_normalizes_each_side() {
        let lexical = [hit("b", "x", 10.0), hit("b", "y", 5.0)];
        let semantic = [hit("b", "y", 0.9), hit("b", "z", 0.5)];
        let fused = Fusion::Scores {
            semantic_weight: 1.0,
        }
        .fuse(&lexical, &semantic);
        let order: Vec<&str> = fused.iter().map(|h| h.name).collect();
        // y: 0.5 + 1.0; x: 1.0; z: 0.0.
        assert_eq!(order, ["y", "x", "z"]);
    }

    #[test]
    fn vector_search_respects_the_filter_and_depth() {
        let mut index = VectorIndex::new();
        index.replace_backend(
            "a",
            vec![
                ("near".into(), vec![1.0, 0.0]),
                ("far".into(), vec![0.0, 1.0]),
            ],
        );
        index.replace_backend("b", vec![("hidden".into(), vec![1.0, 0.0])]);
        let hits = index.search(&[1.0, 0.0], 5, &|t| t.backend != "b");
        let names: Vec<&str> = hits.iter().map(|h| h.name).collect();
        assert_eq!(names, ["near", "far"]);
        assert_eq!(index.search(&[1.0, 0.0], 1, &|_| true).len(), 1);
        assert_eq!(index.len(), 3);
        assert!(index.remove_backend("b"));
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn tool_text_reads_words_and_optionally_parameters() {
        let schema = serde_json::json!({"properties": {"repoName": {}, "issue_number": {}}});
        let tool = ToolInput {
            name: "createIssue",
            description: Some("Open an issue"),
            input_schema: Some(&schema),
            ..Default::default()
        };
        assert_eq!(
            tool_text("github", &tool, TextOptions { param_names: false }),
            "github: create Issue. Open an issue."
        );
        let with = tool_text("github", &tool, TextOptions { param_names: true });
        assert!(
            with.contains(" Parameters: ") && with.ends_with('.'),
            "{with}"
        );
        assert!(
            with.contains("issue number") && with.contains("repo Name"),
            "{with}"
        );
        let long = "x".repeat(5000);
        let big = ToolInput {
            name: "t",
            description: Some(&long),
            ..Default::default()
        };
        assert!(tool_text("b", &big, TextOptions::default()).len() <= MAX_TOOL_TEXT_BYTES);
    }
}
