//! The relay in front of a Streamable HTTP upstream (issue 24): each relayed call is a
//! POST of its own. A client's cancellation of a relayed call reaches the upstream (its
//! tool sees the cancellation) and the session goes on; an upstream process that dies
//! during a relayed call gives it the general path's error, and the next call is refused,
//! not hung. An upstream that forgets the session (404) while several calls are relayed
//! runs each of them again on the general path, in a new upstream session (one call:
//! also `mcpwire-gateway/tests/cluster_upstreams.rs`). An upstream answering a relayed call
//! with garbage (truncated JSON, invalid UTF-8, not a response, a broken event stream, a
//! 502) gives the general path's error, and the session's next call is answered. (Byte-for-byte equivalence with the general path: `relay_http.rs`.)

mod peers;
mod relay_conversation;

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcpwire::Service;
use mcpwire_client::Target;
use peers::UrlServer;
use relay_conversation::{Client, eventually, faulty, gateway_to, tool_call, upstream};
use serde_json::json;

/// A client whose first call opened its upstream session (so the next ones are relayed).
async fn opened(service: &Service) -> Client {
    let mut client = Client::connect(service).await;
    let first = tool_call(&json!(1), "echo", json!({"text": "open"}));
    client.call(&first, json!(1)).await;
    client
}

