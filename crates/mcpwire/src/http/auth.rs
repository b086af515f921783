//! The HTTP listener as an OAuth 2.1 protected resource (the MCP authorization spec):
//! every `POST`, `GET` and `DELETE` on the endpoint needs `Authorization: Bearer …` that
//! the service's [`Authenticate`] accepts; a refusal is 401 (403 for a missing scope) with
//! a `WWW-Authenticate` challenge naming the protected resource metadata, which is served
//! (without authentication) at the RFC 9728 well-known URIs.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpwire_router::Identity;

use super::{App, ClientAddr, reply};
use crate::identify::{AuthFailure, Authenticate, ResourceServer};

/// Authentication of one HTTP listener.
pub(crate) struct HttpAuth {
    pub(crate) authenticator: Arc<dyn Authenticate>,
    /// The listener's own URL (the resource when the authenticator configures none).
    pub(crate) url: String,
}

impl HttpAuth {
    /// The protected resource as the authenticator describes it now (a reload of `[auth]`
    /// may change it).
    pub(crate) fn resource(&self) -> ResourceServer {
        self.authenticator.resource_server(&self.url)
    }
}

/// The caller of a request: `Ok(None)` when the listener does not authenticate; the
/// refusal to send when the credential is missing or refused.
pub(crate) async fn authenticate(
    app: &App,
    headers: &HeaderMap,
    client: &ClientAddr,
) -> Result<Option<Identity>, Response> {
    let Some(auth) = &app.auth else {
        return Ok(client.certificate.clone());
    };
    // The connection's own authenticator remembers its last credential.
    let checks = client.auth.as_deref().unwrap_or(&*auth.authenticator);
    let header = headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
    match checks.verify_header(header).await {
        Ok(id) => Ok(Some(id)),
        Err(failure) => Err(refuse(auth, &failure)),
    }
}

/// The refusal of `failure`: its status (401, 403, or 503 when the keys could not be
/// loaded), a JSON-RPC error body, and the Bearer challenge.
pub(crate) fn refuse(auth: &HttpAuth, failure: &AuthFailure) -> Response {
    tracing::debug!(%failure, "authentication refused");
    let mut r = reply::refuse(None, failure.to_mcp_error());
    if matches!(r.status(), StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
        && let Ok(v) = HeaderValue::from_str(&auth.resource().challenge(failure))
    {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    r
}

/// `GET` of the protected resource metadata (RFC 9728 § 3).
pub(crate) async fn metadata(State(app): State<Arc<App>>) -> Response {
    let Some(auth) = &app.auth else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let body = auth.resource().document().to_string();
    (
        StatusCode::OK,
        [
            (CONTENT_TYPE, HeaderValue::from_static("application/json")),
            (CACHE_CONTROL, HeaderValue::from_static("max-age=300")),
        ],
        body,
    )
        .into_response()
}
