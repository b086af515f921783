//! The relay in front of a Streamable HTTP upstream (issue 24): each relayed call is a
//! POST of its own. A client's cancellation of a relayed call reaches the upstream (its
//! tool sees the cancellation) and the session goes on; an upstream process that dies
//! during a relayed call gives it the general path's error, and the next call is refused,
//! not hung. An upstream that forgets the session (404) while several calls are relayed
//! runs each of them again on the general path, in a new upstream session (one call:
//! also `mcpwire-gateway/tests/cluster_upstreams.rs`). (Byte-for-byte equivalence with the general path: `relay_http.rs`.)

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

/// A proxy in front of an HTTP upstream that, once told to, answers the next `calls`
/// `tools/call` POSTs with 404 (the session is unknown) — once all of them have come (so
/// all were sent to the lost session), the first at once and the others only after the
/// gateway has started a new upstream session (an `initialize` came: the first 404 ended
/// the connection) — and forwards everything else (the calls that run again among it).
mod forgetting {
    use std::convert::Infallible;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use bytes::Bytes;
    use http_body_util::{BodyExt, Either, Full};
    use hyper::body::Incoming;
    use hyper::service::service_fn;
    use hyper::{Request, Response, StatusCode};
    use hyper_util::rt::TokioIo;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::{Barrier, watch};

    type Body = Either<Incoming, Full<Bytes>>;

    pub struct Proxy {
        pub url: String,
        forget: Arc<AtomicBool>,
        refused: Arc<AtomicUsize>,
    }

    impl Proxy {
        /// From now on, the next `calls` calls are answered 404 together.
        pub fn forget(&self) {
            self.forget.store(true, Ordering::SeqCst);
        }

        /// The calls answered 404 so far.
        pub fn refused(&self) -> usize {
            self.refused.load(Ordering::SeqCst)
        }
    }

    pub async fn start(upstream: SocketAddr, calls: usize) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let forget = Arc::new(AtomicBool::new(false));
        let refused = Arc::new(AtomicUsize::new(0));
        let state = (
            forget.clone(),
            Arc::new(Barrier::new(calls)),
            refused.clone(),
            Arc::new(watch::channel(false).0),
        );
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let state = state.clone();
                let service = service_fn(move |req| {
                    let state = state.clone();
                    async move { Ok::<_, Infallible>(handle(req, upstream, calls, state).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service),
                );
            }
        });
        Proxy {
            url,
            forget,
            refused,
        }
    }

    async fn handle(
        req: Request<Incoming>,
        upstream: SocketAddr,
        calls: usize,
        (forget, held, refused, reopened): (
            Arc<AtomicBool>,
            Arc<Barrier>,
            Arc<AtomicUsize>,
            Arc<watch::Sender<bool>>,
        ),
    ) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let is_call = body.windows(12).any(|w| w == b"\"tools/call\"");
        if is_call
            && forget.load(Ordering::SeqCst)
            && refused.fetch_add(1, Ordering::SeqCst) < calls
        {
            if !held.wait().await.is_leader() {
                let _ = reopened.subscribe().wait_for(|r| *r).await;
            }
            let mut r = Response::new(Either::Right(Full::new(Bytes::from_static(
                b"unknown session",
            ))));
            *r.status_mut() = StatusCode::NOT_FOUND;
            return r;
        }
        if forget.load(Ordering::SeqCst) && body.windows(12).any(|w| w == b"\"initialize\"") {
            reopened.send_replace(true);
        }
        let tcp = TcpStream::connect(upstream).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        let answer = send
            .send_request(Request::from_parts(parts, Full::new(body)))
            .await
            .unwrap();
        answer.map(Either::Left)
    }
}

/// Calls relayed at once to an upstream that has forgotten the session (restarted on the
/// same port) each get a 404: the first ends the upstream connection, and every one of
/// them — not only the first — runs again on the general path in a new upstream session
/// (none gets the connection's end).
#[tokio::test]
async fn calls_relayed_together_to_an_upstream_that_lost_the_session_all_run_again() {
    const CALLS: i64 = 8;
    let (served, _) = upstream().await;
    let proxy = forgetting::start(served.addr(), CALLS as usize).await;
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
