//! The semantic variants: the model's ranking alone and fused with the full lexical ranking,
//! per text embedded ([`TextOptions`]) and per fusion ([`Fusion`]); the fused search's cost
//! at 1,000 tools (lexical search, vector scan and fusion; the query's embedding apart).

use std::path::Path;
use std::time::{Duration, Instant};

use mcpwire_search::semantic::Embedder;
use mcpwire_search::{
    Embed, FUSE_DEPTH, Fusion, Hit, Index, RankingOptions, TextOptions, ToolInput, VectorIndex,
    tool_text,
};

use super::{Backend, Key, LATENCY_TOOLS, MRR_DEPTH, Request, build, per_set};

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn percentile(times: &mut [Duration], q: f64) -> f64 {
    times.sort_unstable();
    times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
}

fn keys(hits: &[Hit<'_>]) -> Vec<Key> {
    hits.iter()
        .take(MRR_DEPTH)
        .map(|h| (h.backend.to_owned(), h.name.to_owned()))
        .collect()
}

/// Each backend's tools embedded with `text`: (backend, [(tool, vector)]).
type Embedded = Vec<(String, Vec<(String, Vec<f32>)>)>;

fn embed_catalog(
    embedder: &Embedder,
    catalog: &[Backend],
    text: TextOptions,
    per_tool: &mut Vec<Duration>,
) -> Result<Embedded, Box<dyn std::error::Error>> {
    let mut embedded = Vec::new();
    for backend in catalog {
        let mut tools = Vec::new();
        for tool in &backend.tools {
            let input = ToolInput::from_json(tool)?;
            let started = Instant::now();
            let v = Embed::embed(embedder, &tool_text(&backend.name, &input, text))?;
            per_tool.push(started.elapsed());
            tools.push((input.name.to_owned(), v));
        }
        embedded.push((backend.name.clone(), tools));
    }
    Ok(embedded)
}

fn vector_index(embedded: &Embedded, suffix: &str) -> VectorIndex {
    let mut vectors = VectorIndex::new();
    for (backend, tools) in embedded {
        vectors.replace_backend(&format!("{backend}{suffix}"), tools.clone());
    }
    vectors
}

/// The fusions compared (the grid fixed before running; chosen on the tuned set only).
fn fusions() -> Vec<(String, Fusion)> {
    let mut all = Vec::new();
    for semantic_weight in [0.5, 1.0, 2.0] {
        all.push((
            format!("RRF k 60, semantic weight {semantic_weight}"),
            Fusion::Rrf {
                k: 60.0,
                semantic_weight,
            },
        ));
    }
    for semantic_weight in [0.5, 1.0, 2.0] {
        all.push((
            format!("scores, semantic weight {semantic_weight}"),
            Fusion::Scores { semantic_weight },
        ));
    }
    all
}

pub fn evaluate(
    model: &Path,
    catalog: &[Backend],
    requests: &[Request],
) -> Result<(), Box<dyn std::error::Error>> {
    let before = rss_kib();
    let started = Instant::now();
    let embedder = Embedder::load(model)?;
    let load = started.elapsed();
    let loaded = rss_kib();
    let mut per_query = Vec::new();
    let mut queries = Vec::with_capacity(requests.len());
    for request in requests {
        let started = Instant::now();
        queries.push(embedder.embed(&request.query)?);
        per_query.push(started.elapsed());
    }
    let position = |r: &Request| {
        requests
            .iter()
            .position(|q| std::ptr::eq(q, r))
            .unwrap_or_default()
    };
    let index: Index = build(catalog, RankingOptions::full());
    let all = |_: mcpwire_search::ToolRef<'_>| true;
    let mut per_tool = Vec::new();
    for (label, text) in [
        (
            "name, title, description",
            TextOptions { param_names: false },
        ),
        ("+ parameter names", TextOptions { param_names: true }),
    ] {
        let vectors = vector_index(&embed_catalog(&embedder, catalog, text, &mut per_tool)?, "");
        let only = |r: &Request| keys(&vectors.search(&queries[position(r)], MRR_DEPTH, &all));
        println!("| semantic only ({label}) | {} |", per_set(&only, requests));
        for (name, fusion) in fusions() {
            let fused = |r: &Request| {
                let lexical = index.search(&r.query, FUSE_DEPTH, &all);
                let semantic = vectors.search(&queries[position(r)], FUSE_DEPTH, &all);
                keys(&fusion.fuse(&lexical, &semantic))
            };
            println!(
                "| full + semantic ({label}), {name} | {} |",
                per_set(&fused, requests)
            );
        }
    }
    timing_at_1000(&embedder, catalog, requests, &queries)?;
    println!(
        "\nmodel: load {:.0} ms, RSS +{} MiB; {} tools embedded: p50 {:.2} ms, p99 {:.2} ms per tool; query embedding p50 {:.2} ms, p99 {:.2} ms",
        load.as_secs_f64() * 1e3,
        loaded.saturating_sub(before) / 1024,
        per_tool.len(),
        percentile(&mut per_tool, 0.5),
        percentile(&mut per_tool, 0.99),
        percentile(&mut per_query, 0.5),
        percentile(&mut per_query, 0.99),
    );
    Ok(())
}

/// The fused search at 1,000 tools (the catalog copied, backends renamed): lexical top 30,
/// vector scan top 30, fusion; the query vector given (as the gateway's cache would).
fn timing_at_1000(
    embedder: &Embedder,
    catalog: &[Backend],
    requests: &[Request],
    queries: &[Vec<f32>],
) -> Result<(), Box<dyn std::error::Error>> {
    let per_copy: usize = catalog.iter().map(|b| b.tools.len()).sum();
    let copies = LATENCY_TOOLS.div_ceil(per_copy.max(1));
    let mut index = Index::new(RankingOptions::full());
    let mut vectors = VectorIndex::new();
    let embedded = embed_catalog(embedder, catalog, TextOptions::default(), &mut Vec::new())?;
    let all = |_: mcpwire_search::ToolRef<'_>| true;
    for copy in 0..copies {
        let suffix = if copy == 0 {
            String::new()
        } else {
            format!("-r{copy}")
        };
        for (backend, (_, tools)) in catalog.iter().zip(&embedded) {
            if index.len() >= LATENCY_TOOLS {
                break;
            }
            let inputs = backend
                .tools
                .iter()
                .filter_map(|t| ToolInput::from_json(t).ok());
            let name = format!("{}{suffix}", backend.name);
            index.replace_backend(&name, &backend.instructions, inputs);
            vectors.replace_backend(&name, tools.clone());
        }
    }
    let fusion = Fusion::default();
    let mut times = Vec::new();
    for _ in 0..10 {
        for (request, q) in requests.iter().zip(queries) {
            let started = Instant::now();
            let lexical = index.search(&request.query, FUSE_DEPTH, &all);
            let semantic = vectors.search(q, FUSE_DEPTH, &all);
            let fused = fusion.fuse(&lexical, &semantic);
            std::hint::black_box(fused);
            times.push(started.elapsed());
        }
    }
    println!(
        "\nfused search at {} tools ({} vectors, ~{} KiB), query vector given: p50 {:.3} ms, p99 {:.3} ms ({} searches)",
        index.len(),
        vectors.len(),
        vectors.approx_bytes() / 1024,
        percentile(&mut times, 0.5),
        percentile(&mut times, 0.99),
        times.len()
    );
    Ok(())
}
