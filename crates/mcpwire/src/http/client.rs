//! A small MCP client over Streamable HTTP (plain `http://` only), used by `mcpwire list`
//! and `mcpwire call` for URL targets. It opens a 2025-11-25 session, reads answers as JSON
//! or SSE, prints log notifications to stderr, answers server→client requests with "method
//! not found", and deletes its session on close. One HTTP/1.1 connection per request.

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use mcpwire_model::{ErrorObject, Revision};
use serde_json::{Value, json};

use super::headers::{LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::client::ClientError;
use crate::client::refusal;

/// A connected MCP client over Streamable HTTP.
pub struct HttpClient {
    uri: Uri,
    session: Option<String>,
    version: String,
    next_id: i64,
    /// The server's `initialize` result.
    pub server: Value,
}

impl HttpClient {
    /// Opens a session with the server at `url` (`http://host[:port]/path`).
    pub async fn connect(url: &str) -> Result<HttpClient, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Target(format!("{url}: {e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(ClientError::Target(format!(
                "{url}: only http://host[:port]/path URLs are supported"
            )));
        }
        let mut client = HttpClient {
            uri,
            session: None,
            version: Revision::LATEST_STATEFUL.as_str().to_owned(),
            next_id: 0,
            server: Value::Null,
        };
        client.server = client
            .request("initialize", crate::client::initialize_params())
            .await?;
        if let Some(v) = client.server.get("protocolVersion").and_then(Value::as_str) {
            client.version = v.to_owned();
        }
        client
            .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await?;
        Ok(client)
    }

    /// Sends a request and waits for its result, printing log notifications on the way.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        self.next_id += 1;
        let id = json!(self.next_id);
        let response = self
            .post(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
            .await?;
        if method == "initialize"
            && let Some(sid) = response.headers().get(SESSION_ID)
        {
            self.session = sid.to_str().ok().map(str::to_owned);
        }
        let status = response.status();
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut body = response.into_body();
        if !sse {
            let bytes = body.collect().await.map_err(io)?.to_bytes();
            let msg: Value = serde_json::from_slice(&bytes).map_err(|_| {
                ClientError::Invalid(format!(
                    "HTTP {status}: {}",
                    String::from_utf8_lossy(&bytes)
                ))
            })?;
            return match self.on_message(&id, msg).await? {
                Some(result) => result,
                None => Err(ClientError::Invalid(format!(
                    "HTTP {status} without a response"
                ))),
            };
        }
        // A stream the server closes before the answer is resumed with `GET` and
        // `Last-Event-ID` (SSE polling), a bounded number of times.
        let mut last_id: Option<String> = None;
        for _ in 0..=MAX_RESUMES {
            let mut events = SseParser::default();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(io)?;
                let Some(chunk) = frame.data_ref() else {
                    continue;
                };
                for event in events.push(chunk) {
                    if event.id.is_some() {
                        last_id = event.id;
                    }
                    if event.data.is_empty() {
                        continue; // a priming event
                    }
                    let msg: Value = serde_json::from_str(&event.data)
                        .map_err(|e| ClientError::Invalid(e.to_string()))?;
                    if let Some(result) = self.on_message(&id, msg).await? {
                        return result;
                    }
                }
            }
            let (Some(last), Some(_)) = (&last_id, &self.session) else {
                break;
            };
            if let Some(retry) = events.retry {
                tokio::time::sleep(retry.min(std::time::Duration::from_secs(5))).await;
            }
            let req = self
                .builder(Method::GET)
                .header(LAST_EVENT_ID, last.as_str())
                .body(Full::new(Bytes::new()))
                .map_err(|e| ClientError::Invalid(e.to_string()))?;
            let resumed = send(&self.uri, req).await?;
            if !resumed.status().is_success() {
                return Err(ClientError::Invalid(format!(
                    "resuming the stream failed: HTTP {}",
                    resumed.status()
                )));
            }
            body = resumed.into_body();
        }
        Err(ClientError::Closed)
    }

    /// Handles one message while waiting for the answer to `id`; `Some` once it came.
    async fn on_message(
        &mut self,
        id: &Value,
        msg: Value,
    ) -> Result<Option<Result<Value, ClientError>>, ClientError> {
        match (msg.get("id"), msg.get("method")) {
            (Some(rid), None) if rid == id || rid.is_null() => {
                if let Some(err) = msg.get("error") {
                    let e: ErrorObject = serde_json::from_value(err.clone())
                        .map_err(|e| ClientError::Invalid(e.to_string()))?;
                    return Ok(Some(Err(ClientError::Rpc(e))));
                }
                Ok(Some(Ok(msg.get("result").cloned().unwrap_or(Value::Null))))
            }
            (Some(rid), Some(m)) => {
                tracing::info!(method = %m, "server request refused by the CLI client");
                let refusal = json!({
                    "jsonrpc": "2.0", "id": rid,
                    "error": refusal(m)
                });
                self.post(&refusal).await?;
                Ok(None)
            }
            (None, Some(m)) if m == "notifications/message" => {
                let p = &msg["params"];
                eprintln!("[{}] {}", p["level"].as_str().unwrap_or("log"), p["data"]);
                Ok(None)
            }
            _ => {
                tracing::debug!(%msg, "ignored message");
                Ok(None)
            }
        }
    }

    /// Every tool, following pagination cursors.
    pub async fn list_tools(&mut self) -> Result<Vec<Value>, ClientError> {
        crate::client::paginate_tools(async |m, p| self.request(m, p).await).await
    }

    /// Calls a tool with JSON arguments.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Result<Value, ClientError> {
        self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// Ends the session (`DELETE`).
    pub async fn close(self) -> Result<(), ClientError> {
        if self.session.is_some() {
            let req = self.builder(Method::DELETE).body(Full::new(Bytes::new()));
            let req = req.map_err(|e| ClientError::Invalid(e.to_string()))?;
            let _ = send(&self.uri, req).await;
        }
        Ok(())
    }

    fn builder(&self, method: Method) -> hyper::http::request::Builder {
        let authority = self.uri.authority().map_or("", |a| a.as_str());
        let mut b = Request::builder()
            .method(method)
            .uri(self.uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(HOST, authority)
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(sid) = &self.session {
            b = b
                .header(SESSION_ID, sid.as_str())
                .header(PROTOCOL_VERSION, self.version.as_str());
        }
        b
    }

    async fn post(&self, msg: &Value) -> Result<Response<Incoming>, ClientError> {
        let body = serde_json::to_vec(msg).map_err(|e| ClientError::Invalid(e.to_string()))?;
        let req = self
            .builder(Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| ClientError::Invalid(e.to_string()))?;
        let response = send(&self.uri, req).await?;
        let status = response.status();
        if status == StatusCode::ACCEPTED || status.is_success() {
            return Ok(response);
        }
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
        if is_json {
            return Ok(response); // a JSON-RPC error; the caller reads it
        }
        Err(ClientError::Invalid(format!("HTTP {status}")))
    }
}

