//! [`HttpConn`]: one Streamable HTTP endpoint as the client sees it — its URL (redirects
//! followed and kept), the MCP session id and protocol version it sends, a small pool of
//! idle HTTP/1.1 connections (TLS for `https`), the credentials it presents (a `401`, or a
//! `403 insufficient_scope`, runs the OAuth flow and the request is sent again), and the
//! errors for statuses that are not an MCP answer.

use std::sync::Mutex;
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper::header::{
    ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue, LOCATION, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode, Uri};

use super::driven::{Pool, SendFailed, UpstreamBody, Wire};

use crate::auth::{Challenge, UpstreamAuth};
use crate::{ClientError, excerpt};
use mcpwire_server::http::body::read_to_limit;
use mcpwire_server::http::headers::{
    LAST_EVENT_ID, PROTOCOL_VERSION_HEADER, SESSION_ID, SESSION_ID_HEADER,
};
use mcpwire_server::tls;

/// How many redirects one request follows.
const MAX_REDIRECTS: usize = 5;

/// Authorization challenges one request answers before its refusal stands: a `401`, then a
/// step-up `403` (a server that keeps refusing does not loop the client).
const MAX_CHALLENGES: usize = 2;

/// Extra headers of one request (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, the revision).
pub(super) type Headers = Vec<(String, String)>;

/// Whether a POST carries the negotiated revision the connection keeps
/// ([`HttpConn::set_version`]), or its own among its extra headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VersionHeader {
    /// The kept revision (a relayed call).
    Kept,
    /// One among the request's own headers, if any.
    Own,
}

/// A Streamable HTTP endpoint.
pub(super) struct HttpConn {
    uri: Mutex<Target>,
    /// The session id and the negotiated revision, as the header values requests carry
    /// (made once, not per request).
    session: Mutex<Option<HeaderValue>>,
    /// The negotiated revision, for requests that do not carry their own (GET, DELETE).
    version: Mutex<Option<HeaderValue>>,
    /// Idle connections, each driven by whoever uses it (`driven`).
    idle: Pool,
    /// How long a TCP connect plus TLS handshake may take.
    connect_timeout: Duration,
    /// `https`: which CA to trust, which certificate to present.
    tls: tls::ClientTls,
    /// What requests authenticate with.
    auth: Option<UpstreamAuth>,
}

impl HttpConn {
    /// The endpoint at `url` (`http(s)://host[:port]/path`), keeping at most `max_idle`
    /// idle connections (the client's in-flight bound: as many as may be busy at once).
    pub(super) fn new(
        url: &str,
        max_idle: usize,
        connect_timeout: Duration,
        tls: tls::ClientTls,
        auth: Option<UpstreamAuth>,
    ) -> Result<HttpConn, ClientError> {
        let uri: Uri = url
            .parse()
            .map_err(|e| ClientError::Target(format!("`{url}` is not a valid URL: {e}")))?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.host().is_none() {
            return Err(ClientError::Target(format!(
                "`{url}`: expected an http(s)://host[:port]/path URL"
            )));
        }
        Ok(HttpConn {
            uri: Mutex::new(Target::new(uri)?),
            session: Mutex::new(None),
            version: Mutex::new(None),
            idle: Pool::new(max_idle),
            connect_timeout,
            tls,
            auth,
        })
    }

    /// The endpoint's URL (after any redirect).
    pub(super) fn url(&self) -> String {
        lock(&self.uri).uri.to_string()
    }

    fn target(&self) -> Target {
        lock(&self.uri).clone()
    }

    /// The MCP session id, once the server gave one.
    pub(super) fn session(&self) -> Option<String> {
        let sid = lock(&self.session);
        sid.as_ref()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    }

    /// Whether the server gave an MCP session id.
    pub(super) fn has_session(&self) -> bool {
        lock(&self.session).is_some()
    }

    /// Remembers the session id of an `initialize` answer.
    pub(super) fn capture_session(&self, response: &Response<UpstreamBody>) {
        if let Some(sid) = response.headers().get(SESSION_ID)
            && sid.to_str().is_ok()
        {
            *lock(&self.session) = Some(sid.clone());
        }
    }

    /// Continues session `session_id`, negotiated in `version` (a re-attached session).
    pub(super) fn resume(&self, session_id: &str, version: &str) {
        *lock(&self.session) = HeaderValue::from_str(session_id).ok();
        self.set_version(version);
    }

    /// The revision GET and DELETE requests (and relayed calls) carry.
    pub(super) fn set_version(&self, version: &str) {
        *lock(&self.version) = HeaderValue::from_str(version).ok();
    }

