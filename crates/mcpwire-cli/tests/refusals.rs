//! Refused requests leave no trace (issue 10, defects 3, 4 and 6), through the demo served
//! in-process on every JSON-RPC wire: stdio, WebSocket text, MCPB and Streamable HTTP
//! (stateful and, where it applies, stateless).
//!
//! - A failed `initialize` does not initialize: the next, valid one is answered as the
//!   handshake (not "already initialized"), and nothing else is served before it.
//! - `tools/call` params that break the request's own schema (`arguments` not an object,
//!   `name` not a string) are −32602; arguments that break the *tool's* schema stay an
//!   `isError` result (bb-1.0: −32002).
//! - A refused `resources/subscribe` does not subscribe: updates of that resource never
//!   reach the client. (The refusal here is the in-flight limit, with a call held open by
//!   a pending sampling ask so the order is deterministic.)

mod common;

use common::http::HttpServer;
use common::wires::{Conversation, Mcpb, Peer, Ws};
use common::{Demo, StdioDemo};
use mcpwire_testkit::serve;
use serde_json::{Value, json};

const WATCHED: &str = "test://watched-resource";
const OTHER: &str = "test://static-text";

fn code(r: &Value) -> i64 {
    r["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {r}"))
}

fn bb_initialize(client_info: bool) -> Value {
    let mut p = json!({"protocolVersion": "1.0"});
    if client_info {
        p["clientInfo"] = json!({"name": "claude-code", "version": "1.0.0"});
    }
    p
}

fn initialize_params(version: &str, capabilities: Value) -> Value {
    json!({"protocolVersion": version, "capabilities": capabilities,
           "clientInfo": {"name": "test", "version": "1"}})
}

// ---------------------------------------------------------------------------------------
// The scenarios, over any JSON-RPC connection.
// ---------------------------------------------------------------------------------------

/// Defect 3, bb-1.0: `initialize` without `clientInfo` is refused and leaves the
/// connection uninitialized; a valid one then succeeds.
fn failed_bb_initialize_does_not_initialize(p: impl Peer) {
    let mut c = Conversation::new(p);
    let r = c.request(1, "initialize", bb_initialize(false));
    assert_eq!(code(&r), -32602, "clientInfo is required: {r}");
    let r = c.request(2, "tools/list", json!({}));
    assert_eq!(code(&r), -32003, "still not initialized: {r}");
    let r = c.request(3, "initialize", bb_initialize(true));
    assert_eq!(r["result"]["protocolVersion"], "1.0", "{r}");
    let r = c.request(4, "tools/list", json!({}));
    assert!(r["result"]["tools"].is_array(), "{r}");
}

/// Defect 3, standard MCP: unreadable `initialize` params are refused and leave the
/// connection uninitialized; a valid `initialize` then succeeds.
fn failed_initialize_does_not_initialize(p: impl Peer) {
    let mut c = Conversation::new(p);
    let r = c.request(1, "initialize", json!({"protocolVersion": 20251125}));
    assert_eq!(code(&r), -32602, "{r}");
    let r = c.request(2, "tools/list", json!({}));
    assert_eq!(code(&r), -32003, "still not initialized: {r}");
    let r = c.request(3, "initialize", initialize_params("2025-11-25", json!({})));
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25", "{r}");
    let r = c.request(4, "initialize", initialize_params("2025-11-25", json!({})));
    assert_eq!(code(&r), -32600, "a second initialize is refused: {r}");
}

