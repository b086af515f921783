//! Talking to an authorization server's endpoints: token requests (RFC 6749 §3.2 as OAuth
//! 2.1 has it, with the client authenticated as it registered: `client_secret_basic`,
//! `client_secret_post`, or `none`), and dynamic client registration (RFC 7591).

use std::time::Duration;

use axum::body::Bytes;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hyper::Method;
use serde::Deserialize;
use tokio::time::Instant;

use super::assertion::{ASSERTION_TYPE, ClientSigningKey};
use super::dpop::DpopKey;
use super::form;
use crate::fetch::{Fetched, Outgoing, Reach, send_via};
use crate::{ClientError, excerpt};

/// The largest answer read from an authorization server.
const MAX_ANSWER: usize = 1024 * 1024;

/// How this client authenticates at a token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenAuth {
    /// A public client: `client_id` in the body.
    None,
    /// `Authorization: Basic` with the form-escaped id and secret (RFC 6749 §2.3.1).
    Basic,
    /// `client_id` and `client_secret` in the body.
    Post,
    /// A JWT signed with the client's key (`private_key_jwt`).
    PrivateKeyJwt,
}

impl TokenAuth {
    /// The method named `name` (RFC 8414's names).
    pub(crate) fn from_name(name: &str) -> Option<TokenAuth> {
        match name {
            "none" => Some(TokenAuth::None),
            "client_secret_basic" => Some(TokenAuth::Basic),
            "client_secret_post" => Some(TokenAuth::Post),
            "private_key_jwt" => Some(TokenAuth::PrivateKeyJwt),
            _ => None,
        }
    }
}

/// A client known to one authorization server.
#[derive(Debug, Clone)]
pub(crate) struct Registered {
    /// Its client id (a URL for a client ID metadata document).
    pub(crate) client_id: String,
    /// Its secret, if it is confidential.
    pub(crate) secret: Option<String>,
    /// How it authenticates at the token endpoint.
    pub(crate) auth: TokenAuth,
    /// Its signing key, for `private_key_jwt`.
    pub(crate) key: Option<ClientSigningKey>,
}

impl Registered {
    /// A client with `secret` (or none) at a server accepting `accepts(method)`: basic when
    /// accepted, else post; without a secret, none.
    pub(crate) fn choose(
        client_id: String,
        secret: Option<String>,
        accepts: impl Fn(&str) -> bool,
    ) -> Registered {
        let auth = match &secret {
            None => TokenAuth::None,
            Some(_) if accepts("client_secret_basic") => TokenAuth::Basic,
            Some(_) if accepts("client_secret_post") => TokenAuth::Post,
            Some(_) => TokenAuth::Basic,
        };
        Registered {
            client_id,
            secret,
            auth,
            key: None,
        }
    }

    /// A client authenticating with `key` (`private_key_jwt`).
    pub(crate) fn with_key(client_id: String, key: ClientSigningKey) -> Registered {
        Registered {
            client_id,
            secret: None,
            auth: TokenAuth::PrivateKeyJwt,
            key: Some(key),
        }
    }
}

/// Tokens for one resource from one authorization server.
#[derive(Debug, Clone)]
pub(crate) struct TokenSet {
    /// The access token.
    pub(crate) access: String,
    /// The refresh token, if one was issued.
    pub(crate) refresh: Option<String>,
    /// When the access token expires (`None`: not said).
    pub(crate) expires_at: Option<Instant>,
    /// The scopes asked for and granted, space-separated.
    pub(crate) scope: Option<String>,
    /// The issuer that issued them (a refresh goes there, and only there).
    pub(crate) issuer: String,
    /// Where they are refreshed.
    pub(crate) token_endpoint: String,
    /// The `resource` they were asked for.
    pub(crate) resource: Option<String>,
    /// The client they were issued to (a refresh authenticates as it).
    pub(crate) client: Registered,
    /// The access token is DPoP-bound (`Authorization: DPoP`, a proof with each request).
    pub(crate) dpop: bool,
}

impl TokenSet {
    /// Whether the access token is expired or expires within `margin`.
    pub(crate) fn expiring(&self, now: Instant, margin: Duration) -> bool {
        self.expires_at.is_some_and(|at| at <= now + margin)
    }
}

#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    token_type: String,
    expires_in: Option<u64>,
    refresh_token: Option<String>,
    scope: Option<String>,
}

#[derive(Deserialize)]
struct ErrorAnswer {
    error: String,
    error_description: Option<String>,
}

