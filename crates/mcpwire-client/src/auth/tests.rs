//! The OAuth client against a small authorization server served here (axum): refresh before
//! expiry and after a `401`, tokens kept apart per identity, the table of identities bounded.
//! (The full discovery and consent flow is checked against the official conformance suite's
//! servers: `scripts/conformance.sh client`.)

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde_json::json;

use super::challenge::Challenge;
use super::form;
use super::{FollowRedirect, OAuthConfig, OAuthGrant, UpstreamAuth};

/// What the server saw and how it answers.
#[derive(Default)]
pub(super) struct Seen {
    /// `grant_type` of each token request, in order.
    pub(super) grants: Vec<String>,
    /// Access tokens issued so far.
    issued: usize,
    /// The `expires_in` it answers.
    expires_in: u64,
}

pub(super) type Shared = Arc<Mutex<Seen>>;

pub(super) async fn start() -> (String, Shared) {
    start_serving(None).await
}

/// The authorization server, over TLS with `tls` (its base URL then `https://…`).
pub(super) async fn start_serving(tls: Option<Arc<rustls::ServerConfig>>) -> (String, Shared) {
    let seen: Shared = Arc::new(Mutex::new(Seen {
        expires_in: 3600,
        ..Seen::default()
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let base = match tls {
        Some(_) => format!("https://127.0.0.1:{port}"),
        None => format!("http://127.0.0.1:{port}"),
    };
    let b = base.clone();
    let app = Router::new()
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get({
                let b = b.clone();
                move || async move {
                    json_answer(
                        json!({"resource": format!("{b}/mcp"), "authorization_servers": [b]}),
                    )
                }
            }),
        )
        .route(
            "/.well-known/oauth-authorization-server",
            get({
                let b = b.clone();
                move || async move {
                    json_answer(json!({
                        "issuer": b,
                        "authorization_endpoint": format!("{b}/authorize"),
                        "token_endpoint": format!("{b}/token"),
                        "code_challenge_methods_supported": ["S256"],
                        "token_endpoint_auth_methods_supported": ["client_secret_post"],
                    }))
                }
            }),
        )
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(seen.clone());
    match tls {
        None => {
            tokio::spawn(async move { axum::serve(listener, app).await });
        }
        Some(tls) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(tls);
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (acceptor, app) = (acceptor.clone(), app.clone());
                    tokio::spawn(async move {
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = hyper_util::service::TowerToHyperService::new(app);
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
        }
    }
    (base, seen)
}

async fn authorize(RawQuery(q): RawQuery) -> Redirect {
    let q = form::decode(&q.unwrap_or_default());
    let get = |k: &str| {
        q.iter()
            .find(|(n, _)| n == k)
            .map_or("", |(_, v)| v.as_str())
    };
    let target = form::with_query(
        get("redirect_uri"),
        [("code", "the-code"), ("state", get("state"))],
    );
    Redirect::to(&target)
}

fn json_answer(v: serde_json::Value) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], v.to_string()).into_response()
}

async fn token(State(seen): State<Shared>, _h: HeaderMap, body: String) -> Response {
    let params = form::decode(&body);
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let mut s = seen.lock().unwrap();
    let grant = get("grant_type").unwrap_or_default();
    if get("client_secret").as_deref() != Some("secret") {
        return (
            StatusCode::UNAUTHORIZED,
            json_answer(json!({"error": "invalid_client"})),
        )
            .into_response();
    }
    s.grants.push(grant);
    s.issued += 1;
    (
        [(header::CACHE_CONTROL, "no-store")],
        json_answer(json!({
            "access_token": format!("token-{}", s.issued),
            "token_type": "Bearer",
            "expires_in": s.expires_in,
            "refresh_token": format!("refresh-{}", s.issued),
        })),
    )
        .into_response()
}

pub(super) fn config(grant: OAuthGrant) -> OAuthConfig {
    let mut c = OAuthConfig::new(grant);
    c.client_id = Some("me".into());
    c.client_secret = Some("secret".into());
    c.client_auth = Some("client_secret_post".into());
    c.consent = Some(Arc::new(FollowRedirect::default()));
    c
}

pub(super) fn bearer(
    headers: &[(axum::http::HeaderName, axum::http::HeaderValue)],
) -> Option<String> {
    headers
        .iter()
        .find(|(n, _)| n == header::AUTHORIZATION)
        .map(|(_, v)| v.to_str().unwrap().to_owned())
}

#[tokio::test]
async fn client_credentials_are_refreshed_before_they_expire() {
    let (base, seen) = start().await;
    // Tokens that expire within the refresh margin: each request refreshes first.
    seen.lock().unwrap().expires_in = 5;
    let mut c = config(OAuthGrant::ClientCredentials);
    c.token_endpoint = Some(format!("{base}/token"));
    let auth = UpstreamAuth::new().oauth(c).unwrap();
    let (h1, sent1) = auth.request_headers("POST", "http://x/mcp").await.unwrap();
    assert_eq!(bearer(&h1).as_deref(), Some("Bearer token-1"));
    assert_eq!(sent1.as_deref(), Some("token-1"));
    let (h2, _) = auth.request_headers("POST", "http://x/mcp").await.unwrap();
    assert_eq!(bearer(&h2).as_deref(), Some("Bearer token-2"));
    assert_eq!(
        seen.lock().unwrap().grants,
        ["client_credentials", "refresh_token"]
    );
    // A long-lived token is kept.
    seen.lock().unwrap().expires_in = 3600;
    let (h3, _) = auth.request_headers("POST", "http://x/mcp").await.unwrap();
    let (h4, _) = auth.request_headers("POST", "http://x/mcp").await.unwrap();
    assert_eq!(bearer(&h3), bearer(&h4));
}