/// Defect 4: malformed `tools/call` params are −32602; a tool-schema violation is an
/// `isError` result (bb-1.0: −32002).
fn malformed_tool_calls_are_invalid_params(p: impl Peer, bb: bool) {
    let mut c = Conversation::new(p);
    let init = if bb {
        bb_initialize(true)
    } else {
        initialize_params("2025-11-25", json!({}))
    };
    assert!(c.request(0, "initialize", init)["result"].is_object());
    let malformed = [
        json!({"name": "echo", "arguments": "text=hi"}),
        json!({"name": "echo", "arguments": ["hi"]}),
        json!({"name": "echo", "arguments": 7}),
        json!({"name": 5, "arguments": {"text": "hi"}}),
        json!({"name": ["echo"], "arguments": {"text": "hi"}}),
    ];
    for (i, params) in malformed.into_iter().enumerate() {
        let r = c.request(10 + i as i64, "tools/call", params.clone());
        assert_eq!(code(&r), -32602, "{params}: {r}");
    }
    let r = c.request(
        20,
        "tools/call",
        json!({"name": "add", "arguments": {"a": "x"}}),
    );
    if bb {
        assert_eq!(code(&r), -32002, "{r}");
    } else {
        assert_eq!(r["result"]["isError"], true, "{r}");
    }
    let r = c.request(
        21,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
}

fn is_update_of(m: &Value, uri: &str) -> bool {
    m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri
}

/// Defect 6, on a server started with `--max-in-flight 1`: a subscribe refused by the
/// in-flight limit does not subscribe.
fn refused_subscribe_does_not_subscribe(p: impl Peer) {
    let mut c = Conversation::new(p);
    let init = initialize_params("2025-11-25", json!({"sampling": {}}));
    assert!(c.request(0, "initialize", init)["result"].is_object());
    c.notify("notifications/initialized", json!({}));
    // Hold the only slot: a call waiting for our answer to its sampling ask.
    c.peer
        .send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                       "params":{"name":"test_sampling","arguments":{"prompt":"hi"}}}));
    let ask = c.until(|m| m["method"] == "sampling/createMessage");
    let r = c.request(2, "resources/subscribe", json!({"uri": WATCHED}));
    assert_eq!(code(&r), -32600, "over the in-flight limit: {r}");
    c.peer.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}));
    let r = c.response(1);
    assert!(r["result"]["content"].is_array(), "{r}");
    // A subscription that was accepted, as the control.
    let r = c.request(3, "resources/subscribe", json!({"uri": OTHER}));
    assert!(r["result"].is_object(), "{r}");
    for (id, uri) in [(4, WATCHED), (5, OTHER)] {
        let r = c.request(
            id,
            "tools/call",
            json!({"name":"test_trigger_resource_update","arguments":{"uri": uri}}),
        );
        assert!(r["result"]["content"].is_array(), "{r}");
    }
    // Updates reach a session in the order they happened: one for the refused
    // subscription would come before the control's.
    c.until(|m| is_update_of(m, OTHER));
    assert!(
        !c.seen.iter().any(|m| is_update_of(m, WATCHED)),
        "an update for a refused subscription arrived: {:?}",
        c.seen
    );
}

// ---------------------------------------------------------------------------------------
// Defect 3: a failed initialize does not initialize.
// ---------------------------------------------------------------------------------------

#[test]
fn failed_initialize_on_stdio() {
    failed_bb_initialize_does_not_initialize(StdioDemo::start());
    failed_initialize_does_not_initialize(StdioDemo::start());
}

#[test]
fn failed_initialize_on_websocket_and_mcpb() {
    let ws = Demo::serve(serve::ws(), |_| {});
    failed_bb_initialize_does_not_initialize(Ws::connect(&ws.url()));
    failed_initialize_does_not_initialize(Ws::connect(&ws.url()));
    let mcpb = Demo::serve(serve::mcpb(), |_| {});
    failed_bb_initialize_does_not_initialize(Mcpb::connect(&mcpb.addr()));
    failed_initialize_does_not_initialize(Mcpb::connect(&mcpb.addr()));
}

#[test]
fn failed_initialize_over_http_leaves_no_session() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let init = |id: i64, params: Value| {
        s.post(
            None,
            &json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":params}),
        )
    };
    for (id, params) in [
        (1, bb_initialize(false)),
        (2, json!({"protocolVersion": 20251125})),
    ] {
        let r = init(id, params);
        assert_eq!(r.status, 200);
        assert!(
            r.header("mcp-session-id").is_none(),
            "a refused initialize opened a session"
        );
        assert_eq!(code(&r.json()), -32602);
    }
    let r = init(3, bb_initialize(true));
    let sid = r.header("mcp-session-id").expect("a session").to_owned();
    assert_eq!(r.json()["result"]["protocolVersion"], "1.0");
    let r = s.post(
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":4,"method":"tools/list"}),
    );
    assert!(r.json()["result"]["tools"].is_array());
}

// ---------------------------------------------------------------------------------------
// Defect 4: malformed tools/call params are −32602.
// ---------------------------------------------------------------------------------------

