//! The gateway's OAuth redirect endpoint (`GET /oauth/callback?code=…&state=…`): where an
//! upstream's authorization server sends a downstream user's browser after consent. The
//! answer goes to the flow waiting for its `state` ([`PendingConsents::complete`]); the
//! browser gets a small page either way. No credentials are asked for (the browser has
//! none: the `state` is the proof), the query is bounded, and nothing of it is logged.
//! Served by every HTTP listener as one of the service's [`HttpRoute`]s.

use std::sync::Arc;

use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use mcpwire_client::auth::PendingConsents;
use mcpwire_server::HttpRoute;

/// The longest query string taken (codes and states are short; this is generous).
const MAX_QUERY: usize = 8 * 1024;

/// The redirect endpoint at each of `consents`' paths.
pub(crate) fn routes(consents: &Arc<PendingConsents>) -> Vec<HttpRoute> {
    consents
        .paths()
        .iter()
        .map(|path| {
            let consents = consents.clone();
            HttpRoute {
                path: path.clone(),
                handler: axum::routing::get(move |uri: Uri| {
                    let consents = consents.clone();
                    async move { redirected(&consents, uri) }
                }),
            }
        })
        .collect()
}

/// Answers a redirect to the endpoint.
fn redirected(consents: &PendingConsents, uri: Uri) -> Response {
    let query = uri.query().unwrap_or("");
    if query.len() > MAX_QUERY {
        return page(
            StatusCode::BAD_REQUEST,
            "Authorization refused",
            "The request is too long to be an authorization response.",
        );
    }
    match consents.complete(query) {
        Ok(()) => {
            tracing::debug!("an upstream authorization came back");
            page(
                StatusCode::OK,
                "Authorization received",
                "You can close this window and return to your MCP client.",
            )
        }
        Err(refusal) => {
            tracing::info!(%refusal, "an authorization redirect was refused");
            page(
                StatusCode::BAD_REQUEST,
                "Authorization refused",
                &format!("{refusal}. Start again from your MCP client."),
            )
        }
    }
}

/// A minimal HTML page (`text` is plain: escaped here).
fn page(status: StatusCode, title: &str, text: &str) -> Response {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1><p>{x}</p></body></html>",
        t = escape(title),
        x = escape(text)
    );
    (
        status,
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        body,
    )
        .into_response()
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
