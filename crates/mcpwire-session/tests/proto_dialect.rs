//! The proto-mcp dialect as the translator drives it: JSON-RPC in, JSON-RPC out, with
//! proto-mcp's negotiation, codes and silence (no notifications).

use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::types::{
    Implementation, ListChangedCapability, LoggingLevel, ServerCapabilities,
};
use mcpwire_model::{
    BackendEvent, CallEvent, LogEntry, McpError, ProgressUpdate, Revision, to_raw,
};
use mcpwire_session::{ServerSession, SessionConfig};
use serde_json::{Value, json};

fn config() -> Arc<SessionConfig> {
    Arc::new(SessionConfig {
        server_info: Implementation::new("test", "1.0"),
        capabilities: ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            logging: Some(json!({})),
            ..Default::default()
        },
        instructions: None,
        limits: Default::default(),
        derived: Default::default(),
    })
}

fn send(s: &mut ServerSession, v: Value) {
    s.handle_inbound(Instant::now(), decode(&serde_json::to_vec(&v).unwrap()));
}

fn out(s: &mut ServerSession) -> Vec<Value> {
    let mut v = Vec::new();
    while let Some(t) = s.poll_transmit() {
        v.push(serde_json::from_str(&t.msg.to_json_string()).unwrap());
    }
    v
}

fn init(version: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": {}}})
}

#[test]
fn major_mismatch_is_33002_and_the_session_may_retry() {
    let mut s = ServerSession::new(config());
    send(&mut s, init("proto-mcp/2.0.0"));
    let o = out(&mut s);
    assert_eq!(o[0]["error"]["code"], -33002);
    assert_eq!(o[0]["error"]["data"]["supported"], json!(["1.0.0"]));
    send(&mut s, init("proto-mcp/1.4.0"));
    let o = out(&mut s);
    assert_eq!(o[0]["result"]["protocolVersion"], "1.0.0");
    assert_eq!(o[0]["result"]["serverInfo"]["name"], "test");
}

#[test]
fn only_proto_methods_are_offered_and_nothing_is_pushed() {
    let mut s = ServerSession::new(config());
    send(&mut s, init("proto-mcp/1.0.0"));
    out(&mut s);
    send(&mut s, json!({"jsonrpc":"2.0","id":2,"method":"ping"}));
    send(
        &mut s,
        json!({"jsonrpc":"2.0","id":3,"method":"prompts/list"}),
    );
    let o = out(&mut s);
    assert_eq!(o[0]["error"]["code"], -32601);
    assert_eq!(o[1]["error"]["code"], -32601);
    for (id, m) in [(4, "tools/list"), (5, "resources/list")] {
        send(&mut s, json!({"jsonrpc":"2.0","id":id,"method":m}));
    }
    send(
        &mut s,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}),
    );
    let d: Vec<_> = std::iter::from_fn(|| s.poll_dispatch()).collect();
    assert_eq!(d.len(), 3);
    s.handle_backend_event(&BackendEvent::ToolsListChanged);
    let call = d[2].id;
    s.handle_call_event(
        call,
        CallEvent::Progress(ProgressUpdate {
            progress: 1.0,
            total: None,
            message: None,
        }),
    );
    s.handle_call_event(
        call,
        CallEvent::Log(LogEntry {
            level: LoggingLevel::Error,
            logger: None,
            data: to_raw(&json!("x")),
        }),
    );
    assert!(
        out(&mut s).is_empty(),
        "proto-mcp sessions get no notifications"
    );
}

#[test]
fn invalid_arguments_are_errors_and_failed_tools_are_results() {
    let mut s = ServerSession::preinitialized(config(), Revision::ProtoMcp1);
    for id in [1, 2] {
        send(
            &mut s,
            json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"t"}}),
        );
    }
    let d: Vec<_> = std::iter::from_fn(|| s.poll_dispatch()).collect();
    let now = Instant::now();
    s.handle_reply(
        now,
        d[0].id,
        Err(McpError::InvalidToolParams {
            tool: "t".into(),
            message: "bad".into(),
        }),
    );
    s.handle_reply(
        now,
        d[1].id,
        Err(McpError::ToolFailed {
            tool: "t".into(),
            message: "boom".into(),
        }),
    );
    let o = out(&mut s);
    assert_eq!(o[0]["error"]["code"], -33001);
    assert_eq!(o[1]["result"]["isError"], true);
}
