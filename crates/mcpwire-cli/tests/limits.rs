//! `[limits]` on every network wire of `mcpwire serve` (HTTP, WebSocket, gRPC, MCPB):
//! a caller over its per-identity rate is refused with the rate limit's error (HTTP 429 with
//! `Retry-After` and the JSON-RPC body, gRPC `RESOURCE_EXHAUSTED`, a JSON-RPC error on the
//! others) while another caller goes on; a client over its connections per IP is refused the
//! same way and served again once a connection closes. (The rates are per hour, so nothing
//! refills during a test: no timing is assumed. The limiters' timing is tested on the paused
//! clock in `crates/mcpwire-server/src/limits/tests.rs`.)

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::http::HttpServer;
use common::listen;
use common::wires::{Conversation, Mcpb, Ws, grpc_call, grpc_call_with};
use mcpwire_testkit::wait::wait_for;
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

/// Calls `echo` over a conversation until refused (see [`calls_until_refused`]).
fn echo_until_refused<P: common::wires::Peer>(c: &mut Conversation<P>) -> (usize, Value) {
    calls_until_refused(|id| {
        let r = c.request(id, "tools/call", echo());
        r.get("error").map_or(Ok(()), |e| Err(e.clone()))
    })
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
    let r = http.post_as(Some(&key(0)), None, &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("session").to_owned();
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    http.post_as(Some(&key(0)), Some(&sid), &note);
    let mut retry_after = None;
    let (ok, refusal) = calls_until_refused(|id| {
        let msg = json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":echo()});
        let r = http.post_as(Some(&key(0)), Some(&sid), &msg);
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
    let (ok, refusal) = echo_until_refused(&mut c);
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
    let (ok, refusal) = echo_until_refused(&mut c);
    assert_eq!(ok, 3);
    assert_rate_limited(&refusal, "identity");

    // Key 4 is still served: every caller has its own bucket.
    let r = stateless_call(&http, 8, &key(4));
    assert_eq!(r.status, 200, "another caller");
    let _ = l.child.kill();
    let _ = l.child.wait();
}

/// Tries `f` until it gives a value (bounded: a connection that just closed may still hold
/// its slot for a moment, until the server has seen it close).
fn eventually<T>(f: impl FnMut() -> Option<T>) -> T {
    wait_for(Duration::from_secs(3), "a connection served", f)
}

/// An MCPB connection whose `initialize` was answered: it holds a slot.
fn mcpb_held(addr: &str) -> Conversation<Mcpb> {
    eventually(|| {
        let mut c = Conversation::new(Mcpb::connect(addr));
        let r = c.request(1, "initialize", init_params());
        r.get("result").is_some().then_some(c)
    })
}

#[test]
fn connections_per_ip_are_limited_on_every_wire() {
    // One connection per address, counted across every listener: a connection held on one
    // wire (and seen answered, so it is counted) makes the next one on any wire a refusal.
    let path = config("connections", "[limits]\nconnections_per_ip = 1\n");
    let mut l = start(&path);
    let http = HttpServer::at(&l.addrs[0]);
    let mut held = eventually(|| {
        let mut c = Conversation::new(Ws::connect_with(&l.addrs[1], &[]).ok()?);
        Some(c.request(1, "ping", json!({}))).filter(|r| r.get("result").is_some())?;
        Some(c)
    });

    // HTTP: 429 with Retry-After and the JSON-RPC error, then the connection closes.
    let r = http.post_stateless(2, "ping", json!({}));
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_rate_limited(&r.json()["error"], "connections");

    // gRPC: RESOURCE_EXHAUSTED with the error in the details.
    let refused = grpc_call::<pb::ListToolsResponse>(
        &l.addrs[2],
        "ListTools",
        &pb::ListToolsRequest::default(),
    )
    .expect_err("refused");
    assert_eq!(refused.status, 8, "{refused:?}");
    assert!(
        format!("{:?}", refused.details).contains("connections"),
        "{refused:?}"
    );

    // MCPB: the first request is answered with the error, then the connection closes.
    let mut c = Conversation::new(Mcpb::connect(&l.addrs[3]));
    let r = c.request(1, "initialize", init_params());
    assert_rate_limited(&r["error"], "connections");

    // The held connection is still served; once it closes, its slot is given back.
    assert!(held.request(2, "ping", json!({}))["result"].is_object());
    drop(held);
    let held = mcpb_held(&l.addrs[3]);

    // WebSocket: the upgrade is refused 429.
    match Ws::connect_with(&l.addrs[1], &[]) {
        Err((status, _)) => assert_eq!(status, 429),
        Ok(_) => panic!("a second connection was upgraded"),
    }
    drop(held);
    let ok = eventually(|| {
        grpc_call::<pb::ListToolsResponse>(
            &l.addrs[2],
            "ListTools",
            &pb::ListToolsRequest::default(),
        )
        .ok()
    });
    assert!(!ok.tools.is_empty());
    let _ = l.child.kill();
    let _ = l.child.wait();
}

/// `mcpwire demo FLAGS` over stdio, `echo` called until refused: the conversation, the
/// calls that went through and the refusal.
fn stdio_echo_until_refused(flags: &[&str]) -> (Conversation<common::wires::Stdio>, usize, Value) {
    let args: Vec<&str> = std::iter::once("demo")
        .chain(flags.iter().copied())
        .collect();
    let mut c = Conversation::new(common::proc(&args));
    c.request(1, "initialize", init_params());
    c.notify("notifications/initialized", json!({}));
    let (ok, refusal) = echo_until_refused(&mut c);
    (c, ok, refusal)
}

#[test]
fn stdio_is_the_anonymous_caller_and_tools_have_their_own_rate() {
    let (mut c, ok, refusal) = stdio_echo_until_refused(&["--rate-per-tool", "2/h"]);
    assert_eq!(ok, 2, "two calls of echo");
    assert_rate_limited(&refusal, "tool");
    // Another tool has its own rate.
    let add = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
    let r = c.request(20, "tools/call", add);
    assert!(r.get("result").is_some(), "{r}");

    // The anonymous caller's own rate: every request that reaches the backend counts.
    let (_, ok, refusal) = stdio_echo_until_refused(&["--rate-per-identity", "2/h"]);
    assert_eq!(ok, 2, "the server's own tool listing is not counted");
    assert_rate_limited(&refusal, "identity");
}

#[test]
fn limits_errors_name_file_line_and_key() {
    let path = config("bad", "[limits]\nper_ip = \"10/week\"\n");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"))
        .args(["serve", "--config", path.to_str().expect("path"), "--check"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcpwire.toml:14:")
            && err.contains("limits.per_ip")
            && err.contains("unknown unit `week`"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"))
        .args(["demo", "--rate-per-ip", "fast"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rate-per-ip"));
}