    /// A request to the endpoint with the headers every request has: `Host`, `Accept`,
    /// the session's id once there is one.
    fn request(&self, method: Method, target: &Target, body: Bytes) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = target.path.clone();
        let headers = req.headers_mut();
        headers.reserve(8);
        headers.insert(HOST, target.host.clone());
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Some(sid) = lock(&self.session).as_ref() {
            headers.insert(SESSION_ID_HEADER, sid.clone());
        }
        req
    }

    /// Adds the negotiated revision, when known, to `headers`.
    fn add_version(&self, headers: &mut HeaderMap) {
        if let Some(v) = lock(&self.version).as_ref() {
            headers.insert(PROTOCOL_VERSION_HEADER, v.clone());
        }
    }

    /// Adds the credentials to a request; returns the access token sent, if any.
    async fn authenticate(
        &self,
        headers: &mut HeaderMap,
        method: &str,
    ) -> Result<Option<String>, ClientError> {
        let Some(auth) = &self.auth else {
            return Ok(None);
        };
        // Boxed, as every rarely taken await of a request here: a credential flow's future
        // is kilobytes, and a future is moved whole into its caller's (each request's).
        let (extra, sent) = Box::pin(auth.request_headers(method, &self.url())).await?;
        for (k, v) in extra {
            headers.append(k, v);
        }
        Ok(sent)
    }

    /// POSTs `body`, following redirects (the new URL is kept for later requests). Answers
    /// with any success status or a JSON body (a JSON-RPC error); other statuses are
    /// [`ClientError::Http`].
    pub(super) async fn post(
        &self,
        body: Bytes,
        version: VersionHeader,
        headers: &Headers,
    ) -> Result<Response<UpstreamBody>, ClientError> {
        let mut redirects = 0;
        let mut challenges = 0;
        loop {
            let target = self.target();
            let uri = &target.uri;
            let mut req = self.request(Method::POST, &target, body.clone());
            let h = req.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            if version == VersionHeader::Kept {
                self.add_version(h);
            }
            for (k, v) in headers {
                add_header(h, k, v)?;
            }
            let sent = self.authenticate(h, "POST").await?;
            let response = self.send(uri, req).await?;
            let status = response.status();
            if status.is_redirection()
                && let Some(next) = self.redirect_target(uri, &response)?
            {
                redirects += 1;
                if redirects > MAX_REDIRECTS {
                    return Err(self.status_error(status, b"too many redirects"));
                }
                tracing::info!(from = %uri, to = %next, "following a redirect");
                if next.authority() != uri.authority() || next.scheme() != uri.scheme() {
                    self.idle.clear();
                }
                *lock(&self.uri) = Target::new(next)?;
                continue;
            }
            if let Some(auth) = &self.auth
                && challenges < MAX_CHALLENGES
            {
                let challenge = Challenge::parse(
                    response
                        .headers()
                        .get_all(WWW_AUTHENTICATE)
                        .iter()
                        .filter_map(|v| v.to_str().ok()),
                );
                let nonce = response
                    .headers()
                    .get("dpop-nonce")
                    .and_then(|v| v.to_str().ok());
                if status == StatusCode::UNAUTHORIZED && auth.dpop_nonce(&challenge, nonce) {
                    challenges += 1;
                    let _ = read_limited(response.into_body(), 64 * 1024).await;
                    continue;
                }
                if auth.answers(status.as_u16(), &challenge) {
                    challenges += 1;
                    let _ = read_limited(response.into_body(), 64 * 1024).await;
                    tracing::info!(url = %uri, %status, "authorizing with the upstream");
                    let url = self.url();
                    Box::pin(auth.challenged(status.as_u16(), challenge, sent.as_deref(), &url))
                        .await?;
                    continue;
                }
            }
            let is_json = response
                .headers()
                .get(CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
            if status.is_success() || is_json {
                return Ok(response);
            }
            let bytes = read_limited(response.into_body(), 64 * 1024).await;
            return Err(self.status_error(status, &bytes));
        }
    }

    /// Opens an event stream with GET: the session's stream, or a request's stream resumed
    /// after `last_event_id`. A status other than success is returned as is.
    pub(super) async fn get(
        &self,
        last_event_id: Option<&str>,
    ) -> Result<Response<UpstreamBody>, ClientError> {
        let target = self.target();
        let mut req = self.request(Method::GET, &target, Bytes::new());
        let h = req.headers_mut();
        self.add_version(h);
        if let Some(id) = last_event_id {
            add_header(h, LAST_EVENT_ID, id)?;
        }
        self.authenticate(h, "GET").await?;
        self.send(&target.uri, req).await
    }

    /// Ends the MCP session (`DELETE`), if there is one.
    pub(super) async fn delete(&self) {
        if !self.has_session() {
            return;
        }
        let target = self.target();
        let mut req = self.request(Method::DELETE, &target, Bytes::new());
        self.add_version(req.headers_mut());
        if self.authenticate(req.headers_mut(), "DELETE").await.is_ok() {
            let _ = self.send(&target.uri, req).await;
        }
    }

    /// Where a redirect response points, resolved against `uri`.
    fn redirect_target(
        &self,
        uri: &Uri,
        response: &Response<UpstreamBody>,
    ) -> Result<Option<Uri>, ClientError> {
        let Some(location) = response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
        else {
            return Ok(None);
        };
        let next: Uri = if location.starts_with('/') {
            let mut parts = uri.clone().into_parts();
            parts.path_and_query = location.parse().ok();
            Uri::from_parts(parts).map_err(|e| ClientError::Invalid(e.to_string()))?
        } else {
            location.parse().map_err(|e| {
                ClientError::Invalid(format!(
                    "{uri} redirects to an invalid URL {location:?}: {e}"
                ))
            })?
        };
        if !matches!(next.scheme_str(), Some("http" | "https")) || next.host().is_none() {
            return Err(ClientError::Invalid(format!(
                "{uri} redirects to {location:?}, which is not an http(s) URL"
            )));
        }
        Ok(Some(next))
    }

    /// The error for a status that is not an MCP answer, saying what it usually means.
    pub(super) fn status_error(&self, status: StatusCode, body: &[u8]) -> ClientError {
        let meaning = match status {
            StatusCode::NOT_FOUND if self.has_session() => {
                "the server no longer knows this MCP session (404 for its Mcp-Session-Id)"
            }
            StatusCode::NOT_FOUND => "nothing is served at this path (is it the MCP endpoint?)",
            StatusCode::METHOD_NOT_ALLOWED => {
                "this URL does not accept MCP's POST requests (is it the MCP endpoint?)"
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN if self.auth.is_some() => {
                "the server refuses the credentials this client sends"
            }
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                "the server requires authorization, which this client does not send \
                 (configure credentials for it)"
            }
            s if s.is_redirection() => "a redirect without a usable Location",
            s if s.is_server_error() => "the server failed",
            _ => "not an MCP answer",
        };
        let body = excerpt(&String::from_utf8_lossy(body));
        ClientError::Http {
            status: status.to_string(),
            url: self.url(),
            detail: if body.is_empty() {
                meaning.to_owned()
            } else {
                format!("{meaning}; the body says: {body}")
            },
        }
    }

    /// An I/O failure talking to the endpoint.
    pub(super) fn io_error(&self, e: &dyn std::fmt::Display) -> ClientError {
        ClientError::Io(format!("talking to {}: {e}", self.url()))
    }

    /// Sends one request on an idle connection, or a new one (TLS for `https`).
    async fn send(
        &self,
        uri: &Uri,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<UpstreamBody>, ClientError> {
        // The connection goes back to the pool once this response's body has been read.
        let req = match self.idle.take() {
            Some(kept) => match kept.send(req, &self.idle).await {
                // A kept connection its server closed before it took the request (nothing
                // of it was written): sent once more, on a new connection.
                Err(SendFailed {
                    unsent: Some(req), ..
                }) => req,
                sent => return sent.map_err(|f| send_error(uri, &f.error)),
            },
            None => req,
        };
        // Boxed: connecting (TCP, TLS) is kilobytes of future and rarely taken.
        let wire = Box::pin(self.open(uri)).await?;
        wire.send(req, &self.idle)
            .await
            .map_err(|f| send_error(uri, &f.error))
    }

    async fn open(&self, uri: &Uri) -> Result<Wire, ClientError> {
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
                let tls = tls::connect_with(host, tcp, &self.tls, tls::alpn::HTTP1).await?;
                Wire::handshake(tls).await
            } else {
                Wire::handshake(tcp).await
            }
        };
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(Ok(sender)) => Ok(sender),
            Ok(Err(reason)) => Err(ClientError::Connect {
                url: uri.to_string(),
                reason,
            }),
            Err(_) => Err(ClientError::Timeout {
                awaited: "connection".into(),
                peer: uri.to_string(),
                after: self.connect_timeout,
                hint: String::new(),
            }),
        }
    }
}

