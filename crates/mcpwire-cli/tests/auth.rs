//! Authentication on every network listener of `mcpwire demo` (HTTP, WebSocket, gRPC,
//! MCPB): no credential, a bad one, expired, not yet valid, for another audience, from
//! another issuer, without the required scope, signed by a stranger — refused with each
//! wire's answer — and good JWTs (RS256, ES256, EdDSA, HS256) and API keys accepted. Keys
//! are generated here; JWKS from a file and from a URL this test serves (with the refetch on
//! an unknown `kid`, bounded).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use common::http::{ACCEPT_BOTH, HttpServer};
use common::served::Served;
use common::wires::{Conversation, Mcpb, Peer, Ws, grpc_call_with};
use jsonwebtoken::{Algorithm, EncodingKey};
use mcpwire_testkit::jwt::{SigningKeys, ec_key, jwks, sign};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

const ISSUER: &str = "https://as.test";
const RESOURCE: &str = "https://mcp.test/mcp";
const SCOPE: &str = "mcp:tools";
const API_KEY: &str = "ci-key-0123456789abcdef";
const HS_SECRET: &str = "an-hs256-secret-of-at-least-32-bytes!";

/// The signing keys of this test run.
struct Keys {
    signing: SigningKeys,
    /// A key the server does not know, signing under the EC key's `kid`.
    stranger: EncodingKey,
}

fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        signing: SigningKeys::generate(),
        stranger: ec_key(),
    })
}

fn standard_jwks() -> Value {
    keys().signing.jwks()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Claims of a good token; `edit` changes them.
fn claims(edit: impl FnOnce(&mut Value)) -> Value {
    let t = now();
    let mut c = json!({"iss": ISSUER, "aud": RESOURCE, "sub": "alice", "scope": SCOPE,
                       "iat": t, "exp": t + 600});
    edit(&mut c);
    c
}

fn rs256(claims: &Value) -> String {
    sign(Algorithm::RS256, Some("rsa"), &keys().signing.rsa, claims)
}

/// What a wire answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Accepted,
    /// 401 / UNAUTHENTICATED / −32600 "authentication failed".
    Unauthenticated,
    /// 403 insufficient_scope / PERMISSION_DENIED / −32600 "insufficient scope".
    Forbidden,
}

/// Every case: a name, the credential (`None`: none sent) and what it must get.
fn cases() -> Vec<(&'static str, Option<String>, Outcome)> {
    use Outcome::*;
    let k = keys();
    vec![
        ("no credential", None, Unauthenticated),
        ("garbage", Some("not-a-token".into()), Unauthenticated),
        ("garbage JWT", Some("a.b.c".into()), Unauthenticated),
        ("good RS256", Some(rs256(&claims(|_| {}))), Accepted),
        (
            "good ES256",
            Some(sign(
                Algorithm::ES256,
                Some("ec"),
                &k.signing.ec,
                &claims(|_| {}),
            )),
            Accepted,
        ),
        (
            "good EdDSA",
            Some(sign(
                Algorithm::EdDSA,
                Some("ed"),
                &k.signing.ed,
                &claims(|_| {}),
            )),
            Accepted,
        ),
        ("API key", Some(API_KEY.into()), Accepted),
        (
            "expired",
            Some(rs256(&claims(|c| c["exp"] = json!(now() - 3600)))),
            Unauthenticated,
        ),
        (
            "not yet valid",
            Some(rs256(&claims(|c| c["nbf"] = json!(now() + 3600)))),
            Unauthenticated,
        ),
        (
            "another audience",
            Some(rs256(&claims(|c| {
                c["aud"] = json!("https://other.test/mcp")
            }))),
            Unauthenticated,
        ),
        (
            "no audience",
            Some(rs256(&claims(|c| {
                c.as_object_mut().map(|m| m.remove("aud"));
            }))),
            Unauthenticated,
        ),
        (
            "another issuer",
            Some(rs256(&claims(|c| c["iss"] = json!("https://evil.test")))),
            Unauthenticated,
        ),
        (
            "bad signature",
            Some(sign(
                Algorithm::ES256,
                Some("ec"),
                &k.stranger,
                &claims(|_| {}),
            )),
            Unauthenticated,
        ),
        (
            "HS256 against public keys",
            Some(sign(
                Algorithm::HS256,
                Some("rsa"),
                &EncodingKey::from_secret(HS_SECRET.as_bytes()),
                &claims(|_| {}),
            )),
            Unauthenticated,
        ),
        (
            "missing scope",
            Some(rs256(&claims(|c| c["scope"] = json!("other")))),
            Forbidden,
        ),
    ]
}

