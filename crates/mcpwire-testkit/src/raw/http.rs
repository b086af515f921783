//! A raw Streamable HTTP/1.1 client: every request on a connection of its own
//! (`connection: close`, as a balancer without affinity would send them), written byte by
//! byte so a test controls every header and body byte; the answer's status and headers
//! read at once, its body on demand — whole ([`Exchange::json`]) or event by event
//! ([`Exchange::event`]), chunked or not.
//!
//! [`HttpClient`] adds what a well-behaved MCP client sends: the `Accept` and content type
//! of a `POST`, a session's `Mcp-Session-Id` and `Mcp-Protocol-Version` (its
//! [`HttpClient::revision`]), the handshake ([`HttpClient::initialize`]), and the stateless
//! 2026-07-28 envelope and headers ([`HttpClient::post_stateless`]).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

use super::{Io, RECV_WITHIN, connect, split_url};

/// What an MCP client lists in `Accept` on every `POST`.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The revision a session speaks unless told otherwise.
pub const REVISION: &str = "2025-11-25";

/// The stateless revision.
pub const STATELESS: &str = "2026-07-28";

/// A Streamable HTTP endpoint and how to talk to it.
#[derive(Clone, Debug)]
pub struct HttpClient {
    /// `host:port`.
    pub addr: String,
    /// The endpoint's path.
    pub path: String,
    /// The revision sessions are opened at and named in `Mcp-Protocol-Version`.
    pub revision: String,
}

impl HttpClient {
    /// The endpoint at `url`: `http://host:port/path` or `host:port/path` (no path: `/mcp`).
    pub fn new(url: &str) -> HttpClient {
        let (addr, path) = split_url(url);
        let path = if path == "/" && !url.trim_end().ends_with('/') {
            "/mcp".to_owned()
        } else {
            path
        };
        HttpClient {
            addr,
            path,
            revision: REVISION.to_owned(),
        }
    }

    /// This client opening sessions at (and naming) `revision`.
    pub fn with_revision(mut self, revision: &str) -> HttpClient {
        self.revision = revision.to_owned();
        self
    }

    /// `http://host:port/path`.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.addr, self.path)
    }

    /// Sends `method` to the endpoint with exactly these headers (plus `Host` unless given,
    /// `Content-Length` and `Connection: close`) and `body`.
    pub async fn send(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Exchange {
        self.send_to(method, &self.path, headers, body).await
    }

    /// [`HttpClient::send`] to another path of the server (a well-known URI, a callback).
    pub async fn send_to(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Exchange {
        let mut head = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes).await
    }

    /// Writes `bytes` — anything, a request or not — on a new connection, and reads the
    /// answer.
    pub async fn send_raw(&self, bytes: &[u8]) -> Exchange {
        let mut io = connect(&self.addr, None).await;
        // A server may answer (413, 400) before reading everything: write errors are
        // ignored, the answer tells.
        let _ = io.write_all(bytes).await;
        let _ = io.flush().await;
        Exchange::read(io).await
    }

    /// The headers a request in session `session` carries (its id and revision).
    fn session_headers<'a>(&'a self, session: Option<&'a str>, h: &mut Vec<(&'a str, &'a str)>) {
        if let Some(s) = session {
            h.push(("mcp-session-id", s));
            h.push(("mcp-protocol-version", self.revision.as_str()));
        }
    }

    /// POSTs a JSON-RPC message as a well-behaved client does, in `session` when given.
    pub async fn post(&self, session: Option<&str>, msg: &Value) -> Exchange {
        self.post_with(session, msg, &[]).await
    }

    /// [`HttpClient::post`] with `Authorization: Bearer {key}` when a key is given.
    pub async fn post_as(&self, key: Option<&str>, session: Option<&str>, msg: &Value) -> Exchange {
        let bearer = key.map(|k| format!("Bearer {k}"));
        let extra: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("authorization", b.as_str()))
            .collect();
        self.post_with(session, msg, &extra).await
    }

    /// [`HttpClient::post`] adding `extra` headers.
    pub async fn post_with(
        &self,
        session: Option<&str>,
        msg: &Value,
        extra: &[(&str, &str)],
    ) -> Exchange {
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
        ];
        self.session_headers(session, &mut h);
        h.extend_from_slice(extra);
        self.send("POST", &h, msg.to_string().as_bytes()).await
    }

    /// A `GET` of session `session`'s streams: the standalone one, or (`last_event_id`) the
    /// stream that event belongs to, resumed after it.
    pub async fn get(&self, session: &str, last_event_id: Option<&str>) -> Exchange {
        let mut h = vec![("accept", "text/event-stream")];
        self.session_headers(Some(session), &mut h);
        if let Some(last) = last_event_id {
            h.push(("last-event-id", last));
        }
        self.send("GET", &h, b"").await
    }

    /// A `DELETE` of session `session`.
    pub async fn delete(&self, session: &str) -> Exchange {
        let mut h = Vec::new();
        self.session_headers(Some(session), &mut h);
        self.send("DELETE", &h, b"").await
    }

    /// Opens a session (`initialize` at [`HttpClient::revision`] with `capabilities`, then
    /// `notifications/initialized`); its id.
    pub async fn initialize_with(&self, capabilities: Value) -> String {
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize",
                          "params": super::initialize_params(&self.revision, capabilities)});
        let r = self.post(None, &init).await;
        assert_eq!(r.status, 200, "initialize");
        let sid = r.session().expect("a session id").to_owned();
        let body = r.message().await;
        assert_eq!(body["result"]["protocolVersion"], self.revision, "{body}");
        let done = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        let r = self.post(Some(&sid), &done).await;
        assert_eq!(r.status, 202, "notifications/initialized");
        sid
    }

    /// Opens a session with no client capabilities; its id.
    pub async fn initialize(&self) -> String {
        self.initialize_with(json!({})).await
    }

    /// POSTs a stateless 2026-07-28 request with matching headers and envelope.
    pub async fn post_stateless(&self, id: i64, method: &str, params: Value) -> Exchange {
        self.post_stateless_with(id, method, params, json!({}))
            .await
    }

    /// [`HttpClient::post_stateless`], declaring these client capabilities.
    pub async fn post_stateless_with(
        &self,
        id: i64,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> Exchange {
        self.post_stateless_extra(id, method, params, capabilities, &[])
            .await
    }

    /// [`HttpClient::post_stateless_with`], adding `extra` headers.
    pub async fn post_stateless_extra(
        &self,
        id: i64,
        method: &str,
        params: Value,
        capabilities: Value,
        extra: &[(&str, &str)],
    ) -> Exchange {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.post_stateless_request(&request, capabilities, extra)
            .await
    }

    /// POSTs the JSON-RPC `request` as a stateless 2026-07-28 one: its params given the
    /// `_meta` envelope (`capabilities` declared, what its `_meta` had kept), and the
    /// `Mcp-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers, plus `extra`.
    pub async fn post_stateless_request(
        &self,
        request: &Value,
        capabilities: Value,
        extra: &[(&str, &str)],
    ) -> Exchange {
        let method = request["method"].as_str().expect("a request's method");
        let (body, name) = stateless_request(
            request["id"].clone(),
            method,
            request["params"].clone(),
            capabilities,
        );
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-protocol-version", STATELESS),
            ("mcp-method", method),
        ];
        if let Some(name) = &name {
            h.push(("mcp-name", name));
        }
        h.extend_from_slice(extra);
        self.send("POST", &h, body.to_string().as_bytes()).await
    }
}

