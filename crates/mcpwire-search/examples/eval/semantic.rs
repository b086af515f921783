//! The semantic variants: the model's ranking alone and fused with the full lexical ranking,
//! per text embedded ([`TextOptions`]) and per fusion ([`Fusion`]); the same with static
//! token vectors distilled from the model ([`StaticEmbedder`]); the fused search's cost at
//! 1,000 tools, phase by phase, for a cached query vector and a never-seen query.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

use mcpwire_search::semantic::Embedder;
use mcpwire_search::{
    Embed, FUSE_DEPTH, Fusion, Index, RankingOptions, TextOptions, ToolInput, VectorIndex,
    tool_text,
};

use super::{Backend, LATENCY_TOOLS, MRR_DEPTH, Request, build, per_set};
use crate::models::{fusions, keys, rss_kib};
use crate::static_vectors::{StaticEmbedder, grid};

fn percentile(times: &mut [Duration], q: f64) -> f64 {
    times.sort_unstable();
    times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3
}

/// Each backend's tools embedded with `text`: (backend, [(tool, vector)]).
type Embedded = Vec<(String, Vec<(String, Vec<f32>)>)>;

fn embed_catalog(
    embedder: &dyn Embed,
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
            let v = embedder.embed(&tool_text(&backend.name, &input, text))?;
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

/// One semantic ranking to print: the tool vectors and the requests' query vectors (in
/// request order).
struct Variant<'a> {
    index: &'a Index,
    vectors: &'a VectorIndex,
    queries: &'a [Vec<f32>],
    requests: &'a [Request],
}

impl Variant<'_> {
    /// The query vector of `request`.
    fn query(&self, request: &Request) -> &[f32] {
        let at = self
            .requests
            .iter()
            .position(|q| std::ptr::eq(q, request))
            .unwrap_or_default();
        &self.queries[at]
    }

    /// Prints its rows: the semantic ranking alone, then fused with the full lexical ranking
    /// by each of `fusions`.
    fn print(&self, label: &str, fusions: &[(String, Fusion)]) {
        let all = |_: mcpwire_search::ToolRef<'_>| true;
        let only = |r: &Request| keys(&self.vectors.search(self.query(r), MRR_DEPTH, &all));
        println!("| {label} only | {} |", per_set(&only, self.requests));
        for (name, fusion) in fusions {
            let fused = |r: &Request| {
                let lexical = self.index.search(&r.query, FUSE_DEPTH, &all);
                let semantic = self.vectors.search(self.query(r), FUSE_DEPTH, &all);
                keys(&fusion.fuse(&lexical, &semantic))
            };
            println!(
                "| full + {label}, {name} | {} |",
                per_set(&fused, self.requests)
            );
        }
    }
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
    let index: Index = build(catalog, RankingOptions::full());
    let mut per_tool = Vec::new();
    for (label, text) in [
        (
            "name, title, description",
            TextOptions { param_names: false },
        ),
        ("+ parameter names", TextOptions { param_names: true }),
    ] {
        let vectors = vector_index(&embed_catalog(&embedder, catalog, text, &mut per_tool)?, "");
        let variant = Variant {
            index: &index,
            vectors: &vectors,
            queries: &queries,
            requests,
        };
        variant.print(&format!("semantic ({label})"), &fusions());
    }
    let started = Instant::now();
    let (distilled, fresh) =
        StaticEmbedder::distilled(&embedder, &model.join("static-vectors.bin"))?;
    let distill_time = fresh.then(|| started.elapsed());
    let full_tools = vector_index(
        &embed_catalog(&embedder, catalog, TextOptions::default(), &mut Vec::new())?,
        "",
    );
    let chosen = [("scores, semantic weight 1".to_owned(), Fusion::default())];
    for options in grid() {
        let tuned = distilled.with_options(options);
        let static_queries: Vec<Vec<f32>> = requests
            .iter()
            .map(|r| tuned.embed_text(&r.query))
            .collect();
        let static_tools = vector_index(
            &embed_catalog(&tuned, catalog, TextOptions::default(), &mut Vec::new())?,
            "",
        );
        for (label, vectors) in [
            ("static (tools and queries)", &static_tools),
            ("static queries, transformer tools", &full_tools),
        ] {
            let variant = Variant {
                index: &index,
                vectors,
                queries: &static_queries,
                requests,
            };
            variant.print(&format!("{label}, {options}"), &chosen);
        }
    }
    match distill_time {
        Some(t) => println!(
            "\nstatic vectors distilled in {:.1} s ({} KiB)",
            t.as_secs_f64(),
            distilled.approx_bytes() / 1024
        ),
        None => println!(
            "\nstatic vectors read from the cache ({} KiB)",
            distilled.approx_bytes() / 1024
        ),
    }
    timing_at_1000(&embedder, &distilled, catalog, requests, &queries)?;
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

