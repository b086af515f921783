//! Session behaviour driven message by message, with no I/O: JSON lines in, JSON lines out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::types::{
    Implementation, ListChangedCapability, RequestMeta, ResourcesCapability, ServerCapabilities,
};
use mcpwire_model::{
    BackendEvent, CallEvent, ClientAsk, McpError, ProgressUpdate, Reply, Revision, to_raw,
};
use mcpwire_session::{Dispatch, ServerSession, SessionConfig, SessionEvent};
use serde_json::{Value, json};

struct Harness {
    s: ServerSession,
    now: Instant,
}

impl Harness {
    fn new() -> Harness {
        let caps = ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            resources: Some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            logging: Some(json!({})),
            ..Default::default()
        };
        let mut cfg = SessionConfig {
            server_info: Implementation::new("test", "1.0"),
            capabilities: caps,
            instructions: None,
            limits: Default::default(),
            derived: Default::default(),
        };
        cfg.limits.max_in_flight = 2;
        cfg.limits.ask_timeout = Duration::from_secs(5);
        Harness {
            s: ServerSession::new(Arc::new(cfg)),
            now: Instant::now(),
        }
    }

    fn send(&mut self, v: Value) {
        let bytes = serde_json::to_vec(&v).unwrap();
        self.s.handle_inbound(self.now, decode(&bytes));
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.s.handle_inbound(self.now, decode(bytes));
    }

    fn out(&mut self) -> Vec<Value> {
        let mut v = Vec::new();
        while let Some(t) = self.s.poll_transmit() {
            v.push(serde_json::from_str(&t.msg.to_json_string()).unwrap());
        }
        v
    }

    fn dispatches(&mut self) -> Vec<Dispatch> {
        let mut v = Vec::new();
        while let Some(d) = self.s.poll_dispatch() {
            v.push(d);
        }
        v
    }

    fn initialize(&mut self, version: &str, caps: Value) -> Value {
        self.send(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": caps,
            "clientInfo": {"name":"t","version":"1"}}}),
        );
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        self.out().remove(0)
    }
}

#[test]
fn refuses_requests_before_initialize_and_answers_ping() {
    let mut h = Harness::new();
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    let out = h.out();
    assert_eq!(out[0]["error"]["code"], -32003);
    assert_eq!(out[1]["result"], json!({}));
}

#[test]
fn negotiates_and_dispatches() {
    let mut h = Harness::new();
    let init = h.initialize("2025-06-18", json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["capabilities"]["tools"]["listChanged"], true);
    let init2 = Harness::new().initialize("2031-01-01", json!({}));
    assert_eq!(init2["result"]["protocolVersion"], "2025-11-25");

    h.send(json!({"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p1"}}}));
    let d = h.dispatches().remove(0);
    assert_eq!(d.ctx.progress_token, Some("p1".into()));
    h.s.handle_call_event(
        d.id,
        CallEvent::Progress(ProgressUpdate {
            progress: 1.0,
            total: Some(2.0),
            message: None,
        }),
    );
    h.s.handle_reply(
        h.now,
        d.id,
        Ok(Reply::Complete(to_raw(&json!({"content":[]})))),
    );
    let out = h.out();
    assert_eq!(out[0]["method"], "notifications/progress");
    assert_eq!(out[0]["params"]["progressToken"], "p1");
    assert_eq!(out[1]["id"], "a");
    assert_eq!(out[1]["result"], json!({"content":[]}));
}

#[test]
fn tool_errors_become_results_and_duplicates_and_floods_are_refused() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}));
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}));
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}));
    h.send(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}));
    let ds = h.dispatches();
    assert_eq!(ds.len(), 2);
    let out = h.out();
    assert_eq!(out[0]["error"]["code"], -32600, "duplicate id");
    assert_eq!(out[1]["error"]["code"], -32600, "over the in-flight limit");
    h.s.handle_reply(
        h.now,
        ds[0].id,
        Err(McpError::ToolFailed {
            tool: "x".into(),
            message: "boom".into(),
        }),
    );
    let out = h.out();
    assert_eq!(out[0]["result"]["isError"], true);
    assert_eq!(out[0]["result"]["content"][0]["text"], "boom");
}

