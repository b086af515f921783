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
    dot(a, b)
}

/// Lanes summed apart in [`dot`]: independent sums the compiler can keep in vector registers
/// (a single running sum is one long chain of dependent float additions).
const LANES: usize = 8;

/// The dot product of two slices of the same length, in [`LANES`] partial sums.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..LANES {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// One backend's vectors: the tools' names and one row of `dimensions` floats per tool, the
/// rows contiguous and L2-normalized.
#[derive(Debug)]
struct Block {
    names: Vec<String>,
    dimensions: usize,
    rows: Vec<f32>,
}

/// The tool vectors of a catalog, by backend (one vector per tool, keyed by name), each
/// backend's vectors one contiguous normalized matrix.
#[derive(Debug, Default)]
pub struct VectorIndex {
    backends: HashMap<String, Block>,
}

impl VectorIndex {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces `backend`'s vectors with `tools` (name, vector). Vectors are normalized
    /// again; a vector whose length differs from the backend's first, or whose norm is zero,
    /// is left out.
    pub fn replace_backend(&mut self, backend: &str, tools: Vec<(String, Vec<f32>)>) {
        let dimensions = tools.first().map_or(0, |(_, v)| v.len());
        let mut block = Block {
            names: Vec::with_capacity(tools.len()),
            dimensions,
            rows: Vec::with_capacity(tools.len() * dimensions),
        };
        for (name, vector) in tools {
            let norm = dot(&vector, &vector).sqrt();
            if vector.len() != dimensions || !norm.is_normal() {
                continue;
            }
            block.names.push(name);
            block.rows.extend(vector.iter().map(|x| x / norm));
        }
        if block.names.is_empty() {
            self.backends.remove(backend);
        } else {
            self.backends.insert(backend.to_owned(), block);
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
        self.backends.values().map(|b| b.names.len()).sum()
    }

    /// Whether no vector is held.
    pub fn is_empty(&self) -> bool {
        self.backends.is_empty()
    }

    /// Heap bytes held, about.
    pub fn approx_bytes(&self) -> usize {
        self.backends
            .iter()
            .map(|(b, block)| {
                b.len()
                    + size_of::<Block>()
                    + block.rows.capacity() * size_of::<f32>()
                    + block
                        .names
                        .iter()
                        .map(|n| n.len() + size_of::<String>())
                        .sum::<usize>()
            })
            .sum()
    }

    /// The `depth` tools `visible` admits that are closest to `query`, best first, with
    /// their cosines (ties by backend, then name). A cosine depends on the two vectors only,
    /// so hidden tools weigh in nothing. One pass over the rows keeping the best `depth`
    /// (no sort of the whole catalog); `visible` is asked only about a tool that would enter
    /// them. A query of another length than a backend's vectors scores 0 against them.
    pub fn search<'i>(
        &'i self,
        query: &[f32],
        depth: usize,
        visible: &dyn Fn(ToolRef<'_>) -> bool,
    ) -> Vec<Hit<'i>> {
        let mut best = TopK::new(depth);
        for (backend, block) in &self.backends {
            let rows = block.rows.chunks_exact(block.dimensions.max(1));
            for (name, row) in block.names.iter().zip(rows) {
                let hit = Hit {
                    backend,
                    name,
                    score: cosine(query, row),
                };
                if best.admits(&hit) && visible(ToolRef { backend, name }) {
                    best.insert(hit);
                }
            }
        }
        best.hits
    }
}

/// The order of hits: score descending, then backend, then name.
fn hit_order(a: &Hit<'_>, b: &Hit<'_>) -> std::cmp::Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.backend.cmp(b.backend))
        .then_with(|| a.name.cmp(b.name))
}

/// The best `depth` hits seen so far, best first.
struct TopK<'i> {
    depth: usize,
    hits: Vec<Hit<'i>>,
}

impl<'i> TopK<'i> {
    fn new(depth: usize) -> Self {
        TopK {
            depth,
            hits: Vec::with_capacity(depth.min(MAX_TOP_K) + 1),
        }
    }

    /// Whether `hit` would be among the best (before asking whether it is visible).
    fn admits(&self, hit: &Hit<'_>) -> bool {
        self.depth > 0
            && (self.hits.len() < self.depth
                || self
                    .hits
                    .last()
                    .is_some_and(|worst| hit_order(hit, worst).is_lt()))
    }

