//! `[limits]` on every network wire of `mcpwire serve` (HTTP, WebSocket, gRPC, MCPB):
//! a caller over its per-identity rate is refused with the rate limit's error (HTTP 429 with
//! `Retry-After` and the JSON-RPC body, gRPC `RESOURCE_EXHAUSTED`, a JSON-RPC error on the
//! others) while another caller goes on; a client over its connections per IP is refused the
//! same way and served again once a connection closes. (The rates are per hour, so nothing
//! refills during a test: no timing is assumed. The limiters' timing is tested on the paused
//! clock in `crates/mcpwire/src/limits/tests.rs`.)

mod common;

use std::net::TcpStream;
use std::path::PathBuf;

use common::http::{ACCEPT_BOTH, HttpServer};
use common::listen;
use common::wires::{Conversation, Mcpb, Ws, grpc_call, grpc_call_with};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

const LISTENERS: &str = r#"[[listen]]
url = "http://127.0.0.1:0/mcp"
[[listen]]
url = "ws://127.0.0.1:0/mcp"
[[listen]]
url = "grpc://127.0.0.1:0"
[[listen]]
url = "mcpb://127.0.0.1:0"
"#;

const PREFIXES: [&str; 4] = [
    "mcpwire: listening on http://",
    "mcpwire: listening on ws://",
    "mcpwire: listening on grpc://",
    "mcpwire: listening on mcpb://",
];

/// Keys `k0`..`k4`: one per wire and one that is never limited by another's use.
fn key(n: usize) -> String {
    format!("limits-key-{n}-0123456789abcdef")
}

fn config(name: &str, rest: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("limits-{name}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    let text = format!("{LISTENERS}\n[backends.demo]\nnative = \"demo\"\n\n{rest}");
    std::fs::write(&path, text).expect("write config");
    path
}

fn start(path: &std::path::Path) -> common::Listening {
    listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &["serve", "--config", path.to_str().expect("path")],
        "warn",
        &PREFIXES,
        false,
    )
}

fn init_params() -> Value {
    json!({"protocolVersion":"2025-11-25","capabilities":{},
           "clientInfo":{"name":"limits-test","version":"1"}})
}

fn echo() -> Value {
    json!({"name": "echo", "arguments": {"text": "hi"}})
}

/// The rate limit's JSON-RPC error: −32600 naming the limit, with a retry time.
fn assert_rate_limited(error: &Value, limit: &str) {
    assert_eq!(error["code"], -32600, "{error}");
    assert_eq!(error["data"]["limit"], limit, "{error}");
    assert!(error["data"]["retryAfter"].as_u64() >= Some(1), "{error}");
}

/// Calls `echo` until refused (at most 10 times): the calls that went through, and the
/// refusal.
fn calls_until_refused(mut call: impl FnMut(i64) -> Result<(), Value>) -> (usize, Value) {
    for i in 0..10 {
        if let Err(refusal) = call(100 + i) {
            return (i as usize, refusal);
        }
    }
    panic!("no refusal within 10 calls");
}

fn http_post(
    server: &HttpServer,
    key: &str,
    session: Option<&str>,
    msg: &Value,
) -> common::http::Exchange {
    let bearer = format!("Bearer {key}");
    let mut h = vec![
        ("content-type", "application/json"),
        ("accept", ACCEPT_BOTH),
        ("authorization", bearer.as_str()),
    ];
    if let Some(s) = session {
        h.push(("mcp-session-id", s));
        h.push(("mcp-protocol-version", "2025-11-25"));
    }
    server.send("POST", &h, msg.to_string().as_bytes())
}

fn stateless_call(http: &HttpServer, id: i64, key: &str) -> common::http::Exchange {
    let bearer = format!("Bearer {key}");
    http.post_stateless_extra(
        id,
        "tools/call",
        echo(),
        json!({}),
        &[("authorization", &bearer)],
    )
}