#[test]
fn invalid_tool_arguments_are_a_result_from_2025_11_25_and_an_error_before() {
    for (revision, as_result) in [
        ("2025-06-18", false),
        ("2025-03-26", false),
        ("2025-11-25", true),
    ] {
        let mut h = Harness::new();
        h.initialize(revision, json!({}));
        h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}));
        let d = h.dispatches().remove(0);
        let bad = McpError::InvalidToolParams {
            tool: "x".into(),
            message: "missing field `text`".into(),
        };
        h.s.handle_reply(h.now, d.id, Err(bad));
        let out = h.out();
        if as_result {
            assert_eq!(out[0]["result"]["isError"], true, "{revision}: {out:?}");
        } else {
            // SEP-1303 moved invalid arguments into the result; before it: −32602.
            assert_eq!(out[0]["error"]["code"], -32602, "{revision}: {out:?}");
        }
    }
}

#[test]
fn cancellation_suppresses_the_answer() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    h.send(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}));
    let d = h.dispatches().remove(0);
    h.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9,"reason":"user"}}));
    assert!(matches!(h.s.poll_event(), Some(SessionEvent::Cancel(id)) if id == d.id));
    h.s.handle_reply(h.now, d.id, Ok(Reply::Complete(to_raw(&json!({})))));
    assert!(h.out().is_empty());
}

#[test]
fn a_request_cancelled_before_it_is_dispatched_never_runs() {
    // Found by the wire x backend matrix: a `tools/call` and its cancellation read in one
    // burst used to reach the router after the cancellation was dropped as unknown.
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    h.send(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}));
    h.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}));
    assert!(
        h.dispatches().is_empty(),
        "the cancelled request is not handed out"
    );
    assert!(
        h.s.poll_event().is_none(),
        "nothing was started, so nothing to cancel"
    );
    assert!(h.out().is_empty(), "a cancelled request is not answered");
    // The id is free again, and other requests run as always.
    h.send(json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fast"}}));
    assert_eq!(h.dispatches().len(), 1);
}

#[test]
fn asks_need_the_capability_and_time_out() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({"sampling": {}}));
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}));
    let d = h.dispatches().remove(0);
    let roots = h.s.start_ask(
        h.now,
        d.id,
        ClientAsk {
            method: "roots/list".into(),
            params: None,
        },
    );
    match h.s.poll_event() {
        Some(SessionEvent::AskDone(id, Err(e @ McpError::MissingCapability { .. }))) => {
            assert_eq!(id, roots);
            assert_eq!(e.to_wire(Revision::V2025_11_25).code, -32600);
            assert_eq!(e.to_wire(Revision::V2026_07_28).code, -32021);
        }
        other => panic!("{other:?}"),
    }
    let ask = h.s.start_ask(
        h.now,
        d.id,
        ClientAsk {
            method: "sampling/createMessage".into(),
            params: Some(to_raw(&json!({}))),
        },
    );
    let out = h.out();
    assert_eq!(out[0]["method"], "sampling/createMessage");
    let out_id = out[0]["id"].clone();
    h.send(json!({"jsonrpc":"2.0","id": out_id, "result": {"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}}));
    assert!(matches!(h.s.poll_event(), Some(SessionEvent::AskDone(id, Ok(_))) if id == ask));
    let late = h.s.start_ask(
        h.now,
        d.id,
        ClientAsk {
            method: "sampling/createMessage".into(),
            params: None,
        },
    );
    h.out();
    let deadline = h.s.poll_timeout().expect("ask deadline");
    h.s.handle_timeout(deadline);
    assert!(
        matches!(h.s.poll_event(), Some(SessionEvent::AskDone(id, Err(McpError::Timeout))) if id == late)
    );
}

#[test]
fn asks_of_a_replica_carry_its_prefix_and_are_answered_by_it() {
    let mut h = Harness::new();
    h.s = std::mem::replace(&mut h.s, Harness::new().s).with_ask_id_prefix("r7-".into());
    h.initialize("2025-11-25", json!({"elicitation": {}}));
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}));
    let d = h.dispatches().remove(0);
    let elicit = || ClientAsk {
        method: "elicitation/create".into(),
        params: Some(to_raw(
            &json!({"message": "ok?", "requestedSchema": {"type": "object"}}),
        )),
    };
    let first = h.s.start_ask(h.now, d.id, elicit());
    let second = h.s.start_ask(h.now, d.id, elicit());
    let out = h.out();
    assert_eq!(out[0]["id"], "r7-1");
    assert_eq!(out[1]["id"], "r7-2");
    // A number where the string was sent answers nothing; the string answers its ask.
    h.send(json!({"jsonrpc":"2.0","id": 2, "result": {"action": "accept"}}));
    assert!(h.s.poll_event().is_none());
    h.send(json!({"jsonrpc":"2.0","id": "r7-2", "result": {"action": "accept"}}));
    assert!(matches!(h.s.poll_event(), Some(SessionEvent::AskDone(id, Ok(_))) if id == second));
    assert_ne!(first, second);
}

