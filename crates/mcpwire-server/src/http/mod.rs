//! The Streamable HTTP wire: one endpoint (`POST`/`GET`/`DELETE` on a path) serving both the
//! stateful revisions (2025-03-26 … 2025-11-25, a session per `initialize`, named by the
//! `Mcp-Session-Id` header) and stateless 2026-07-28 (every `POST` stands alone).
//!
//! - [`guard`] refuses foreign `Origin`/`Host` headers (DNS rebinding) before anything else.
//! - [`auth`]: `Caller`, the extractor admitting every `POST`, `GET` and `DELETE` (the guard,
//!   then the credential when the service authenticates), and the RFC 9728 metadata route.
//! - [`post`] validates a `POST` (content type, `Accept`, size, JSON) and routes it: to a
//!   session, to a new session (`initialize`), or to a stateless exchange.
//! - [`session`] is one stateful session: a task owning a `ServerSession` and its calls,
//!   routing each message to the `POST` stream of the request it relates to, or to the
//!   standalone `GET` stream. [`sessions`] is the bounded table of them.
//! - [`stateless`] answers one 2026-07-28 request with a fresh `ServerSession`; dropping the
//!   response (the client went away) cancels the call.
//! - [`client`] is the small client behind `mcpwire list|call http://…`.
//! - [`reply`] turns a request's messages into `application/json` (only the response) or
//!   `text/event-stream` (anything came before the response), and builds error replies.
//! - [`locate`] finds the session an `Mcp-Session-Id` names: in the table, or — in a
//!   replica set — through the service's [`SessionDirectory`], rebuilt from the handshake
//!   the id carries.
//! - [`replay`] numbers a session's SSE events and keeps the recent ones, so a client can
//!   resume a stream with `Last-Event-ID` (including one the server closed on purpose).
//!
//! Like every driver, nothing here makes protocol decisions: those stay in the session.

mod auth;
pub mod body;
mod endpoint;
#[doc(hidden)]
pub mod fuzzing;
mod get;
mod guard;
pub mod headers;
mod locate;
mod post;
mod replay;
mod reply;
mod route_headers;
mod seam;
mod seamed;
mod serve;
mod session;
mod sessions;
mod stateless;
mod threads;
mod unread;

use std::net::SocketAddr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::routing::MethodRouter;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;

pub use guard::Guard;
pub use sessions::HttpStats;

use crate::Service;
use crate::directory::{HeldSessions, SessionDirectory};
use crate::driver::CancelWatch;
use crate::identify::Authenticate;
use crate::identify::resource::WELL_KNOWN;
use crate::observe::WireLabel;
use crate::tls::{Incoming, ServerStream};
use sessions::Sessions;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long connections get to finish the requests they started once a shutdown began.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// Where a request's connection came from (a request extension set per connection): its
/// address (read by the rate limits through `CallCtx::client_ip`) and the caller its
/// verified TLS client certificate names (the identity when the service has no
/// authentication of its own).
#[derive(Debug, Clone)]
pub(crate) struct ClientAddr {
    pub(crate) addr: SocketAddr,
    pub(crate) certificate: Option<mcpwire_router::Identity>,
    /// The service's authenticator as this connection uses it
    /// ([`Authenticate::for_connection`]: it remembers the credential the connection
    /// presented last); `None` when the service does not authenticate.
    pub(crate) auth: Option<Arc<dyn Authenticate>>,
    /// The 2026-07-28 `_meta` envelope the connection's requests carried last, as read.
    pub(crate) last_meta: Arc<route_headers::LastMeta>,
}

/// A request refused before any session as a whole HTTP response: the error's status
/// (429 with `Retry-After` for a rate limit) and its JSON-RPC body. For listeners that
/// speak HTTP before their own protocol (the WebSocket upgrade).
pub(crate) fn refusal(e: mcpwire_model::McpError) -> axum::response::Response {
    reply::refuse(None, e)
}

/// The default [`HttpConfig::read_timeout`].
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How to serve Streamable HTTP.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Address to listen on (port 0 picks a free one).
    pub bind: SocketAddr,
    /// The MCP endpoint's path, e.g. `/mcp`.
    pub path: String,
    /// Sessions alive at once. A full table evicts the least recently used idle session
    /// (nothing in flight, no open stream) for a new one; `initialize` gets 503 only when
    /// every session is busy.
    pub max_sessions: usize,
    /// A session with nothing in flight, no open `GET` stream and no request for this long
    /// is ended (its id then gets 404).
    pub session_idle: Duration,
    /// Which `Origin`/`Host` headers are accepted.
    pub guard: Guard,
    /// How long a client may take to send a request's headers, and then its body; a
    /// connection idle for this long between requests is closed too. Slow or stalled
    /// clients are cut off (a stalled body gets 408) so they cannot hold connections and
    /// tasks forever.
    pub read_timeout: Duration,
    /// Serve `https://`: TLS with this certificate (and optional client CA).
    pub tls: Option<crate::tls::TlsConfig>,
    /// Threads of its own the listener accepts and serves connections on, each a
    /// single-threaded runtime with a copy of the listening socket: a connection, its
    /// requests and what they start stay on one thread (no task moves between cores).
    /// 0 or 1: connections are served on the runtime that serves the listener.
    pub threads: usize,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            path: "/mcp".into(),
            max_sessions: 1024,
            session_idle: Duration::from_secs(30 * 60),
            guard: Guard::default(),
            read_timeout: DEFAULT_READ_TIMEOUT,
            tls: None,
            threads: 0,
        }
    }
}

