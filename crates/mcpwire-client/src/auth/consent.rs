//! How the user's consent is obtained in the authorization-code flow: the [`Consent`] the
//! client is given sends the user (or an agent acting for them) to the authorization URL
//! and hands back where the authorization server redirected to, whose `state` and `iss`
//! are then checked ([`read_response`]).

use std::time::Duration;

use futures::future::BoxFuture;
use hyper::header::LOCATION;

use super::discovery::ServerMetadata;
use super::form;
use crate::ClientError;
use crate::fetch::{Outgoing, Reach, send_via};

/// One authorization request waiting for consent.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The authorization endpoint with every parameter (`client_id`, `code_challenge`,
    /// `state`, `scope`, `resource`, …): where the user goes.
    pub url: String,
    /// Where the authorization server sends the answer (`code` or `error`, and `state`).
    pub redirect_uri: String,
    /// The downstream identity the tokens will belong to (`None`: the client itself).
    pub identity: Option<String>,
    /// The request's `state` (unguessable, single use): what its answer is matched by.
    pub state: String,
}

/// Obtains consent for an authorization request: resolves to the full redirect URL the
/// authorization server sent the user agent to (with `code`, `state` and maybe `iss`).
pub trait Consent: Send + Sync {
    /// Gets consent for `request`.
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, ClientError>>;
}

/// Consent by following the authorization server's answer without a browser: the
/// authorization URL is fetched and its redirect (`302 Location`) is the answer. For
/// authorization servers that approve this client without asking anyone (pre-approved
/// first-party clients, and the conformance suite's, which approves everything); one that
/// shows a login page instead is refused with an error saying so.
#[derive(Debug, Clone)]
pub struct FollowRedirect {
    /// How long the authorization server may take to answer.
    pub timeout: Duration,
    /// How its `https` URL is trusted (the upstream's TLS settings).
    pub tls: mcpwire_server::tls::ClientTls,
}

impl Default for FollowRedirect {
    fn default() -> Self {
        FollowRedirect {
            timeout: Duration::from_secs(30),
            tls: mcpwire_server::tls::ClientTls::default(),
        }
    }
}

/// The largest answer read from an authorization endpoint.
const MAX_PAGE: usize = 256 * 1024;

impl Consent for FollowRedirect {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, ClientError>> {
        let reach = Reach {
            timeout: self.timeout,
            tls: self.tls.clone(),
        };
        Box::pin(async move {
            let answer = send_via(Outgoing::get(&request.url), &reach, MAX_PAGE)
                .await
                .map_err(ClientError::Io)?;
            let location = answer
                .headers
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| answer.status.is_redirection());
            match location {
                Some(l) if l.split(['?', '#']).next() == Some(request.redirect_uri.as_str()) => {
                    Ok(l.to_owned())
                }
                Some(l) => Err(ClientError::Auth(format!(
                    "the authorization server redirected to {l}, not to the redirect URI {}",
                    request.redirect_uri
                ))),
                None => Err(ClientError::Auth(format!(
                    "the authorization server answered {} without redirecting: it wants a \
                     user to consent, which this client cannot show (give it a Consent that can)",
                    answer.status
                ))),
            }
        })
    }
}

/// The code of an authorization response at `redirect`, after checking its `state` and —
/// RFC 9207 — its `iss` (compared as a string; required when the server says it sends it).
pub(crate) fn read_response(
    redirect: &str,
    state: &str,
    server: &ServerMetadata,
) -> Result<String, ClientError> {
    let query = redirect
        .split_once('?')
        .map_or("", |(_, q)| q.split('#').next().unwrap_or(q));
    let params = form::decode(query);
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    if get("state") != Some(state) {
        return Err(ClientError::Auth(
            "the authorization response's state is not the one sent: refused".into(),
        ));
    }
    match get("iss") {
        Some(iss) if iss != server.issuer => {
            return Err(ClientError::Auth(format!(
                "the authorization response comes from issuer {iss}, not {}: refused (RFC 9207)",
                server.issuer
            )));
        }
        None if server.authorization_response_iss_parameter_supported => {
            return Err(ClientError::Auth(format!(
                "{} says its authorization responses carry `iss`, and this one does not: \
                 refused (RFC 9207)",
                server.issuer
            )));
        }
        _ => {}
    }
    if let Some(error) = get("error") {
        let detail = get("error_description").map_or(String::new(), |d| format!(" ({d})"));
        return Err(ClientError::Auth(format!(
            "the authorization was refused: {error}{detail}"
        )));
    }
    get("code")
        .map(str::to_owned)
        .ok_or_else(|| ClientError::Auth("the authorization response has no code".into()))
}
