//! MCPB, the gateway's binary TCP wire (`mcpb-binary-tcp.md`; decisions in
//! `docs/design/mcpb.md`).
//!
//! A connection negotiates its version (the first frame), authenticates with a token (an
//! `initialize` request carrying `params.token` or a wrapper's `auth_token`, answered with a
//! session id and its expiry — and, like the reference gateway, opening the MCP session too),
//! then carries MCP JSON-RPC in Request/Response frames to one [`ServerSession`], like a stdio
//! connection, plain or wrapped (answers follow the client's shape). Around that: health checks (answered on the main port; the server pings a
//! connection that has been quiet for a minute and closes it after a second quiet minute), an
//! optional dedicated health port, per-message tokens, session expiry, a connection limit, and
//! graceful shutdown (a `shutdown` control frame, calls in flight finish, new requests are
//! refused, the connection closes on the client's `shutdown_ack` or after a grace period).
//!
//! [`ServerSession`]: mcpwire_session::ServerSession

mod conn;
mod health;
mod shapes;
mod tokens;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::Service;
use crate::identify::Authenticate;
use crate::observe::McpbMetrics;
use crate::tls::{Incoming, ServerStream};

pub use health::serve_health;
pub use wire::McpbWire;

/// How an MCPB listener behaves.
#[derive(Debug, Clone)]
pub struct McpbConfig {
    /// Static tokens accepted at authentication (and per message), when the service has no
    /// authenticator of its own ([`crate::Service::auth`], which takes precedence). Empty
    /// and no authenticator: authentication is off, and a client may go straight to MCP
    /// `initialize`.
    pub tokens: Vec<String>,
    /// Every request must carry a valid `auth_token` wrapper.
    pub per_message_auth: bool,
    /// How long an authenticated session lives (`expiresAt`).
    pub session_ttl: Duration,
    /// Time a new connection has to negotiate its version and authenticate.
    pub handshake_timeout: Duration,
    /// Quiet time after which the server pings; a second quiet period closes the connection.
    pub idle_ping: Duration,
    /// How long a shutting-down connection may take to finish its calls.
    pub shutdown_grace: Duration,
    /// Connections served at once; more are told so and closed.
    pub max_connections: usize,
    /// Serve `mcpbs://` (the spec's `tcps://`): TLS with this certificate (and optional
    /// client CA) before the first MCPB frame.
    pub tls: Option<crate::tls::TlsConfig>,
}

impl Default for McpbConfig {
    fn default() -> McpbConfig {
        McpbConfig {
            tokens: Vec::new(),
            per_message_auth: false,
            session_ttl: Duration::from_secs(24 * 3600),
            handshake_timeout: Duration::from_secs(10),
            idle_ping: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(30),
            max_connections: 1024,
            tls: None,
        }
    }
}

/// What every connection of a listener shares.
pub(crate) struct McpbListenerState {
    pub(crate) service: Service,
    pub(crate) config: McpbConfig,
    /// Connections open now.
    pub(crate) active: AtomicUsize,
    /// Fires when the server starts shutting down.
    pub(crate) shutdown: CancellationToken,
    /// Verifies `initialize` tokens and per-message `auth_token`s (`None`: authentication
    /// is off).
    pub(crate) auth: Option<Arc<dyn Authenticate>>,
    /// What the listener records (`mcp_gateway_tcp_*`).
    pub(crate) metrics: McpbMetrics,
}

impl McpbListenerState {
    /// The health report: `{"healthy": true}` or, for `{"check": "detailed"}`, the checks.
    pub(crate) fn health(&self, request: Option<&Value>) -> Value {
        let detailed = request.is_some_and(|r| r["check"] == "detailed");
        let shutting_down = self.shutdown.is_cancelled();
        if !detailed {
            return json!({ "healthy": !shutting_down });
        }
        let active = self.active.load(Ordering::Relaxed);
        json!({
            "healthy": !shutting_down,
            "checks": {
                "tcp_service": {
                    "healthy": !shutting_down,
                    "message": if shutting_down {
                        "shutting down".to_owned()
                    } else {
                        format!("{active} of {} connections in use", self.config.max_connections)
                    },
                },
            },
            "timestamp": unix_now(),
        })
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// `t` as an RFC 3339 UTC timestamp (`2026-11-26T05:00:00Z`).
pub(crate) fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// A session id: 16 bytes from the OS CSPRNG as lowercase hex.
pub(crate) fn new_session_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The listener's authenticator: the service's, else one accepting the static tokens
/// (callers `key:mcpb-token-1`, …), else none.
fn listener_auth(
    service: &Service,
    config: &McpbConfig,
) -> std::io::Result<Option<Arc<dyn Authenticate>>> {
    if let Some(auth) = &service.auth {
        if !config.tokens.is_empty() {
            tracing::warn!(
                "MCPB: the static tokens are ignored: the service's authentication applies"
            );
        }
        return Ok(Some(auth.clone()));
    }
    if config.tokens.is_empty() {
        return Ok(None);
    }
    let tokens = tokens::StaticTokens::new(&config.tokens)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    Ok(Some(Arc::new(tokens)))
}

/// An MCPB listener.
pub struct McpbServer {
    listener: Incoming,
    shared: Arc<McpbListenerState>,
}

impl McpbServer {
    /// Binds `addr` for `service`; `shutdown` starts a graceful shutdown of every connection.
    pub async fn bind(
        service: Service,
        addr: SocketAddr,
        config: McpbConfig,
        shutdown: CancellationToken,
    ) -> std::io::Result<McpbServer> {
        let auth = listener_auth(&service, &config)?;
        let listener = Incoming::bind(addr, config.tls.as_ref(), crate::tls::alpn::NONE).await?;
        let shared = Arc::new(McpbListenerState {
            service,
            config,
            active: AtomicUsize::new(0),
            shutdown,
            auth,
            metrics: McpbMetrics::new(),
        });
        Ok(McpbServer { listener, shared })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// `mcpbs` when the listener terminates TLS, else `mcpb`.
    pub fn scheme(&self) -> &'static str {
        if self.listener.is_tls() {
            "mcpbs"
        } else {
            "mcpb"
        }
    }

    /// Serves until shutdown, then waits (at most the grace period) for open connections to
    /// finish.
    pub async fn serve(mut self) -> std::io::Result<()> {
        let tracker = tokio_util::task::TaskTracker::new();
        loop {
            let (stream, peer) = tokio::select! {
                a = self.listener.next() => a,
                _ = self.shared.shutdown.cancelled() => break,
            };
            let shared = self.shared.clone();
            tracker.spawn(async move {
                tracing::debug!(target: "mcpwire::mcpb", %peer, "connection accepted");
                let certificate = stream.certificate_identity();
                match stream {
                    ServerStream::Plain(tcp) => {
                        let (r, w) = tcp.into_split();
                        conn::serve(shared, r, w, peer, certificate).await;
                    }
                    #[cfg(feature = "tls")]
                    ServerStream::Tls(tls) => {
                        let (r, w) = tokio::io::split(tls);
                        conn::serve(shared, r, w, peer, certificate).await;
                    }
                }
            });
        }
        tracker.close();
        let grace = self.shared.config.shutdown_grace + Duration::from_secs(1);
        if tokio::time::timeout(grace, tracker.wait()).await.is_err() {
            tracing::warn!("MCPB connections still open after the shutdown grace period");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_formats_utc_dates() {
        let at = |s: u64| rfc3339(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(at(1_795_665_661), "2026-11-26T04:01:01Z");
    }
}
