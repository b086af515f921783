//! The tool-search evaluation: recall@1, recall@5 and MRR per ranking variant over a harvested
//! catalog and hand-written requests; search latency, build time and memory at 1,000 tools.
//!
//! ```text
//! python3 bench/search/harvest.py          # writes target/search-catalog.json (not committed)
//! cargo run --release -p mcpwire-search --example eval [-- --misses] [--catalog PATH] [--requests PATH]
//! # models side by side (models.rs): MiniLM-L6 (+ cut to MCPWIRE_SEARCH_LAYERS, + the
//! # directories in MCPWIRE_SEARCH_EXTRA_MODELS) with --features semantic, and WordLlama
//! scripts/search_static_model.sh && MCPWIRE_SEARCH_STATIC_MODEL=target/search-static-model \
//!   cargo run --release -p mcpwire-search --example eval -- --models
//! ```
//!
//! A request is answered at k when any of its expected tools is among the first k hits.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use mcpwire_search::{Index, RankingOptions, ToolInput};
use serde::Deserialize;
use serde_json::Value;

/// Hits looked at for MRR.
const MRR_DEPTH: usize = 10;
/// The catalog size latency is measured at.
const LATENCY_TOOLS: usize = 1000;
/// Timed passes over all requests.
const LATENCY_ROUNDS: usize = 30;

#[derive(Deserialize)]
struct Requests {
    request: Vec<Request>,
}

#[derive(Deserialize)]
struct Request {
    query: String,
    expect: Vec<String>,
    #[serde(default)]
    set: Option<String>,
}

/// One backend of the harvested catalog.
struct Backend {
    name: String,
    instructions: String,
    tools: Vec<Value>,
}

struct Args {
    catalog: PathBuf,
    requests: Vec<PathBuf>,
    model: Option<PathBuf>,
    misses: bool,
    sweep: bool,
    /// `--models`: the models side by side (`models.rs`) instead of the semantic grid.
    models: bool,
    /// A static model's directory (`MCPWIRE_SEARCH_STATIC_MODEL`), compared with `--models`.
    static_model: Option<PathBuf>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args();
    let catalog = load_catalog(&args.catalog)?;
    let mut requests = Vec::new();
    for path in &args.requests {
        let file: Requests = toml::from_str(&std::fs::read_to_string(path)?)?;
        requests.extend(file.request);
    }
    check_expectations(&catalog, &requests)?;
    let tools: usize = catalog.iter().map(|b| b.tools.len()).sum();
    let count = |set: &str| requests.iter().filter(|r| set_of(r) == set).count();
    println!(
        "catalog: {tools} tools from {} servers; requests: {} tuned on, {} held out (round 1), {} held out (round 2), {} held out (round 3)\n",
        catalog.len(),
        count(SETS[0]),
        count(SETS[1]),
        count(SETS[2]),
        count(SETS[3]),
    );
    println!(
        "| variant | tuned: R@1 | R@5 | MRR | held out 1: R@1 | R@5 | MRR | held out 2: R@1 | R@5 | MRR | held out 3: R@1 | R@5 | MRR |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for (name, options) in RankingOptions::variants() {
        let index = build(&catalog, options);
        let rank = |r: &Request| ranked(&index, &r.query, MRR_DEPTH);
        println!("| {name} | {} |", per_set(&rank, &requests));
    }
    if args.models {
        compare_models(&args, &catalog, &requests)?;
    }
    #[cfg(feature = "semantic")]
    if let (Some(model), false) = (&args.model, args.models) {
        semantic::evaluate(model, &catalog, &requests)?;
    }
    #[cfg(not(feature = "semantic"))]
    if args.model.is_some() {
        eprintln!("a model was given but the example was built without the `semantic` feature");
    }
    if args.sweep {
        sweep(&catalog, &requests);
    }
    if args.misses {
        print_misses(&build(&catalog, RankingOptions::full()), &requests);
    }
    latency(&catalog, &requests);
    Ok(())
}