/// Percentiles 50 and 99 of `times`, in microseconds; with `queries` (the times are rounds
/// of that many queries, in order) also the p99 over queries of each query's best round —
/// the search's own cost without the scheduler slices a loaded machine takes from it.
fn p50_p99_us(times: &mut [Duration], queries: Option<usize>) -> String {
    let best = queries.filter(|n| *n > 0).map(|n| {
        let mut best: Vec<Duration> = (0..n)
            .map(|q| {
                times
                    .iter()
                    .skip(q)
                    .step_by(n)
                    .min()
                    .copied()
                    .unwrap_or_default()
            })
            .collect();
        format!(
            "; per query best of {} rounds: p99 {:.1} µs",
            times.len() / n,
            percentile(&mut best, 0.99) * 1e3
        )
    });
    format!(
        "p50 {:.1} µs, p99 {:.1} µs{}",
        percentile(times, 0.5) * 1e3,
        percentile(times, 0.99) * 1e3,
        best.unwrap_or_default()
    )
}

/// The fused search at 1,000 tools (the catalog copied, backends renamed), phase by phase:
/// lexical top 30, vector scan top 30, fusion; the query vector cached (given), or computed
/// first for a never-seen query by the transformer or by the static vectors.
fn timing_at_1000(
    embedder: &Embedder,
    distilled: &StaticEmbedder,
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
    // A caller's sight as the gateway checks it: a lookup by backend and name per tool asked
    // about (here the originals are visible, the copies hidden).
    let mut sight: HashMap<&str, HashSet<&str>> = HashMap::new();
    for backend in catalog {
        let names = backend.tools.iter().filter_map(|t| t["name"].as_str());
        sight.entry(&backend.name).or_default().extend(names);
    }
    let seen = |t: mcpwire_search::ToolRef<'_>| {
        sight
            .get(t.backend)
            .is_some_and(|names| names.contains(t.name))
    };
    let mut filtered_t = Vec::new();
    let (mut lexical_t, mut scan_t, mut fuse_t, mut cached_t, mut static_t) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..10 {
        for (request, q) in requests.iter().zip(queries) {
            let started = Instant::now();
            let lexical = index.search(&request.query, FUSE_DEPTH, &all);
            let lexical_done = Instant::now();
            let semantic = vectors.search(q, FUSE_DEPTH, &all);
            let scan_done = Instant::now();
            let fused = fusion.fuse(&lexical, &semantic);
            let done = Instant::now();
            std::hint::black_box(fused);
            lexical_t.push(lexical_done - started);
            scan_t.push(scan_done - lexical_done);
            fuse_t.push(done - scan_done);
            cached_t.push(done - started);
            // A never-seen query with the static vectors: embedding included.
            let started = Instant::now();
            let fresh = distilled.embed_text(&request.query);
            let lexical = index.search(&request.query, FUSE_DEPTH, &all);
            let semantic = vectors.search(&fresh, FUSE_DEPTH, &all);
            std::hint::black_box(fusion.fuse(&lexical, &semantic));
            static_t.push(started.elapsed());
            // Filtered by a caller's sight, query vector cached.
            let started = Instant::now();
            let lexical = index.search(&request.query, FUSE_DEPTH, &seen);
            let semantic = vectors.search(q, FUSE_DEPTH, &seen);
            std::hint::black_box(fusion.fuse(&lexical, &semantic));
            filtered_t.push(started.elapsed());
        }
    }
    let mut transformer_t = Vec::new();
    for (request, q) in requests.iter().zip(queries) {
        let started = Instant::now();
        let fresh = embedder.embed(&request.query)?;
        let lexical = index.search(&request.query, FUSE_DEPTH, &all);
        let semantic = vectors.search(&fresh, FUSE_DEPTH, &all);
        std::hint::black_box((fusion.fuse(&lexical, &semantic), q));
        transformer_t.push(started.elapsed());
    }
    println!(
        "\nfused search at {} tools ({} vectors, ~{} KiB), {} searches per row:",
        index.len(),
        vectors.len(),
        vectors.approx_bytes() / 1024,
        cached_t.len()
    );
    let rounds = Some(requests.len());
    println!(
        "  lexical top {FUSE_DEPTH}: {}",
        p50_p99_us(&mut lexical_t, rounds)
    );
    println!(
        "  vector scan top {FUSE_DEPTH}: {}",
        p50_p99_us(&mut scan_t, rounds)
    );
    println!("  fusion: {}", p50_p99_us(&mut fuse_t, rounds));
    println!(
        "  whole search, query vector cached: {}",
        p50_p99_us(&mut cached_t, rounds)
    );
    println!(
        "  whole search, query vector cached, a caller's sight (a third of the tools): {}",
        p50_p99_us(&mut filtered_t, rounds)
    );
    println!(
        "  whole search, never-seen query, static vectors: {}",
        p50_p99_us(&mut static_t, rounds)
    );
    println!(
        "  whole search, never-seen query, transformer ({} searches): {}",
        transformer_t.len(),
        p50_p99_us(&mut transformer_t, None)
    );
    Ok(())
}

