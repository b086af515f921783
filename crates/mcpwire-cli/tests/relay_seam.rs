//! The seam (issue 24, `docs/design/gateway.md` § The seam): a stateful HTTP session's
//! plain call relayed by its `POST` handler itself, without the session's task. What the
//! session's task did for such a call still holds, and the client sees the same bytes as on
//! the general path (a gateway that does not relay: `relay = false`), for:
//! - a cancellation of a call running in the seam (its upstream tool sees it; the `POST`
//!   ends without an answer), and a second call with the id of one running there (the
//!   duplicate-id error);
//! - the client leaving during such a call, which is not a cancellation (the upstream
//!   tool is not cancelled) — and the session going on;
//! - the session deleted during such a call (its `POST` gets the unknown session's 404);
//! - an upstream answering with garbage (truncated JSON, invalid UTF-8, not a response, a
//!   broken event stream, a 502): the general path's error word for word, and the next call
//!   answered.

mod peers;
mod relay_conversation;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpwire_client::Target;
use mcpwire_gateway::upstream::UpstreamBackend;
use mcpwire_testkit::raw::http::{Exchange, HttpClient};
use mcpwire_testkit::serve::{self, Served, serve};
use relay_conversation::{Counts, eventually, faulty, gateway_to, upstream};
use serde_json::{Value, json};

/// A gateway relaying (or not) in front of the in-process upstream, served over
/// Streamable HTTP, and an open session whose first call opened its upstream session (so
/// the next calls may be relayed).
struct Setup {
    _upstream: Served,
    _gateway: Served,
    counts: Arc<Counts>,
    backend: Arc<UpstreamBackend>,
    http: HttpClient,
    sid: String,
}

async fn setup(relay: bool) -> Setup {
    let (upstream, counts) = upstream().await;
    setup_to(Target::Url(upstream.url()), relay, upstream, counts).await
}

async fn setup_to(target: Target, relay: bool, upstream: Served, counts: Arc<Counts>) -> Setup {
    let (backend, service) = gateway_to(target, relay).await;
    let gateway = serve(service, serve::http()).await;
    let http = gateway.http();
    let sid = http.initialize().await;
    let s = Setup {
        _upstream: upstream,
        _gateway: gateway,
        counts,
        backend,
        http,
        sid,
    };
    let opened = s.call(1, "echo", json!({"text": "open"})).await;
    assert!(opened[1].contains("open"), "{opened:?}");
    s
}

impl Setup {
    fn post(&self, msg: &Value) -> impl Future<Output = Exchange> + Send + 'static {
        let (http, sid, msg) = (self.http.clone(), self.sid.clone(), msg.clone());
        async move { http.post(Some(&sid), &msg).await }
    }

    /// Calls `tool` as request `id`: the status and content type, then the body.
    async fn call(&self, id: i64, tool: &str, arguments: Value) -> Vec<String> {
        seen(self.post(&call(id, tool, arguments)).await).await
    }

    async fn started(&self, n: usize) {
        eventually("the upstream tool started", || {
            self.counts.started.load(Ordering::SeqCst) == n
        })
        .await;
    }
}

fn call(id: i64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}})
}

/// What the client got: status and content type, then the body.
async fn seen(ex: Exchange) -> Vec<String> {
    let head = format!("{} {}", ex.status, ex.header("content-type").unwrap_or("-"));
    vec![head, ex.text().await]
}