/// Connections the kernel may hold for `accept` (capped by `net.core.somaxconn`). The
/// default of `TcpListener::bind` (128) overflowed under a burst of a few hundred connects:
/// the excess connections were reset.
const LISTEN_BACKLOG: u32 = 1024;

/// Changes waiting for the slowest session of an endpoint in a session directory (as the
/// router's own event channel: past it, a session loses the oldest, with a warning).
const EVENT_HUB: usize = 256;

/// What every handler shares.
pub(crate) struct App {
    pub(crate) service: Service,
    pub(crate) config: HttpConfig,
    pub(crate) sessions: Arc<Sessions>,
    /// Authentication, when the service has it.
    pub(crate) auth: Option<auth::HttpAuth>,
    /// This listener in the service's session directory, when it has one.
    pub(crate) directory: Option<Attached>,
}

/// A listener attached to a [`SessionDirectory`]: the directory, and the name it gave the
/// listener's endpoint (what relayed messages are addressed to).
pub(crate) struct Attached {
    pub(crate) directory: Arc<dyn SessionDirectory>,
    pub(crate) endpoint: Arc<str>,
}

/// A bound, not yet serving, Streamable HTTP listener.
#[must_use = "a listener does nothing until served"]
pub struct HttpServer {
    listener: Incoming,
    app: Arc<App>,
    stats: Arc<HttpStats>,
}

impl HttpServer {
    /// Binds `config.bind`; fails if the address is taken.
    pub async fn bind(service: Service, config: HttpConfig) -> std::io::Result<HttpServer> {
        let socket = if config.bind.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // As `TcpListener::bind` does: a restarted server can rebind at once.
        if cfg!(unix) {
            socket.set_reuseaddr(true)?;
        }
        socket.bind(config.bind)?;
        let listener = Incoming::new(
            socket.listen(LISTEN_BACKLOG)?,
            config.tls.as_ref(),
            crate::tls::alpn::HTTP1,
        )?;
        let scheme = if listener.is_tls() { "https" } else { "http" };
        let url = format!("{scheme}://{}{}", listener.local_addr()?, config.path);
        let auth = service.auth.clone().map(|authenticator| auth::HttpAuth {
            authenticator,
            url: url.clone(),
        });
        let stats = Arc::new(HttpStats::default());
        let sessions = Arc::new(Sessions::new(config.max_sessions, stats.clone()));
        let directory = match &service.directory {
            Some(directory) => Some(attach(directory, &sessions, &service, &config).await?),
            None => None,
        };
        Ok(HttpServer {
            listener,
            app: Arc::new(App {
                service,
                config,
                sessions,
                auth,
                directory,
            }),
            stats,
        })
    }

    /// The server's counters (session evictions), readable while it serves.
    pub fn stats(&self) -> Arc<HttpStats> {
        self.stats.clone()
    }

    /// The address actually bound (with the port the system picked for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until the process is stopped: one task per connection (HTTP/1.1), each with
    /// the header read timeout of [`HttpConfig::read_timeout`].
    pub async fn serve(self) -> std::io::Result<()> {
        self.serve_until(CancellationToken::new(), SHUTDOWN_GRACE)
            .await
    }

    /// Serves until `shutdown` is cancelled, then drains: no new connection is accepted,
    /// idle keep-alive connections close, and every request already read is answered
    /// (its response body — an SSE stream too — runs to its end) before its connection
    /// closes; after `grace`, whatever is still open is dropped. Returns once drained.
    pub async fn serve_until(
        self,
        shutdown: CancellationToken,
        grace: Duration,
    ) -> std::io::Result<()> {
        let endpoint: MethodRouter<Arc<App>> =
            axum::routing::post(post::handle::<axum::body::Body>)
                .get(get::open)
                .delete(get::delete);
        let mut router = axum::Router::new().route(&self.app.config.path, endpoint);
        if let Some(auth) = &self.app.auth {
            // RFC 9728: the metadata of the resource at its path-suffixed well-known URI,
            // and at the root one for clients that look there.
            let mut paths = vec![
                WELL_KNOWN.to_owned(),
                auth.resource().metadata_path(),
                format!("{WELL_KNOWN}{}", self.app.config.path),
            ];
            paths.sort();
            paths.dedup();
            for p in paths {
                router = router.route(&p, axum::routing::get(auth::metadata));
            }
        }
        for extra in &self.app.service.http_routes {
            // Pages beside the endpoint (the gateway's OAuth redirect endpoint): no
            // authentication.
            if extra.path != self.app.config.path {
                router = router.route_service(&extra.path, extra.handler.clone());
            }
        }
        let app = self.app.clone();
        // After the routes: every answer, the metadata's and refusals' included (the
        // endpoint's `POST`s, which skip the router, get it in `endpoint`).
        let router = router
            .with_state(self.app)
            .layer(axum::middleware::from_fn(unread::close_if_unread));
        let own_threads = app.config.threads;
        if own_threads <= 1 {
            return accept_loop(app, router, self.listener, None, shutdown, grace).await;
        }
        threads::serve(app, router, self.listener, own_threads, shutdown, grace).await
    }
}