/// What a token request is for, besides the client's authentication.
pub(crate) struct TokenRequest<'a> {
    /// The token endpoint.
    pub(crate) endpoint: &'a str,
    /// The issuer it belongs to.
    pub(crate) issuer: &'a str,
    /// `grant_type` and the grant's parameters (`scope` and `resource` apart).
    pub(crate) params: Vec<(&'a str, &'a str)>,
    /// The scope asked for.
    pub(crate) scope: Option<&'a str>,
    /// The resource (RFC 8707).
    pub(crate) resource: Option<&'a str>,
}

/// Sends a token request as `client` and reads the tokens; with `dpop`, asks for
/// DPoP-bound ones (a proof in the `DPoP` header, sent again once with the server's nonce
/// when it answers `use_dpop_nonce`).
pub(crate) async fn request(
    client: &Registered,
    req: TokenRequest<'_>,
    dpop: Option<&DpopKey>,
    reach: &Reach,
) -> Result<TokenSet, ClientError> {
    let mut params = req.params.clone();
    if let Some(s) = req.scope {
        params.push(("scope", s));
    }
    if let Some(r) = req.resource {
        params.push(("resource", r));
    }
    let mut headers = Vec::new();
    let assertion;
    match client.auth {
        TokenAuth::PrivateKeyJwt => {
            let Some(key) = &client.key else {
                return Err(ClientError::Auth(
                    "private_key_jwt needs a signing key, and none is configured".into(),
                ));
            };
            assertion = key.assertion(&client.client_id, req.issuer)?;
            params.push(("client_assertion_type", ASSERTION_TYPE));
            params.push(("client_assertion", &assertion));
        }
        TokenAuth::None => params.push(("client_id", &client.client_id)),
        TokenAuth::Post => {
            params.push(("client_id", &client.client_id));
            params.push((
                "client_secret",
                client.secret.as_deref().unwrap_or_default(),
            ));
        }
        TokenAuth::Basic => {
            let pair = format!(
                "{}:{}",
                form::escape(&client.client_id),
                form::escape(client.secret.as_deref().unwrap_or_default())
            );
            headers.push((
                hyper::header::AUTHORIZATION,
                format!("Basic {}", STANDARD.encode(pair)),
            ));
        }
    }
    let body = Bytes::from(form::encode(params));
    let mut answer = None;
    for _ in 0..2 {
        let mut headers = headers.clone();
        if let Some(key) = dpop {
            headers.push((
                hyper::header::HeaderName::from_static("dpop"),
                key.token_proof(req.endpoint)?,
            ));
        }
        let out = Outgoing {
            method: Method::POST,
            url: req.endpoint,
            headers,
            body: Some(("application/x-www-form-urlencoded", body.clone())),
        };
        let got = send_via(out, reach, MAX_ANSWER)
            .await
            .map_err(ClientError::Auth)?;
        let nonce = got
            .headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            .filter(|_| matches!(got.status.as_u16(), 400 | 401))
            .map(str::to_owned);
        let retry = answer.is_none() && nonce.is_some() && dpop.is_some();
        if let (true, Some(key), Some(n)) = (retry, dpop, nonce) {
            key.set_server_nonce(&n);
            answer = Some(got);
            continue;
        }
        answer = Some(got);
        break;
    }
    let Some(answer) = answer else {
        return Err(ClientError::Auth(format!(
            "{} did not answer",
            req.endpoint
        )));
    };
    if !answer.status.is_success() {
        return Err(refusal("the token request", req.endpoint, &answer));
    }
    let t: TokenAnswer = serde_json::from_slice(&answer.body).map_err(|e| {
        ClientError::Auth(format!(
            "{} answered a token request with {e}",
            req.endpoint
        ))
    })?;
    let bound = t.token_type.eq_ignore_ascii_case("dpop");
    if !(t.token_type.eq_ignore_ascii_case("bearer") || (bound && dpop.is_some())) {
        return Err(ClientError::Auth(format!(
            "{} issued a `{}` token, which this client cannot present",
            req.endpoint, t.token_type
        )));
    }
    let asked = req.scope.unwrap_or_default();
    let scope = match t.scope.as_deref() {
        Some(granted) => format!("{asked} {granted}"),
        None => asked.to_owned(),
    };
    let scope = scope
        .split_ascii_whitespace()
        .fold(Vec::<&str>::new(), |mut v, s| {
            if !v.contains(&s) {
                v.push(s);
            }
            v
        });
    Ok(TokenSet {
        access: t.access_token,
        refresh: t.refresh_token,
        expires_at: t
            .expires_in
            .map(|s| Instant::now() + Duration::from_secs(s)),
        scope: (!scope.is_empty()).then(|| scope.join(" ")),
        issuer: req.issuer.to_owned(),
        token_endpoint: req.endpoint.to_owned(),
        resource: req.resource.map(str::to_owned),
        client: client.clone(),
        dpop: bound,
    })
}

