//! Streamable HTTP behaviour: sessions, JSON vs SSE answers, routing of related and
//! unrelated messages, server→client requests, cancellation, and stateless 2026-07-28.

mod common;

use std::time::Duration;

use common::http::{ACCEPT_BOTH, HttpServer};
use mcpwire_testkit::wait::poll_for;
use serde_json::{Value, json};

fn call(id: i64, name: &str, args: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":args}})
}

#[test]
fn session_answers_json_or_sse() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    assert!(sid.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{sid}");

    // Only a response: application/json.
    let r = s.post(Some(&sid), &call(1, "echo", json!({"text":"hi"})));
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.json()["result"]["content"][0]["text"], "hi");

    // Progress before the result: an SSE stream with event ids, the result last.
    let mut msg = call(2, "test_tool_with_progress", json!({}));
    msg["params"]["_meta"] = json!({"progressToken": "tok"});
    let mut r = s.post(Some(&sid), &msg);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let mut ids = Vec::new();
    let mut progress = Vec::new();
    let result = loop {
        let (id, ev) = r.next_event().expect("an event");
        ids.push(id.expect("events carry ids"));
        if ev["method"] == "notifications/progress" {
            assert_eq!(ev["params"]["progressToken"], "tok");
            progress.push(ev["params"]["progress"].as_f64().unwrap());
        } else {
            break ev;
        }
    };
    assert_eq!(result["id"], 2);
    assert_eq!(progress, vec![0.0, 50.0, 100.0]);
    assert!(
        r.next_event().is_none(),
        "the stream ends after the response"
    );
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique.len(), ids.len());

    // Concurrent POSTs on one session.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let (addr, path, sid) = (s.addr.clone(), s.path.clone(), sid.clone());
            std::thread::spawn(move || {
                let s = common::http::Exchange::post_to(
                    &addr,
                    &path,
                    &sid,
                    &call(10 + i, "echo", json!({"text": i.to_string()})),
                );
                s.json()
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        let v = h.join().unwrap();
        assert_eq!(v["id"], 10 + i as i64);
        assert_eq!(v["result"]["content"][0]["text"], i.to_string());
    }
}

#[test]
fn server_requests_ride_the_call_stream() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize_with(json!({"sampling": {}}));
    let mut r = s.post(
        Some(&sid),
        &call(1, "test_sampling", json!({"prompt": "Test prompt"})),
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let (_, ask) = r.next_event().expect("the sampling request");
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    let answer = json!({"jsonrpc":"2.0","id":ask["id"],"result":{
        "role":"assistant","content":{"type":"text","text":"sampled!"},"model":"m"}});
    assert_eq!(s.post(Some(&sid), &answer).status, 202);
    let (_, result) = r.next_event().expect("the result");
    assert_eq!(result["id"], 1);
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("sampled!"), "{text}");
}

#[test]
fn unrelated_messages_go_to_the_standalone_stream() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    let mut get = s.send(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        b"",
    );
    assert_eq!(get.status, 200);
    assert_eq!(get.header("content-type"), Some("text/event-stream"));
    let r = s.post(Some(&sid), &call(1, "test_trigger_tool_change", json!({})));
    assert_eq!(r.status, 200);
    let (id, ev) = get.next_event().expect("a list change");
    assert_eq!(ev["method"], "notifications/tools/list_changed", "{ev}");
    assert!(id.unwrap().starts_with('g'));
    // A stream this session never had cannot be resumed.
    let r = s.send(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &sid),
            ("last-event-id", "p1-0"),
        ],
        b"",
    );
    assert_eq!(r.status, 400);
    // GET needs text/event-stream.
    let r = s.send(
        "GET",
        &[("accept", "application/json"), ("mcp-session-id", &sid)],
        b"",
    );
    assert_eq!(r.status, 406);
}

fn resume(s: &HttpServer, sid: &str, last: &str) -> common::http::Exchange {
    s.send(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", sid),
            ("last-event-id", last),
        ],
        b"",
    )
}

/// The `id:` and `retry:` fields of a raw SSE event.
fn fields(raw: &str) -> (Option<String>, Option<String>, Option<String>) {
    let get = |name: &str| {
        raw.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_owned()))
    };
    (get("id:"), get("retry:"), get("data:"))
}

