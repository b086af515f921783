//! Starts `mcpwire demo --transport http --port 0` and talks raw HTTP/1.1 to it (blocking,
//! one connection per request), so tests control every header and byte.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::served::Served;

/// What a browser-less MCP client sends on every POST.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// A running HTTP server: a child this started, or an address.
pub struct HttpServer {
    served: Option<Served>,
    /// `host:port`.
    pub addr: String,
    /// The endpoint path.
    pub path: String,
}

impl HttpServer {
    /// `mcpwire demo --transport http --port 0` plus `extra` arguments.
    pub fn start(extra: &[&str]) -> HttpServer {
        HttpServer::from(Served::spawn("http", extra, "warn", false))
    }

    /// Like [`HttpServer::start`], logging with filter `log`, kept for
    /// [`HttpServer::wait_for_log`].
    pub fn start_logging(extra: &[&str], log: &str) -> HttpServer {
        HttpServer::from(Served::spawn("http", extra, log, true))
    }

    fn from(served: Served) -> HttpServer {
        let mut server = HttpServer::at(&served.addr.clone());
        server.served = Some(served);
        server
    }

    /// The server at `host:port/path` (as printed after `listening on http://`), started
    /// by someone else.
    pub fn at(url: &str) -> HttpServer {
        let (addr, path) = url.split_at(url.find('/').expect("a path"));
        HttpServer {
            addr: addr.to_owned(),
            path: path.to_owned(),
            served: None,
        }
    }

    /// Waits (at most 10 s) for a log line containing `needle`, and returns it.
    pub fn wait_for_log(&self, needle: &str) -> Option<String> {
        let served = self.served.as_ref().expect("a server this started");
        served.wait_for_log(needle)
    }

    /// Sends a request with exactly these headers (plus `Host` unless given).
    pub fn send(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Exchange {
        Exchange::send(&self.addr, method, &self.path, headers, body)
    }

    /// POSTs a JSON-RPC message the way a well-behaved client does.
    pub fn post(&self, session: Option<&str>, msg: &Value) -> Exchange {
        self.post_as(None, session, msg)
    }

    /// [`HttpServer::post`] with `Authorization: Bearer {key}` when a key is given.
    pub fn post_as(&self, key: Option<&str>, session: Option<&str>, msg: &Value) -> Exchange {
        let bearer = key.map(|k| format!("Bearer {k}"));
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
        ];
        if let Some(b) = &bearer {
            h.push(("authorization", b.as_str()));
        }
        if let Some(s) = session {
            h.push(("mcp-session-id", s));
            h.push(("mcp-protocol-version", "2025-11-25"));
        }
        self.send("POST", &h, msg.to_string().as_bytes())
    }

    /// POSTs a stateless 2026-07-28 request with matching headers and envelope.
    pub fn post_stateless(&self, id: i64, method: &str, params: Value) -> Exchange {
        self.post_stateless_with(id, method, params, json!({}))
    }

    /// Like [`HttpServer::post_stateless`], declaring these client capabilities.
    pub fn post_stateless_with(
        &self,
        id: i64,
        method: &str,
        params: Value,
        capabilities: Value,
    ) -> Exchange {
        self.post_stateless_extra(id, method, params, capabilities, &[])
    }

    /// Like [`HttpServer::post_stateless_with`], adding these headers.
    pub fn post_stateless_extra(
        &self,
        id: i64,
        method: &str,
        mut params: Value,
        capabilities: Value,
        extra: &[(&str, &str)],
    ) -> Exchange {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        });
        // The name the body carries, mirrored as `Mcp-Name` (required when present).
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                params["taskId"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut h = vec![
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(name) = &name {
            h.push(("mcp-name", name));
        }
        h.extend_from_slice(extra);
        self.send("POST", &h, body.to_string().as_bytes())
    }

    /// Opens a 2025-11-25 session (initialize + initialized) with these client capabilities.
    pub fn initialize_with(&self, capabilities: Value) -> String {
        let r = self.post(
            None,
            &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":capabilities,
                "clientInfo":{"name":"test","version":"1"}}}),
        );
        assert_eq!(r.status, 200);
        let sid = r.header("mcp-session-id").expect("a session id").to_owned();
        let body = r.json();
        assert_eq!(body["result"]["protocolVersion"], "2025-11-25", "{body}");
        let r = self.post(
            Some(&sid),
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        assert_eq!(r.status, 202);
        sid
    }

    /// Opens a session with no client capabilities.
    pub fn initialize(&self) -> String {
        self.initialize_with(json!({}))
    }
}