/// Accepts connections on `listener` and serves each on a task of the current runtime,
/// until `shutdown`; then drains them (within `grace`). `share`: this thread's count among
/// the listener's own threads (`threads`), which lets a less busy thread accept first.
async fn accept_loop(
    app: Arc<App>,
    router: axum::Router,
    mut listener: Incoming,
    share: Option<threads::Share>,
    shutdown: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    let read_timeout = app.config.read_timeout;
    let conn_limit = app.service.connections.clone();
    let load = app.service.load.clone();
    let auth = app.auth.as_ref().map(|a| a.authenticator.clone());
    let connections = TaskTracker::new();
    loop {
        // TLS handshakes happen inside, concurrently. `TCP_NODELAY` is set: answers are
        // written as soon as they are ready; Nagle's algorithm would hold the tail of a
        // multi-write (SSE) reply until the client's delayed ACK.
        if share.as_ref().is_some_and(threads::Share::ahead) {
            tokio::select! {
                () = tokio::time::sleep(threads::YIELD) => {}
                _ = shutdown.cancelled() => break,
            }
        }
        let (io, peer) = tokio::select! {
            a = listener.next() => a,
            _ = shutdown.cancelled() => break,
        };
        let serving = share.as_ref().map(threads::Share::serving);
        let permit = match conn_limit
            .as_ref()
            .map(|c| c.admit(peer.ip(), WireLabel::Http))
        {
            Some(Err(refused)) => {
                tokio::spawn(refuse_connection(io, refused, read_timeout));
                continue;
            }
            Some(Ok(permit)) => Some(permit),
            None => None,
        };
        let counted = load.as_ref().map(crate::serve::ListenerLoad::connected);
        let client = ClientAddr {
            addr: peer,
            certificate: io.certificate_identity(),
            auth: auth.clone().map(Authenticate::for_connection),
            last_meta: Arc::default(),
        };
        let service = endpoint::Endpoint {
            app: app.clone(),
            client: Arc::new(client),
            router: TowerToHyperService::new(router.clone()),
        };
        // The connection's own token (a child of the listener's, which every connection
        // shares), watched by a load at each of the connection's wake-ups.
        let shutdown = shutdown.child_token();
        connections.spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout)
                .serve_connection(
                    TokioIo::new(io),
                    hyper::service::service_fn(move |req| service.call(req)),
                );
            let mut conn = std::pin::pin!(conn);
            let ended = tokio::select! {
                ended = conn.as_mut() => ended,
                () = CancelWatch::new(shutdown) => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            drop((permit, counted, serving));
        });
    }
    drop(listener);
    connections.close();
    if tokio::time::timeout(grace, connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("HTTP connections still open after the shutdown grace period");
    }
    Ok(())
}

/// Attaches the listener's `sessions` to `directory`: relayed messages and other replicas'
/// changes reach them, their asks are numbered under the endpoint's name, and they hear a
/// hub of the router's changes and the other replicas'.
async fn attach(
    directory: &Arc<dyn SessionDirectory>,
    sessions: &Arc<Sessions>,
    service: &Service,
    config: &HttpConfig,
) -> std::io::Result<Attached> {
    let held: Weak<dyn HeldSessions> = Arc::downgrade(sessions) as _;
    let endpoint = directory
        .attach(held.clone(), &config.path)
        .await
        .map_err(std::io::Error::other)?;
    // The changes this endpoint's sessions hear: its router's, passed through a hub that the
    // other replicas' changes reach too.
    if let Some(events) = service.router.events() {
        let (hub, _) = tokio::sync::broadcast::channel(EVENT_HUB);
        sessions.set_hub(hub.clone());
        directory
            .clone()
            .spread_events(endpoint.clone(), config.path.clone(), events, hub, held);
    }
    sessions.set_ask_prefix(directory.ask_prefix(&endpoint));
    Ok(Attached {
        directory: directory.clone(),
        endpoint,
    })
}

/// A connection over the per-IP limit: its first request is answered 429 with
/// `Retry-After` and the JSON-RPC error, then the connection closes.
async fn refuse_connection(
    io: ServerStream,
    refused: mcpwire_model::McpError,
    read_timeout: Duration,
) {
    let answer = hyper::service::service_fn(move |_req| {
        let response = reply::refuse(None, refused.clone());
        async move { Ok::<_, std::convert::Infallible>(response) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(read_timeout)
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), answer);
    if let Err(e) = conn.await {
        tracing::debug!(error = %e, "refused connection ended with an error");
    }
}