/// `--models`: the transformer (`--model`, also cut to the layer counts in
/// `MCPWIRE_SEARCH_LAYERS`, e.g. `3,2`) and the static model, each compared on its own vectors.
fn compare_models(
    args: &Args,
    catalog: &[Backend],
    requests: &[Request],
) -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "semantic")]
    if let Some(model) = &args.model {
        for (label, embedder, load, rss_kib) in semantic::transformers(model)? {
            let candidate = models::Candidate {
                label: &label,
                model: &embedder,
                load,
                rss_kib,
            };
            candidate.compare(catalog, requests)?;
        }
    }
    if let Some(dir) = &args.static_model {
        let before = models::rss_kib();
        let started = Instant::now();
        let model = static_model::StaticModel::load(dir)?;
        let load = started.elapsed();
        let rss_kib = models::rss_kib().saturating_sub(before);
        println!(
            "static model: {model:?}, ~{} KiB",
            model.approx_bytes() / 1024
        );
        let candidate = models::Candidate {
            label: "static (WordLlama)",
            model: &model,
            load,
            rss_kib,
        };
        candidate.compare(catalog, requests)?;
    }
    Ok(())
}

/// The request sets, in table order: tuned on, held out in rounds 1, 2 and 3.
const SETS: [&str; 4] = ["tuned", "holdout", "holdout2", "holdout3"];

fn set_of(request: &Request) -> &str {
    request.set.as_deref().unwrap_or(SETS[0])
}

/// A tool's key: (backend, name).
type Key = (String, String);

fn ranked(index: &Index, query: &str, depth: usize) -> Vec<Key> {
    index
        .search(query, depth, &|_| true)
        .iter()
        .map(|h| (h.backend.to_owned(), h.name.to_owned()))
        .collect()
}

/// Quality on each of [`SETS`], as table cells.
fn per_set(rank: &dyn Fn(&Request) -> Vec<Key>, requests: &[Request]) -> String {
    SETS.map(|set| quality(rank, requests.iter().filter(|r| set_of(r) == set)).to_string())
        .join(" | ")
}

fn is_holdout(request: &Request) -> bool {
    set_of(request) != SETS[0]
}

fn args() -> Args {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut args = Args {
        catalog: root.join("target/search-catalog.json"),
        requests: vec![
            root.join("bench/search/requests.toml"),
            root.join("bench/search/requests-holdout2.toml"),
            root.join("bench/search/requests-holdout3.toml"),
        ],
        model: std::env::var_os("MCPWIRE_SEARCH_MODEL").map(PathBuf::from),
        misses: false,
        sweep: false,
        models: false,
        static_model: std::env::var_os("MCPWIRE_SEARCH_STATIC_MODEL").map(PathBuf::from),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--misses" => args.misses = true,
            "--sweep" => args.sweep = true,
            "--models" => args.models = true,
            "--static-model" => args.static_model = argv.next().map(PathBuf::from),
            "--catalog" => args.catalog = argv.next().map(PathBuf::from).unwrap_or(args.catalog),
            "--requests" => args.requests = argv.next().map(PathBuf::from).into_iter().collect(),
            "--model" => args.model = argv.next().map(PathBuf::from),
            other => eprintln!("ignored argument {other}"),
        }
    }
    args
}

fn load_catalog(path: &Path) -> Result<Vec<Backend>, Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "{}: {e} (run bench/search/harvest.py first)",
            path.display()
        )
    })?;
    let json: Vec<Value> = serde_json::from_str(&text)?;
    Ok(json
        .into_iter()
        .map(|b| Backend {
            name: b["backend"].as_str().unwrap_or_default().to_owned(),
            instructions: b["instructions"].as_str().unwrap_or_default().to_owned(),
            tools: b["tools"].as_array().cloned().unwrap_or_default(),
        })
        .collect())
}

fn check_expectations(catalog: &[Backend], requests: &[Request]) -> Result<(), String> {
    let known: std::collections::HashSet<String> = catalog
        .iter()
        .flat_map(|b| {
            b.tools
                .iter()
                .filter_map(|t| t["name"].as_str())
                .map(|t| format!("{}/{t}", b.name))
        })
        .collect();
    let unknown: Vec<&str> = requests
        .iter()
        .flat_map(|r| &r.expect)
        .filter(|e| !known.contains(*e))
        .map(String::as_str)
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "expected tools missing from the catalog: {unknown:?}"
        ))
    }
}

/// An index of `catalog`, with every backend renamed by `suffix` (for replicas).
fn build_into(index: &mut Index, catalog: &[Backend], suffix: &str) {
    for backend in catalog {
        let tools = backend
            .tools
            .iter()
            .filter_map(|t| ToolInput::from_json(t).ok());
        index.replace_backend(
            &format!("{}{suffix}", backend.name),
            &backend.instructions,
            tools,
        );
    }
}

fn build(catalog: &[Backend], options: RankingOptions) -> Index {
    let mut index = Index::new(options);
    build_into(&mut index, catalog, "");
    index
}

