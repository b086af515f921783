//! A proxy in front of an HTTP upstream that forwards everything but the faults it is
//! told to make: answering the next `calls` `tools/call` POSTs with 404 (the session is
//! unknown) — once all of them have come (so all were sent to the lost session), the first
//! at once and the others only after the gateway has started a new upstream session (an
//! `initialize` came: the first 404 ended the connection) — or answering the next
//! `tools/call` with bytes of its choosing.

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

/// Garbage an upstream may answer a call with: truncated JSON, invalid UTF-8, a JSON value
/// that is not a response, a broken event stream, a 502 with an HTML body.
pub const GARBAGE: [Garbled; 5] = [
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
