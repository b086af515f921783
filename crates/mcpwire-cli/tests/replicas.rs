//! Two `mcpwire serve` processes as replicas of one gateway (`[cluster]` over a real
//! `redis-server`, skipped with a message when it is not installed and failing under CI):
//! a session opened on one continues on the other with requests alternating, bound to the
//! identity that opened it, and a `[limits]` rate holds across both (one budget, not one per
//! replica; rates are per hour, so nothing refills during the test). A task created on one
//! replica waits for input, is answered and completes through the other; a replica killed
//! with SIGKILL leaves its running task `failed`, not `working` forever.

mod common;

use std::path::PathBuf;
use std::time::Duration;

use common::http::{Exchange, HttpServer};
use common::listen;
use mcpwire_store::SealKeys;
use mcpwire_store::testing::RedisServer;
use mcpwire_testkit::wait::poll_for;
use serde_json::{Value, json};

const ALICE: &str = "replica-key-alice-0123456789";
const BOB: &str = "replica-key-bob-0123456789ab";

fn config(redis: &RedisServer, key: &str, name: &str, rest: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("replicas-{name}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    let text = format!(
        r#"[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.demo]
native = "demo"

[cluster]
store = "{}"
session_keys = ["{key}"]
recheck_secs = 0

{rest}
"#,
        redis.url()
    );
    std::fs::write(&path, text).expect("write config");
    path
}

fn replica(path: &std::path::Path) -> common::Listening {
    start(path, &["mcpwire: listening on http://"])
}

/// A replica with an admin listener: `addrs[1]` is its admin address.
fn replica_with_admin(path: &std::path::Path) -> common::Listening {
    let mut l = start(
        path,
        &["mcpwire: listening on http://", "mcpwire: admin on http://"],
    );
    l.addrs[1] = l.addrs[1].split(' ').next().unwrap_or_default().to_owned();
    l
}

fn start(path: &std::path::Path, prefixes: &[&str]) -> common::Listening {
    listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &["serve", "--config", path.to_str().expect("path")],
        "warn",
        prefixes,
        false,
    )
}

/// The value of `metric` (with its labels, as Prometheus prints them) in a scrape.
fn metric(admin: &str, metric: &str) -> Option<u64> {
    let text = Exchange::get(admin, "/metrics").text();
    text.lines()
        .find_map(|l| l.strip_prefix(metric)?.trim().parse().ok())
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
    let rest = format!(
        "[[auth.api_keys]]\nname = \"alice\"\nkey = \"{ALICE}\"\n\
         [[auth.api_keys]]\nname = \"bob\"\nkey = \"{BOB}\"\n\
         [limits]\nper_identity = \"8/h\"\n[admin]\nlisten = \"127.0.0.1:0\"\n"
    );
    let path = config(&redis, &SealKeys::generate(), "session", &rest);
    let mut a = replica_with_admin(&path);
    let mut b = replica_with_admin(&path);
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

    // What each replica counted: A minted alice's id; B continued it once and refused it
    // to bob; B minted bob's.
    let sessions = |l: &common::Listening, event: &str| {
        let name = format!("mcpwire_cluster_sessions_total{{event=\"{event}\"}}");
        metric(&l.addrs[1], &name)
    };
    assert_eq!(sessions(&a, "started"), Some(1));
    assert_eq!(sessions(&b, "resumed"), Some(1));
    assert_eq!(sessions(&b, "started"), Some(1));
    assert!(sessions(&b, "refused").is_some_and(|n| n >= 1));

    for l in [&mut a, &mut b] {
        let _ = l.child.kill();
        let _ = l.child.wait();
    }
}

/// The client capabilities of a 2026-07-28 client declaring the tasks extension (and
/// elicitation, which `confirm_delete` asks for).
fn with_tasks() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// `tasks/get` on `replica` until the task is in `status` (bounded: 15 s).
fn wait_for(replica: &HttpServer, id: &str, status: &str) -> Value {
    let (mut last, mut n) = (Value::Null, 1000);
    let got = poll_for(Duration::from_secs(15), || {
        n += 1;
        let r = replica.post_stateless_with(n, "tasks/get", json!({"taskId": id}), with_tasks());
        assert_eq!(r.status, 200);
        last = r.json();
        (last["result"]["status"] == status).then(|| last["result"].clone())
    });
    got.unwrap_or_else(|| panic!("task {id} never reached {status}: {last}"))
}

/// `confirm_delete` (a task asking for confirmation) started on `replica`; its task id.
fn start_confirm(replica: &HttpServer, id: i64) -> String {
    let call = json!({"name": "confirm_delete", "arguments": {"filename": "notes.txt"}});
    let r = replica.post_stateless_with(id, "tools/call", call, with_tasks());
    assert_eq!(r.status, 200);
    let created = r.json();
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned()
}

#[test]
fn tasks_are_answered_by_any_replica_and_a_killed_one_fails_its_own() {
    let Some(redis) = RedisServer::start() else {
        return;
    };
    let path = config(&redis, &SealKeys::generate(), "tasks", "");
    let mut a = replica(&path);
    let mut b = replica(&path);
    let (on_a, on_b) = (HttpServer::at(&a.addrs[0]), HttpServer::at(&b.addrs[0]));

    // Created on A; B sees it wait for input, relays the answer, and reads the result.
    let task = start_confirm(&on_a, 1);
    let waiting = wait_for(&on_b, &task, "input_required");
    assert!(waiting["inputRequests"]["confirm"].is_object(), "{waiting}");
    let answer = json!({"taskId": task, "inputResponses": {
        "confirm": {"action": "accept", "content": {"confirm": true}}}});
    let r = on_b.post_stateless_with(2, "tasks/update", answer, with_tasks());
    assert_eq!(r.status, 200);
    let done = wait_for(&on_b, &task, "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "Deleted notes.txt",
        "{done}"
    );

    // Another task waits on A; A is killed: B answers it failed within the executor
    // timeout (the polling is bounded, not timed).
    let task = start_confirm(&on_a, 3);
    wait_for(&on_b, &task, "input_required");
    let _ = a.child.kill();
    let _ = a.child.wait();
    let failed = wait_for(&on_b, &task, "failed");
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped")),
        "{failed}"
    );
    let _ = b.child.kill();
    let _ = b.child.wait();
}
