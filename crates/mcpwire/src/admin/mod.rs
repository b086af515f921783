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

use crate::observe::{self, BACKEND_UP, UPKEEP_EVERY};

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
}

impl AdminServer {
    /// Binds `addr` and installs the process's Prometheus recorder (from now on every
    /// listener records). `probe` tells backends' health; once `shutdown` is cancelled
    /// `/readyz` answers 503 and the listener stops.
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
        })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until shutdown. Folds histogram samples into their buckets every few
    /// seconds meanwhile, so memory stays bounded when nobody scrapes.
    pub async fn serve(self) -> std::io::Result<()> {
        let shutdown = self.state.shutdown.clone();
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
            .with_state(self.state);
        let serving = axum::serve(self.listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await });
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
