//! Memory stays flat when a tool process misbehaves: one that hangs while its calls time
//! out, one that stops reading, one that floods the host with asks. Each test counts what
//! the host holds (`ProcessBackend::load`, bounded by construction) and records the test
//! process's RSS per round (printed; run with `--nocapture` to see the figures). Bounded in
//! count; no timing is asserted.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{CallEvent, ClientAsk, McpError, Method, Raw, Reply, Revision, to_raw};
use mcpwire_process::{DEFAULT_MAX_PENDING, ProcessBackend};
use mcpwire_router::{BoxFuture, CallCtx, McpCall, Peer, Router};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod common;
use common::start;

/// Messages the host queues for a process before refusing requests, plus the room it keeps
/// for cancellations and answers (`channel::QUEUED_REQUESTS + QUEUED_CONTROL`).
const MAX_QUEUED: usize = 512;
/// Asks one process may have waiting for a client (`channel::MAX_ASKS`).
const MAX_ASKS: usize = 64;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("procfs");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

fn echo(router: &Router, text: &str, ctx: CallCtx) -> BoxFuture<'static, Result<Reply, McpError>> {
    Box::pin(router.call(McpCall::new(
        Method::parse("tools/call"),
        Some(to_raw(
            &json!({"name": "echo", "arguments": {"text": text}}),
        )),
        ctx,
    )))
}

/// Starts a call, lets it reach the process, then drops it — what a call timeout or a
/// client's cancellation does. `Some` when it was answered at once.
async fn poke(router: &Router, text: &str) -> Option<Result<Reply, McpError>> {
    let mut fut = echo(router, text, CallCtx::detached());
    for _ in 0..4 {
        if let Poll::Ready(r) = futures::poll!(fut.as_mut()) {
            return Some(r);
        }
        tokio::task::yield_now().await;
    }
    None
}

/// A limit error naming `what`.
fn is_limit(r: &Option<Result<Reply, McpError>>, what: &str) -> bool {
    matches!(r, Some(Err(McpError::LimitExceeded(m))) if m.contains(what))
}

/// Rounds of `round` calls each: (RSS after the round, calls refused at once).
async fn rounds(
    backend: &ProcessBackend,
    router: &Router,
    text: &str,
    rounds: usize,
    round: usize,
    refusal: &str,
    bound: impl Fn(&mcpwire_process::ProcessLoad) -> bool,
) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    for _ in 0..rounds {
        let mut refused = 0;
        for _ in 0..round {
            let r = poke(router, text).await;
            if is_limit(&r, refusal) {
                refused += 1;
            } else {
                assert!(r.is_none(), "unexpected answer {r:?}");
            }
            let load = backend.load();
            assert!(bound(&load), "over the bound: {load:?}");
        }
        out.push((rss_kib(), refused));
    }
    out
}

/// Growth of RSS from the end of the first round to the end of the last, in KiB.
fn growth(figures: &[(u64, usize)]) -> i64 {
    figures.last().expect("rounds").0 as i64 - figures[0].0 as i64
}

#[tokio::test]
async fn a_hung_process_with_call_timeouts_holds_at_most_max_pending_calls() {
    let backend = start("hang", |_| {}).await.expect("starts");
    let router = Router::new(backend.clone());
    let figures = rounds(
        &backend,
        &router,
        "x",
        5,
        20_000,
        "requests unanswered",
        |l| l.pending <= DEFAULT_MAX_PENDING && l.queued <= MAX_QUEUED,
    )
    .await;
    eprintln!("hung process, 20 000 timed-out calls per round: (RSS KiB, refused) {figures:?}");
    assert_eq!(backend.load().pending, DEFAULT_MAX_PENDING);
    // Once the table is full every further call is refused at once, with the reason.
    assert!(figures[1..].iter().all(|&(_, refused)| refused == 20_000));
    assert!(growth(&figures) < 8 * 1024, "RSS grew: {figures:?}");
}

#[tokio::test]
async fn a_process_that_stops_reading_costs_a_bounded_queue() {
    let backend = start("no-read", |_| {}).await.expect("starts");
    let router = Router::new(backend.clone());
    let big = "x".repeat(64 * 1024);
    let figures = rounds(&backend, &router, &big, 5, 400, "not reading", |l| {
        l.queued <= MAX_QUEUED && l.pending <= DEFAULT_MAX_PENDING
    })
    .await;
    eprintln!("process not reading, 400 calls of 64 KiB per round: (RSS KiB, refused) {figures:?}");
    assert!(figures[1..].iter().all(|&(_, refused)| refused == 400));
    assert!(growth(&figures) < 16 * 1024, "RSS grew: {figures:?}");
}

/// A client that takes asks and never answers them (until the call is cancelled).
struct SilentClient(AtomicUsize);

impl Peer for SilentClient {
    fn event(&self, _: CallEvent) {}
    fn ask(&self, _: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(futures::future::pending())
    }
}

#[tokio::test]
async fn an_ask_flood_is_refused_beyond_the_asks_in_flight() {
    let backend = start("ask-flood", |_| {}).await.expect("starts");
    let router = Router::new(backend.clone());
    let client = Arc::new(SilentClient(AtomicUsize::new(0)));
    let mut figures = Vec::new();
    for round in 0..3 {
        let cancel = CancellationToken::new();
        let ctx = CallCtx::new(
            Revision::LATEST_STATEFUL,
            Arc::new(ClientCapabilities::default()),
            cancel.clone(),
            Some(client.clone()),
        );
        // 20 000 sampling requests, then the answer: the answer still arrives.
        let r = tokio::time::timeout(Duration::from_secs(60), echo(&router, "x", ctx))
            .await
            .expect("answered");
        assert!(matches!(r, Ok(Reply::Complete(_))), "{r:?}");
        let load = backend.load();
        assert!(load.asks <= MAX_ASKS, "{load:?}");
        let reached = client.0.swap(0, Ordering::Relaxed);
        assert!(
            reached <= MAX_ASKS,
            "{reached} asks reached the client in round {round}"
        );
        figures.push((rss_kib(), reached));
        // The call is over: its client goes away, and with it the asks it never answered.
        cancel.cancel();
    }
    eprintln!("ask flood, 20 000 asks per call: (RSS KiB, asks reaching the client) {figures:?}");
    assert!(growth(&figures) < 16 * 1024, "RSS grew: {figures:?}");
}
