//! The admin listener: Prometheus `/metrics`, liveness `/healthz` and readiness `/readyz`
//! on an address of its own (`[admin] listen`, `--metrics-listen`), never on a listener
//! clients use (`docs/design/operations.md`).
//!
//! Plain HTTP/1.1 on loopback by default; it serves no MCP and needs no authentication
//! (put it where only the scraper reaches it).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::Serialize;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::observe::{self, BACKEND_SESSIONS, BACKEND_UP, UPKEEP_EVERY};

pub mod console;

pub use console::ConsoleSource;

/// One backend's health as `/readyz` and `mcpwire_backend_up` show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BackendHealth {
    /// The backend's name.
    pub name: String,
    /// Whether readiness waits for it (`fail = "closed"`).
    pub required: bool,
    /// Whether it answers its lists now.
    pub up: bool,
    /// Why not, when it does not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Sessions it holds open for downstream sessions (an upstream's per-session
    /// children), when it keeps any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<usize>,
}

/// What the admin listener asks whenever it is scraped or probed: every backend's health.
pub type HealthProbe = Arc<dyn Fn() -> Vec<BackendHealth> + Send + Sync>;

/// The `/readyz` answer.
#[derive(Debug, Serialize)]
struct Readiness {
    ready: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
    backends: Vec<BackendHealth>,
}

#[derive(Clone)]
struct AdminState {
    probe: HealthProbe,
    /// Cancelled when the server starts shutting down: not ready any more.
    shutdown: CancellationToken,
}

/// A bound admin listener.
pub struct AdminServer {
    listener: TcpListener,
    state: AdminState,
    console: Option<(Arc<dyn ConsoleSource>, Arc<console::calls::CallLog>)>,
}

impl AdminServer {
    /// Binds `addr` and installs the process's Prometheus recorder (from now on every
    /// listener records). `probe` tells backends' health; once `shutdown` is cancelled
    /// `/readyz` answers 503 (the listeners are draining: send no new clients).
    pub async fn bind(
        addr: SocketAddr,
        probe: HealthProbe,
        shutdown: CancellationToken,
    ) -> std::io::Result<AdminServer> {
        if observe::prometheus().is_none() {
            tracing::warn!(
                "another metrics recorder is installed: /metrics will not show mcpwire's metrics"
            );
        }
        let listener = TcpListener::bind(addr).await?;
        Ok(AdminServer {
            listener,
            state: AdminState { probe, shutdown },
            console: None,
        })
    }

    /// Serves the console on `/ui` too, asking `source`, showing the live calls in
    /// `calls` (`docs/console.md`).
    pub fn with_console(
        mut self,
        source: Arc<dyn ConsoleSource>,
        calls: Arc<console::calls::CallLog>,
    ) -> AdminServer {
        self.console = Some((source, calls));
        self
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until dropped — past the shutdown signal, so scrapes and probes see the
    /// drain (the gateway ends it once its listeners are done). Folds histogram samples
    /// into their buckets every few seconds meanwhile, so memory stays bounded when nobody
    /// scrapes.
    pub async fn serve(self) -> std::io::Result<()> {
        let upkeep = async {
            let mut every = tokio::time::interval(UPKEEP_EVERY);
            loop {
                every.tick().await;
                if let Some(handle) = observe::prometheus() {
                    handle.run_upkeep();
                }
            }
        };
        let app = Router::new()
            .route("/metrics", get(metrics))
            .route("/healthz", get(healthz))
            .route("/readyz", get(readyz))
            .with_state(self.state.clone());
        let app = match self.console {
            Some((source, calls)) => app.merge(console::routes(source, self.state.probe, calls)),
            None => app,
        };
        let serving = axum::serve(self.listener, app);
        tokio::select! {
            served = serving => served,
            never = upkeep => never,
        }
    }
}

async fn metrics(State(st): State<AdminState>) -> Response {
    let Some(handle) = observe::prometheus() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "no metrics recorder").into_response();
    };
    for b in (st.probe)() {
        let fail = if b.required { "closed" } else { "open" };
        if let Some(n) = b.sessions {
            metrics::gauge!(BACKEND_SESSIONS, "backend" => b.name.clone()).set(n as f64);
        }
        metrics::gauge!(BACKEND_UP, "backend" => b.name, "fail" => fail)
            .set(f64::from(u8::from(b.up)));
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        handle.render(),
    )
        .into_response()
}

/// Alive: the process answers.
async fn healthz() -> &'static str {
    "ok\n"
}

/// Ready: not shutting down, and every required (fail-closed) backend answers.
async fn readyz(State(st): State<AdminState>) -> Response {
    let backends = (st.probe)();
    let reason = if st.shutdown.is_cancelled() {
        Some("shutting down")
    } else if backends.iter().any(|b| b.required && !b.up) {
        Some("a required backend is unavailable")
    } else {
        None
    };
    let ready = reason.is_none();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Readiness {
        ready,
        reason,
        backends,
    };
    let json = serde_json::to_string(&body).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], json).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!("GET {path} HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.expect("write");
        let mut text = String::new();
        s.read_to_string(&mut text).await.expect("read");
        let status = text[9..12].parse().expect("status");
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    fn backend(name: &str, required: bool, up: bool) -> BackendHealth {
        BackendHealth {
            name: name.into(),
            required,
            up,
            reason: (!up).then(|| "connection refused".into()),
            sessions: None,
        }
    }

    #[tokio::test]
    async fn ready_only_while_every_required_backend_is_up_and_not_shutting_down() {
        let state = Arc::new(std::sync::Mutex::new(vec![
            backend("fs", true, true),
            backend("web", false, false),
        ]));
        let seen = state.clone();
        let probe: HealthProbe = Arc::new(move || seen.lock().expect("lock").clone());
        let shutdown = CancellationToken::new();
        let server = AdminServer::bind(
            "127.0.0.1:0".parse().expect("addr"),
            probe,
            shutdown.clone(),
        )
        .await
        .expect("bind");
        let addr = server.local_addr().expect("addr");
        let served = tokio::spawn(server.serve());

        // A fail-open backend down does not make the server unready.
        let (status, body) = get(addr, "/readyz").await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("\"ready\":true"), "{body}");
        assert_eq!(get(addr, "/healthz").await.0, 200);

        // A required one does.
        state.lock().expect("lock")[0] = backend("fs", true, false);
        let (status, body) = get(addr, "/readyz").await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("a required backend is unavailable"), "{body}");
        assert!(body.contains("connection refused"), "{body}");
        let (status, text) = get(addr, "/metrics").await;
        assert_eq!(status, 200);
        assert!(
            text.contains(r#"mcpwire_backend_up{backend="fs",fail="closed"} 0"#),
            "{text}"
        );

        // Shutting down: alive, not ready.
        state.lock().expect("lock")[0] = backend("fs", true, true);
        assert_eq!(get(addr, "/readyz").await.0, 200);
        shutdown.cancel();
        let (status, body) = get(addr, "/readyz").await;
        assert_eq!(status, 503, "{body}");
        assert!(body.contains("shutting down"), "{body}");
        assert_eq!(get(addr, "/healthz").await.0, 200);
        served.abort();
    }
}