/// A call cancelled while it runs, and a second call with its id, through the gateway.
async fn cancelled(relay: bool) -> (Vec<String>, Arc<Counts>, u64) {
    let s = setup(relay).await;
    let pending = tokio::spawn(s.post(&call(2, "wait_for_cancel", json!({}))));
    s.started(1).await;
    let mut transcript = s.call(2, "echo", json!({"text": "same id"})).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "changed my mind"}});
    assert_eq!(s.post(&cancel).await.status, 202);
    eventually("the upstream tool saw the cancellation", || {
        s.counts.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    transcript.extend(seen(pending.await.expect("the cancelled call's POST")).await);
    transcript.extend(s.call(3, "echo", json!({"text": "after"})).await);
    (transcript, s.counts.clone(), s.backend.relayed_calls())
}

#[tokio::test]
async fn a_call_cancelled_in_the_seam_and_a_duplicate_of_it_answer_as_generally() {
    let (general, _, none) = cancelled(false).await;
    let (seam, counts, relayed) = cancelled(true).await;
    assert_eq!(none, 0);
    assert_eq!(
        relayed, 2,
        "the cancelled call and the last one were relayed"
    );
    assert_eq!(counts.cancelled.load(Ordering::SeqCst), 1);
    assert_eq!(seam, general);
    assert!(
        seam[1].contains("-32600") || seam[1].contains("uplicate"),
        "{seam:?}"
    );
}

/// The client leaves during a call, then calls again.
async fn client_leaves(relay: bool) -> (Vec<String>, usize) {
    let s = setup(relay).await;
    let pending = tokio::spawn(s.post(&call(2, "wait_for_cancel", json!({}))));
    s.started(1).await;
    pending.abort();
    let _ = pending.await;
    let transcript = s.call(3, "echo", json!({"text": "after"})).await;
    // A cancellation would reach the tool within this time (it does in the test above).
    tokio::time::sleep(Duration::from_millis(300)).await;
    (transcript, s.counts.cancelled.load(Ordering::SeqCst))
}

#[tokio::test]
async fn a_client_leaving_during_a_call_in_the_seam_is_not_a_cancellation() {
    let (general, general_cancelled) = client_leaves(false).await;
    let (seam, seam_cancelled) = client_leaves(true).await;
    assert_eq!(seam, general);
    assert_eq!(general_cancelled, 0);
    assert_eq!(seam_cancelled, 0, "a disconnection is not a cancellation");
}

/// The session is deleted during a call.
async fn deleted(relay: bool) -> Vec<String> {
    let s = setup(relay).await;
    let pending = tokio::spawn(s.post(&call(2, "wait_for_cancel", json!({}))));
    s.started(1).await;
    assert_eq!(s.http.delete(&s.sid).await.status, 200);
    let mut transcript = seen(pending.await.expect("the call's POST")).await;
    transcript.extend(s.call(3, "echo", json!({"text": "after"})).await);
    transcript
}

#[tokio::test]
async fn a_session_deleted_during_a_call_in_the_seam_ends_it_as_generally() {
    let general = deleted(false).await;
    let seam = deleted(true).await;
    assert_eq!(seam, general);
    assert!(seam[0].starts_with("404"), "{seam:?}");
}

/// Each piece of garbage answering a call, then a call answered, through a proxy.
async fn garbled(relay: bool) -> (Vec<String>, u64) {
    let (upstream, counts) = upstream().await;
    let proxy = faulty::start(upstream.addr(), 1).await;
    let s = setup_to(Target::Url(proxy.url.clone()), relay, upstream, counts).await;
    let mut transcript = Vec::new();
    for (n, answer) in (10..).zip(faulty::GARBAGE) {
        proxy.garble_next(answer);
        transcript.extend(s.call(n, "echo", json!({"text": "garbled"})).await);
        transcript.extend(s.call(n + 100, "echo", json!({"text": "fine"})).await);
    }
    // Errors name the upstream's address: the proxy's port differs from run to run.
    let port = proxy.url.trim_end_matches("/mcp").to_owned();
    let transcript = transcript
        .iter()
        .map(|t| t.replace(&port, "PROXY"))
        .collect();
    (transcript, s.backend.relayed_calls())
}

#[tokio::test]
async fn an_upstreams_garbage_answering_a_call_in_the_seam_is_the_general_paths_error() {
    let (general, _) = garbled(false).await;
    let (seam, relayed) = garbled(true).await;
    assert_eq!(relayed, 10, "every call after the first was relayed");
    assert_eq!(seam, general);
}

#[tokio::test]
async fn calls_in_the_seam_to_an_upstream_that_lost_the_session_all_run_again() {
    const CALLS: i64 = 8;
    let (upstream, counts) = upstream().await;
    let proxy = faulty::start(upstream.addr(), CALLS as usize).await;
    let s = setup_to(Target::Url(proxy.url.clone()), true, upstream, counts).await;
    proxy.forget();
    // Sent together: each gets its 404 only once all have come to the lost session.
    let posts: Vec<_> = (10..10 + CALLS)
        .map(|id| {
            let text = format!("again {id}");
            tokio::spawn(s.post(&call(id, "echo", json!({ "text": text }))))
        })
        .collect();
    for (id, post) in (10..).zip(posts) {
        let answer = seen(post.await.expect("the call's POST")).await;
        assert!(
            answer[1].contains(&format!("again {id}")),
            "call {id} ran in the new upstream session: {answer:?}"
        );
    }
    assert!(proxy.refused() >= CALLS as usize);
    let relayed = s.backend.relayed_calls();
    let after = s.call(30, "echo", json!({"text": "after"})).await;
    assert!(after[1].contains("after"), "{after:?}");
    assert_eq!(
        s.backend.relayed_calls(),
        relayed + 1,
        "the new upstream session relays the next call"
    );
}

/// A gateway whose HTTP listener serves on threads of its own (`HttpConfig::threads`: a
/// single-threaded runtime each, with a copy of the listening socket): sessions whose
/// requests land on either thread relay their calls to the HTTP upstream (the upstream
/// connections kept per thread), answers go to the calls that asked, and a cancellation
/// of a call running in the seam still reaches the upstream tool. Draining ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_on_threads_of_its_own_relays_every_session_s_calls() {
    const SESSIONS: usize = 6;
    const CALLS: i64 = 4;
    let (upstream, counts) = upstream().await;
    let (backend, service) = gateway_to(Target::Url(upstream.url()), true).await;
    let gateway = serve(service, serve::http_with(|c| c.threads = 2)).await;
    let mut sessions = Vec::new();
    for _ in 0..SESSIONS {
        let http = gateway.http();
        let sid = http.initialize().await;
        sessions.push((http, sid));
    }
    let runs = sessions
        .iter()
        .enumerate()
        .map(|(s, (http, sid))| async move {
            let mut seen = Vec::new();
            for id in 1..=CALLS {
                let text = format!("session {s} call {id}");
                let msg = call(id, "echo", json!({ "text": text }));
                let answer = http.post(Some(sid), &msg).await.text().await;
                let v: Value = serde_json::from_str(
                    answer
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .unwrap_or(&answer),
                )
                .expect("a JSON-RPC answer");
                assert_eq!(v["id"], id, "{answer}");
                seen.push(
                    v["result"]["content"][0]["text"]
                        .as_str()
                        .map(str::to_owned),
                );
            }
            (s, seen)
        });
    for (s, seen) in futures::future::join_all(runs).await {
        for (i, text) in seen.into_iter().enumerate() {
            let text = text.expect("the echoed text");
            assert!(
                text.contains(&format!("session {s} call {}", i + 1)),
                "{text}"
            );
        }
    }
    // Each session's first call opened its upstream session; the others were relayed.
    assert_eq!(
        backend.relayed_calls(),
        SESSIONS as u64 * (CALLS as u64 - 1)
    );
    let (http, sid) = &sessions[0];
    let pending = {
        let (http, sid) = (http.clone(), sid.clone());
        tokio::spawn(async move {
            http.post(Some(&sid), &call(99, "wait_for_cancel", json!({})))
                .await
        })
    };
    eventually("the upstream tool started", || {
        counts.started.load(Ordering::SeqCst) == 1
    })
    .await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 99, "reason": "changed my mind"}});
    assert_eq!(http.post(Some(sid), &cancel).await.status, 202);
    eventually("the upstream tool saw the cancellation", || {
        counts.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    drop(pending);
    drop(sessions);
    gateway.shutdown().await.expect("drained");
}
