//! A bare Streamable HTTP client for the cluster tests: one request per connection (as a
//! balancer without affinity would send them), a response read whole ([`Answer`]) or its
//! SSE event by event ([`Events`]).

use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use serde_json::{Value, json};

/// One request to `addr/mcp` on a connection of its own (`body`: a POST's JSON; revision
/// 2025-06-18 unless `headers` name one); the response, its body not read yet.
pub async fn send(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> hyper::Response<Incoming> {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .expect("handshake");
    tokio::spawn(conn);
    let mut req = hyper::Request::builder()
        .method(method)
        .uri("/mcp")
        .header("host", addr)
        .header("accept", "application/json, text/event-stream");
    if !headers.iter().any(|(k, _)| *k == "mcp-protocol-version") {
        req = req.header("mcp-protocol-version", "2025-06-18");
    }
    if body.is_some() {
        req = req.header("content-type", "application/json");
    }
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let bytes = body.map(|b| Bytes::from(b.to_string())).unwrap_or_default();
    let req = req.body(Full::new(bytes)).expect("request");
    sender.send_request(req).await.expect("response")
}

/// A response read whole.
pub struct Answer {
    pub status: u16,
    /// Its `Mcp-Session-Id`.
    pub session: Option<String>,
    /// Its `Retry-After`.
    pub retry_after: Option<String>,
    pub body: String,
}

impl Answer {
    /// Reads `response` to its end.
    pub async fn read(response: hyper::Response<Incoming>) -> Answer {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let (status, session, retry_after) = (
            response.status().as_u16(),
            header("mcp-session-id"),
            header("retry-after"),
        );
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        Answer {
            status,
            session,
            retry_after,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        }
    }

    /// The JSON-RPC message: the body, or an SSE body's first event with data.
    pub fn message(&self) -> Value {
        let text = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .unwrap_or(&self.body);
        serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// [`send`], read whole.
pub async fn answer(
    addr: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Answer {
    Answer::read(send(addr, method, headers, body).await).await
}

/// One POST of `body` in session `sid` (none: outside a session).
pub async fn post(addr: &str, sid: Option<&str>, body: Value) -> hyper::Response<Incoming> {
    match sid {
        Some(sid) => send(addr, "POST", &[("mcp-session-id", sid)], Some(body)).await,
        None => send(addr, "POST", &[], Some(body)).await,
    }
}

/// A `GET` of session `sid`'s streams: the standalone one, or (`last`) the stream that
/// event id belongs to, resumed after it.
pub async fn get(addr: &str, sid: &str, last: Option<&str>) -> hyper::Response<Incoming> {
    let mut headers = vec![("mcp-session-id", sid)];
    if let Some(last) = last {
        headers.push(("last-event-id", last));
    }
    send(addr, "GET", &headers, None).await
}

/// A session opened on `addr` with `capabilities`; its id.
pub async fn open(addr: &str, capabilities: Value) -> String {
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-06-18","capabilities": capabilities,
        "clientInfo":{"name":"t","version":"1"}}});
    let resp = post(addr, None, init).await;
    assert_eq!(resp.status(), 200);
    let sid = resp.headers()["mcp-session-id"]
        .to_str()
        .expect("id")
        .to_owned();
    let done = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(post(addr, Some(&sid), done).await.status(), 202);
    sid
}

/// Reads an SSE (or JSON) response body message by message.
pub struct Events {
    body: Incoming,
    pending: String,
}

impl Events {
    pub fn new(response: hyper::Response<Incoming>) -> Events {
        Events {
            body: response.into_body(),
            pending: String::new(),
        }
    }

    /// The next JSON-RPC message.
    pub async fn message(&mut self) -> Value {
        loop {
            let (_, data) = self.event().await.expect("the stream did not end");
            if let Some(data) = data {
                return data;
            }
        }
    }

    /// The next event (its id, and its data unless it is empty); `None` once the body
    /// ended. Waits at most 20 s.
    pub async fn event(&mut self) -> Option<(Option<String>, Option<Value>)> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let event: String = self.pending.drain(..end + 2).collect();
                let id = event
                    .lines()
                    .find_map(|l| l.strip_prefix("id: "))
                    .map(str::to_owned);
                let data = event.lines().find_map(|l| l.strip_prefix("data: "));
                if id.is_none() && data.is_none() {
                    continue; // a keep-alive comment
                }
                let data = data
                    .filter(|d| !d.is_empty())
                    .map(|d| serde_json::from_str(d).expect("JSON data"));
                return Some((id, data));
            }
            let frame = tokio::time::timeout(Duration::from_secs(20), self.body.frame())
                .await
                .expect("the stream went on within 20 s")?
                .expect("a frame");
            if let Ok(data) = frame.into_data() {
                self.pending.push_str(&String::from_utf8_lossy(&data));
            }
        }
    }
}