/// A stateless 2026-07-28 request: `method` with `params` carrying the `_meta` envelope
/// (revision, `capabilities`), and the name its `Mcp-Name` header mirrors, if any.
pub fn stateless_request(
    id: Value,
    method: &str,
    mut params: Value,
    capabilities: Value,
) -> (Value, Option<String>) {
    if !params.is_object() {
        params = json!({});
    }
    let meta = params["_meta"].as_object().cloned().unwrap_or_default();
    let mut meta = Value::Object(meta);
    meta["io.modelcontextprotocol/protocolVersion"] = json!(STATELESS);
    meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    params["_meta"] = meta;
    let name = match method {
        "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
        "resources/read" => params["uri"].as_str().map(str::to_owned),
        "tasks/get" | "tasks/update" | "tasks/cancel" => {
            params["taskId"].as_str().map(str::to_owned)
        }
        _ => None,
    };
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    (body, name)
}

/// The value of header `name` (in lowercase) among `headers`.
fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// One HTTP response: status and headers read, the body read on demand.
pub struct Exchange {
    /// The status code.
    pub status: u16,
    /// The headers, names in lowercase, in order.
    pub headers: Vec<(String, String)>,
    reader: BufReader<Box<dyn Io>>,
    chunked: bool,
    remaining: Option<usize>,
    done: bool,
    sse: Vec<u8>,
}

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .finish_non_exhaustive()
    }
}

/// A read bounded by [`RECV_WITHIN`]; `what` names it when it fails.
async fn bounded<T>(what: &str, read: impl Future<Output = std::io::Result<T>>) -> T {
    match tokio::time::timeout(RECV_WITHIN, read).await {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => panic!("{what}: {e}"),
        Err(_) => panic!("{what}: nothing within {RECV_WITHIN:?}"),
    }
}