/// A directory of this test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mcpwire-auth-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The flags of a server accepting the standard JWKS (from a file) and the API key.
fn auth_flags(name: &str) -> Vec<String> {
    let d = dir(name);
    let jwks_file = d.join("jwks.json");
    std::fs::write(&jwks_file, standard_jwks().to_string()).expect("write JWKS");
    let key_file = d.join("keys.txt");
    std::fs::write(&key_file, format!("# test keys\nci={API_KEY}\n")).expect("write keys");
    [
        "--jwks-file",
        jwks_file.to_str().expect("path"),
        "--api-key-file",
        key_file.to_str().expect("path"),
        "--issuer",
        ISSUER,
        "--resource",
        RESOURCE,
        "--authorization-server",
        ISSUER,
        "--scope",
        SCOPE,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn initialize_body() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"auth-test","version":"1"}}})
}

fn http_post(
    server: &HttpServer,
    token: Option<&str>,
    session: Option<&str>,
    msg: &Value,
) -> common::http::Exchange {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut h = vec![
        ("content-type", "application/json"),
        ("accept", ACCEPT_BOTH),
    ];
    if let Some(b) = &bearer {
        h.push(("authorization", b));
    }
    if let Some(s) = session {
        h.push(("mcp-session-id", s));
        h.push(("mcp-protocol-version", "2025-11-25"));
    }
    server.send("POST", &h, msg.to_string().as_bytes())
}

#[test]
fn http_is_a_protected_resource() {
    let flags = auth_flags("http");
    let server = HttpServer::start(&strs(&flags));
    let metadata_url = "https://mcp.test/.well-known/oauth-protected-resource/mcp";
    for (name, token, want) in cases() {
        let r = http_post(&server, token.as_deref(), None, &initialize_body());
        let challenge = r.header("www-authenticate").map(str::to_owned);
        match want {
            Outcome::Accepted => {
                let status = r.status;
                assert_eq!(status, 200, "{name}: {}", r.text());
            }
            Outcome::Unauthenticated => {
                assert_eq!(r.status, 401, "{name}");
                let c = challenge.unwrap_or_else(|| panic!("{name}: a challenge"));
                assert!(c.starts_with("Bearer "), "{name}: {c}");
                assert!(
                    c.contains(&format!("resource_metadata=\"{metadata_url}\"")),
                    "{name}: {c}"
                );
                assert!(c.contains(&format!("scope=\"{SCOPE}\"")), "{name}: {c}");
                // RFC 6750 § 3.1: no error code when no credential was sent.
                assert_eq!(token.is_none(), !c.contains("error="), "{name}: {c}");
                let body = r.json();
                assert_eq!(body["error"]["code"], -32600, "{name}: {body}");
            }
            Outcome::Forbidden => {
                assert_eq!(r.status, 403, "{name}");
                let c = challenge.unwrap_or_else(|| panic!("{name}: a challenge"));
                assert!(c.contains("error=\"insufficient_scope\""), "{c}");
                assert!(c.contains(&format!("scope=\"{SCOPE}\"")), "{c}");
            }
        }
    }

    // The metadata, at the path-suffixed and the root well-known URIs, without a token.
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = common::http::Exchange::get(&server.addr, path);
        assert_eq!(r.status, 200, "{path}");
        let doc = r.json();
        assert_eq!(doc["resource"], RESOURCE);
        assert_eq!(doc["authorization_servers"], json!([ISSUER]));
        assert_eq!(doc["scopes_supported"], json!([SCOPE]));
    }

    // A session is its opener's: a refreshed token of the same caller goes on, another
    // caller (or none) does not see it.
    let alice = rs256(&claims(|_| {}));
    let r = http_post(&server, Some(&alice), None, &initialize_body());
    let sid = r.header("mcp-session-id").expect("a session").to_owned();
    let call = json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                      "params":{"name":"echo","arguments":{"text":"hi"}}});
    let refreshed = rs256(&claims(|c| c["iat"] = json!(now() - 1)));
    let r = http_post(&server, Some(&refreshed), Some(&sid), &call);
    assert_eq!(r.status, 200);
    assert!(r.text().contains("hi"));
    let r = http_post(&server, Some(API_KEY), Some(&sid), &call);
    assert_eq!(r.status, 404, "another caller's session is unknown");
    let r = http_post(&server, None, Some(&sid), &call);
    assert_eq!(r.status, 401);
    let bearer = format!("Bearer {API_KEY}");
    let r = server.send(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &sid),
            ("authorization", &bearer),
        ],
        b"",
    );
    assert_eq!(r.status, 404, "GET on another caller's session");
    let r = server.send("DELETE", &[("mcp-session-id", &sid)], b"");
    assert_eq!(r.status, 401, "DELETE without a credential");
}