/// What this client says about itself when it registers.
pub(crate) struct ClientMetadata<'a> {
    /// `client_name`.
    pub(crate) name: &'a str,
    /// The one redirect URI.
    pub(crate) redirect_uri: &'a str,
    /// The token endpoint authentication asked for.
    pub(crate) auth_method: &'static str,
}

#[derive(Deserialize)]
struct RegistrationAnswer {
    client_id: String,
    client_secret: Option<String>,
    token_endpoint_auth_method: Option<String>,
}

/// Registers this client at `endpoint` (RFC 7591); the answer's authentication method
/// wins over the one asked for.
pub(crate) async fn register(
    endpoint: &str,
    meta: &ClientMetadata<'_>,
    accepts: impl Fn(&str) -> bool,
    reach: &Reach,
) -> Result<Registered, ClientError> {
    let loopback = ["http://localhost", "http://127.0.0.1", "http://[::1]"]
        .iter()
        .any(|p| meta.redirect_uri.starts_with(p));
    let body = serde_json::json!({
        "client_name": meta.name,
        "redirect_uris": [meta.redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": meta.auth_method,
        // SEP-837: a client redirecting to a loopback address is a native application.
        "application_type": if loopback { "native" } else { "web" },
    });
    let out = Outgoing {
        method: Method::POST,
        url: endpoint,
        headers: Vec::new(),
        body: Some(("application/json", Bytes::from(body.to_string()))),
    };
    let answer = send_via(out, reach, MAX_ANSWER)
        .await
        .map_err(ClientError::Auth)?;
    if !answer.status.is_success() {
        return Err(refusal("dynamic client registration", endpoint, &answer));
    }
    let r: RegistrationAnswer = serde_json::from_slice(&answer.body)
        .map_err(|e| ClientError::Auth(format!("{endpoint} answered the registration with {e}")))?;
    let mut client = Registered::choose(r.client_id, r.client_secret, accepts);
    if let Some(auth) = r
        .token_endpoint_auth_method
        .as_deref()
        .and_then(TokenAuth::from_name)
    {
        client.auth = auth;
    }
    Ok(client)
}

/// The error for a refused request: the OAuth `error` and description when there are.
fn refusal(what: &str, endpoint: &str, answer: &Fetched) -> ClientError {
    let detail = match serde_json::from_slice::<ErrorAnswer>(&answer.body) {
        Ok(e) => match e.error_description {
            Some(d) => format!("{} ({d})", e.error),
            None => e.error,
        },
        Err(_) => excerpt(&String::from_utf8_lossy(&answer.body)),
    };
    ClientError::Auth(format!(
        "{endpoint} refused {what} with {}: {detail}",
        answer.status
    ))
}

/// RFC 8693 token exchange at an identity provider: the user's `id_token` for an identity
/// assertion grant (ID-JAG, SEP-990) meant for the authorization server `audience`.
pub(crate) async fn exchange_for_id_jag(
    endpoint: &str,
    client_id: &str,
    id_token: &str,
    audience: &str,
    resource: Option<&str>,
    reach: &Reach,
) -> Result<String, ClientError> {
    let mut params = vec![
        (
            "grant_type",
            "urn:ietf:params:oauth:grant-type:token-exchange",
        ),
        (
            "requested_token_type",
            "urn:ietf:params:oauth:token-type:id-jag",
        ),
        ("subject_token", id_token),
        (
            "subject_token_type",
            "urn:ietf:params:oauth:token-type:id_token",
        ),
        ("audience", audience),
        ("client_id", client_id),
    ];
    if let Some(r) = resource {
        params.push(("resource", r));
    }
    let out = Outgoing {
        method: Method::POST,
        url: endpoint,
        headers: Vec::new(),
        body: Some((
            "application/x-www-form-urlencoded",
            Bytes::from(form::encode(params)),
        )),
    };
    let answer = send_via(out, reach, MAX_ANSWER)
        .await
        .map_err(ClientError::Auth)?;
    if !answer.status.is_success() {
        return Err(refusal("the token exchange", endpoint, &answer));
    }
    #[derive(Deserialize)]
    struct Exchanged {
        access_token: String,
    }
    serde_json::from_slice::<Exchanged>(&answer.body)
        .map(|e| e.access_token)
        .map_err(|e| ClientError::Auth(format!("{endpoint} answered the token exchange with {e}")))
}
