//! The caller's identity travels with every request: a tool reads `ctx.identity()` over
//! HTTP (a stateful session and a stateless 2026-07-28 request), authenticated by an API
//! key and by an HS256 JWT, and sees the subject, how it authenticated, its scopes and its
//! claims. Also: a JWKS file rotated on disk is read again for an unknown `kid`, at most once
//! per interval (on the paused clock).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey};
use mcpwire_gateway::auth::{
    ApiKeyConfig, ApiKeySecret, AuthConfig, AuthFailure, Authenticator, JwksSource, JwtConfig,
    JwtKeySource,
};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, Credential, NoArgs, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_testkit::jwt;
use mcpwire_testkit::raw::http::HttpClient;
use mcpwire_testkit::serve::{http, serve};
use serde_json::{Value, json};

const SECRET: &str = "a-shared-hs256-secret-of-32-bytes-or-more";
const RESOURCE: &str = "https://mcp.test/mcp";
const KEY: &str = "k-0123456789abcdef0123";

fn whoami_server() -> Arc<Server> {
    let whoami = tool("whoami", |ctx: CallCtx, _: NoArgs| async move {
        let Some(id) = ctx.identity() else {
            return Ok::<_, ToolError>(json!({"anonymous": true}).to_string());
        };
        let how = match id.credential() {
            Credential::ApiKey { name } => format!("key {name}"),
            Credential::Bearer { issuer } => format!("bearer from {issuer:?}"),
            other => format!("{other:?}"),
        };
        Ok(json!({
            "subject": id.subject(),
            "how": how,
            "scopes": id.scopes(),
            "email": id.claim("email"),
        })
        .to_string())
    });
    Server::builder(Implementation::new("whoami", "1"))
        .tool(whoami)
        .build()
}

fn authenticator() -> Arc<Authenticator> {
    let mut jwt = JwtConfig::new(JwtKeySource::Secret(SECRET.into()));
    jwt.issuers = vec!["https://as.test".into()];
    Arc::new(
        Authenticator::new(AuthConfig {
            api_keys: vec![ApiKeyConfig {
                name: "robot".into(),
                secret: ApiKeySecret::Plain(KEY.into()),
                scopes: Some(vec!["mcp".into(), "admin".into()]),
            }],
            jwt: Some(jwt),
            required_scopes: vec!["mcp".into()],
            resource: Some(RESOURCE.into()),
            ..AuthConfig::default()
        })
        .expect("config"),
    )
}

fn hs256_token() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({"iss": "https://as.test", "aud": RESOURCE, "sub": "alice",
                        "scope": "mcp read", "email": "alice@example.com", "exp": now + 300});
    jwt::sign(
        Algorithm::HS256,
        None,
        &EncodingKey::from_secret(SECRET.as_bytes()),
        &claims,
    )
}

/// POSTs `body` to `addr/mcp` with these headers; the status, session id and body.
async fn post(addr: &str, headers: &[(&str, &str)], body: Value) -> (u16, Option<String>, String) {
    let mut h = vec![
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
    ];
    h.extend_from_slice(headers);
    let r = HttpClient::new(addr)
        .send("POST", &h, body.to_string().as_bytes())
        .await;
    let (status, sid) = (r.status, r.session().map(str::to_owned));
    (status, sid, r.text().await)
}

/// The `whoami` text of a tools/call answer (JSON, or the data line of an SSE event).
fn whoami_of(body: &str) -> Value {
    let json_text = body
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .unwrap_or(body);
    let answer: Value = serde_json::from_str(json_text).expect("JSON answer");
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("a tool result: {answer}"));
    serde_json::from_str(text).expect("whoami JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_see_who_calls_over_http() {
    let service = Service::from_server(whoami_server()).with_auth(authenticator());
    let served = serve(service, http()).await;
    let addr = served.host_port();

    // A stateful session opened with the API key.
    let key = format!("Bearer {KEY}");
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let (status, sid, _) = post(&addr, &[("authorization", &key)], init).await;
    assert_eq!(status, 200);
    let sid = sid.expect("a session id");
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"whoami","arguments":{}}});
    let h = [
        ("authorization", key.as_str()),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, body) = post(&addr, &h, call).await;
    assert_eq!(status, 200, "{body}");
    let me = whoami_of(&body);
    assert_eq!(me["subject"], "key:robot");
    assert_eq!(me["how"], "key robot");
    assert_eq!(me["scopes"], json!(["mcp", "admin"]));

    // A stateless 2026-07-28 request with a JWT: its claims reach the tool.
    let bearer = format!("Bearer {}", hs256_token());
    let call = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"whoami","arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{}}}});
    let h = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "whoami"),
    ];
    let (status, _, body) = post(&addr, &h, call).await;
    assert_eq!(status, 200, "{body}");
    let me = whoami_of(&body);
    assert_eq!(me["subject"], "alice");
    assert_eq!(me["how"], "bearer from Some(\"https://as.test\")");
    assert_eq!(me["scopes"], json!(["mcp", "read"]));
    assert_eq!(me["email"], "alice@example.com");
}

/// A fresh EdDSA key and its JWK under `kid`.
fn ed_key(kid: &str) -> (EncodingKey, Value) {
    let key = jwt::ed_key();
    let jwk = jwt::jwk(kid, &key, Algorithm::EdDSA);
    (key, jwk)
}

fn ed_token(key: &EncodingKey, kid: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({"aud": RESOURCE, "sub": "bob", "exp": now + 300});
    jwt::sign(Algorithm::EdDSA, Some(kid), key, &claims)
}

#[tokio::test(start_paused = true)]
async fn a_rotated_jwks_file_is_read_again_at_most_once_per_interval() {
    let dir = std::env::temp_dir().join(format!("mcpwire-jwks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("jwks.json");
    let (old, old_jwk) = ed_key("old");
    let (new, new_jwk) = ed_key("new");
    let (newer, newer_jwk) = ed_key("newer");
    std::fs::write(&file, json!({"keys": [old_jwk]}).to_string()).expect("write");
    let auth = Arc::new(
        Authenticator::new(AuthConfig {
            jwt: Some(JwtConfig::new(JwtKeySource::Jwks(JwksSource::File(
                file.clone(),
            )))),
            resource: Some(RESOURCE.into()),
            ..AuthConfig::default()
        })
        .expect("config"),
    );
    auth.prefetch().await;
    let bob = auth
        .verify(Some(&ed_token(&old, "old")))
        .await
        .expect("old key");
    assert_eq!(bob.subject(), "bob");

    // Rotated: the first unknown kid reads the file again.
    std::fs::write(&file, json!({"keys": [old_jwk, new_jwk]}).to_string()).expect("write");
    assert!(auth.verify(Some(&ed_token(&new, "new"))).await.is_ok());

    // Rotated again at once: within the interval the file is not read again...
    std::fs::write(
        &file,
        json!({"keys": [old_jwk, new_jwk, newer_jwk]}).to_string(),
    )
    .expect("write");
    let refused = auth.verify(Some(&ed_token(&newer, "newer"))).await;
    assert_eq!(
        refused.unwrap_err(),
        AuthFailure::UnknownKey("newer".into())
    );
    // ... and after it, it is.
    tokio::time::advance(std::time::Duration::from_secs(31)).await;
    assert!(auth.verify(Some(&ed_token(&newer, "newer"))).await.is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