impl Exchange {
    /// Reads the status line and headers from `io`.
    async fn read(io: Box<dyn Io>) -> Exchange {
        let mut reader = BufReader::new(io);
        let mut line = String::new();
        bounded("status line", reader.read_line(&mut line)).await;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            bounded("header line", reader.read_line(&mut h)).await;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').expect("a header");
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        let remaining = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok());
        Exchange {
            status,
            headers,
            reader,
            chunked,
            remaining,
            done: false,
            sse: Vec::new(),
        }
    }

    /// A response header (name in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The `Mcp-Session-Id` header.
    pub fn session(&self) -> Option<&str> {
        self.header("mcp-session-id")
    }

    /// Whether the body is an SSE stream.
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
    }

    /// The next piece of the body; `None` at its end.
    async fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if self.chunked {
            let mut size = String::new();
            let n = bounded("chunk size", self.reader.read_line(&mut size)).await;
            if n == 0 {
                self.done = true;
                return None;
            }
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or_else(|_| panic!("chunk size {size:?}"));
            if n == 0 {
                self.done = true;
                return None;
            }
            let mut buf = vec![0; n];
            bounded("chunk", self.reader.read_exact(&mut buf)).await;
            let mut crlf = String::new();
            bounded("chunk end", self.reader.read_line(&mut crlf)).await;
            return Some(buf);
        }
        self.done = true;
        let mut buf = Vec::new();
        match self.remaining {
            Some(n) => {
                buf.resize(n, 0);
                bounded("body", self.reader.read_exact(&mut buf)).await;
            }
            None => {
                bounded("body", self.reader.read_to_end(&mut buf)).await;
            }
        }
        Some(buf)
    }

    /// The whole body.
    pub async fn bytes(mut self) -> Vec<u8> {
        let mut all = std::mem::take(&mut self.sse);
        while let Some(c) = self.next_chunk().await {
            all.extend(c);
        }
        all
    }

    /// The whole body as text.
    pub async fn text(self) -> String {
        String::from_utf8(self.bytes().await).expect("a UTF-8 body")
    }

    /// The answer read whole: status, headers and body.
    pub async fn whole(self) -> Answer {
        let (status, headers) = (self.status, self.headers.clone());
        let body = String::from_utf8_lossy(&self.bytes().await).into_owned();
        Answer {
            status,
            headers,
            body,
        }
    }

    /// The whole body as JSON.
    pub async fn json(self) -> Value {
        let t = self.text().await;
        serde_json::from_str(&t).unwrap_or_else(|e| panic!("the body is not JSON ({e}): {t}"))
    }

    /// The JSON-RPC message answered: a JSON body, or an SSE body's first event with data.
    pub async fn message(mut self) -> Value {
        if self.is_sse() {
            return self.next_event().await.expect("an event").1;
        }
        self.json().await
    }

    /// The next SSE event or comment, raw (without its blank line); `None` at the end.
    pub async fn next_raw_event(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.sse.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.sse.drain(..end + 2).collect();
                return Some(String::from_utf8(event[..end].to_vec()).expect("a UTF-8 event"));
            }
            let chunk = self.next_chunk().await?;
            self.sse.extend(chunk.into_iter().filter(|&b| b != b'\r'));
        }
    }

    /// The next SSE event's data as it was written (its `data:` lines joined), skipping
    /// events without data (priming events, comments); `None` once the stream ended.
    pub async fn next_event_data(&mut self) -> Option<String> {
        loop {
            let data: String = self
                .next_raw_event()
                .await?
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            if !data.is_empty() {
                return Some(data);
            }
        }
    }

    /// The next SSE event — its id, and its data as JSON unless it has none (a priming
    /// event) — skipping comments (keep-alives); `None` once the stream ended.
    pub async fn event(&mut self) -> Option<(Option<String>, Option<Value>)> {
        loop {
            let event = self.next_raw_event().await?;
            let mut id = None;
            let mut data: Option<String> = None;
            for line in event.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().to_owned());
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.get_or_insert_with(String::new)
                        .push_str(v.trim_start());
                }
            }
            if id.is_none() && data.is_none() {
                continue; // a comment
            }
            let data = data.filter(|d| !d.is_empty()).map(|d| {
                serde_json::from_str(&d)
                    .unwrap_or_else(|e| panic!("event data is not JSON ({e}): {d}"))
            });
            return Some((id, data));
        }
    }

    /// The next SSE event with data, as (id, JSON data); `None` once the stream ended.
    pub async fn next_event(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            if let (id, Some(data)) = self.event().await? {
                return Some((id, data));
            }
        }
    }

    /// The next JSON-RPC message of the stream (an SSE event's data); panics if the stream
    /// ended.
    pub async fn next_message(&mut self) -> Value {
        self.next_event().await.expect("the stream ended").1
    }

    /// Every remaining SSE event's data.
    pub async fn events(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some((_, v)) = self.next_event().await {
            out.push(v);
        }
        out
    }
}

/// An answer read whole.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The headers, names in lowercase, in order.
    pub headers: Vec<(String, String)>,
    /// The body (lossily UTF-8).
    pub body: String,
}

impl Answer {
    /// A header (name in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// The `Mcp-Session-Id` header.
    pub fn session(&self) -> Option<&str> {
        self.header("mcp-session-id")
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