/// A transformer to compare: (label, model, load time, RSS added in KiB).
pub type Transformer = (String, Embedder, Duration, u64);

/// The transformer in `model` as it is, then cut to each layer count of
/// `MCPWIRE_SEARCH_LAYERS` (e.g. `3,2`: its first layers only, the rest of the weights
/// unread; a copy of the directory under `target/` with `num_hidden_layers` changed), then the
/// model directories listed in `MCPWIRE_SEARCH_EXTRA_MODELS` (`:`-separated).
pub fn transformers(model: &Path) -> Result<Vec<Transformer>, Box<dyn std::error::Error>> {
    let mut dirs = vec![("transformer (MiniLM-L6)".to_owned(), model.to_owned())];
    let layers = std::env::var("MCPWIRE_SEARCH_LAYERS").unwrap_or_default();
    for n in layers
        .split(',')
        .filter_map(|n| n.trim().parse::<u64>().ok())
    {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(format!("../../target/search-model-layers-{n}"));
        std::fs::create_dir_all(&dir)?;
        let mut config: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(model.join("config.json"))?)?;
        config["num_hidden_layers"] = n.into();
        std::fs::write(dir.join("config.json"), config.to_string())?;
        for file in ["model.safetensors", "vocab.txt", "tokenizer.json"] {
            let (from, to) = (model.join(file), dir.join(file));
            if from.exists() && !to.exists() {
                std::os::unix::fs::symlink(std::fs::canonicalize(from)?, to)?;
            }
        }
        dirs.push((format!("transformer cut to {n} layers"), dir));
    }
    // Other BERT-family models, each a directory as `--model`'s.
    let extra = std::env::var_os("MCPWIRE_SEARCH_EXTRA_MODELS").unwrap_or_default();
    for dir in std::env::split_paths(&extra).filter(|d| !d.as_os_str().is_empty()) {
        let name = dir.file_name().unwrap_or_default().to_string_lossy();
        dirs.push((format!("transformer {name}"), dir.clone()));
    }
    let mut loaded = Vec::new();
    for (label, dir) in dirs {
        let before = rss_kib();
        let started = Instant::now();
        let embedder = Embedder::load(&dir)?;
        let load = started.elapsed();
        loaded.push((label, embedder, load, rss_kib().saturating_sub(before)));
    }
    Ok(loaded)
}
