//! One plain HTTP exchange for a small document (a JWKS, OAuth metadata, a token endpoint's
//! answer), `http` or `https`, bounded in size and time: what the authentication layers
//! fetch. Not MCP, so none of the MCP client's session handling (a leaf beside it, so
//! `auth` does not depend on `client`). No redirects are followed: a key set or an OAuth
//! document must come from where it was named, and a redirect is itself an answer to read.

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;

use mcpwire_server::tls::{self, ClientTls};

/// How a one-shot exchange reaches its server: how long it may take, and the TLS trust
/// (CA, client certificate) of an `https` URL.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// The whole exchange's deadline.
    pub timeout: Duration,
    /// Which CA to trust and which certificate to present (default: the system's roots).
    pub tls: ClientTls,
}

impl Reach {
    /// `timeout` with the default trust.
    pub fn plain(timeout: Duration) -> Reach {
        Reach {
            timeout,
            tls: ClientTls::default(),
        }
    }
}

/// What came back: status, headers and (at most `max` bytes of) body.
#[derive(Debug)]
pub struct Fetched {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

/// One request to send: method, URL, extra headers and an optional body with its type.
pub struct Outgoing<'a> {
    /// The method.
    pub method: Method,
    /// An absolute `http(s)` URL.
    pub url: &'a str,
    /// Extra headers (`Authorization`, …).
    pub headers: Vec<(HeaderName, String)>,
    /// The body and its content type.
    pub body: Option<(&'static str, Bytes)>,
}

impl<'a> Outgoing<'a> {
    /// A `GET` of `url` accepting JSON.
    pub fn get(url: &'a str) -> Outgoing<'a> {
        Outgoing {
            method: Method::GET,
            url,
            headers: Vec::new(),
            body: None,
        }
    }
}

/// GETs `url` within `timeout` and returns its body if the status is 2xx and the body is at
/// most `max` bytes; the error says what failed.
pub async fn get(url: &str, timeout: Duration, max: usize) -> Result<Bytes, String> {
    let fetched = send(Outgoing::get(url), timeout, max).await?;
    if !fetched.status.is_success() {
        return Err(format!("GET {url}: status {}", fetched.status));
    }
    Ok(fetched.body)
}

/// Sends `out` within `timeout`; any status is an answer. A body over `max` bytes is an
/// error.
pub async fn send(out: Outgoing<'_>, timeout: Duration, max: usize) -> Result<Fetched, String> {
    send_via(out, &Reach::plain(timeout), max).await
}

/// Sends `out` as `reach` says (deadline, TLS trust); any status is an answer. A body over
/// `max` bytes is an error.
pub async fn send_via(out: Outgoing<'_>, reach: &Reach, max: usize) -> Result<Fetched, String> {
    let timeout = reach.timeout;
    let url = out.url;
    let what = format!("{} {url}", out.method);
    let uri: Uri = url.parse().map_err(|e| format!("`{url}`: {e}"))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        _ => return Err(format!("`{url}` is not an http(s) URL")),
    };
    let host = uri.host().ok_or_else(|| format!("`{url}` has no host"))?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let mut b = Request::builder()
        .method(out.method)
        .uri(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(HOST, uri.authority().map_or("", |a| a.as_str()))
        .header(ACCEPT, "application/json");
    for (k, v) in &out.headers {
        b = b.header(k, v.as_str());
    }
    let body = match out.body {
        Some((content_type, body)) => {
            b = b.header(CONTENT_TYPE, content_type);
            body
        }
        None => Bytes::new(),
    };
    let request = b.body(Full::new(body)).map_err(|e| e.to_string())?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| e.to_string())?;
        let response = if https {
            let tls = tls::connect_with(&host, tcp, &reach.tls, &[b"http/1.1"]).await?;
            exchange(tls, request).await?
        } else {
            exchange(tcp, request).await?
        };
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, max)
            .collect()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_bytes();
        Ok(Fetched {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r.map_err(|e: String| format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer within {timeout:?}")),
    }
}

async fn exchange<IO>(
    io: IO,
    request: Request<Full<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>, String>
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}
