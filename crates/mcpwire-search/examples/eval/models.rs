//! `--models`: sentence-embedding models compared side by side, each on its own tool vectors:
//! its ranking alone, fused with the full lexical ranking by the grid fixed before running
//! (RRF and scores, semantic weight 0.5 / 1 / 2; the fusion is chosen by the best MRR on the
//! tuned set only), and what a never-seen query costs at 1,000 tools (embedding included).

use std::time::{Duration, Instant};

use mcpwire_search::{
    Embed, FUSE_DEPTH, Fusion, Hit, Index, RankingOptions, TextOptions, ToolInput, VectorIndex,
    tool_text,
};

use super::{Backend, Key, MRR_DEPTH, Request, SETS, build, per_set, quality, replicas};

/// The keys of the first [`MRR_DEPTH`] hits.
pub fn keys(hits: &[Hit<'_>]) -> Vec<Key> {
    hits.iter()
        .take(MRR_DEPTH)
        .map(|h| (h.backend.to_owned(), h.name.to_owned()))
        .collect()
}

/// Resident memory now, in KiB (0 where `/proc` is not there).
pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn percentile_us(times: &mut [Duration], q: f64) -> f64 {
    if times.is_empty() {
        return 0.0;
    }
    times.sort_unstable();
    times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6
}

/// The fusion grid (fixed before running).
pub fn fusions() -> Vec<(String, Fusion)> {
    let mut all = Vec::new();
    for semantic_weight in [0.5, 1.0, 2.0] {
        all.push((
            format!("RRF weight {semantic_weight}"),
            Fusion::Rrf {
                k: 60.0,
                semantic_weight,
            },
        ));
    }
    for semantic_weight in [0.5, 1.0, 2.0] {
        all.push((
            format!("scores weight {semantic_weight}"),
            Fusion::Scores { semantic_weight },
        ));
    }
    all
}

/// Every tool of `catalog` (backends renamed by `suffix`) embedded by `model`, with the time
/// each took.
fn embed_catalog(
    model: &dyn Embed,
    catalog: &[Backend],
    suffix: &str,
    vectors: &mut VectorIndex,
    per_tool: &mut Vec<Duration>,
) -> Result<(), Box<dyn std::error::Error>> {
    for backend in catalog {
        let mut tools = Vec::new();
        for tool in &backend.tools {
            let input = ToolInput::from_json(tool)?;
            let started = Instant::now();
            let v = model.embed(&tool_text(&backend.name, &input, TextOptions::default()))?;
            per_tool.push(started.elapsed());
            tools.push((input.name.to_owned(), v));
        }
        vectors.replace_backend(&format!("{}{suffix}", backend.name), tools);
    }
    Ok(())
}

/// A model compared: its label, the model, what loading it took (time, RSS added in KiB).
pub struct Candidate<'a> {
    pub label: &'a str,
    pub model: &'a dyn Embed,
    pub load: Duration,
    pub rss_kib: u64,
}

impl Candidate<'_> {
    /// Prints the model's rows (alone, each fusion, the chosen one marked) and its costs.
    pub fn compare(
        &self,
        catalog: &[Backend],
        requests: &[Request],
    ) -> Result<(), Box<dyn std::error::Error>> {
        let label = self.label;
        let index: Index = build(catalog, RankingOptions::full());
        let mut vectors = VectorIndex::new();
        let mut per_tool = Vec::new();
        embed_catalog(self.model, catalog, "", &mut vectors, &mut per_tool)?;
        let mut queries = Vec::with_capacity(requests.len());
        for request in requests {
            queries.push(self.model.embed(&request.query)?);
        }
        let query = |r: &Request| -> &[f32] {
            let at = requests
                .iter()
                .position(|q| std::ptr::eq(q, r))
                .unwrap_or_default();
            &queries[at]
        };
        let all = |_: mcpwire_search::ToolRef<'_>| true;
        let only = |r: &Request| keys(&vectors.search(query(r), MRR_DEPTH, &all));
        println!("| {label} only | {} |", per_set(&only, requests));
        let tuned = |r: &&Request| super::set_of(r) == SETS[0];
        let mut best: Option<(f64, String)> = None;
        for (name, fusion) in fusions() {
            let fused = |r: &Request| {
                let lexical = index.search(&r.query, FUSE_DEPTH, &all);
                let semantic = vectors.search(query(r), FUSE_DEPTH, &all);
                keys(&fusion.fuse(&lexical, &semantic))
            };
            let mrr = quality(&fused, requests.iter().filter(tuned)).mrr;
            if best.as_ref().is_none_or(|(b, _)| mrr > *b) {
                best = Some((mrr, name.clone()));
            }
            println!("| full + {label}, {name} | {} |", per_set(&fused, requests));
        }
        if let Some((mrr, name)) = best {
            println!("| ↳ {label}: chosen on the tuned set: {name} (tuned MRR {mrr:.3}) | |");
        }
        self.never_seen(catalog, requests, &mut per_tool)
    }

    /// The fused search at 1,000 tools for queries never seen: the query's embedding, the
    /// lexical top 30, the vector scan top 30 and the fusion (scores, weight 1: the
    /// gateway's), timed whole; and the query's embedding alone.
    fn never_seen(
        &self,
        catalog: &[Backend],
        requests: &[Request],
        per_tool: &mut [Duration],
    ) -> Result<(), Box<dyn std::error::Error>> {
        let model = self.model;
        let mut index = Index::new(RankingOptions::full());
        let mut vectors = VectorIndex::new();
        for (suffix, backends) in replicas(catalog) {
            super::build_into(&mut index, backends, &suffix);
            embed_catalog(model, backends, &suffix, &mut vectors, &mut Vec::new())?;
        }
        let all = |_: mcpwire_search::ToolRef<'_>| true;
        let fusion = Fusion::default();
        // A transformer's query costs milliseconds: one round is enough there.
        let probe = Instant::now();
        model.embed("probe the cost of one query")?;
        let rounds = if probe.elapsed() > Duration::from_micros(500) {
            1
        } else {
            10
        };
        let (mut embed_t, mut whole_t) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            for request in requests {
                let started = Instant::now();
                let fresh = model.embed(&request.query)?;
                let embedded = started.elapsed();
                let lexical = index.search(&request.query, FUSE_DEPTH, &all);
                let semantic = vectors.search(&fresh, FUSE_DEPTH, &all);
                std::hint::black_box(fusion.fuse(&lexical, &semantic));
                whole_t.push(started.elapsed());
                embed_t.push(embedded);
            }
        }
        println!(
            "\n{}: load {:.0} ms, RSS +{} MiB; {} tools embedded p50 {:.0} µs, p99 {:.0} µs; at {} tools ({} searches): query embedding p50 {:.1} µs, p99 {:.1} µs; whole search, never-seen query: p50 {:.1} µs, p99 {:.1} µs\n",
            self.label,
            self.load.as_secs_f64() * 1e3,
            self.rss_kib / 1024,
            per_tool.len(),
            percentile_us(per_tool, 0.5),
            percentile_us(per_tool, 0.99),
            index.len(),
            whole_t.len(),
            percentile_us(&mut embed_t, 0.5),
            percentile_us(&mut embed_t, 0.99),
            percentile_us(&mut whole_t, 0.5),
            percentile_us(&mut whole_t, 0.99),
        );
        Ok(())
    }
}