    fn insert(&mut self, hit: Hit<'i>) {
        let at = self.hits.partition_point(|h| hit_order(h, &hit).is_lt());
        self.hits.insert(at, hit);
        self.hits.truncate(self.depth);
    }
}

/// Capacity reserved up front for the best hits (a larger depth grows as needed).
const MAX_TOP_K: usize = 256;

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

    /// The best `depth` by a full sort of every visible tool: what the one-pass top-k must
    /// return.
    fn by_full_sort<'i>(
        index: &'i VectorIndex,
        query: &[f32],
        depth: usize,
        visible: &dyn Fn(ToolRef<'_>) -> bool,
    ) -> Vec<Hit<'i>> {
        let mut all: Vec<Hit<'i>> = index
            .backends
            .iter()
            .flat_map(|(backend, block)| {
                let rows = block.rows.chunks_exact(block.dimensions);
                block.names.iter().zip(rows).map(move |(name, row)| Hit {
                    backend: backend.as_str(),
                    name: name.as_str(),
                    score: cosine(query, row),
                })
            })
            .filter(|h| {
                visible(ToolRef {
                    backend: h.backend,
                    name: h.name,
                })
            })
            .collect();
        all.sort_by(hit_order);
        all.truncate(depth);
        all
    }

    proptest::proptest! {
        #[test]
        fn top_k_equals_a_full_sort(
            tools in proptest::collection::vec((0u8..4, proptest::collection::vec(-4i8..5, 5)), 0..60),
            query in proptest::collection::vec(-4i8..5, 5),
            depth in 0usize..40,
        ) {
            let mut index = VectorIndex::new();
            let mut by_backend: HashMap<String, Vec<(String, Vec<f32>)>> = HashMap::new();
            for (i, (backend, v)) in tools.iter().enumerate() {
                by_backend
                    .entry(format!("b{backend}"))
                    .or_default()
                    .push((format!("t{i}"), v.iter().map(|x| f32::from(*x)).collect()));
            }
            for (backend, tools) in by_backend {
                index.replace_backend(&backend, tools);
            }
            let query: Vec<f32> = query.iter().map(|x| f32::from(*x)).collect();
            let visible = |t: ToolRef<'_>| !t.name.ends_with('3');
            proptest::prop_assert_eq!(
                index.search(&query, depth, &visible),
                by_full_sort(&index, &query, depth, &visible)
            );
        }
    }

    #[test]
    fn vectors_are_normalized_and_misfits_left_out() {
        let mut index = VectorIndex::new();
        index.replace_backend(
            "a",
            vec![
                ("long".into(), vec![3.0, 4.0]),
                ("zero".into(), vec![0.0, 0.0]),
                ("short".into(), vec![1.0]),
            ],
        );
        assert_eq!(index.len(), 1);
        let hits = index.search(&[0.6, 0.8], 5, &|_| true);
        assert_eq!(hits.len(), 1);
        assert!((hits[0].score - 1.0).abs() < 1e-6);
        // A query of another length scores 0, and nothing panics.
        assert_eq!(index.search(&[1.0, 0.0, 0.0], 5, &|_| true)[0].score, 0.0);
        index.replace_backend("a", vec![("zero".into(), vec![0.0, 0.0])]);
        assert!(index.is_empty());
    }

    #[test]
    fn the_filter_is_asked_only_about_tools_that_would_rank() {
        let mut index = VectorIndex::new();
        let tools = (0..100)
            .map(|i| (format!("t{i:03}"), vec![1.0, i as f32 / 100.0]))
            .collect();
        index.replace_backend("a", tools);
        let asked = std::cell::Cell::new(0);
        let hits = index.search(&[1.0, 0.0], 3, &|_| {
            asked.set(asked.get() + 1);
            true
        });
        assert_eq!(hits.len(), 3);
        assert!(asked.get() < 100, "asked {} times", asked.get());
    }

    #[test]
    fn dot_products_of_any_length() {
        for n in [0, 1, 7, 8, 9, 384] {
            let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
            let expected: f32 = a.iter().map(|x| x * x).sum();
            assert!((dot(&a, &a) - expected).abs() <= expected * 1e-6);
        }
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
