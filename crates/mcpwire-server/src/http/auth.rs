//! The HTTP listener as an OAuth 2.1 protected resource (the MCP authorization spec):
//! every `POST`, `GET` and `DELETE` on the endpoint needs `Authorization: Bearer …` that
//! the service's [`Authenticate`] accepts; a refusal is 401 (403 for a missing scope) with
//! a `WWW-Authenticate` challenge naming the protected resource metadata, which is served
//! (without authentication) at the RFC 9728 well-known URIs.
//!
//! [`Caller`] is how a handler gets its request admitted: the Origin/Host guard, then the
//! credential, once, before the handler runs.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{FromRequestParts, State};
use axum::http::header::{AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpwire_router::Identity;

use super::route_headers::LastMeta;
use super::{App, ClientAddr, guard, reply};
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

/// The caller of a request on the endpoint, admitted: its `Origin`/`Host` passed the guard
/// (else 403) and, when the service authenticates, its credential was accepted (else 401 or
/// 403 with the Bearer challenge, or 503 when the keys could not be loaded).
pub(crate) struct Caller {
    /// Who: the identity the credential proved, or — when the service does not
    /// authenticate — the one the connection's TLS client certificate names; `None`:
    /// anonymous.
    pub(crate) identity: Option<Identity>,
    /// The address the request's connection came from.
    pub(crate) addr: SocketAddr,
    /// The `_meta` envelope the connection's requests carried last, as read.
    pub(crate) last_meta: Arc<LastMeta>,
}

impl Caller {
    /// Admits a request from `client` with `headers`: the guard, then the credential.
    pub(crate) async fn admit(
        app: &App,
        client: &ClientAddr,
        headers: &HeaderMap,
    ) -> Result<Caller, Response> {
        if let Some(r) = guard::refuse(&app.config.guard, headers) {
            return Err(r);
        }
        let addr = client.addr;
        let last_meta = client.last_meta.clone();
        let Some(auth) = &app.auth else {
            let identity = client.certificate.clone();
            return Ok(Caller {
                identity,
                addr,
                last_meta,
            });
        };
        // The connection's own authenticator remembers its last credential.
        let checks = client.auth.as_deref().unwrap_or(&*auth.authenticator);
        let header = headers.get(AUTHORIZATION).map(HeaderValue::as_bytes);
        match checks.verify_header(header).await {
            Ok(id) => Ok(Caller {
                identity: Some(id),
                addr,
                last_meta,
            }),
            Err(failure) => Err(refuse(auth, &failure)),
        }
    }
}

impl FromRequestParts<Arc<App>> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Caller, Response> {
        let Some(client) = parts.extensions.get::<ClientAddr>() else {
            tracing::error!("an HTTP request without its connection's address");
            let status = StatusCode::INTERNAL_SERVER_ERROR;
            return Err((status, "the connection's address is missing").into_response());
        };
        Caller::admit(app, client, &parts.headers).await
    }
}

/// The refusal of `failure`: its status (401, 403, or 503 when the keys could not be
/// loaded), a JSON-RPC error body, and the Bearer challenge.
fn refuse(auth: &HttpAuth, failure: &AuthFailure) -> Response {
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
