//! Searching: the query's terms (and their synonyms), statistics over the visible tools,
//! BM25F scores, the top hits.

use std::cmp::Ordering;

use crate::analyze::Scratch;
use crate::index::{Doc, Index, TermId};
use crate::options::{FIELD_COUNT, Field};

/// Queries longer than this many bytes are cut (at a character boundary) before analysis.
pub const MAX_QUERY_BYTES: usize = 1024;
/// At most this many terms are read from a query (synonyms come on top, at most
/// [`MAX_EXPANSIONS`] of them).
pub const MAX_QUERY_TERMS: usize = 32;
/// At most this many synonym terms are added to a query.
pub const MAX_EXPANSIONS: usize = 64;

/// A tool as a visibility filter sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolRef<'a> {
    /// The backend the tool comes from.
    pub backend: &'a str,
    /// The tool's exposed name.
    pub name: &'a str,
}

/// One search result, borrowed from the index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit<'i> {
    /// The backend the tool comes from.
    pub backend: &'i str,
    /// The tool's exposed name.
    pub name: &'i str,
    /// Its BM25F score (higher is better; comparable only within one search).
    pub score: f32,
}

impl Index {
    /// The `limit` best tools for `query` among those `visible` accepts, best first (ties by
    /// backend, then name).
    ///
    /// A tool `visible` refuses is never returned and does not count in the statistics
    /// either: document frequencies, the number of tools and average field lengths are
    /// those of the visible tools, so what a caller sees is exactly what an index of only
    /// its visible tools would give, and hidden tools cannot be inferred from scores.
    /// `visible` is called once per indexed tool.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        visible: &dyn Fn(ToolRef<'_>) -> bool,
    ) -> Vec<Hit<'_>> {
        if limit == 0 || self.is_empty() {
            return Vec::new();
        }
        let terms = self.query_terms(query);
        if terms.is_empty() {
            return Vec::new();
        }
        let view = View::new(self, visible);
        if view.count == 0 {
            return Vec::new();
        }
        let scores = self.scores(&terms, &view);
        top_hits(&self.docs, scores, limit)
    }

    /// The query's terms present in the index, each with its weight (1 for a word typed,
    /// the synonym weight for an expansion), deduplicated to the highest weight.
    fn query_terms(&self, query: &str) -> Vec<(TermId, f32)> {
        let query = truncate(query, MAX_QUERY_BYTES);
        let mut typed: Vec<String> = Vec::new();
        self.analyzer
            .analyze(query, MAX_QUERY_TERMS, &mut Scratch::default(), &mut |t| {
                if !typed.iter().any(|seen| seen == t) {
                    typed.push(t.to_owned());
                }
            });
        let mut terms: Vec<(TermId, f32)> = Vec::with_capacity(typed.len());
        let mut add = |term: &str, weight: f32| {
            let Some(&id) = self.terms.get(term) else {
                return;
            };
            match terms.iter_mut().find(|(seen, _)| *seen == id) {
                Some((_, w)) => *w = w.max(weight),
                None => terms.push((id, weight)),
            }
        };
        for term in &typed {
            add(term, 1.0);
        }
        if self.options.synonyms {
            let weight = self.options.synonym_weight;
            typed
                .iter()
                .flat_map(|term| self.synonyms().of(term))
                .take(MAX_EXPANSIONS)
                .for_each(|synonym| add(synonym, weight));
        }
        terms
    }

    /// BM25F: for each query term t with weight q and each document d,
    /// `q · idf(t) · tf / (k1 + tf)` where `tf = Σ_f w_f · tf_f / (1 − b_f + b_f · len_f / avglen_f)`.
    fn scores(&self, terms: &[(TermId, f32)], view: &View) -> Vec<f32> {
        let mut fields = [(0.0f32, 0.0f32, 1.0f32); FIELD_COUNT];
        for field in Field::ALL {
            if let Some(params) = self.options.indexed(field) {
                let slot = self.options.slot_of(field);
                let average = view.length_sums[slot] as f32 / view.count as f32;
                fields[slot] = (params.weight, params.b, average.max(1.0));
            }
        }
        let k1 = self.options.k1;
        let n = view.count as f32;
        let mut scores = vec![0.0f32; self.docs.len()];
        for &(term, weight) in terms {
            let entries = &self.postings[term as usize].entries;
            let df = entries
                .iter()
                .filter(|p| view.visible[p.doc as usize])
                .count() as f32;
            if df == 0.0 {
                continue;
            }
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for posting in entries {
                let Some(Some(doc)) = self.docs.get(posting.doc as usize) else {
                    continue;
                };
                if !view.visible[posting.doc as usize] {
                    continue;
                }
                let mut tf = 0.0;
                for (slot, &(w, b, average)) in fields.iter().enumerate() {
                    let count = posting.tf[slot];
                    if count > 0 {
                        let norm = 1.0 - b + b * doc.lengths[slot] as f32 / average;
                        tf += w * f32::from(count) / norm;
                    }
                }
                scores[posting.doc as usize] += weight * idf * tf / (k1 + tf);
            }
        }
        scores
    }
}

/// Which tools a search may see, and the statistics of those alone.
struct View {
    visible: Vec<bool>,
    count: usize,
    length_sums: [u64; FIELD_COUNT],
}

impl View {
    fn new(index: &Index, visible: &dyn Fn(ToolRef<'_>) -> bool) -> Self {
        let mut view = View {
            visible: vec![false; index.docs.len()],
            count: 0,
            length_sums: [0; FIELD_COUNT],
        };
        for (id, doc) in index.docs.iter().enumerate() {
            let Some(doc) = doc else { continue };
            if visible(ToolRef {
                backend: &doc.backend,
                name: &doc.name,
            }) {
                view.visible[id] = true;
                view.count += 1;
                for (sum, &length) in view.length_sums.iter_mut().zip(&doc.lengths) {
                    *sum += u64::from(length);
                }
            }
        }
        view
    }
}

/// The `limit` best scored documents, best first, ties by backend then name.
fn top_hits(docs: &[Option<Doc>], scores: Vec<f32>, limit: usize) -> Vec<Hit<'_>> {
    let mut hits: Vec<Hit<'_>> = scores
        .into_iter()
        .enumerate()
        .filter(|&(_, score)| score > 0.0)
        .filter_map(|(id, score)| {
            let doc = docs.get(id)?.as_ref()?;
            Some(Hit {
                backend: &doc.backend,
                name: &doc.name,
                score,
            })
        })
        .collect();
    if hits.len() > limit {
        hits.select_nth_unstable_by(limit - 1, rank_order);
        hits.truncate(limit);
    }
    hits.sort_unstable_by(rank_order);
    hits
}

fn rank_order(a: &Hit<'_>, b: &Hit<'_>) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| a.backend.cmp(b.backend))
        .then_with(|| a.name.cmp(b.name))
}

/// `text` cut to at most `max` bytes at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
