//! Tool search with a sentence-embedding model (`FederationConfig::search_model`): a fake
//! model here (words to concepts), so the wiring is tested in every build; the real
//! MiniLM-L6 when the `semantic` feature is on and `MCPWIRE_SEARCH_MODEL` names its files.
//! Semantic hits fused with the lexical ones in `search_tools` and `tools/list` with a
//! `query`; only a changed member embedded again; hidden tools never found; a failing model
//! leaves lexical search.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcpwire_federation::{Embed, Federation, FederationConfig, Member, SEARCH_TOOLS};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, Identity, Router};
use mcpwire_search::EmbedError;
use serde_json::{Value, json};

/// Words of one meaning share a dimension; the last dimension is "anything else".
const CONCEPTS: [&[&str]; 4] = [
    &["screenshot", "photo", "image", "appears", "capture"],
    &["remove", "erase", "delete", "destroy", "wipe"],
    &["add", "sum", "plus", "total"],
    &["read", "open", "show", "contents"],
];

/// A model that embeds by concept counts; it remembers each text it embedded.
#[derive(Debug, Default)]
struct Concepts {
    embedded: Mutex<Vec<String>>,
    calls: AtomicUsize,
    broken: AtomicBool,
}

impl Embed for Concepts {
    fn dimensions(&self) -> usize {
        CONCEPTS.len() + 1
    }

    fn embed(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.broken.load(Ordering::SeqCst) {
            return Err(EmbedError("broken".into()));
        }
        self.embedded.lock().unwrap().push(text.to_owned());
        let mut v = vec![0.0f32; self.dimensions()];
        for word in text.split(|c: char| !c.is_alphanumeric()) {
            let word = word.to_lowercase();
            let at = CONCEPTS.iter().position(|c| c.contains(&word.as_str()));
            v[at.unwrap_or(CONCEPTS.len())] += if at.is_some() { 1.0 } else { 0.05 };
        }
        let norm = v
            .iter()
            .map(|a| a * a)
            .sum::<f32>()
            .sqrt()
            .max(f32::MIN_POSITIVE);
        Ok(v.into_iter().map(|a| a / norm).collect())
    }
}

/// web (screenshot, navigate), fs (read_file, delete_file), calc (add); nobody but alice
/// sees `*delete*`.
async fn federation(model: Option<Arc<Concepts>>) -> Arc<Federation> {
    let mut cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new(
            "web",
            server("web", &["screenshot", "navigate"]),
        ))
        .member(Member::new(
            "fs",
            server("fs", &["read_file", "delete_file"]),
        ))
        .member(Member::new("calc", server("calc", &["add"])))
        .policy(no_deletes_but_for_alice());
    cfg.search_model = model.map(|m| m as Arc<dyn Embed>);
    let fed = Federation::new(cfg).await.unwrap();
    settled(&fed).await;
    fed
}