#[test]
fn a_closed_request_stream_resumes_with_last_event_id() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    // The tool closes its stream mid-call: the priming event (id, retry, empty data) and
    // the end of the connection, no answer.
    let mut post = s.post(Some(&sid), &call(7, "test_reconnection", json!({})));
    assert_eq!(post.header("content-type"), Some("text/event-stream"));
    let priming = post.next_raw_event().expect("priming event");
    let (id, retry, data) = fields(&priming);
    let id = id.expect("priming id");
    assert!(id.starts_with('p') && id.ends_with("-0"), "{priming}");
    assert_eq!(retry.as_deref(), Some("500"));
    assert_eq!(data.as_deref(), Some(""));
    assert!(
        post.next_event().is_none(),
        "the stream ends without the answer"
    );
    // Resuming delivers the answer, then ends.
    let mut get = resume(&s, &sid, &id);
    assert_eq!(get.status, 200);
    let (eid, answer) = get.next_event().expect("the answer");
    assert_eq!(answer["id"], 7);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "Reconnection test completed"
    );
    let prefix = id.trim_end_matches('0');
    assert!(eid.unwrap().starts_with(prefix));
    assert!(get.next_event().is_none());
    // Delivered: the stream is gone; ids that are not ours are refused.
    assert_eq!(resume(&s, &sid, &id).status, 400);
    assert_eq!(resume(&s, &sid, "nonsense").status, 400);
    assert_eq!(resume(&s, &sid, "p99999999-0").status, 400);
}

#[test]
fn a_resumed_stream_replays_only_what_was_missed() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    let msg = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "test_reconnection", "arguments": {}, "_meta": {"progressToken": "t"}}});
    let mut post = s.post(Some(&sid), &msg);
    let (id0, _, _) = fields(&post.next_raw_event().unwrap());
    let (id1, progress) = post.next_event().expect("progress before the close");
    assert_eq!(progress["method"], "notifications/progress");
    let id1 = id1.unwrap();
    assert!(id1.ends_with("-1") && id0.unwrap().ends_with("-0"));
    assert!(post.next_event().is_none());
    let events = resume(&s, &sid, &id1).events();
    assert_eq!(events.len(), 1, "only the answer: {events:?}");
    assert_eq!(events[0]["id"], 8);
}

#[test]
fn the_standalone_stream_resumes_too() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize();
    let mut get = s.send(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &sid)],
        b"",
    );
    let (id, retry, _) = fields(&get.next_raw_event().expect("priming event"));
    let id = id.unwrap();
    assert!(id.starts_with('g') && retry.is_some());
    drop(get);
    // Whether or not the session noticed the closed connection yet, the change is logged
    // on the stream and replayed on resumption.
    let r = s.post(Some(&sid), &call(1, "test_trigger_tool_change", json!({})));
    assert_eq!(r.status, 200);
    let mut again = resume(&s, &sid, &id);
    assert_eq!(again.status, 200);
    let (_, ev) = again.next_event().expect("the missed list change");
    assert_eq!(ev["method"], "notifications/tools/list_changed", "{ev}");
}

#[test]
fn cancelled_calls_end_their_stream_and_duplicates_are_refused() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let sid = s.initialize_with(json!({"sampling": {}}));
    // A call held in flight by its sampling ask: once the ask arrives, the call runs.
    let mut held = s.post(
        Some(&sid),
        &call(7, "test_sampling", json!({"prompt": "hi"})),
    );
    assert_eq!(held.status, 200);
    let (_, ask) = held.next_event().expect("the sampling ask");
    assert_eq!(ask["method"], "sampling/createMessage", "{ask}");
    // The same id again while it runs: refused, the first goes on.
    let r = s.post(Some(&sid), &call(7, "echo", json!({"text": "dup"})));
    assert_eq!(r.json()["error"]["code"], -32600);
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}});
    assert_eq!(s.post(Some(&sid), &cancel).status, 202);
    let rest = held.events();
    assert!(
        !rest.iter().any(|m| m["id"] == 7),
        "a cancelled request gets no response: {rest:?}"
    );
    let r = s.post(Some(&sid), &call(8, "echo", json!({"text": "after"})));
    assert_eq!(r.json()["result"]["content"][0]["text"], "after");
}

