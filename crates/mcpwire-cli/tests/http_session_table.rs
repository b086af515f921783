//! The bounded session table through the binary (issue 10, defect 7): clients that never
//! send DELETE must not lock newcomers out. A full table evicts the least recently used idle
//! session, counts it, and answers 503 only when every session is busy.

mod common;

use common::http::{Exchange, HttpServer};
use serde_json::json;

fn tools_list(s: &HttpServer, sid: &str) -> u16 {
    s.post(
        Some(sid),
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    )
    .status
}

/// Opens session `sid`'s standalone GET stream and makes sure the session has taken it:
/// a list change triggered through that session arrives on it.
fn open_stream(s: &HttpServer, sid: &str) -> Exchange {
    let mut get = s.send(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", sid),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        b"",
    );
    assert_eq!(get.status, 200);
    let r = s.post(
        Some(sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
                "params":{"name":"test_trigger_tool_change","arguments":{}}}),
    );
    assert_eq!(r.status, 200);
    loop {
        let (_, event) = get.next_event().expect("the stream stays open");
        if event["method"] == "notifications/tools/list_changed" {
            return get;
        }
    }
}

#[test]
fn a_full_table_evicts_the_least_recently_used_idle_session() {
    let s = HttpServer::start_logging(&["--max-sessions", "2"], "warn,mcpwire_server::http=info");
    let a = s.initialize();
    let b = s.initialize();
    assert_eq!(tools_list(&s, &a), 200); // a is now used more recently than b
    // A third client does not get 503: b, idle and least recently used, makes room.
    let c = s.initialize();
    assert_eq!(tools_list(&s, &b), 404, "b was evicted");
    assert_eq!(tools_list(&s, &a), 200);
    assert_eq!(tools_list(&s, &c), 200);
    let line = s
        .wait_for_log("evicted the least recently used idle session")
        .expect("the eviction is logged");
    assert!(line.contains("evicted_total=1"), "{line}");

    // With a stream open on each, every session is busy: now a newcomer is refused.
    let _ga = open_stream(&s, &a);
    let _gc = open_stream(&s, &c);
    let r = s.post(
        None,
        &json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"test","version":"1"}}}),
    );
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["error"]["code"], -32603);
    assert_eq!(tools_list(&s, &a), 200, "busy sessions are kept");
    assert_eq!(tools_list(&s, &c), 200);
}