#[test]
fn logging_level_filters_and_list_changes_reach_the_client() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    h.send(
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}),
    );
    assert_eq!(h.out()[0]["result"], json!({}));
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}));
    let d = h.dispatches().remove(0);
    let log = |level| {
        CallEvent::Log(mcpwire_model::LogEntry {
            level,
            logger: None,
            data: to_raw("m"),
        })
    };
    h.s.handle_call_event(d.id, log(mcpwire_model::types::LoggingLevel::Info));
    h.s.handle_call_event(d.id, log(mcpwire_model::types::LoggingLevel::Error));
    h.s.handle_backend_event(&BackendEvent::ToolsListChanged);
    h.s.handle_backend_event(&BackendEvent::ResourceUpdated { uri: "u".into() });
    let out = h.out();
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(out[0]["params"]["level"], "error");
    assert_eq!(out[1]["method"], "notifications/tools/list_changed");
}

#[test]
fn subscriptions_route_resource_updates() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    h.send(
        json!({"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"test://w"}}),
    );
    let d = h.dispatches().remove(0);
    h.s.handle_reply(h.now, d.id, Ok(Reply::Complete(to_raw(&json!({})))));
    h.s.handle_backend_event(&BackendEvent::ResourceUpdated {
        uri: "test://w".into(),
    });
    let out = h.out();
    assert_eq!(out[1]["method"], "notifications/resources/updated");
    assert_eq!(out[1]["params"]["uri"], "test://w");
}

/// A subscription made through another replica is shared into this session: updates for
/// it are sent here, until it is shared as ended; bounded like local ones.
#[test]
fn shared_subscriptions_route_resource_updates_too() {
    let mut h = Harness::new();
    h.initialize("2025-11-25", json!({}));
    let _ = h.out();
    let update = BackendEvent::ResourceUpdated {
        uri: "test://x".into(),
    };
    h.s.handle_backend_event(&update);
    assert!(h.out().is_empty(), "not subscribed");
    assert!(h.s.share_subscription("test://x", true));
    h.s.handle_backend_event(&update);
    let out = h.out();
    assert_eq!(out[0]["method"], "notifications/resources/updated");
    assert_eq!(out[0]["params"]["uri"], "test://x");
    assert!(h.s.share_subscription("test://x", false));
    h.s.handle_backend_event(&update);
    assert!(h.out().is_empty(), "unsubscribed");
    let max = mcpwire_session::SessionLimits::default().max_subscriptions;
    for i in 0..max {
        assert!(h.s.share_subscription(&format!("test://{i}"), true));
    }
    assert!(!h.s.share_subscription("test://one-too-many", true));
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name":"t","version":"1"}
    })
}