#[test]
fn malformed_tool_calls_on_stdio() {
    malformed_tool_calls_are_invalid_params(StdioDemo::start(), false);
    malformed_tool_calls_are_invalid_params(StdioDemo::start(), true);
}

#[test]
fn malformed_tool_calls_on_websocket_and_mcpb() {
    let ws = Demo::serve(serve::ws(), |_| {});
    malformed_tool_calls_are_invalid_params(Ws::connect(&ws.url()), false);
    malformed_tool_calls_are_invalid_params(Ws::connect(&ws.url()), true);
    let mcpb = Demo::serve(serve::mcpb(), |_| {});
    malformed_tool_calls_are_invalid_params(Mcpb::connect(&mcpb.addr()), false);
    malformed_tool_calls_are_invalid_params(Mcpb::connect(&mcpb.addr()), true);
}

#[test]
fn malformed_tool_calls_over_http() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    let call = |id: i64, params: Value| {
        s.post(
            Some(&sid),
            &json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params}),
        )
        .json()
    };
    assert_eq!(
        code(&call(1, json!({"name":"echo","arguments":"text=hi"}))),
        -32602
    );
    assert_eq!(code(&call(2, json!({"name":5,"arguments":{}}))), -32602);
    assert_eq!(
        call(3, json!({"name":"add","arguments":{"a":"x"}}))["result"]["isError"],
        true
    );
    // Stateless 2026-07-28: the same, with the HTTP status of a request-shape error.
    let r = s.post_stateless(4, "tools/call", json!({"name":"echo","arguments":["hi"]}));
    assert_eq!(r.status, 400);
    assert_eq!(code(&r.json()), -32602);
    let r = s.post_stateless(5, "tools/call", json!({"name":"add","arguments":{"a":"x"}}));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["isError"], true);
}

// ---------------------------------------------------------------------------------------
// Defect 6: a refused resources/subscribe does not subscribe.
// ---------------------------------------------------------------------------------------

#[test]
fn refused_subscribe_on_stdio_websocket_and_mcpb() {
    refused_subscribe_does_not_subscribe(StdioDemo::with(|o| o.max_in_flight = 1));
    let ws = Demo::serve(serve::ws(), |o| o.max_in_flight = 1);
    refused_subscribe_does_not_subscribe(Ws::connect(&ws.url()));
    let mcpb = Demo::serve(serve::mcpb(), |o| o.max_in_flight = 1);
    refused_subscribe_does_not_subscribe(Mcpb::connect(&mcpb.addr()));
}

#[test]
fn refused_subscribe_over_http() {
    let s = HttpServer::demo(|o| o.max_in_flight = 1, |_| {});
    let sid = s.initialize_with(json!({"sampling": {}}));
    let post = |msg: Value| s.post(Some(&sid), &msg);
    // Hold the only slot with a call waiting for our answer to its sampling ask.
    let mut held = post(json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                              "params":{"name":"test_sampling","arguments":{"prompt":"hi"}}}));
    let (_, ask) = held.next_event().expect("the sampling ask");
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let r = post(
        json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe",
                        "params":{"uri": WATCHED}}),
    );
    assert_eq!(code(&r.json()), -32600, "over the in-flight limit");
    let answer = post(json!({"jsonrpc":"2.0","id":ask["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}));
    assert_eq!(answer.status, 202);
    let done = held.events();
    assert!(
        done.iter().any(|m| m["id"] == 1 && m["result"].is_object()),
        "{done:?}"
    );
    let r = post(
        json!({"jsonrpc":"2.0","id":3,"method":"resources/subscribe",
                        "params":{"uri": OTHER}}),
    );
    assert!(r.json()["result"].is_object());
    for (id, uri) in [(4, WATCHED), (5, OTHER)] {
        let r = post(json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
            "params":{"name":"test_trigger_resource_update","arguments":{"uri": uri}}}));
        assert_eq!(r.status, 200);
    }
    // The updates wait (in order) for the standalone stream.
    let mut get = s.send(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &sid),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        b"",
    );
    assert_eq!(get.status, 200);
    loop {
        let (_, m) = get.next_event().expect("the control's update");
        assert!(
            !is_update_of(&m, WATCHED),
            "an update for a refused subscription arrived"
        );
        if is_update_of(&m, OTHER) {
            break;
        }
    }
}