#[tokio::test]
async fn a_401_refreshes_then_tokens_stay_per_identity() {
    let (base, seen) = start().await;
    let server = format!("{base}/mcp");
    let auth = UpstreamAuth::new()
        .oauth(config(OAuthGrant::AuthorizationCode))
        .unwrap();
    let alice = auth.for_identity(Some("alice"));
    let bob = auth.for_identity(Some("bob"));
    // Nobody has a token until a challenge.
    assert_eq!(
        alice
            .request_headers("POST", "http://x/mcp")
            .await
            .unwrap()
            .1,
        None
    );
    alice
        .challenged(401, Challenge::default(), None, &server)
        .await
        .unwrap();
    let a1 = alice
        .request_headers("POST", "http://x/mcp")
        .await
        .unwrap()
        .1
        .unwrap();
    assert_eq!(
        bob.request_headers("POST", "http://x/mcp").await.unwrap().1,
        None,
        "bob has no token of alice's"
    );
    assert_eq!(
        auth.request_headers("POST", "http://x/mcp")
            .await
            .unwrap()
            .1,
        None
    );
    bob.challenged(401, Challenge::default(), None, &server)
        .await
        .unwrap();
    let b1 = bob
        .request_headers("POST", "http://x/mcp")
        .await
        .unwrap()
        .1
        .unwrap();
    assert_ne!(a1, b1);
    // Alice's token refused: her refresh token gets a new one.
    alice
        .challenged(401, Challenge::default(), Some(&a1), &server)
        .await
        .unwrap();
    let a2 = alice
        .request_headers("POST", "http://x/mcp")
        .await
        .unwrap()
        .1
        .unwrap();
    assert_ne!(a2, a1);
    // A challenge to a token already replaced does nothing (another request did the work).
    alice
        .challenged(401, Challenge::default(), Some(&a1), &server)
        .await
        .unwrap();
    assert_eq!(
        alice
            .request_headers("POST", "http://x/mcp")
            .await
            .unwrap()
            .1
            .unwrap(),
        a2
    );
    assert_eq!(
        bob.request_headers("POST", "http://x/mcp")
            .await
            .unwrap()
            .1
            .unwrap(),
        b1
    );
    assert_eq!(
        seen.lock().unwrap().grants,
        ["authorization_code", "authorization_code", "refresh_token"]
    );
}

#[tokio::test]
async fn a_step_up_for_a_scope_already_asked_for_is_refused_without_a_request() {
    let (base, seen) = start().await;
    let server = format!("{base}/mcp");
    let auth = UpstreamAuth::new()
        .oauth(config(OAuthGrant::AuthorizationCode))
        .unwrap();
    let scope = |s: &str| Challenge {
        scope: Some(s.into()),
        error: Some("insufficient_scope".into()),
        ..Challenge::default()
    };
    auth.challenged(401, scope("read"), None, &server)
        .await
        .unwrap();
    let t = auth
        .request_headers("POST", "http://x/mcp")
        .await
        .unwrap()
        .1
        .unwrap();
    let again = auth.challenged(403, scope("read"), Some(&t), &server).await;
    assert!(
        matches!(again, Err(crate::ClientError::Auth(_))),
        "{again:?}"
    );
    assert_eq!(seen.lock().unwrap().grants.len(), 1);
    auth.challenged(403, scope("write"), Some(&t), &server)
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().grants.len(), 2);
}

#[tokio::test]
async fn the_identity_table_is_bounded() {
    let (base, _seen) = start().await;
    let mut c = config(OAuthGrant::ClientCredentials);
    c.token_endpoint = Some(format!("{base}/token"));
    let auth = UpstreamAuth::new().oauth(c).unwrap();
    let oauth = auth.oauth.clone().unwrap();
    for i in 0..super::flow::MAX_IDENTITIES + 10 {
        let who: Arc<str> = Arc::from(format!("user-{i}"));
        let _ = oauth.slot_count_after_touch(&who);
    }
    assert!(oauth.slot_count() <= super::flow::MAX_IDENTITIES);
}

#[tokio::test]
async fn consent_in_a_browser_through_a_loopback_redirect() {
    let (base, seen) = start().await;
    let server = format!("{base}/mcp");
    // The "browser": opens the authorization URL, follows the server's redirect to the
    // loopback address.
    let consent = super::LoopbackConsent::bind(std::time::Duration::from_secs(10), |url| {
        let url = url.to_owned();
        tokio::spawn(async move {
            let timeout = std::time::Duration::from_secs(5);
            let answer = crate::fetch::send(crate::fetch::Outgoing::get(&url), timeout, 65536)
                .await
                .unwrap();
            let location = answer.headers[header::LOCATION]
                .to_str()
                .unwrap()
                .to_owned();
            // A stray request (a favicon) is answered 404 and the wait goes on.
            let stray = location.replace("/callback", "/favicon.ico");
            let got = crate::fetch::send(crate::fetch::Outgoing::get(&stray), timeout, 65536)
                .await
                .unwrap();
            assert_eq!(got.status, StatusCode::NOT_FOUND);
            let back = crate::fetch::send(crate::fetch::Outgoing::get(&location), timeout, 65536)
                .await
                .unwrap();
            assert_eq!(back.status, StatusCode::OK);
        });
    })
    .unwrap();
    let mut c = config(OAuthGrant::AuthorizationCode);
    c.redirect_uri = consent.redirect_uri();
    c.consent = Some(Arc::new(consent));
    let auth = UpstreamAuth::new().oauth(c).unwrap();
    auth.challenged(401, Challenge::default(), None, &server)
        .await
        .unwrap();
    assert!(
        auth.request_headers("POST", &server)
            .await
            .unwrap()
            .1
            .is_some()
    );
    assert_eq!(seen.lock().unwrap().grants, ["authorization_code"]);
}
