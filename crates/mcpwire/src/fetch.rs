//! One plain `GET` of a small document (a JWKS, metadata), `http` or `https`, bounded in
//! size and time: what the authentication layer fetches. Not MCP, so none of the MCP
//! client's session handling (a leaf beside it, so `auth` does not depend on `client`).

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::header::{ACCEPT, HOST};
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;

use crate::tls;

/// GETs `url` within `timeout` and returns its body if the status is 2xx and the body is at
/// most `max` bytes; the error says what failed. No redirects are followed (a key set must
/// come from where it was configured).
pub(crate) async fn get(url: &str, timeout: Duration, max: usize) -> Result<Bytes, String> {
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
    let request = Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
        .header(HOST, uri.authority().map_or("", |a| a.as_str()))
        .header(ACCEPT, "application/json")
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let exchange = async {
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| e.to_string())?;
        let response = if https {
            send(tls::connect(&host, tcp).await?, request).await?
        } else {
            send(tcp, request).await?
        };
        let status = response.status();
        let body = Limited::new(response.into_body(), max)
            .collect()
            .await
            .map_err(|e| format!("reading the body: {e}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!("status {status}"));
        }
        Ok(body)
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(r) => r.map_err(|e| format!("GET {url}: {e}")),
        Err(_) => Err(format!("GET {url}: no answer within {timeout:?}")),
    }
}

async fn send<IO>(
    io: IO,
    request: Request<Empty<Bytes>>,
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