#[test]
fn websocket_upgrades_only_with_a_credential() {
    let flags = auth_flags("ws");
    let served = Served::start("ws", &strs(&flags));
    for (name, token, want) in cases() {
        let bearer = token.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("authorization", b.as_str()))
            .collect();
        match (Ws::connect_with(&served.addr, &headers), want) {
            (Ok(ws), Outcome::Accepted) => {
                let mut c = Conversation::new(ws);
                let r = c.request(1, "initialize", initialize_body()["params"].clone());
                assert!(r["result"]["serverInfo"].is_object(), "{name}: {r}");
            }
            (Err((401, Some(c))), Outcome::Unauthenticated) => {
                assert!(
                    c.contains("resource_metadata=") && c.contains(SCOPE),
                    "{name}: {c}"
                );
            }
            (Err((403, Some(c))), Outcome::Forbidden) => {
                assert!(c.contains("insufficient_scope"), "{name}: {c}");
            }
            (Ok(_), _) => panic!("{name}: upgraded, expected {want:?}"),
            (Err(e), _) => panic!("{name}: refused with {e:?}, expected {want:?}"),
        }
    }
}

#[test]
fn grpc_reads_authorization_metadata() {
    let flags = auth_flags("grpc");
    let served = Served::start("grpc", &strs(&flags));
    for (name, token, want) in cases() {
        let bearer = token.as_ref().map(|t| format!("Bearer {t}"));
        let md: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("authorization", b.as_str()))
            .collect();
        let r = grpc_call_with::<pb::ListToolsResponse>(
            &served.addr,
            "ListTools",
            &pb::ListToolsRequest::default(),
            &md,
        );
        match (r, want) {
            (Ok(list), Outcome::Accepted) => assert!(!list.tools.is_empty(), "{name}"),
            (Err(e), Outcome::Unauthenticated) => {
                assert_eq!(e.status, 16, "{name}: UNAUTHENTICATED");
                assert_eq!(e.details.expect("details").code, -32600, "{name}");
            }
            (Err(e), Outcome::Forbidden) => assert_eq!(e.status, 7, "{name}: PERMISSION_DENIED"),
            (r, _) => panic!("{name}: {r:?}, expected {want:?}"),
        }
    }
}