/// The rank (1-based) of the first expected tool in `hits`.
fn first_rank(hits: &[Key], request: &Request) -> Option<usize> {
    hits.iter()
        .position(|(backend, name)| {
            request
                .expect
                .iter()
                .any(|e| e.split_once('/') == Some((backend.as_str(), name.as_str())))
        })
        .map(|at| at + 1)
}

struct Quality {
    at1: f64,
    at5: f64,
    mrr: f64,
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.3} | {:.3} | {:.3}", self.at1, self.at5, self.mrr)
    }
}

fn quality<'r>(
    rank: &dyn Fn(&Request) -> Vec<Key>,
    requests: impl Iterator<Item = &'r Request>,
) -> Quality {
    let (mut n, mut at1, mut at5, mut mrr) = (0.0, 0.0, 0.0, 0.0);
    for request in requests {
        n += 1.0;
        let hits = rank(request);
        if let Some(rank) = first_rank(&hits[..hits.len().min(MRR_DEPTH)], request) {
            at1 += f64::from(rank == 1);
            at5 += f64::from(rank <= 5);
            mrr += 1.0 / rank as f64;
        }
    }
    let n: f64 = if n == 0.0 { 1.0 } else { n };
    Quality {
        at1: at1 / n,
        at5: at5 / n,
        mrr: mrr / n,
    }
}

fn print_misses(index: &Index, requests: &[Request]) {
    println!("\nrequests not answered at 1 (full ranking):");
    for request in requests {
        let rank = first_rank(&ranked(index, &request.query, MRR_DEPTH), request);
        if rank != Some(1) {
            let top: Vec<String> = index
                .search(&request.query, 3, &|_| true)
                .iter()
                .map(|h| format!("{}/{} {:.2}", h.backend, h.name, h.score))
                .collect();
            let set = format!(" [{}]", set_of(request));
            println!(
                "  {rank:?}{set} {:?} want {:?}\n      got {top:?}",
                request.query, request.expect
            );
        }
    }
}

/// The catalog copied up to [`LATENCY_TOOLS`] tools: each copy's backend suffix (none for
/// the first) and backends (the last copy stops at the backend that reaches the count).
fn replicas(catalog: &[Backend]) -> Vec<(String, &[Backend])> {
    let mut copies = Vec::new();
    let mut total = 0;
    while total < LATENCY_TOOLS {
        let mut take = 0;
        while take < catalog.len() && total < LATENCY_TOOLS {
            total += catalog[take].tools.len();
            take += 1;
        }
        if catalog[..take].iter().all(|b| b.tools.is_empty()) {
            break;
        }
        let suffix = match copies.len() {
            0 => String::new(),
            n => format!("-r{n}"),
        };
        copies.push((suffix, &catalog[..take]));
    }
    copies
}