/// A request that got no response from `uri`.
fn send_error(uri: &Uri, e: &hyper::Error) -> ClientError {
    ClientError::Io(format!("talking to {uri}: {e}"))
}

/// At most `max` bytes of a body (what arrived before an error, or nothing).
pub(super) async fn read_limited(body: UpstreamBody, max: usize) -> Bytes {
    read_to_limit(body, max).await.unwrap_or_default()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Where requests go: the endpoint's URL, and what of it each request carries (its path
/// and its `Host`), made once per URL rather than per request.
#[derive(Clone)]
struct Target {
    uri: Uri,
    path: Uri,
    host: HeaderValue,
}

impl Target {
    fn new(uri: Uri) -> Result<Target, ClientError> {
        let invalid = |e: &dyn std::fmt::Display| ClientError::Target(format!("`{uri}`: {e}"));
        let path = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse::<Uri>()
            .map_err(|e| invalid(&e))?;
        let host = HeaderValue::from_str(uri.authority().map_or("", |a| a.as_str()))
            .map_err(|e| invalid(&e))?;
        Ok(Target { uri, path, host })
    }
}

/// Adds header `name: value` to `headers`, refusing a name or value HTTP does not allow.
fn add_header(headers: &mut HeaderMap, name: &str, value: &str) -> Result<(), ClientError> {
    let bad = |e: &dyn std::fmt::Display| ClientError::Invalid(format!("header `{name}`: {e}"));
    let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(&e))?;
    let value = HeaderValue::from_str(value).map_err(|e| bad(&e))?;
    headers.append(name, value);
    Ok(())
}