#[test]
fn mcpb_initialize_and_per_message_tokens() {
    let flags = auth_flags("mcpb");
    let served = Served::start("mcpb", &strs(&flags));
    for (name, token, want) in cases() {
        let mut c = Conversation::new(Mcpb::connect(&served.addr));
        let mut params = initialize_body()["params"].clone();
        if let Some(t) = &token {
            params["token"] = json!(t);
        }
        let r = c.request(1, "initialize", params);
        match want {
            Outcome::Accepted => {
                assert!(r["result"]["sessionId"].is_string(), "{name}: {r}");
                assert!(r["result"]["serverInfo"].is_object(), "{name}: {r}");
            }
            Outcome::Unauthenticated => {
                assert_eq!(r["error"]["code"], -32600, "{name}: {r}");
                let m = r["error"]["message"].as_str().unwrap_or_default();
                assert!(m.starts_with("authentication failed"), "{name}: {m}");
            }
            Outcome::Forbidden => {
                let m = r["error"]["message"].as_str().unwrap_or_default();
                assert!(m.starts_with("insufficient scope"), "{name}: {r}");
            }
        }
    }

    // Per-message tokens: the connection's caller (a fresh token) is fine; an invalid
    // token or another caller's is refused, and the connection goes on.
    let alice = rs256(&claims(|_| {}));
    let mut mcpb = Mcpb::connect(&served.addr);
    let mut params = initialize_body()["params"].clone();
    params["token"] = json!(alice);
    mcpb.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":params}));
    assert!(mcpb.recv()["result"]["sessionId"].is_string());
    mcpb.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    let list = |id: i64, token: &str| json!({"message": {"jsonrpc":"2.0","id":id,"method":"tools/list"}, "auth_token": token});
    let fresh = rs256(&claims(|c| c["iat"] = json!(now() - 1)));
    mcpb.send(list(2, &fresh));
    assert!(mcpb.recv()["result"]["tools"].is_array());
    mcpb.send(list(3, API_KEY));
    let r = mcpb.recv();
    assert_eq!(r["error"]["code"], -32600, "another caller's token: {r}");
    let expired = rs256(&claims(|c| c["exp"] = json!(now() - 3600)));
    mcpb.send(list(4, &expired));
    assert_eq!(mcpb.recv()["error"]["code"], -32600);
    mcpb.send(json!({"jsonrpc":"2.0","id":5,"method":"tools/list"}));
    assert!(mcpb.recv()["result"]["tools"].is_array(), "still open");
}

/// A tiny HTTP server answering every GET with the current JWKS, counting requests.
struct JwksServer {
    url: String,
    doc: Arc<Mutex<Value>>,
    fetches: Arc<AtomicUsize>,
}

impl JwksServer {
    fn start(doc: Value) -> JwksServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/jwks.json", listener.local_addr().expect("addr"));
        let doc = Arc::new(Mutex::new(doc));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (d, f) = (doc.clone(), fetches.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                f.fetch_add(1, Ordering::SeqCst);
                let body = d.lock().expect("doc").to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        JwksServer { url, doc, fetches }
    }
}

#[test]
fn jwks_from_a_url_is_cached_and_refetched_for_a_new_kid_at_most_once_per_interval() {
    let k = keys();
    let jwks_server = JwksServer::start(jwks(&[("rsa", &k.signing.rsa, Algorithm::RS256)]));
    let server = HttpServer::start(&[
        "--jwks-url",
        &jwks_server.url,
        "--issuer",
        ISSUER,
        "--resource",
        RESOURCE,
    ]);
    let good = rs256(&claims(|_| {}));
    for _ in 0..3 {
        assert_eq!(
            http_post(&server, Some(&good), None, &initialize_body()).status,
            200
        );
    }
    assert_eq!(
        jwks_server.fetches.load(Ordering::SeqCst),
        1,
        "loaded once, at start"
    );

    // The issuer rotates in a new key: a token naming it makes the server load the set again.
    *jwks_server.doc.lock().expect("doc") = standard_jwks();
    let rotated = sign(Algorithm::EdDSA, Some("ed"), &k.signing.ed, &claims(|_| {}));
    assert_eq!(
        http_post(&server, Some(&rotated), None, &initialize_body()).status,
        200
    );
    assert_eq!(jwks_server.fetches.load(Ordering::SeqCst), 2);

    // Tokens naming made-up keys cost no fetch within the interval.
    for i in 0..20 {
        let kid = format!("made-up-{i}");
        let t = sign(
            Algorithm::RS256,
            Some(&kid),
            &k.signing.rsa,
            &claims(|_| {}),
        );
        let r = http_post(&server, Some(&t), None, &initialize_body());
        assert_eq!(r.status, 401);
    }
    assert_eq!(
        jwks_server.fetches.load(Ordering::SeqCst),
        2,
        "bounded refetches"
    );
}

