//! The gateway console (`/ui` on the admin listener): one page and the JSON API behind it.
//!
//! Off unless the gateway hands the admin listener a [`ConsoleSource`] (`[admin] console`).
//! Logging in with an admin secret gives an HttpOnly, SameSite=Strict session cookie;
//! every POST but the login carries the session's CSRF token in `X-CSRF-Token`; every
//! answer carries a strict Content-Security-Policy (`docs/console.md`).

mod api;
mod assets;
pub mod calls;
pub mod session;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::{get, post};
use futures::future::BoxFuture;
use serde_json::Value;

use super::HealthProbe;
use calls::CallLog;
use session::Sessions;

/// What the console asks the gateway. A caller is named as the page names it:
/// `anonymous`, `key:NAME` (an `[auth]` API key with its scopes) or `sub:SUBJECT`.
pub trait ConsoleSource: Send + Sync {
    /// The admin's name when `secret` is an admin credential, `None` otherwise.
    fn login(&self, secret: &str) -> Option<String>;
    /// The callers the "view as" picker offers (never a secret).
    fn callers(&self) -> Vec<String>;
    /// The catalog as `caller` lists it under the policy, beside what it does not see.
    fn catalog(&self, caller: &str) -> BoxFuture<'static, Result<Value, String>>;
    /// Calls tool `name` as `caller` through the gateway's dispatch; its progress and
    /// log events go to `events` as they come (dropped when the page lags
    /// [`EVENTS_BUFFERED`] behind).
    fn call_tool(
        &self,
        caller: &str,
        name: String,
        arguments: Option<Value>,
        events: tokio::sync::mpsc::Sender<Value>,
    ) -> BoxFuture<'static, Result<Value, String>>;
}

/// Events of one console call buffered for the page at most.
pub const EVENTS_BUFFERED: usize = 64;

/// CSP violations the page reported, kept at most.
const MAX_VIOLATIONS: usize = 32;

#[derive(Clone)]
pub(crate) struct ConsoleState {
    source: Arc<dyn ConsoleSource>,
    probe: HealthProbe,
    sessions: Arc<Mutex<Sessions>>,
    calls: Arc<CallLog>,
    violations: Arc<Mutex<Vec<Value>>>,
}

/// The console's routes, under `/ui`.
pub(crate) fn routes(
    source: Arc<dyn ConsoleSource>,
    probe: HealthProbe,
    calls: Arc<CallLog>,
) -> Router {
    let state = ConsoleState {
        source,
        probe,
        calls,
        sessions: Arc::new(Mutex::new(Sessions::default())),
        violations: Arc::new(Mutex::new(Vec::new())),
    };
    Router::new()
        .route("/ui", get(assets::index))
        .route("/ui/", get(assets::index))
        .route("/ui/app.js", get(assets::script))
        .route("/ui/app.css", get(assets::style))
        .route("/ui/api/login", post(api::login))
        .route("/ui/api/logout", post(api::logout))
        .route("/ui/api/session", get(api::session))
        .route("/ui/api/backends", get(api::backends))
        .route("/ui/api/callers", get(api::callers))
        .route("/ui/api/catalog", get(api::catalog))
        .route("/ui/api/call", post(api::call))
        .route("/ui/api/calls", get(api::calls))
        .route("/ui/api/csp", post(api::csp_report).get(api::csp_reports))
        .with_state(state)
}