fn latency(catalog: &[Backend], requests: &[Request]) {
    let started = Instant::now();
    let mut index = Index::new(RankingOptions::full());
    for (suffix, backends) in replicas(catalog) {
        build_into(&mut index, backends, &suffix);
    }
    let build = started.elapsed();
    println!(
        "
at {} tools (the catalog copied, backends renamed, up to {LATENCY_TOOLS}), full ranking:",
        index.len()
    );
    println!(
        "  index build {:.1} ms, {} terms, approx {:.0} KiB",
        build.as_secs_f64() * 1e3,
        index.term_count(),
        index.approx_bytes() as f64 / 1024.0
    );
    let replace = Instant::now();
    build_into(&mut index, &catalog[..1], "");
    println!(
        "  replace one backend ({}, {} tools): {:.2} ms",
        catalog[0].name,
        catalog[0].tools.len(),
        replace.elapsed().as_secs_f64() * 1e3
    );
    let all: &dyn Fn(mcpwire_search::ToolRef<'_>) -> bool = &|_| true;
    let half: &dyn Fn(mcpwire_search::ToolRef<'_>) -> bool = &|t| !t.backend.contains("-r");
    for (label, filter) in [("no filter", all), ("filter hiding the copies", half)] {
        let mut times: Vec<Duration> = Vec::with_capacity(LATENCY_ROUNDS * requests.len());
        for _ in 0..LATENCY_ROUNDS {
            for request in requests {
                let started = Instant::now();
                let hits = index.search(&request.query, 5, filter);
                times.push(started.elapsed());
                std::hint::black_box(hits);
            }
        }
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
        println!(
            "  search, limit 5, {label}: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs ({} searches)",
            at(0.5),
            at(0.99),
            at(1.0),
            times.len()
        );
    }
}

/// One parameter at a time around the defaults, on the requests tuned on (this is tuning).
fn sweep(catalog: &[Backend], requests: &[Request]) {
    println!("\nsweep (tuned requests; full ranking, one parameter changed):");
    let tuned = || requests.iter().filter(|r| !is_holdout(r));
    let base = RankingOptions::full();
    let mut runs: Vec<(String, RankingOptions)> = Vec::new();
    for k1 in [0.6, 0.9, 1.5, 2.0] {
        runs.push((format!("k1 {k1}"), RankingOptions { k1, ..base.clone() }));
    }
    for synonym_weight in [0.2, 0.3, 0.5, 0.7] {
        let options = RankingOptions {
            synonym_weight,
            ..base.clone()
        };
        runs.push((format!("synonym weight {synonym_weight}"), options));
    }
    for field in mcpwire_search::Field::ALL {
        for factor in [0.5, 2.0] {
            let mut options = base.clone();
            options.field_params[field.slot()].weight *= factor;
            runs.push((format!("{field:?} weight x{factor}"), options));
        }
        for b in [0.0, 0.5, 0.9] {
            let mut options = base.clone();
            options.field_params[field.slot()].b = b;
            runs.push((format!("{field:?} b {b}"), options));
        }
    }
    for (label, options) in runs {
        let index = build(catalog, options);
        let rank = |r: &Request| ranked(&index, &r.query, MRR_DEPTH);
        println!("  {label:32} {}", quality(&rank, tuned()));
    }
}

/// The semantic variants (`semantic.rs`).
mod models;
#[cfg(feature = "semantic")]
mod semantic;
mod static_model;
/// Static token vectors distilled from the model (`static_vectors.rs`).
#[cfg(feature = "semantic")]
mod static_vectors;

/// The machinery, not the figures: the request files parse and are large enough, the metrics
/// count ranks as defined, and on a harvested catalog (when present) every expected tool
/// exists.
#[cfg(test)]
mod tests {
    use super::*;

    fn request(expect: &[&str]) -> Request {
        Request {
            query: "q".into(),
            expect: expect.iter().map(|e| (*e).to_owned()).collect(),
            set: None,
        }
    }

    fn key(backend: &str, name: &str) -> Key {
        (backend.to_owned(), name.to_owned())
    }

    #[test]
    fn the_request_sets_parse_and_are_large_enough() {
        let args = args();
        let mut requests = Vec::new();
        for path in &args.requests {
            let text = std::fs::read_to_string(path).expect("request file");
            let file: Requests = toml::from_str(&text).expect("request file parses");
            requests.extend(file.request);
        }
        for set in SETS {
            assert!(requests.iter().any(|r| set_of(r) == set), "{set} is empty");
        }
        assert!(requests.iter().all(|r| SETS.contains(&set_of(r))));
        for set in ["holdout2", "holdout3"] {
            assert!(requests.iter().filter(|r| set_of(r) == set).count() >= 100);
        }
        assert!(
            requests
                .iter()
                .all(|r| !r.expect.is_empty()
                    && r.expect.iter().all(|e| e.split_once('/').is_some()))
        );
        if let Ok(catalog) = load_catalog(&args.catalog) {
            check_expectations(&catalog, &requests).expect("every expected tool exists");
        }
    }

    #[test]
    fn ranks_and_metrics() {
        let hits = vec![key("a", "x"), key("b", "y"), key("c", "z")];
        assert_eq!(first_rank(&hits, &request(&["b/y", "c/z"])), Some(2));
        assert_eq!(first_rank(&hits, &request(&["d/w"])), None);
        let requests = [request(&["a/x"]), request(&["c/z"]), request(&["d/w"])];
        let q = quality(&|_| hits.clone(), requests.iter());
        assert!((q.at1 - 1.0 / 3.0).abs() < 1e-9);
        assert!((q.at5 - 2.0 / 3.0).abs() < 1e-9);
        assert!((q.mrr - (1.0 + 1.0 / 3.0) / 3.0).abs() < 1e-9);
    }

    #[test]
    fn an_index_answers_through_the_same_path() {
        let catalog = vec![Backend {
            name: "github".into(),
            instructions: String::new(),
            tools: vec![
                serde_json::json!({"name": "create_issue", "description": "Open a new issue"}),
                serde_json::json!({"name": "list_commits", "description": "Commits of a branch"}),
            ],
        }];
        let index = build(&catalog, RankingOptions::full());
        let hits = ranked(&index, "file a bug about the login page", MRR_DEPTH);
        assert_eq!(
            first_rank(&hits, &request(&["github/create_issue"])),
            Some(1)
        );
    }
}