/// Waits until every member's tools are embedded (bounded: 30 s).
async fn settled(fed: &Federation) {
    for _ in 0..3000 {
        if fed.search_status().pending == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("tools not embedded within 30 s: {:?}", fed.search_status());
}

fn bearer(sub: &str) -> Identity {
    Identity::bearer(sub, None, vec![], Default::default())
}

async fn search(r: &Router, ctx: CallCtx, query: &str) -> Vec<String> {
    let result = call_with(
        r,
        "tools/call",
        json!({"name": SEARCH_TOOLS, "arguments": {"query": query, "limit": 50}}),
        ctx,
    )
    .await
    .expect("search_tools answers");
    names(&result["structuredContent"])
}

fn names(page: &Value) -> Vec<String> {
    page["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

/// No word of the query is in `web_screenshot`'s name or description.
const PICTURE: &str = "a photo of how it appears";

#[tokio::test]
async fn the_model_finds_what_no_word_of_the_query_names() {
    let model = Arc::new(Concepts::default());
    let fed = federation(Some(model.clone())).await;
    let status = fed.search_status();
    assert!(status.model);
    assert_eq!((status.tools, status.vectors), (5, 5), "{status:?}");
    assert!(status.vector_bytes > 0 && status.index_bytes > 0);
    let r = Router::new(fed.search_catalog(fed.clone()));
    let hits = search(&r, CallCtx::detached(), PICTURE).await;
    assert_eq!(hits.first().map(String::as_str), Some("web_screenshot"));
    // SEP-1821 `tools/list` with a query: the same ranking, in the full catalog too.
    let page = call(
        &Router::new(fed.clone()),
        "tools/list",
        json!({"query": PICTURE}),
    )
    .await
    .unwrap();
    assert_eq!(
        names(&page).first().map(String::as_str),
        Some("web_screenshot")
    );
    // A lexical match still counts: the exact name comes first.
    let hits = search(&r, CallCtx::detached(), "calc_add").await;
    assert_eq!(hits.first().map(String::as_str), Some("calc_add"));
    // The same query again is not embedded again (cached).
    let before = model.calls.load(Ordering::SeqCst);
    search(&r, CallCtx::detached(), PICTURE).await;
    assert_eq!(model.calls.load(Ordering::SeqCst), before);

    let lexical = federation(None).await;
    assert!(!lexical.search_status().model);
    let r = Router::new(lexical.search_catalog(lexical.clone()));
    let hits = search(&r, CallCtx::detached(), PICTURE).await;
    assert!(hits.is_empty(), "lexical search has no bridge: {hits:?}");
}

#[tokio::test]
async fn only_the_changed_member_is_embedded_again() {
    let model = Arc::new(Concepts::default());
    let fed = federation(Some(model.clone())).await;
    let texts = |m: &Concepts| std::mem::take(&mut *m.embedded.lock().unwrap());
    let first = texts(&model);
    assert_eq!(first.len(), 5, "{first:?}");
    // The member's name, then the tool's own name (not the prefixed one) in words.
    assert!(
        first.iter().any(|t| t.starts_with("web: screenshot.")),
        "{first:?}"
    );
    fed.replace_member(
        "calc",
        Some(Member::new("calc", server("calc", &["add", "sum_all"]))),
    )
    .await
    .unwrap();
    settled(&fed).await;
    let again = texts(&model);
    assert_eq!(again.len(), 2, "only calc's tools: {again:?}");
    assert!(again.iter().all(|t| t.starts_with("calc: ")), "{again:?}");
    assert_eq!(fed.search_status().vectors, 6);
    fed.replace_member("calc", None).await.unwrap();
    settled(&fed).await;
    assert_eq!(fed.search_status().vectors, 4);
    let r = Router::new(fed.search_catalog(fed.clone()));
    let hits = search(&r, CallCtx::detached(), "total of two numbers").await;
    assert!(hits.iter().all(|h| !h.starts_with("calc_")), "{hits:?}");
}

#[tokio::test]
async fn the_model_never_finds_a_hidden_tool() {
    let fed = federation(Some(Arc::new(Concepts::default()))).await;
    let r = Router::new(fed.search_catalog(fed.clone()));
    let bob = || CallCtx::detached().with_identity(Some(bearer("bob")));
    let alice = || CallCtx::detached().with_identity(Some(bearer("alice")));
    for query in ["erase something", "wipe it", "fs_delete_file"] {
        let hits = search(&r, bob(), query).await;
        assert!(
            hits.iter().all(|h| !h.contains("delete")),
            "{query}: {hits:?}"
        );
        let page = call_with(
            &Router::new(fed.clone()),
            "tools/list",
            json!({"query": query}),
            bob(),
        )
        .await
        .unwrap();
        assert!(names(&page).iter().all(|h| !h.contains("delete")));
    }
    let hits = search(&r, alice(), "erase something").await;
    assert_eq!(hits.first().map(String::as_str), Some("fs_delete_file"));
}

#[tokio::test]
async fn a_failing_model_leaves_lexical_search() {
    let model = Arc::new(Concepts::default());
    let fed = federation(Some(model.clone())).await;
    model.broken.store(true, Ordering::SeqCst);
    let r = Router::new(fed.search_catalog(fed.clone()));
    let hits = search(&r, CallCtx::detached(), "read a file").await;
    assert_eq!(hits.first().map(String::as_str), Some("fs_read_file"));
    // A member whose tools cannot be embedded is still found lexically.
    fed.replace_member(
        "calc",
        Some(Member::new("calc", server("calc", &["multiply"]))),
    )
    .await
    .unwrap();
    settled(&fed).await;
    let hits = search(&r, CallCtx::detached(), "multiply numbers").await;
    assert_eq!(hits.first().map(String::as_str), Some("calc_multiply"));
}

/// The real model, when built with `semantic` and given `MCPWIRE_SEARCH_MODEL`.
#[cfg(feature = "semantic")]
#[tokio::test]
async fn minilm_finds_the_screenshot_tool() {
    let Some(dir) = std::env::var_os("MCPWIRE_SEARCH_MODEL") else {
        return;
    };
    let model = mcpwire_search::semantic::Embedder::load(std::path::Path::new(&dir))
        .expect("the model loads");
    let mut cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new(
            "web",
            server("web", &["screenshot", "navigate"]),
        ))
        .member(Member::new("git", server("git", &["commit", "push"])));
    cfg.search_model = Some(Arc::new(model));
    let fed = Federation::new(cfg).await.unwrap();
    settled(&fed).await;
    assert_eq!(fed.search_status().vectors, 4);
    let r = Router::new(fed.search_catalog(fed.clone()));
    let hits = search(
        &r,
        CallCtx::detached(),
        "grab an image of how the page looks",
    )
    .await;
    assert_eq!(hits.first().map(String::as_str), Some("web_screenshot"));
}
