//! Consent in a browser, the way native applications get it (RFC 8252 §7.3): the user is
//! shown the authorization URL, the authorization server sends the browser back to a
//! loopback address this client listens on, and the request that arrives there is the
//! answer. What `mcpwire list|call --oauth` uses.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::consent::{AuthorizationRequest, Consent};
use crate::ClientError;

/// The largest request read from the browser.
const MAX_REQUEST: usize = 16 * 1024;

/// How long one browser connection may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Consent through the user's browser and a redirect to `http://127.0.0.1:PORT/callback`.
pub struct LoopbackConsent {
    listener: std::net::TcpListener,
    port: u16,
    timeout: Duration,
    announce: Arc<dyn Fn(&str) + Send + Sync>,
}

impl std::fmt::Debug for LoopbackConsent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LoopbackConsent({})", self.redirect_uri())
    }
}

impl LoopbackConsent {
    /// Listens on a free loopback port; `announce` is given each authorization URL to show
    /// the user; the user has `timeout` to consent.
    pub fn bind(
        timeout: Duration,
        announce: impl Fn(&str) + Send + Sync + 'static,
    ) -> Result<LoopbackConsent, ClientError> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackConsent {
            listener,
            port,
            timeout,
            announce: Arc::new(announce),
        })
    }

    /// The redirect URI to register and send: `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }
}

impl Consent for LoopbackConsent {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, ClientError>> {
        let listener = self.listener.try_clone();
        let announce = self.announce.clone();
        let timeout = self.timeout;
        let port = self.port;
        Box::pin(async move {
            let listener = tokio::net::TcpListener::from_std(listener?)?;
            announce(&request.url);
            tokio::time::timeout(timeout, wait_for_callback(&listener, port))
                .await
                .map_err(|_| {
                    ClientError::Auth(format!(
                        "nobody completed the authorization within {timeout:?}"
                    ))
                })?
        })
    }
}

/// Answers browser requests until one reaches `/callback`; its full URL.
async fn wait_for_callback(
    listener: &tokio::net::TcpListener,
    port: u16,
) -> Result<String, ClientError> {
    loop {
        let (mut stream, _) = listener.accept().await?;
        let target = match tokio::time::timeout(REQUEST_TIMEOUT, request_target(&mut stream)).await
        {
            Ok(Some(t)) => t,
            _ => continue,
        };
        let done = target == "/callback" || target.starts_with("/callback?");
        let (status, body) = if done {
            (
                "200 OK",
                "Authorization received: you can close this window.",
            )
        } else {
            ("404 Not Found", "Not found.")
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        let _ = stream.shutdown().await;
        if done {
            return Ok(format!("http://127.0.0.1:{port}{target}"));
        }
    }
}

/// The request target of a `GET` (at most [`MAX_REQUEST`] bytes of head read).
async fn request_target(stream: &mut tokio::net::TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_REQUEST {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?.trim_end();
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}