#[test]
fn stateless_discover_and_decorated_results() {
    let mut h = Harness::new();
    h.send(json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": stateless_meta()}}));
    let out = h.out();
    let r = &out[0]["result"];
    assert_eq!(r["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(r["resultType"], "complete");
    assert_eq!(r["ttlMs"], 0);
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "test"
    );
    h.send(
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": stateless_meta()}}),
    );
    let d = h.dispatches().remove(0);
    h.s.handle_reply(
        h.now,
        d.id,
        Ok(Reply::Complete(to_raw(&json!({"tools":[]})))),
    );
    let r = h.out().remove(0);
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["cacheScope"], "private");
    // Removed methods, unsupported versions, missing capabilities in _meta.
    h.send(json!({"jsonrpc":"2.0","id":3,"method":"ping","params":{"_meta": stateless_meta()}}));
    let mut bad = stateless_meta();
    bad["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
    h.send(json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta": bad}}));
    let mut nocaps = stateless_meta();
    nocaps
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    h.send(json!({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta": nocaps}}));
    let out = h.out();
    assert_eq!(out[0]["error"]["code"], -32601);
    assert_eq!(out[1]["error"]["code"], -32022);
    assert_eq!(out[1]["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(out[2]["error"]["code"], -32602);
}

/// A request handed over with the `_meta` its driver read already is answered exactly as
/// the same request decoded by the session itself — including a `_meta` that does not
/// parse.
#[test]
fn a_request_with_its_meta_read_already_is_answered_the_same() {
    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": stateless_meta()}}),
        json!({"jsonrpc":"2.0","id":2,"method":"ping","params":{"_meta": stateless_meta()}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta": 7}}),
    ];
    for request in requests {
        let bytes = serde_json::to_vec(&request).unwrap();
        let mut inbound = Harness::new();
        inbound.send_raw(&bytes);
        let mut read = Harness::new();
        let Ok(mcpwire_model::Message::Request(req)) = decode(&bytes) else {
            panic!("a request");
        };
        let meta = RequestMeta::from_params(req.params.as_deref());
        read.s.handle_request(read.now, req, meta);
        let (a, b) = (inbound.out(), read.out());
        assert!(!a.is_empty(), "{request}");
        assert_eq!(a, b, "{request}");
    }
}

#[test]
fn stateless_listen_acknowledges_and_filters() {
    let mut h = Harness::new();
    h.send(
        json!({"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{
        "_meta": stateless_meta(), "notifications": {"toolsListChanged": true}}}),
    );
    let ack = h.out().remove(0);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    h.s.handle_backend_event(&BackendEvent::PromptsListChanged);
    h.s.handle_backend_event(&BackendEvent::ToolsListChanged);
    let out = h.out();
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    h.send(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen-1"}}));
    h.s.handle_backend_event(&BackendEvent::ToolsListChanged);
    assert!(h.out().is_empty());
}

#[test]
fn bb_dialect_codes() {
    let mut h = Harness::new();
    h.send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.0"}}),
    );
    assert_eq!(
        h.out()[0]["error"]["code"],
        -32602,
        "clientInfo is required"
    );
    let mut h = Harness::new();
    let init = h.initialize("1.0", json!({}));
    assert_eq!(init["result"]["protocolVersion"], "1.0");
    assert_eq!(
        init["result"]["capabilities"],
        json!({"tools": true, "dynamicToolRegistration": true})
    );
    assert_eq!(
        init["result"]["serverInfo"],
        json!({"name": "test", "version": "1.0"})
    );
    h.send(json!({"jsonrpc":"2.0","id":2,"method":"resources/list"}));
    assert_eq!(h.out()[0]["error"]["code"], -32601);
    h.send(json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nope"}}));
    let d = h.dispatches().remove(0);
    h.s.handle_reply(h.now, d.id, Err(McpError::ToolNotFound("nope".into())));
    assert_eq!(h.out()[0]["error"]["code"], -32000);

    // Any backend's isError result becomes −32001 with the tool's name; no notifications.
    h.send(json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"flaky","_meta":{"progressToken":1}}}));
    let d = h.dispatches().remove(0);
    let log = CallEvent::Log(mcpwire_model::LogEntry {
        level: mcpwire_model::types::LoggingLevel::Error,
        logger: None,
        data: to_raw("x"),
    });
    h.s.handle_call_event(d.id, log);
    h.s.handle_call_event(
        d.id,
        CallEvent::Progress(ProgressUpdate {
            progress: 1.0,
            total: None,
            message: None,
        }),
    );
    let failed = json!({"content":[{"type":"text","text":"disk on fire"}],"isError":true});
    h.s.handle_reply(h.now, d.id, Ok(Reply::Complete(to_raw(&failed))));
    let out = h.out();
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["error"]["code"], -32001);
    assert_eq!(
        out[0]["error"]["data"],
        json!({"tool": "flaky", "error": "disk on fire"})
    );
}

#[test]
fn malformed_input_is_answered_and_the_session_goes_on() {
    let mut h = Harness::new();
    h.send_raw(b"{oops");
    h.send_raw(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#);
    h.send_raw(br#"{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}"#);
    h.send(json!({"jsonrpc":"2.0","id":6,"method":"ping"}));
    let out = h.out();
    assert_eq!(out[0]["error"]["code"], -32700);
    assert_eq!(out[0]["id"], Value::Null);
    assert_eq!(out[1]["error"]["code"], -32600);
    assert_eq!(out[2]["error"]["code"], -32600);
    assert_eq!(out[2]["id"], 5);
    assert_eq!(out[3]["result"], json!({}));
}
