//! The bb-1.0 dialect end to end over stdio: its codes against the demo in-process, its
//! telemetry on the binary's stderr.

mod common;

use common::StdioDemo;
use serde_json::json;

#[test]
fn bb_dialect_error_codes() {
    let mut p = StdioDemo::start();
    let r = p.request(1, "tools/list", json!({}));
    assert_eq!(r["error"]["code"], -32003, "not initialized: {r}");
    let r = p.request(2, "initialize", json!({"protocolVersion": "1.0"}));
    assert_eq!(r["error"]["code"], -32602, "clientInfo required: {r}");

    let mut p = StdioDemo::start();
    let r = p.request(1, "initialize", json!({"protocolVersion": "1.0", "clientInfo": {"name": "claude-code", "version": "1.0.0"}}));
    let res = &r["result"];
    assert_eq!(res["protocolVersion"], "1.0");
    assert_eq!(res["capabilities"]["tools"], true);
    assert!(res["capabilities"]["dynamicToolRegistration"].is_boolean());
    assert_eq!(res["serverInfo"]["name"], "mcpwire-everything");
    let tools = p.request(2, "tools/list", json!({}));
    assert!(
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo")
    );

    let r = p.request(
        3,
        "tools/call",
        json!({"name": "nonexistent", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32000, "{r}");
    let r = p.request(
        4,
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x"}}),
    );
    assert_eq!(r["error"]["code"], -32002, "{r}");
    assert_eq!(r["error"]["data"]["tool"], "add");
    let r = p.request(
        5,
        "tools/call",
        json!({"name": "test_error_handling", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert_eq!(r["error"]["data"]["tool"], "test_error_handling");
    assert!(
        r["error"]["data"]["error"]
            .as_str()
            .unwrap()
            .contains("intentionally")
    );
    let r = p.request(
        6,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    let r = p.request(7, "prompts/list", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    p.finish();
}

#[test]
fn bb_dialect_emits_telemetry_on_stderr() {
    let log = std::env::temp_dir().join(format!("mcpwire-bb-telemetry-{}.log", std::process::id()));
    let mut p = common::proc_logging(&["demo"], &log);
    p.request(
        1,
        "initialize",
        json!({"protocolVersion": "1.0", "clientInfo": {"name": "t"}}),
    );
    p.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    p.request(3, "tools/call", json!({"name": "nope", "arguments": {}}));
    assert!(p.finish().success());
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let received = text
        .lines()
        .filter(|l| l.contains("request received"))
        .count();
    assert!(received >= 2, "{text}");
    let done: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("request completed"))
        .collect();
    assert!(
        done.iter().any(|l| l.contains("method=tools/call")
            && l.contains("id=2")
            && l.contains("outcome=ok")
            && l.contains("duration_us=")),
        "{text}"
    );
    assert!(
        done.iter()
            .any(|l| l.contains("id=3") && l.contains("outcome=-32000")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.contains("tool invocation")
            && l.contains("tool=echo")
            && l.contains("outcome=\"ok\"")),
        "{text}"
    );
}
