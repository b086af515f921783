//! Users' consent through [`ElicitConsent`] and OAuth fetches over TLS trusting a given CA,
//! against the authorization server of `tests.rs`.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_testkit::pki::{Ca, write_ca};

use super::challenge::Challenge;
use super::tests::{bearer, config, start, start_serving};
use super::{ElicitConsent, FollowRedirect, OAuthGrant, PendingConsents, UpstreamAuth};
use crate::fetch::{Outgoing, send};
use mcpwire_server::tls::ClientTls;

fn elicit(pending: &Arc<PendingConsents>) -> super::OAuthConfig {
    let mut c = config(OAuthGrant::AuthorizationCode);
    c.redirect_uri = "https://gw.example/oauth/callback".into();
    c.consent = Some(Arc::new(ElicitConsent {
        pending: pending.clone(),
        upstream: Arc::from("up"),
        timeout: Duration::from_secs(30),
        own: FollowRedirect::default(),
    }));
    c
}

/// The user's browser: the authorization server's redirect, as the query the gateway's
/// redirect endpoint would receive.
async fn consent_at(url: &str) -> String {
    let answer = send(Outgoing::get(url), Duration::from_secs(5), 65536)
        .await
        .unwrap();
    let location = answer.headers["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("https://gw.example/oauth/callback?"));
    location.split_once('?').unwrap().1.to_owned()
}

#[tokio::test]
async fn a_user_consents_through_the_gateway_even_after_their_call_gave_up() {
    let (base, _seen) = start().await;
    let server = format!("{base}/mcp");
    let pending = PendingConsents::new(16, vec!["/oauth/callback".into()]);
    let auth = UpstreamAuth::new().oauth(elicit(&pending)).unwrap();
    let alice = auth.for_identity(Some("alice"));

    // Alice's call needs a token: an authorization opens for her (not for bob).
    let waiting = {
        let (alice, server) = (alice.clone(), server.clone());
        tokio::spawn(async move {
            alice
                .challenged(401, Challenge::default(), None, &server)
                .await
        })
    };
    let shown = loop {
        if let Some(p) = pending.pending_for("up", "alice") {
            break p;
        }
        tokio::task::yield_now().await;
    };
    assert!(pending.pending_for("up", "bob").is_none());
    // Her client was told to authorize and retry: the call is gone, the flow goes on.
    waiting.abort();
    let query = consent_at(&shown.url).await;
    pending.complete(&query).unwrap();
    // The retry finds her token (waiting for the code exchange if it is still running).
    let (headers, _) = alice.request_headers("POST", "http://x/mcp").await.unwrap();
    assert!(bearer(&headers).is_some_and(|b| b.starts_with("Bearer token-")));
    assert_eq!(
        auth.for_identity(Some("bob"))
            .request_headers("POST", "http://x/mcp")
            .await
            .unwrap()
            .1,
        None
    );
    // The state was spent: the same answer again reaches nobody.
    assert!(pending.complete(&query).is_err());
    assert!(pending.is_empty());
}

#[tokio::test]
async fn the_gateways_own_session_follows_the_redirect() {
    let (base, seen) = start().await;
    let pending = PendingConsents::new(16, Vec::new());
    let mut c = elicit(&pending);
    c.redirect_uri = "http://127.0.0.1:9/callback".into();
    let auth = UpstreamAuth::new().oauth(c).unwrap();
    auth.challenged(401, Challenge::default(), None, &format!("{base}/mcp"))
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().grants, ["authorization_code"]);
    assert!(pending.is_empty());
}

/// A CA (its file in `dir`), and a server configuration for 127.0.0.1 signed by it.
fn test_pki(dir: &std::path::Path) -> (std::path::PathBuf, Arc<rustls::ServerConfig>) {
    std::fs::create_dir_all(dir).unwrap();
    let ca = Ca::new("test CA");
    (
        write_ca(dir, "ca", &ca),
        ca.leaf("upstream", 1).server_config(),
    )
}

#[tokio::test]
async fn token_requests_trust_the_upstreams_ca() {
    let dir = std::env::temp_dir().join(format!("mcpwire-oauth-tls-{}", std::process::id()));
    let (ca, server) = test_pki(&dir);
    let (base, seen) = start_serving(Some(server)).await;
    assert!(base.starts_with("https://"));
    let mut c = config(OAuthGrant::ClientCredentials);
    c.token_endpoint = Some(format!("{base}/token"));
    // The system's roots do not know the test CA: refused.
    let untrusting = UpstreamAuth::new().oauth(c.clone()).unwrap();
    let e = untrusting
        .request_headers("POST", "http://x/mcp")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("certificate"), "{e}");
    // Trusting the upstream's CA: the token comes.
    c.tls = ClientTls {
        ca: Some(ca),
        ..ClientTls::default()
    };
    let auth = UpstreamAuth::new().oauth(c).unwrap();
    let (headers, _) = auth.request_headers("POST", "http://x/mcp").await.unwrap();
    assert_eq!(bearer(&headers).as_deref(), Some("Bearer token-1"));
    assert_eq!(seen.lock().unwrap().grants, ["client_credentials"]);
    std::fs::remove_dir_all(dir).ok();
}
