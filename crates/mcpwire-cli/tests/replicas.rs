//! Two `mcpwire serve` processes as replicas of one gateway (`[cluster]` over a real
//! `redis-server`, skipped with a message when it is not installed and failing under CI):
//! a session opened on one continues on the other with requests alternating, bound to the
//! identity that opened it, and a `[limits]` rate holds across both (one budget, not one per
//! replica). Rates are per hour, so nothing refills during the test.

mod common;

use std::path::PathBuf;

use common::http::HttpServer;
use common::listen;
use mcpwire_store::SealKeys;
use mcpwire_store::testing::RedisServer;
use serde_json::{Value, json};

const ALICE: &str = "replica-key-alice-0123456789";
const BOB: &str = "replica-key-bob-0123456789ab";

fn config(redis: &RedisServer, key: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replicas");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    let text = format!(
        r#"[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.demo]
native = "demo"

[[auth.api_keys]]
name = "alice"
key = "{ALICE}"
[[auth.api_keys]]
name = "bob"
key = "{BOB}"

[limits]
per_identity = "8/h"

[cluster]
store = "{}"
session_keys = ["{key}"]
recheck_secs = 0
"#,
        redis.url()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

fn replica(path: &std::path::Path) -> common::Listening {
    listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &["serve", "--config", path.to_str().expect("path")],
        "warn",
        &["mcpwire: listening on http://"],
        false,
    )
}

fn echo(id: i64) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":"echo","arguments":{"text":"hi"}}})
}

#[test]
fn a_session_and_a_rate_limit_span_two_replicas() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let path = config(&redis, &SealKeys::generate());
    let mut a = replica(&path);
    let mut b = replica(&path);
    let replicas = [HttpServer::at(&a.addrs[0]), HttpServer::at(&b.addrs[0])];

    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"replicas-test","version":"1"}}});
    let r = replicas[0].post_as(Some(ALICE), None, &init);
    assert_eq!(r.status, 200);
    let sid = r.header("mcp-session-id").expect("a session id").to_owned();
    // Replica B never saw the initialize: it continues the session from the sealed id.
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(
        replicas[1].post_as(Some(ALICE), Some(&sid), &note).status,
        202
    );

    // Another caller with alice's session id: no such session, on either replica.
    for r in &replicas {
        assert_eq!(r.post_as(Some(BOB), Some(&sid), &echo(99)).status, 404);
    }

    // Alternating calls: 8 per hour for alice in all, whichever replica answers.
    let mut served = [0, 0];
    let mut refused = None;
    for i in 0..12 {
        let side = i % 2;
        let r = replicas[side].post_as(Some(ALICE), Some(&sid), &echo(i as i64 + 1));
        match r.status {
            200 => {
                let body = r.json();
                assert_eq!(body["result"]["content"][0]["text"], "hi", "{body}");
                served[side] += 1;
            }
            429 => {
                let body = r.json();
                assert_eq!(body["error"]["data"]["limit"], "identity", "{body}");
                refused = Some(i);
                break;
            }
            other => panic!("unexpected status {other}"),
        }
    }
    assert_eq!(
        served,
        [4, 4],
        "each replica served half of one shared budget"
    );
    assert_eq!(refused, Some(8), "the ninth call is over the shared rate");
    // Bob has a budget of his own, on either replica.
    let r = replicas[1].post_as(Some(BOB), None, &init);
    assert_eq!(r.status, 200);

    for l in [&mut a, &mut b] {
        let _ = l.child.kill();
        let _ = l.child.wait();
    }
}