#[test]
fn a_caller_over_its_rate_is_refused_on_every_wire_and_others_go_on() {
    let keys: String = (0..5)
        .map(|n| format!("[[auth.api_keys]]\nname = \"k{n}\"\nkey = \"{}\"\n", key(n)))
        .collect();
    let path = config(
        "rate",
        &format!("[auth]\n{keys}\n[limits]\nper_identity = \"3/h\"\n"),
    );
    let mut l = start(&path);

    // HTTP, a session of key 0: 429 with Retry-After and the JSON-RPC error.
    let http = HttpServer::at(&l.addrs[0]);
    let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":init_params()});
    let r = http_post(&http, &key(0), None, &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("session").to_owned();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    http_post(&http, &key(0), Some(&sid), &note);
    let mut retry_after = None;
    let (ok, refusal) = calls_until_refused(|id| {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":echo()});
        let r = http_post(&http, &key(0), Some(&sid), &msg);
        if r.status == 429 {
            retry_after = r.header("retry-after").map(str::to_owned);
            return Err(r.json()["error"].clone());
        }
        assert_eq!(r.status, 200);
        Ok(())
    });
    assert_eq!(ok, 3, "three calls within the rate");
    assert_rate_limited(&refusal, "identity");
    let secs: u64 = retry_after.expect("Retry-After").parse().expect("seconds");
    assert_eq!(Some(secs), refusal["data"]["retryAfter"].as_u64());
    // Stateless (2026-07-28) requests of the same caller share its bucket.
    let r = stateless_call(&http, 7, &key(0));
    assert_eq!(r.status, 429, "the same caller, statelessly");

    // WebSocket, key 1: a JSON-RPC error, the connection goes on.
    let bearer = format!("Bearer {}", key(1));
    let ws = Ws::connect_with(&l.addrs[1], &[("authorization", &bearer)]).expect("upgrade");
    let mut c = Conversation::new(ws);
    c.request(1, "initialize", init_params());
    c.notify("notifications/initialized", json!({}));
    let (ok, refusal) = calls_until_refused(|id| {
        let r = c.request(id, "tools/call", echo());
        r.get("error").map_or(Ok(()), |e| Err(e.clone()))
    });
    assert_eq!(ok, 3);
    assert_rate_limited(&refusal, "identity");
    assert!(
        c.request(50, "ping", json!({}))["result"].is_object(),
        "still served"
    );

    // gRPC, key 2: RESOURCE_EXHAUSTED with the error in the details.
    let md_value = format!("Bearer {}", key(2));
    let md = [("authorization", md_value.as_str())];
    let req = pb::CallToolRequest {
        name: "add".into(),
        ..Default::default()
    };
    let (ok, refusal) = calls_until_refused(|_| {
        match grpc_call_with::<pb::CallToolResponse>(&l.addrs[2], "CallTool", &req, &md) {
            Err(e) if e.status == 8 => Err(json!(format!("{:?}", e.details))),
            _ => Ok(()),
        }
    });
    assert_eq!(ok, 3);
    let details = refusal.as_str().expect("details");
    assert!(
        details.contains("-32600") && details.contains("Rate limited"),
        "{details}"
    );

    // MCPB, key 3: a JSON-RPC error in a Response frame.
    let mut c = Conversation::new(Mcpb::connect(&l.addrs[3]));
    let mut params = init_params();
    params["token"] = json!(key(3));
    let r = c.request(1, "initialize", params);
    assert!(r["result"]["sessionId"].is_string(), "{r}");
    c.notify("notifications/initialized", json!({}));
    let (ok, refusal) = calls_until_refused(|id| {
        let r = c.request(id, "tools/call", echo());
        r.get("error").map_or(Ok(()), |e| Err(e.clone()))
    });
    assert_eq!(ok, 3);
    assert_rate_limited(&refusal, "identity");

    // Key 4 is still served: every caller has its own bucket.
    let r = stateless_call(&http, 8, &key(4));
    assert_eq!(r.status, 200, "another caller");
    let _ = l.child.kill();
    let _ = l.child.wait();
}

/// Polls (bounded) until a connection from this address is accepted again on HTTP.
fn until_http_serves(http: &HttpServer) {
    for _ in 0..100 {
        if http.post_stateless(1, "ping", json!({})).status != 429 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("the connection slot was never given back");
}

#[test]
fn connections_per_ip_are_limited_on_every_wire() {
    let path = config("connections", "[limits]\nconnections_per_ip = 1\n");
    let mut l = start(&path);
    let http = HttpServer::at(&l.addrs[0]);
    until_http_serves(&http);

    // HTTP: one connection held, the next is answered 429 and closed.
    let host = l.addrs[0].split('/').next().expect("host:port");
    let held = TcpStream::connect(host).expect("connect");
    let mut r = None;
    for _ in 0..100 {
        // The held connection is accepted before the next one (one accept loop, in order).
        let x = http.post_stateless(2, "ping", json!({}));
        if x.status == 429 {
            r = Some(x);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let r = r.expect("a refusal while a connection is held");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_rate_limited(&r.json()["error"], "connections");
    drop(held);
    until_http_serves(&http);

    // WebSocket: the upgrade is refused 429.
    let first = Ws::connect(&l.addrs[1]);
    match Ws::connect_with(&l.addrs[1], &[]) {
        Err((status, _)) => assert_eq!(status, 429),
        Ok(_) => panic!("a second connection was upgraded"),
    }
    drop(first);
    until_http_serves(&http);

    // gRPC: RPCs on a connection over the limit answer RESOURCE_EXHAUSTED.
    let held = TcpStream::connect(&l.addrs[2]).expect("connect");
    let mut refused = None;
    for _ in 0..100 {
        match grpc_call::<pb::ListToolsResponse>(
            &l.addrs[2],
            "ListTools",
            &pb::ListToolsRequest::default(),
        ) {
            Err(e) if e.status == 8 => {
                refused = Some(e);
                break;
            }
            _ => std::thread::sleep(std::time::Duration::from_millis(20)),
        }
    }
    let refused = refused.expect("RESOURCE_EXHAUSTED while a connection is held");
    assert!(
        format!("{:?}", refused.details).contains("connections"),
        "{refused:?}"
    );
    drop(held);
    until_http_serves(&http);
    assert!(
        grpc_call::<pb::ListToolsResponse>(
            &l.addrs[2],
            "ListTools",
            &pb::ListToolsRequest::default()
        )
        .is_ok()
    );
    until_http_serves(&http);

    // MCPB: the first request is answered with the error, then the connection closes.
    let held = Mcpb::connect(&l.addrs[3]);
    let mut c = Conversation::new(Mcpb::connect(&l.addrs[3]));
    let r = c.request(1, "initialize", init_params());
    assert_rate_limited(&r["error"], "connections");
    drop(held);
    let _ = l.child.kill();
    let _ = l.child.wait();
}
