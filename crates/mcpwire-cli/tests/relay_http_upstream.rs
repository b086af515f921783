//! The relay in front of a Streamable HTTP upstream (issue 24): each relayed call is a
//! POST of its own. A client's cancellation of a relayed call reaches the upstream (its
//! tool sees the cancellation) and the session goes on; an upstream process that dies
//! during a relayed call gives it the general path's error, and the next call is refused,
//! not hung. (An upstream that forgets the session — 404 — runs the call again on the
//! general path, in a new upstream session: `mcpwire-gateway/tests/cluster_upstreams.rs`.) (Byte-for-byte equivalence with the general path: `relay_http.rs`.)

mod peers;
mod relay_conversation;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire::Service;
use mcpwire_client::Target;
use mcpwire_router::{CallCtx, NoArgs, ToolError, tool};
use mcpwire_testkit::serve::{self, Served, serve};
use peers::UrlServer;
use relay_conversation::{Client, eventually, gateway_to, tool_call};
use serde_json::json;

/// Starts and cancellations of `wait_for_cancel`.
#[derive(Default)]
struct Counts {
    started: AtomicUsize,
    cancelled: AtomicUsize,
}

/// The example server over Streamable HTTP, in this process, with `wait_for_cancel`
/// (counting its starts and the cancellations it saw).
async fn upstream() -> (Served, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let server = mcpwire_example_everything::server();
    let c = counts.clone();
    server.add_tool(
        tool("wait_for_cancel", move |ctx: CallCtx, _: NoArgs| {
            let c = c.clone();
            async move {
                c.started.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    _ = ctx.cancelled() => {
                        c.cancelled.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, ToolError>("cancelled")
                    }
                    _ = tokio::time::sleep(Duration::from_secs(60)) => Ok("not cancelled"),
                }
            }
        })
        .description("Waits until cancelled (or 60 s)"),
    );
    (serve(server, serve::http()).await, counts)
}

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
