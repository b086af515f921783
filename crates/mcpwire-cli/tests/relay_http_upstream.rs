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

/// A proxy in front of an HTTP upstream that forwards everything but the faults it is
/// told to make: answering the next `calls` `tools/call` POSTs with 404 (the session is
/// unknown) — once all of them have come (so all were sent to the lost session), the first
/// at once and the others only after the gateway has started a new upstream session (an
/// `initialize` came: the first 404 ended the connection) — or answering the next
/// `tools/call` with bytes of its choosing.
mod faulty {
    use std::convert::Infallible;
    use std::net::SocketAddr;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http_body_util::{BodyExt, Either, Full};
    use hyper::body::Incoming;
    use hyper::header::CONTENT_TYPE;
    use hyper::service::service_fn;
    use hyper::{Request, Response, StatusCode};
    use hyper_util::rt::TokioIo;
    use tokio::net::{TcpListener, TcpStream};
    use tokio::sync::{Barrier, watch};

    type Body = Either<Incoming, Full<Bytes>>;

    /// An answer the proxy makes up: status, content type, body.
    pub type Garbled = (StatusCode, &'static str, &'static [u8]);

    struct Faults {
        upstream: SocketAddr,
        calls: usize,
        forget: AtomicBool,
        refused: AtomicUsize,
        held: Barrier,
        reopened: watch::Sender<bool>,
        garbled: Mutex<Option<Garbled>>,
    }

    pub struct Proxy {
        pub url: String,
        faults: Arc<Faults>,
    }

    impl Proxy {
        /// From now on, the next `calls` calls are answered 404 together.
        pub fn forget(&self) {
            self.faults.forget.store(true, Ordering::SeqCst);
        }

        /// The calls answered 404 so far.
        pub fn refused(&self) -> usize {
            self.faults.refused.load(Ordering::SeqCst)
        }

        /// The next call is answered with `answer` (and not forwarded).
        pub fn garble_next(&self, answer: Garbled) {
            *self.faults.garbled.lock().unwrap() = Some(answer);
        }
    }

    pub async fn start(upstream: SocketAddr, calls: usize) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let faults = Arc::new(Faults {
            upstream,
            calls,
            forget: AtomicBool::new(false),
            refused: AtomicUsize::new(0),
            held: Barrier::new(calls),
            reopened: watch::channel(false).0,
            garbled: Mutex::new(None),
        });
        let f = faults.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let f = f.clone();
                let service = service_fn(move |req| {
                    let f = f.clone();
                    async move { Ok::<_, Infallible>(handle(req, &f).await) }
                });
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service),
                );
            }
        });
        Proxy { url, faults }
    }

    fn made_up(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
        let mut r = Response::new(Either::Right(Full::new(body)));
        *r.status_mut() = status;
        r.headers_mut()
            .insert(CONTENT_TYPE, content_type.parse().unwrap());
        r
    }

    async fn handle(req: Request<Incoming>, f: &Faults) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let has = |word: &[u8]| body.windows(word.len()).any(|w| w == word);
        let is_call = has(b"\"tools/call\"");
        if is_call && let Some((status, kind, bytes)) = f.garbled.lock().unwrap().take() {
            return made_up(status, kind, Bytes::from_static(bytes));
        }
        if is_call
            && f.forget.load(Ordering::SeqCst)
            && f.refused.fetch_add(1, Ordering::SeqCst) < f.calls
        {
            if !f.held.wait().await.is_leader() {
                let _ = f.reopened.subscribe().wait_for(|r| *r).await;
            }
            let gone = Bytes::from_static(b"unknown session");
            return made_up(StatusCode::NOT_FOUND, "text/plain", gone);
        }
        if f.forget.load(Ordering::SeqCst) && has(b"\"initialize\"") {
            f.reopened.send_replace(true);
        }
        let tcp = TcpStream::connect(f.upstream).await.unwrap();
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .unwrap();
        tokio::spawn(conn);
        let request = Request::from_parts(parts, Full::new(body));
        send.send_request(request).await.unwrap().map(Either::Left)
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
    use hyper::StatusCode;
    let garbles: [faulty::Garbled; 5] = [
        (
            StatusCode::OK,
            "application/json",
            b"{\"jsonrpc\":\"2.0\",\"id\":",
        ),
        (
            StatusCode::OK,
            "application/json",
            b"{\"jsonrpc\":\"2.0\",\"result\":\"\xff\xfe\"}",
        ),
        (StatusCode::OK, "application/json", b"[1,2,3]"),
        (
            StatusCode::OK,
            "text/event-stream",
            b"event: message\ndata: {\"jsonrpc\"\n\n",
        ),
        (
            StatusCode::BAD_GATEWAY,
            "text/html",
            b"<html>upstream broke</html>",
        ),
    ];
    let (served, _) = upstream().await;
    let proxy = faulty::start(served.addr(), 1).await;
    let (backend, service) = gateway_to(Target::Url(proxy.url.clone()), relay).await;
    let mut client = opened(&service).await;
    let mut seen = Vec::new();
    for (i, garble) in garbles.into_iter().enumerate() {
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
