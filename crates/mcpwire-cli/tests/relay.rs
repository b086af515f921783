//! The gateway's stdio relay (`docs/design/gateway.md` § The relay): a stdio client's plain
//! `tools/call`s reach the session's own stdio upstream as raw frames and come back as
//! raw frames. Every test runs the same conversation through a gateway that relays and
//! through one that cannot (`relay = false` on the backend: the general path) and
//! compares what the client saw, with the real `mcpwire demo` as the upstream (or a
//! scripted one where a crash is needed). The gateway runs in this process, so the tests
//! can also tell that the relay did carry the calls (`UpstreamBackend::relayed_calls`).

mod peers;
mod relay_conversation;

use mcpwire::Service;
use mcpwire_testkit::wait::wait_for_async;
use relay_conversation::*;
use serde_json::{Value, json};

/// Results, tool errors, protocol errors, logs and the upstream's sampling request during
/// a call: the client sees exactly what the general path gives it, and the relay carried
/// the relayable calls.
#[tokio::test]
async fn relayed_calls_are_answered_as_the_general_path_answers_them() {
    let (general, none) = transcript(demo(), false).await;
    let (relayed, count) = transcript(demo(), true).await;
    assert_eq!(none, 0, "a gateway with `relay = false` relays nothing");
    // Calls 2–11 (the first opens the session; `_meta`, the escaped name, array
    // arguments and bad input go the general way).
    assert_eq!(count, 10, "the relay carried the plain calls");
    assert_eq!(relayed, general);
    // The conversation did meet what it is meant to.
    let has = |pred: &dyn Fn(&Value) -> bool| relayed.iter().any(pred);
    assert!(has(&|m| m["method"] == "notifications/message"), "logs");
    assert!(has(&|m| m["method"] == "sampling/createMessage"), "an ask");
    assert!(has(
        &|m| m["result"]["content"][0]["text"] == "LLM response: sampled"
    ));
    assert!(has(&|m| m["id"] == "str-3" && m["result"].is_object()));
    assert!(has(&|m| m["id"] == 7 && m["error"]["code"] == -32602));
}

/// A client's cancellation of a relayed call reaches the upstream, naming the request as
/// the upstream knows it; the session goes on.
#[tokio::test]
async fn cancelling_a_relayed_call_tells_the_upstream() {
    let dir = std::env::temp_dir().join(format!("mcpwire-relay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let log = dir.join("upstream-input.log");
    let _ = std::fs::remove_file(&log);
    let script = format!("tee -a '{}' | exec '{}' demo", log.display(), peers::bin());
    let argv = vec!["sh".to_owned(), "-c".to_owned(), script];
    let (backend, service) = gateway(argv, true).await;
    let mut client = opened(&service).await;
    client
        .send_line(&tool_call(&json!(2), "test_slow", json!({"seconds": 600})))
        .await;
    eventually("the slow call was relayed", || backend.relayed_calls() == 1).await;
    client.cancel(2).await;
    let told = async || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let slow = lines
            .iter()
            .find(|m| m["params"]["name"] == "test_slow")
            .map(|m| m["id"].clone());
        let cancelled = lines
            .iter()
            .find(|m| m["method"] == "notifications/cancelled")
            .map(|m| m["params"]["requestId"].clone());
        slow.zip(cancelled)
    };
    let (slow, cancelled) = wait_for_async(WAIT, "the upstream was told", told).await;
    assert_eq!(cancelled, slow, "the cancellation names the upstream's id");
    assert_ne!(slow, json!(2), "the upstream's id is the gateway's own");
    // No answer for the cancelled call; the next call is answered.
    client.echo_answers_alone(3, "after").await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A stdio server in `sh` that answers `initialize` and its first two `tools/call`s, then
/// exits with status 3 on the next one.
fn crashing() -> Vec<String> {
    let id = r#"id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"#;
    let init = r#"{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n"#;
    let answer =
        r#"{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}\n"#;
    let script = format!(
        "read l; {id}; printf '{init}' \"$id\"; read l; \
         read l; {id}; printf '{answer}' \"$id\"; \
         read l; {id}; printf '{answer}' \"$id\"; read l; exit 3"
    );
    vec!["sh".into(), "-c".into(), script]
}

/// The upstream dies during a relayed call: the call gets the general path's error, and
/// the next call works (on a new upstream session).
#[tokio::test]
async fn an_upstream_crash_during_a_relayed_call_is_the_general_paths_error() {
    let mut outcomes = Vec::new();
    for relay in [false, true] {
        let (backend, service) = gateway(crashing(), relay).await;
        let mut client = Client::connect(&service).await;
        let mut seen = Vec::new();
        for id in 1..=4 {
            let line = tool_call(&json!(id), "echo", json!({"text": "x"}));
            seen.extend(client.call(&line, json!(id)).await);
            if id == 2 {
                // The second call was relayed (the first opened the session), and so is
                // the third, during which the upstream exits.
                assert_eq!(backend.relayed_calls(), u64::from(relay));
            }
        }
        let error = &seen[2]["error"];
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains("exited with status 3")),
            "{seen:?}"
        );
        assert_eq!(seen[3]["result"]["content"][0]["text"], "ok", "{seen:?}");
        outcomes.push(seen);
    }
    assert_eq!(outcomes[0], outcomes[1]);
}

/// A client that ends its input while relayed calls run still gets their answers.
#[tokio::test]
async fn relayed_calls_are_answered_after_the_client_input_ends() {
    let (backend, service) = gateway(demo(), true).await;
    let mut client = opened(&service).await;
    for id in 2..=9 {
        client
            .send_line(&tool_call(&json!(id), "test_slow", json!({"seconds": 0.2})))
            .await;
    }
    eventually("the calls were relayed", || backend.relayed_calls() == 8).await;
    client.io.close_input().await;
    let mut answered = Vec::new();
    while let Some(line) = client.io.recv_line().await {
        let msg: Value = serde_json::from_str(&line).expect("json");
        assert_eq!(msg["result"]["content"][0]["text"], "done", "{msg}");
        answered.push(msg["id"].as_i64().expect("id"));
    }
    answered.sort_unstable();
    assert_eq!(answered, (2..=9).collect::<Vec<_>>());
}

/// A client connected to `service` whose session has made its first call (so its upstream
/// session is up and the next calls can be relayed).
async fn opened(service: &Service) -> Client {
    let mut client = Client::connect(service).await;
    client
        .call(
            &tool_call(&json!(1), "echo", json!({"text": "open"})),
            json!(1),
        )
        .await;
    client
}
