//! A small MCP client over Streamable HTTP (`http://` and `https://`), used by `mcpwire
//! list` and `mcpwire call` for URL targets. It opens a 2025-11-25 session, reads answers as
//! JSON or SSE, prints log notifications to stderr, answers server→client requests with
//! "method not found", follows redirects, and deletes its session on close. One HTTP/1.1
//! connection per request.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, LOCATION};
use hyper::{Method, Request, Response, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use mcpwire_model::Revision;
use serde_json::{Value, json};

use super::headers::{LAST_EVENT_ID, PROTOCOL_VERSION, SESSION_ID};
use crate::client::{ClientError, ClientOptions, Inbound, MAX_MESSAGE_BYTES, classify, excerpt};

mod sse;
mod tls;

use sse::SseParser;

/// How many redirects one request follows.
const MAX_REDIRECTS: usize = 5;

/// How many times one answer's stream is resumed after the server closed it.
const MAX_RESUMES: usize = 5;

/// A connected MCP client over Streamable HTTP.
pub struct HttpClient {
    uri: Uri,
    session: Option<String>,
    version: String,
    next_id: i64,
    /// How long a TCP connect plus TLS handshake may take.
    connect_timeout: Duration,
    /// The server's `initialize` result.
    pub server: Value,
}

impl HttpClient {
    /// Opens a session with the server at `url` (`http(s)://host[:port]/path`) within
    /// `opts.handshake_timeout`.
    pub async fn connect(url: &str, opts: &ClientOptions) -> Result<HttpClient, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Target(format!("`{url}` is not a valid URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(ClientError::Target(format!(
                "`{url}`: expected an http(s)://host[:port]/path URL"
            )));
        }
        let mut client = HttpClient {
            uri,
            session: None,
            version: Revision::LATEST_STATEFUL.as_str().to_owned(),
            next_id: 0,
            connect_timeout: opts.handshake_timeout,
            server: Value::Null,
        };
        let handshake = async {
            let server = client
                .request("initialize", crate::client::initialize_params())
                .await?;
            if let Some(v) = server.get("protocolVersion").and_then(Value::as_str) {
                client.version = v.to_owned();
            }
            client
                .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
                .await?;
            Ok::<_, ClientError>(server)
        };
        match tokio::time::timeout(opts.handshake_timeout, handshake).await {
            Ok(server) => client.server = server?,
            Err(_) => {
                return Err(ClientError::Timeout {
                    awaited: "answer to `initialize`".into(),
                    peer: url.to_owned(),
                    after: opts.handshake_timeout,
                    hint: " (--timeout waits longer)".into(),
                });
            }
        }
        Ok(client)
    }

    /// The endpoint's URL (after any permanent redirect).
    pub fn url(&self) -> String {
        self.uri.to_string()
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
            let bytes = Limited::new(body, MAX_MESSAGE_BYTES)
                .collect()
                .await
                .map_err(|e| self.io_error(&*e))?
                .to_bytes();
            let answer = serde_json::from_slice(&bytes)
                .ok()
                .map(|msg| classify(msg, &id, method, true));
            return match answer {
                Some(Inbound::Answer(result)) => result,
                _ if !status.is_success() => Err(self.status_error(status, &bytes)),
                _ if bytes.is_empty() => Err(ClientError::Invalid(format!(
                    "HTTP {status} from {} without an answer to `{method}`",
                    self.uri
                ))),
                _ => Err(ClientError::Invalid(format!(
                    "{} answered `{method}` with something that is not its JSON-RPC response: {}",
                    self.uri,
                    excerpt(&String::from_utf8_lossy(&bytes))
                ))),
            };
        }
        // A stream the server closes before the answer is resumed with `GET` and
        // `Last-Event-ID` (SSE polling), a bounded number of times.
        let mut last_id: Option<String> = None;
        for _ in 0..=MAX_RESUMES {
            let mut events = SseParser::default();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| self.io_error(&e))?;
                let Some(chunk) = frame.data_ref() else {
                    continue;
                };
                for event in events.push(chunk)? {
                    if event.id.is_some() {
                        last_id = event.id;
                    }
                    if event.data.is_empty() {
                        continue; // a priming event
                    }
                    let msg: Value = serde_json::from_str(&event.data).map_err(|_| {
                        ClientError::Invalid(format!(
                            "{} sent an event that is not JSON-RPC: {:?}",
                            self.uri,
                            excerpt(&event.data)
                        ))
                    })?;
                    match classify(msg, &id, method, true) {
                        Inbound::Answer(result) => return result,
                        Inbound::Refuse(refusal) => {
                            self.post(&refusal).await?;
                        }
                        Inbound::Other => {}
                    }
                }
            }
            let (Some(last), Some(_)) = (&last_id, &self.session) else {
                break;
            };
            if let Some(retry) = events.retry {
                tokio::time::sleep(retry.min(Duration::from_secs(5))).await;
            }
            let req = self
                .builder(Method::GET, &self.uri)
                .header(LAST_EVENT_ID, last.as_str())
                .body(Full::new(Bytes::new()))
                .map_err(|e| ClientError::Invalid(e.to_string()))?;
            let resumed = self.send(&self.uri, req).await?;
            if !resumed.status().is_success() {
                return Err(self.status_error(resumed.status(), b""));
            }
            body = resumed.into_body();
        }
        Err(ClientError::Closed {
            peer: self.uri.to_string(),
            how: "ended the event stream".into(),
            method: method.to_owned(),
        })
    }

    /// Ends the session (`DELETE`).
    pub async fn close(self) -> Result<(), ClientError> {
        if self.session.is_some() {
            let req = self.builder(Method::DELETE, &self.uri);
            let req = req
                .body(Full::new(Bytes::new()))
                .map_err(|e| ClientError::Invalid(e.to_string()))?;
            let _ = self.send(&self.uri, req).await;
        }
        Ok(())
    }

    fn builder(&self, method: Method, uri: &Uri) -> hyper::http::request::Builder {
        let authority = uri.authority().map_or("", |a| a.as_str());
        let mut b = Request::builder()
            .method(method)
            .uri(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(HOST, authority)
            .header(ACCEPT, "application/json, text/event-stream");
        if let Some(sid) = &self.session {
            b = b
                .header(SESSION_ID, sid.as_str())
                .header(PROTOCOL_VERSION, self.version.as_str());
        }
        b
    }

    /// POSTs `msg`, following redirects (the new URL is kept for later requests). Answers
    /// with any success status or a JSON body (a JSON-RPC error); other statuses are
    /// [`ClientError::Http`].
    async fn post(&mut self, msg: &Value) -> Result<Response<Incoming>, ClientError> {
        let body =
            Bytes::from(serde_json::to_vec(msg).map_err(|e| ClientError::Invalid(e.to_string()))?);
        let mut redirects = 0;
        loop {
            let req = self
                .builder(Method::POST, &self.uri)
                .header(CONTENT_TYPE, "application/json")
                .body(Full::new(body.clone()))
                .map_err(|e| ClientError::Invalid(e.to_string()))?;
            let response = self.send(&self.uri, req).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(next) = self.redirect_target(&response)?
            {
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(self.status_error(status, b"too many redirects"));
                }
                tracing::info!(from = %self.uri, to = %next, "following a redirect");
                self.uri = next;
                continue;
            }
            let is_json = response
                .headers()
                .get(CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
            if status.is_success() || is_json {
                return Ok(response);
            }
            let bytes = Limited::new(response.into_body(), 64 * 1024)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            return Err(self.status_error(status, &bytes));
        }
    }

    /// Where a redirect response points, resolved against the current URL.
    fn redirect_target(&self, response: &Response<Incoming>) -> Result<Option<Uri>, ClientError> {
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Ok(None);
        };
        let next: Uri = if location.starts_with('/') {
            let mut parts = self.uri.clone().into_parts();
            parts.path_and_query = location.parse().ok();
            Uri::from_parts(parts).map_err(|e| ClientError::Invalid(e.to_string()))?
        } else {
            location.parse().map_err(|e| {
                ClientError::Invalid(format!(
                    "{} redirects to an invalid URL {location:?}: {e}",
                    self.uri
                ))
            })?
        };
        if !matches!(next.scheme_str(), Some("http" | "https")) || next.host().is_none() {
            return Err(ClientError::Invalid(format!(
                "{} redirects to {location:?}, which is not an http(s) URL",
                self.uri
            )));
        }
        Ok(Some(next))
    }

    /// The error for a status that is not an MCP answer, saying what it usually means.
    fn status_error(&self, status: StatusCode, body: &[u8]) -> ClientError {
        let meaning = match status {
            StatusCode::NOT_FOUND => "nothing is served at this path (is it the MCP endpoint?)",
            StatusCode::METHOD_NOT_ALLOWED => {
                "this URL does not accept MCP's POST requests (is it the MCP endpoint?)"
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                "the server requires authorization, which this client does not send"
            }
            s if s.is_redirection() => "a redirect without a usable Location",
            s if s.is_server_error() => "the server failed",
            _ => "not an MCP answer",
        };
        let body = excerpt(&String::from_utf8_lossy(body));
        ClientError::Http {
            status: status.to_string(),
            url: self.uri.to_string(),
            detail: if body.is_empty() {
                meaning.to_owned()
            } else {
                format!("{meaning}; the body says: {body}")
            },
        }
    }

    fn io_error(&self, e: &(dyn std::error::Error + Send + Sync)) -> ClientError {
        ClientError::Io(format!("talking to {}: {e}", self.uri))
    }

    /// Sends one request on a fresh HTTP/1.1 connection (TLS for `https`).
    async fn send(
        &self,
        uri: &Uri,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<Incoming>, ClientError> {
        let connect = async {
            let host = uri.host().unwrap_or("localhost");
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let https = uri.scheme_str() == Some("https");
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            let tcp = tokio::net::TcpStream::connect((host, port))
                .await
                .map_err(|e| e.to_string())?;
            let _ = tcp.set_nodelay(true);
            if https {
                let tls = tls::connect(host, tcp).await?;
                handshake(tls).await
            } else {
                handshake(tcp).await
            }
        };
        let mut sender = match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(sender)) => sender,
            Ok(Err(reason)) => {
                return Err(ClientError::Connect {
                    url: uri.to_string(),
                    reason,
                });
            }
            Err(_) => {
                return Err(ClientError::Timeout {
                    awaited: "connection".into(),
                    peer: uri.to_string(),
                    after: self.connect_timeout,
                    hint: String::new(),
                });
            }
        };
        sender
            .send_request(req)
            .await
            .map_err(|e| ClientError::Io(format!("talking to {uri}: {e}")))
    }
}

/// The HTTP/1.1 handshake over `io`; the connection is driven by a task of its own.
async fn handshake<IO>(io: IO) -> Result<SendRequest<Full<Bytes>>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(error = %e, "http connection ended with an error");
        }
    });
    Ok(sender)
}