#[test]
fn hs256_with_a_secret_from_the_environment() {
    // The variable is read by the child only.
    let server = {
        let mut args = vec!["demo", "--transport", "http", "--port", "0"];
        args.extend([
            "--jwt-secret-env",
            "MCPWIRE_TEST_HS",
            "--resource",
            RESOURCE,
        ]);
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"));
        child
            .args(&args)
            .env("MCPWIRE_TEST_HS", HS_SECRET)
            .env("MCPWIRE_LOG", "warn")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = child.spawn().expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines.next().expect("a listening line").expect("stderr");
            if let Some(rest) = line.trim().strip_prefix("mcpwire: listening on http://") {
                break rest.to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        (child, HttpServer::at(&addr))
    };
    let (mut child, server) = server;
    let secret = EncodingKey::from_secret(HS_SECRET.as_bytes());
    let good = sign(Algorithm::HS256, None, &secret, &claims(|_| {}));
    assert_eq!(
        http_post(&server, Some(&good), None, &initialize_body()).status,
        200
    );
    let wrong = EncodingKey::from_secret(b"another secret of at least 32 bytes long");
    let bad = sign(Algorithm::HS256, None, &wrong, &claims(|_| {}));
    assert_eq!(
        http_post(&server, Some(&bad), None, &initialize_body()).status,
        401
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn serve_config_auth_section_with_a_listener_opting_out() {
    let d = dir("serve");
    let jwks_file = d.join("jwks.json");
    std::fs::write(&jwks_file, standard_jwks().to_string()).expect("write JWKS");
    let config = d.join("mcpwire.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[listen]]
url = "http://127.0.0.1:0/mcp"

[[listen]]
url = "ws://127.0.0.1:0/mcp"
auth = false

[backends.demo]
native = "demo"

[auth]
resource = "{RESOURCE}"
authorization_servers = ["{ISSUER}"]
scopes = ["{SCOPE}"]

[[auth.api_keys]]
name = "ci"
key = "{API_KEY}"

[auth.jwt]
jwks_file = "jwks.json"
issuers = ["{ISSUER}"]
"#
        ),
    )
    .expect("write config");
    let mut l = common::listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &["serve", "--config", config.to_str().expect("path")],
        "warn",
        &[
            "mcpwire: listening on http://",
            "mcpwire: listening on ws://",
        ],
        false,
    );
    let server = HttpServer::at(&l.addrs[0]);
    let r = http_post(&server, None, None, &initialize_body());
    assert_eq!(r.status, 401);
    for token in [rs256(&claims(|_| {})), API_KEY.to_owned()] {
        let r = http_post(&server, Some(&token), None, &initialize_body());
        assert_eq!(r.status, 200);
    }
    // The WebSocket listener opted out: no credential needed.
    let mut c = Conversation::new(Ws::connect(&l.addrs[1]));
    let r = c.request(1, "initialize", initialize_body()["params"].clone());
    assert!(r["result"]["serverInfo"].is_object(), "{r}");
    let _ = l.child.kill();
    let _ = l.child.wait();
}

/// `mcpwire list URL --bearer-env VAR` (and `--header`): the client presents the credential;
/// without it, or with a wrong one, the server's refusal says what to configure.
#[test]
fn the_client_sends_a_bearer_from_the_environment() {
    let flags = auth_flags("client-bearer");
    let server = HttpServer::start(&strs(&flags));
    let url = format!("http://{}{}", server.addr, server.path);
    let list = |env: &[(&str, &str)], extra: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"));
        cmd.args(["list", &url, "--timeout", "10"]).args(extra);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.output().expect("run mcpwire list")
    };
    let ok = list(
        &[("UPSTREAM_TOKEN", API_KEY)],
        &["--bearer-env", "UPSTREAM_TOKEN"],
    );
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("echo"));
    let header = format!("Authorization: Bearer {API_KEY}");
    let ok = list(&[], &["--header", &header]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let refused = list(
        &[("UPSTREAM_TOKEN", "wrong")],
        &["--bearer-env", "UPSTREAM_TOKEN"],
    );
    assert!(!refused.status.success());
    let missing = list(&[], &["--bearer-env", "SURELY_NOT_SET_ANYWHERE"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("SURELY_NOT_SET_ANYWHERE"));
}