/// Sends one request on a fresh HTTP/1.1 connection.
async fn send(uri: &Uri, req: Request<Full<Bytes>>) -> Result<Response<Incoming>, ClientError> {
    let host = uri.host().unwrap_or("localhost");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = uri.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host, port)).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(io)?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "http connection ended with an error");
        }
    });
    sender.send_request(req).await.map_err(io)
}

fn io(e: impl std::error::Error + Send + Sync + 'static) -> ClientError {
    ClientError::Io(std::io::Error::other(e))
}

/// How many times one answer's stream is resumed after the server closed it.
const MAX_RESUMES: usize = 5;

/// One SSE event: its id and its `data` lines joined by newlines.
#[derive(Debug, PartialEq)]
struct SseEvent {
    id: Option<String>,
    data: String,
}

/// Splits a byte stream into SSE events; remembers the last `retry:`.
#[derive(Default)]
struct SseParser {
    buf: Vec<u8>,
    retry: Option<std::time::Duration>,
}

impl SseParser {
    fn push(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        // CRLF line ends become LF (JSON data never holds a raw CR).
        self.buf
            .extend(chunk.iter().copied().filter(|&b| b != b'\r'));
        let mut out = Vec::new();
        while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = self.buf.drain(..end + 2).collect();
            let event = String::from_utf8_lossy(&event[..end]);
            let mut id = None;
            let mut data: Vec<&str> = Vec::new();
            for line in event.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "data" => data.push(value),
                    "id" => id = Some(value.to_owned()),
                    "retry" => {
                        if let Ok(ms) = value.parse() {
                            self.retry = Some(std::time::Duration::from_millis(ms));
                        }
                    }
                    _ => {}
                }
            }
            if !data.is_empty() || id.is_some() {
                out.push(SseEvent {
                    id,
                    data: data.join("\n"),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

    #[test]
    fn sse_events_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"id: 1\ndata: {\"a\"").is_empty());
        let events =
            p.push(b":1}\n\n: keep-alive\n\ndata: x\r\n\r\nid: p1-0\nretry: 500\ndata:\n\n");
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, vec!["{\"a\":1}", "x", ""]);
        assert_eq!(events[0].id.as_deref(), Some("1"));
        assert_eq!(events[2].id.as_deref(), Some("p1-0"));
        assert_eq!(p.retry, Some(std::time::Duration::from_millis(500)));
    }
}
