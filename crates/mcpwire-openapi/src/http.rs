//! [`HttpClient`]: one service's origin over HTTP/1.1 keep-alive (TLS for `https`), each
//! exchange bounded in time and body size; redirects followed only within the origin.

use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use mcpwire_server::tls::{self, ClientTls};

/// Idle connections kept for reuse.
const MAX_IDLE: usize = 16;
/// Redirects one request follows (within the origin).
const MAX_REDIRECTS: usize = 3;

/// What came back.
#[derive(Debug)]
pub struct Response {
    /// The status.
    pub status: u16,
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The body, at most the limit.
    pub body: Vec<u8>,
    /// Whether the body went on past the limit (and was cut).
    pub truncated: bool,
}

/// A request: method, path and query (from the origin's root), headers, body.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// The method.
    pub method: hyper::Method,
    /// Path and query, absolute (`/v1/pets?limit=2`).
    pub path_and_query: String,
    /// Headers.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Body and media type.
    pub body: Option<(String, Bytes)>,
}

/// One origin (`scheme://host:port`), its idle connections, TLS trust and time limits.
pub struct HttpClient {
    https: bool,
    host: String,
    port: u16,
    authority: String,
    tls: ClientTls,
    connect_timeout: Duration,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HttpClient({})", self.origin())
    }
}

impl HttpClient {
    /// A client of the origin of `url` (`http(s)://host[:port]…`).
    pub fn new(url: &str, tls: ClientTls, connect_timeout: Duration) -> Result<HttpClient, String> {
        let uri: Uri = url.parse().map_err(|e| format!("`{url}`: {e}"))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(format!("`{url}` is not an http(s) URL")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| format!("`{url}` has no host"))?
            .as_str()
            .to_owned();
        let host = uri
            .host()
            .unwrap_or_default()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        Ok(HttpClient {
            https,
            host,
            port,
            authority,
            tls,
            connect_timeout,
            idle: Mutex::new(Vec::new()),
        })
    }

    /// `scheme://authority`.
    pub fn origin(&self) -> String {
        format!(
            "{}://{}",
            if self.https { "https" } else { "http" },
            self.authority
        )
    }

    /// Sends `out` and reads at most `max_body` bytes of the answer, all within `timeout`.
    pub async fn send(
        &self,
        out: Outgoing,
        timeout: Duration,
        max_body: usize,
    ) -> Result<Response, String> {
        match tokio::time::timeout(timeout, self.follow(out, max_body)).await {
            Ok(r) => r,
            Err(_) => Err(format!("no answer within {timeout:?}")),
        }
    }

    async fn follow(&self, mut out: Outgoing, max_body: usize) -> Result<Response, String> {
        for _ in 0..=MAX_REDIRECTS {
            let (resp, location) = self.once(&out, max_body).await?;
            let Some(location) = location else {
                return Ok(resp);
            };
            // Only a redirect within this origin is followed; others are the answer.
            let next = match self.within(&location) {
                Some(path) => path,
                None => {
                    tracing::debug!(%location, "redirect to another origin not followed");
                    return Ok(resp);
                }
            };
            if resp.status == 303 {
                out.method = hyper::Method::GET;
                out.body = None;
            } else if !(resp.status == 307 || resp.status == 308)
                && out.method != hyper::Method::GET
                && out.method != hyper::Method::HEAD
            {
                return Ok(resp);
            }
            out.path_and_query = next;
        }
        Err(format!("more than {MAX_REDIRECTS} redirects"))
    }

    /// The path of `location` if it is on this origin.
    fn within(&self, location: &str) -> Option<String> {
        if location.starts_with('/') && !location.starts_with("//") {
            return Some(location.to_owned());
        }
        let uri: Uri = location.parse().ok()?;
        let same = uri.scheme_str() == Some(if self.https { "https" } else { "http" })
            && uri.authority().map(|a| a.as_str()) == Some(self.authority.as_str());
        same.then(|| {
            uri.path_and_query()
                .map_or("/".into(), |p| p.as_str().to_owned())
        })
    }

    fn request(&self, out: &Outgoing) -> Result<Request<Full<Bytes>>, String> {
        let mut b = Request::builder()
            .method(out.method.clone())
            .uri(out.path_and_query.as_str())
            .header(hyper::header::HOST, self.authority.as_str())
            .header(hyper::header::ACCEPT, "application/json, */*;q=0.5");
        for (k, v) in &out.headers {
            b = b.header(k, v);
        }
        let body = match &out.body {
            Some((media, bytes)) => {
                b = b.header(hyper::header::CONTENT_TYPE, media.as_str());
                bytes.clone()
            }
            None => Bytes::new(),
        };
        b.body(Full::new(body)).map_err(|e| e.to_string())
    }

    async fn once(
        &self,
        out: &Outgoing,
        max_body: usize,
    ) -> Result<(Response, Option<String>), String> {
        let request = self.request(out)?;
        let idempotent = !matches!(out.method, hyper::Method::POST | hyper::Method::PATCH);
        let (mut sender, reused) = match self.take_idle() {
            Some(s) => (s, true),
            None => (self.connect().await?, false),
        };
        let response = match sender.send_request(request).await {
            Ok(r) => r,
            // A kept connection the server had closed: once more on a new one.
            Err(e) if reused && (idempotent || e.is_canceled()) => {
                sender = self.connect().await?;
                sender
                    .send_request(self.request(out)?)
                    .await
                    .map_err(|e| e.to_string())?
            }
            Err(e) => return Err(e.to_string()),
        };
        let (parts, mut body) = response.into_parts();
        let mut bytes = Vec::new();
        let mut truncated = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| format!("reading the answer: {e}"))?;
            if let Some(data) = frame.data_ref() {
                let room = max_body.saturating_sub(bytes.len());
                if data.len() > room {
                    bytes.extend_from_slice(&data[..room]);
                    truncated = true;
                    break;
                }
                bytes.extend_from_slice(data);
            }
        }
        if !truncated {
            self.put_idle(sender);
        }
        let header = |h| {
            parts
                .headers
                .get(h)
                .and_then(|v: &HeaderValue| v.to_str().ok())
                .map(str::to_owned)
        };
        let location = parts
            .status
            .is_redirection()
            .then(|| header(hyper::header::LOCATION))
            .flatten();
        Ok((
            Response {
                status: parts.status.as_u16(),
                content_type: header(hyper::header::CONTENT_TYPE),
                body: bytes,
                truncated,
            },
            location,
        ))
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(s) = idle.pop() {
            if !s.is_closed() && s.is_ready() {
                return Some(s);
            }
        }
        None
    }

    fn put_idle(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let connect = async {
            let tcp = tokio::net::TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| format!("connecting to {}: {e}", self.origin()))?;
            let _ = tcp.set_nodelay(true);
            if self.https {
                let tls = tls::connect_with(&self.host, tcp, &self.tls, &[b"http/1.1"]).await?;
                handshake(tls).await
            } else {
                handshake(tcp).await
            }
        };
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "connecting to {}: no connection within {:?}",
                self.origin(),
                self.connect_timeout
            )),
        }
    }
}

async fn handshake<IO>(io: IO) -> Result<SendRequest<Full<Bytes>>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!("OpenAPI service connection ended: {e}");
        }
    });
    Ok(sender)
}