/// One HTTP response, its body read on demand.
pub struct Exchange {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    remaining: Option<usize>,
    done: bool,
    sse_buf: Vec<u8>,
}

impl Exchange {
    fn send(
        addr: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Exchange {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut req = format!("{method} {path} HTTP/1.1\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            req.push_str(&format!("host: {addr}\r\n"));
        }
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str(&format!(
            "content-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        ));
        s.write_all(req.as_bytes()).unwrap();
        // A server may answer (413) before reading everything: ignore write errors.
        let _ = s.write_all(body);
        let mut reader = BufReader::new(s);
        let mut line = String::new();
        reader.read_line(&mut line).expect("status line");
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("bad status line: {line:?}"));
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).expect("header line");
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').expect("header");
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
            sse_buf: Vec::new(),
        }
    }

    /// A plain `GET` of `path` at `addr`.
    pub fn get(addr: &str, path: &str) -> Exchange {
        Exchange::send(addr, "GET", path, &[], b"")
    }

    /// POSTs `msg` to session `sid` of the server at `addr` (for use from other threads).
    pub fn post_to(addr: &str, path: &str, sid: &str, msg: &Value) -> Exchange {
        let h = [
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-session-id", sid),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        Exchange::send(addr, "POST", path, &h, msg.to_string().as_bytes())
    }

    /// A response header (name in lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The next piece of the body; `None` at its end.
    fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        if self.chunked {
            let mut size = String::new();
            self.reader.read_line(&mut size).expect("chunk size");
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .expect("chunk size");
            if n == 0 {
                self.done = true;
                return None;
            }
            let mut buf = vec![0; n];
            self.reader.read_exact(&mut buf).expect("chunk");
            let mut crlf = String::new();
            self.reader.read_line(&mut crlf).expect("chunk end");
            return Some(buf);
        }
        self.done = true;
        let mut buf = Vec::new();
        match self.remaining {
            Some(n) => {
                buf.resize(n, 0);
                self.reader.read_exact(&mut buf).expect("body");
            }
            None => {
                self.reader.read_to_end(&mut buf).expect("body");
            }
        }
        Some(buf)
    }

    /// The whole body as text.
    pub fn text(mut self) -> String {
        let mut all = Vec::new();
        while let Some(c) = self.next_chunk() {
            all.extend(c);
        }
        String::from_utf8(all).expect("utf-8 body")
    }

    /// The whole body as JSON.
    pub fn json(self) -> Value {
        let t = self.text();
        serde_json::from_str(&t).unwrap_or_else(|e| panic!("body is not JSON ({e}): {t}"))
    }

    /// The next SSE event or comment, raw (without its blank line); `None` at the end.
    pub fn next_raw_event(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.sse_buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.sse_buf.drain(..end + 2).collect();
                return Some(String::from_utf8(event[..end].to_vec()).expect("utf-8 event"));
            }
            let chunk = self.next_chunk()?;
            self.sse_buf
                .extend(chunk.into_iter().filter(|&b| b != b'\r'));
        }
    }

    /// The next SSE event as (id, JSON data); `None` at the end of the stream.
    pub fn next_event(&mut self) -> Option<(Option<String>, Value)> {
        loop {
            if let Some(end) = self.sse_buf.windows(2).position(|w| w == b"\n\n") {
                let event: Vec<u8> = self.sse_buf.drain(..end + 2).collect();
                let event = String::from_utf8(event).expect("utf-8 event");
                let mut id = None;
                let mut data = String::new();
                for line in event.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if data.is_empty() {
                    continue; // keep-alive comment or priming event
                }
                let v = serde_json::from_str(&data).expect("event data is JSON");
                return Some((id, v));
            }
            let chunk = self.next_chunk()?;
            self.sse_buf
                .extend(chunk.into_iter().filter(|&b| b != b'\r'));
        }
    }

    /// Every remaining SSE event's data.
    pub fn events(mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some((_, v)) = self.next_event() {
            out.push(v);
        }
        out
    }
}