#[test]
fn stateless_requests() {
    let s = HttpServer::demo(|_| {}, |_| {});
    // Plain result: JSON, decorated for 2026-07-28, no session.
    let r = s.post_stateless(
        1,
        "tools/call",
        json!({"name":"echo","arguments":{"text":"x"}}),
    );
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_none());
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["content"][0]["text"], "x");

    let r = s.post_stateless(2, "server/discover", json!({}));
    assert_eq!(
        r.json()["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );

    // Progress comes on the call's own SSE stream, the result last.
    let body = json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{
        "name":"test_tool_with_progress","arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                 "io.modelcontextprotocol/clientCapabilities":{},"progressToken":3}}});
    let r = s.send(
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "test_tool_with_progress"),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let events = r.events();
    let n = events.len();
    assert!(n >= 4, "{events:?}");
    assert!(
        events[..n - 1]
            .iter()
            .all(|e| e["method"] == "notifications/progress")
    );
    assert_eq!(events[n - 1]["id"], 3);
    assert_eq!(events[n - 1]["result"]["resultType"], "complete");

    // subscriptions/listen: the acknowledgement opens a stream that stays open.
    let mut r = s.post_stateless(
        4,
        "subscriptions/listen",
        json!({"notifications":{"toolsListChanged":true}}),
    );
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let (_, ack) = r.next_event().unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let t = s.post_stateless(
        5,
        "tools/call",
        json!({"name":"test_trigger_tool_change","arguments":{}}),
    );
    assert_eq!(t.status, 200);
    let (_, ev) = r.next_event().unwrap();
    assert_eq!(ev["method"], "notifications/tools/list_changed");
    assert_eq!(
        ev["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        4
    );

    // An input round: the answer is input_required, a plain JSON result.
    let r = s.post_stateless_with(
        6,
        "tools/call",
        json!({"name":"test_input_required_result_elicitation","arguments":{}}),
        json!({"elicitation": {}}),
    );
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "input_required", "{v}");
}

#[test]
fn stateless_argument_headers_must_mirror_the_body() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let call = |extra: &[(&str, &str)], region: Option<&str>| {
        let mut args = json!({"text": "hi"});
        if let Some(r) = region {
            args["region"] = json!(r);
        }
        let p = json!({"name": "test_custom_header", "arguments": args});
        s.post_stateless_extra(1, "tools/call", p, json!({}), extra)
    };
    let ok = call(&[("mcp-param-region", "eu-west")], Some("eu-west"));
    assert_eq!(ok.status, 200);
    assert_eq!(ok.json()["result"]["content"][0]["text"], "eu-west: hi");
    let b64 = call(
        &[("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?=")],
        Some("eu-west"),
    );
    assert_eq!(b64.status, 200);
    for (extra, region) in [
        (&[][..], Some("eu-west")),                                // missing
        (&[("mcp-param-region", "us-east")][..], Some("eu-west")), // mismatch
        (
            &[("mcp-param-region", "=?base64?ZXUtd2VzdA?=")][..],
            Some("eu-west"),
        ), // padding
        (
            &[("mcp-param-region", "=?base64?ZX!!?=")][..],
            Some("eu-west"),
        ), // alphabet
        (&[("mcp-param-region", "eu-west")][..], None),            // no such argument
    ] {
        let r = call(extra, region);
        assert_eq!(r.status, 400, "{extra:?}");
        assert_eq!(r.json()["error"]["code"], -32020);
    }
}

#[test]
fn stateless_tasks_over_http() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let created = s
        .post_stateless_with(
            1,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 0.2}}),
            tasks.clone(),
        )
        .json();
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    let id = result["taskId"].as_str().unwrap().to_owned();
    let mut i = 1;
    let done = poll_for(Duration::from_secs(5), || {
        i += 1;
        let got = s
            .post_stateless_with(i, "tasks/get", json!({"taskId": id}), tasks.clone())
            .json();
        (got["result"]["status"] == "completed").then_some(got)
    })
    .unwrap_or(Value::Null);
    let text = done["result"]["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.starts_with("computed after"), "{done}");
    // Mcp-Name must carry the task id.
    let wrong = s.post_stateless_extra(
        200,
        "tasks/get",
        json!({"taskId": id}),
        tasks.clone(),
        &[("mcp-name", "someone-else")],
    );
    assert_eq!(wrong.status, 400);
    // Without the extension the tasks methods are refused.
    let r = s.post_stateless(201, "tasks/get", json!({"taskId": id}));
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32021);
}

#[test]
fn cli_list_and_call_take_an_http_url() {
    let s = HttpServer::demo(|_| {}, |_| {});
    let url = format!("http://{}{}", s.addr, s.path);
    let bin = env!("CARGO_BIN_EXE_mcpwire");
    let out = std::process::Command::new(bin)
        .args(["list", &url])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8(out.stdout).unwrap();
    assert!(listed.lines().any(|l| l.starts_with("echo ")), "{listed}");

    let out = std::process::Command::new(bin)
        .args(["call", &url, "test_tool_with_logging"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        result["content"][0]["text"],
        "Tool with logging executed successfully"
    );
    let logs = String::from_utf8_lossy(&out.stderr);
    assert!(logs.contains("Tool execution started"), "{logs}");

    let out = std::process::Command::new(bin)
        .args(["call", &url, "test_error_handling"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "an isError result exits 4");

    // The server closes this call's stream mid-call; the CLI resumes it.
    let out = std::process::Command::new(bin)
        .args(["call", &url, "test_reconnection"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["content"][0]["text"], "Reconnection test completed");
}
