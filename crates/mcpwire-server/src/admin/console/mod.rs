//! The gateway console (`/ui` on the admin listener): one page and the JSON API behind it.
//!
//! Off unless the gateway hands the admin listener a [`ConsoleSource`] (`[admin] console`).
//! Logging in with an admin secret gives an HttpOnly, SameSite=Strict session cookie;
//! every POST but the login carries the session's CSRF token in `X-CSRF-Token`; every
//! answer carries a strict Content-Security-Policy (`docs/console.md`).

mod api;
pub mod asks;
mod assets;
pub mod calls;
pub mod session;
pub mod stats;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::{get, post};
use futures::future::BoxFuture;
use serde_json::Value;

use super::HealthProbe;
use asks::{Asks, PageLink};
use calls::CallLog;
use session::Sessions;

/// What the console asks the gateway. A caller is named as the page names it:
/// `anonymous`, `key:NAME` (an `[auth]` API key with its scopes), `sub:SUBJECT`,
/// `jwt:{CLAIMS}` (a token's claims as JSON, `scope` giving its scopes) or `view:NAME`
/// (the anonymous caller through a view).
pub trait ConsoleSource: Send + Sync {
    /// The admin's name when `secret` is an admin credential (an admin API key, or a
    /// token with the admin scope), `None` otherwise.
    fn login(&self, secret: &str) -> BoxFuture<'static, Option<String>>;
    /// The callers the "view as" picker offers (never a secret).
    fn callers(&self) -> Vec<String>;
    /// The running configuration with its secrets masked, the last reload's outcome and
    /// the listeners.
    fn config(&self) -> Value;
    /// What each backend is, by name: `kind`, `era` (the revision spoken upstream) and
    /// `restarts`, where known.
    fn backend_facts(&self) -> Value;
    /// The catalog as `caller` lists it under the policy, beside what it does not see.
    fn catalog(&self, caller: &str) -> BoxFuture<'static, Result<Value, String>>;
    /// Calls tool `name` as `caller` through the gateway's dispatch; its progress and
    /// log events go to `page` as they come (dropped when the page lags
    /// [`EVENTS_BUFFERED`] behind), and its questions (elicitation, sampling) are asked
    /// there.
    fn call_tool(
        &self,
        caller: &str,
        name: String,
        arguments: Option<Value>,
        page: PageLink,
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
    asks: Arc<Asks>,
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
        asks: Arc::default(),
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
        .route("/ui/api/answer", post(api::answer_ask))
        .route("/ui/api/config", get(api::config))
        .route("/ui/api/calls", get(api::calls))
        .route("/ui/api/series", get(api::series))
        .route("/ui/api/csp", post(api::csp_report).get(api::csp_reports))
        .with_state(state)
}
