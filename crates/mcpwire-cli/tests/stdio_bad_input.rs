//! Bad input over stdio: every fault gets its error and the next request is answered —
//! against the demo served in-process; and the binary exits when its stdin closes.

mod common;

use common::StdioDemo;
use common::wires::Peer;
use serde_json::json;

fn assert_still_serving(p: &mut StdioDemo, id: i64) {
    let r = p.request(id, "ping", json!({}));
    assert_eq!(r["result"], json!({}), "server must keep answering: {r}");
}

#[test]
fn malformed_messages_get_their_codes() {
    let mut p = StdioDemo::start();
    p.initialize("2025-11-25");
    let cases: &[(&[u8], i64)] = &[
        (b"{not json\n", -32700),
        (b"\xff\xfe\xfd\n", -32700),
        (
            b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n",
            -32600,
        ),
        (b"{\"jsonrpc\":\"2.0\",\"id\":2}\n", -32600),
        (
            b"{\"jsonrpc\":\"1.0\",\"id\":3,\"method\":\"ping\"}\n",
            -32600,
        ),
        (b"\"just a string\"\n", -32600),
    ];
    for (i, (bytes, code)) in cases.iter().enumerate() {
        p.write_raw(bytes);
        let r = p.recv();
        assert_eq!(r["error"]["code"], json!(code), "case {i}: {r}");
        assert_still_serving(&mut p, 100 + i as i64);
    }
    let r = p.request(10, "no/such/method", json!({}));
    assert_eq!(r["error"]["code"], -32601);
    let r = p.request(11, "tools/call", json!({"arguments": {}}));
    assert_eq!(r["error"]["code"], -32602, "missing tool name: {r}");
    let r = p.request(12, "resources/read", json!({"uri": 5}));
    assert_eq!(r["error"]["code"], -32602);
    p.finish();
}

#[test]
fn deep_nesting_and_oversize_lines_are_refused() {
    let mut p = StdioDemo::with(|o| o.max_message_bytes = 65536);
    p.initialize("2025-11-25");
    let mut deep = String::from(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"#,
    );
    deep.push_str(&"[".repeat(100_000));
    deep.push_str(&"]".repeat(100_000));
    deep.push_str("}}}\n");
    // Over the 64 KiB limit too, so split the two faults: first a deep but small line.
    let mut small_deep = String::from(r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"a":"#);
    small_deep.push_str(&"[".repeat(10_000));
    small_deep.push_str(&"]".repeat(10_000));
    small_deep.push_str("}}\n");
    p.write_raw(small_deep.as_bytes());
    let r = p.recv();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    assert_still_serving(&mut p, 1);
    p.write_raw(deep.as_bytes());
    let r = p.recv();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("longer than")
    );
    assert_still_serving(&mut p, 2);
    p.finish();
}

#[test]
fn exits_cleanly_on_eof_after_answering_what_it_accepted() {
    let mut p = StdioDemo::start();
    p.initialize("2025-11-25");
    p.send(json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"test_slow","arguments":{"seconds":0.2}}}));
    p.close_input();
    let (r, _) = p.recv_response(json!(5));
    assert_eq!(r["result"]["content"][0]["text"], "done");
    p.finish();
}

#[test]
fn many_requests_in_flight_are_all_answered() {
    let mut p = StdioDemo::start();
    p.initialize("2025-11-25");
    let mut batch = Vec::new();
    for i in 0..500 {
        let m = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"echo","arguments":{"text":format!("m{i}")}}});
        batch.extend(serde_json::to_vec(&m).unwrap());
        batch.push(b'\n');
    }
    p.write_raw(&batch);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..500 {
        let r = p.recv();
        let id = r["id"].as_i64().unwrap();
        assert_eq!(r["result"]["content"][0]["text"], format!("m{id}"));
        seen.insert(id);
    }
    assert_eq!(seen.len(), 500);
    p.finish();
}

#[test]
fn a_flood_over_the_in_flight_limit_is_refused_not_queued() {
    let mut p = StdioDemo::with(|o| o.max_in_flight = 4);
    p.initialize("2025-11-25");
    let mut batch = Vec::new();
    for i in 0..20 {
        let m = json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"test_slow","arguments":{"seconds":0.3}}});
        batch.extend(serde_json::to_vec(&m).unwrap());
        batch.push(b'\n');
    }
    p.write_raw(&batch);
    let (mut ok, mut refused) = (0, 0);
    for _ in 0..20 {
        let r = p.recv();
        if r.get("result").is_some() {
            ok += 1;
        } else {
            assert_eq!(r["error"]["code"], -32600);
            refused += 1;
        }
    }
    assert_eq!(ok, 4);
    assert_eq!(refused, 16);
    assert_still_serving(&mut p, 99);
}

#[test]
fn a_panicking_tool_answers_internal_error_and_the_server_goes_on() {
    let mut p = StdioDemo::start();
    p.initialize("2025-11-25");
    let r = p.request(
        1,
        "tools/call",
        json!({"name": "test_panic", "arguments": {}}),
    );
    assert_eq!(r["error"]["code"], -32603, "{r}");
    let r = p.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "alive"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "alive");
    p.finish();
}

#[test]
fn exits_when_stdin_closes_while_idle() {
    for busy_poll in ["0", "100", "5000"] {
        let mut p = common::proc(&["demo", "--busy-poll-us", busy_poll]);
        p.initialize("2025-11-25");
        // Part of what is tested, not a wait for an event: stdin closes once the server is
        // idle, past its busy poll (at most 5 ms here), asleep on its reads.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(p.finish().success(), "busy poll {busy_poll}");
    }
}