#[tokio::test]
async fn cancelling_a_call_relayed_to_an_http_upstream_tells_it() {
    let (served, counts) = upstream().await;
    let (backend, service) = gateway_to(Target::Url(served.url()), true).await;
    let mut client = opened(&service).await;
    client
        .send_line(&tool_call(&json!(2), "wait_for_cancel", json!({})))
        .await;
    eventually("the call was relayed and started", || {
        backend.relayed_calls() == 1 && counts.started.load(Ordering::SeqCst) == 1
    })
    .await;
    client.cancel(2).await;
    eventually("the upstream's tool saw the cancellation", || {
        counts.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    // No answer for the cancelled call; the next call is answered, relayed.
    client.echo_answers_alone(3, "after").await;
    assert_eq!(backend.relayed_calls(), 2);
}

/// What a client sees when its HTTP upstream process dies during a call (relayed, or on
/// the general path), and how many calls were relayed.
async fn upstream_dies(relay: bool) -> (Vec<serde_json::Value>, u64) {
    let args = ["demo", "--transport", "http", "--port", "0"];
    let server = UrlServer::start(std::path::Path::new(peers::bin()), &args, true);
    let (backend, service) = gateway_to(Target::Url(server.url.clone()), relay).await;
    let mut client = opened(&service).await;
    let slow = tool_call(&json!(2), "test_slow", json!({"seconds": 600}));
    client.send_line(&slow).await;
    let relayed = u64::from(relay);
    eventually("the call went out", || backend.relayed_calls() == relayed).await;
    drop(server);
    let mut seen = client.until_answer(&json!(2)).await;
    // The next call: the upstream is gone, refused with an error (not hung).
    let next = tool_call(&json!(3), "echo", json!({"text": "after"}));
    seen.extend(client.call(&next, json!(3)).await);
    (seen, backend.relayed_calls())
}

#[tokio::test]
async fn an_http_upstream_dying_during_a_relayed_call_is_the_general_paths_error() {
    let (general, _) = upstream_dies(false).await;
    let (relayed, count) = upstream_dies(true).await;
    assert!(count >= 1, "the slow call was relayed");
    let codes = |seen: &[serde_json::Value]| -> Vec<serde_json::Value> {
        seen.iter().map(|m| m["error"]["code"].clone()).collect()
    };
    assert_eq!(
        codes(&relayed),
        codes(&general),
        "{relayed:?} vs {general:?}"
    );
    assert!(
        relayed.iter().all(|m| m["error"]["code"].is_i64()),
        "{relayed:?}"
    );
}

/// Calls relayed at once to an upstream that has forgotten the session (restarted on the
/// same port) each get a 404: the first ends the upstream connection, and every one of
/// them — not only the first — runs again on the general path in a new upstream session
/// (none gets the connection's end).
#[tokio::test]
async fn calls_relayed_together_to_an_upstream_that_lost_the_session_all_run_again() {
    const CALLS: i64 = 8;
    let (served, _) = upstream().await;
    let proxy = faulty::start(served.addr(), CALLS as usize).await;
    let (backend, service) = gateway_to(Target::Url(proxy.url.clone()), true).await;
    let mut client = opened(&service).await;
    client.echo_answers_alone(2, "relayed").await;
    assert_eq!(backend.relayed_calls(), 1);
    proxy.forget();
    for id in 10..10 + CALLS {
        let text = format!("again {id}");
        client
            .send_line(&tool_call(&json!(id), "echo", json!({ "text": text })))
            .await;
    }
    let mut answered = std::collections::BTreeMap::new();
    while answered.len() < CALLS as usize {
        let msg = tokio::time::timeout(Duration::from_secs(20), client.recv())
            .await
            .expect("every call is answered");
        if let Some(id) = msg["id"].as_i64() {
            answered.insert(id, msg);
        }
    }
    for (id, msg) in answered {
        assert_eq!(
            msg["result"]["content"][0]["text"],
            format!("again {id}"),
            "call {id} ran in the new upstream session: {msg}"
        );
    }
    // Every one reached the proxy (relayed or not: its 404 is what the test is about).
    assert!(proxy.refused() >= CALLS as usize);
    // The new upstream session relays the next call.
    client.echo_answers_alone(30, "after").await;
    assert_eq!(backend.relayed_calls(), 1);
}

/// What a relayed call gets when its HTTP upstream answers it with bytes that are not its
/// answer — truncated JSON, invalid UTF-8, a JSON value that is no JSON-RPC response, an
/// event stream that ends without the answer, a server error with an HTML body — and what
/// the session's next call gets; relayed or on the general path.
async fn garbled_answers(relay: bool) -> Vec<serde_json::Value> {
    let (served, _) = upstream().await;
    let proxy = faulty::start(served.addr(), 1).await;
    let (backend, service) = gateway_to(Target::Url(proxy.url.clone()), relay).await;
    let mut client = opened(&service).await;
    let mut seen = Vec::new();
    for (i, garble) in faulty::GARBAGE.into_iter().enumerate() {
        let id = 10 + i as i64 * 2;
        proxy.garble_next(garble);
        let call = tool_call(&json!(id), "echo", json!({ "text": "garbled" }));
        let answer = tokio::time::timeout(Duration::from_secs(20), client.call(&call, json!(id)))
            .await
            .expect("a garbled answer still answers the call");
        seen.push(answer.last().cloned().unwrap_or_default());
        // The session goes on: the next call is answered as usual.
        let next = id + 1;
        let text = format!("after {i}");
        let call = tool_call(&json!(next), "echo", json!({ "text": text }));
        let answer = tokio::time::timeout(Duration::from_secs(20), client.call(&call, json!(next)))
            .await
            .expect("the next call is answered");
        let last = answer.last().cloned().unwrap_or_default();
        assert_eq!(last["result"]["content"][0]["text"], text, "{last}");
    }
    if relay {
        assert_eq!(backend.relayed_calls(), 10, "each call was relayed");
    }
    seen
}

#[tokio::test]
async fn an_http_upstreams_garbled_answer_to_a_relayed_call_is_the_general_paths_error() {
    let general = garbled_answers(false).await;
    let relayed = garbled_answers(true).await;
    // The same error, word for word but the proxy's port.
    let said = |v: &serde_json::Value| {
        let text = v["error"]["message"].as_str().unwrap_or_default();
        let (before, after) = text.split_once("http://127.0.0.1:").unwrap_or((text, ""));
        let path = after.find('/').map_or("", |at| &after[at..]);
        format!("{} {before}{path}", v["error"]["code"])
    };
    assert_eq!(relayed.len(), general.len());
    for (r, g) in relayed.iter().zip(&general) {
        assert!(r["error"]["code"].is_i64(), "an error answer: {r}");
        assert_eq!(said(r), said(g));
    }
}
