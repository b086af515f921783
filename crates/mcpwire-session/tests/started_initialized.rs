//! Sessions that start already initialized:
//! - a provisional session (MCPB's token `initialize` stands in for the handshake): requests
//!   are served at once in the newest handshake revision, and the client's own `initialize`
//!   is still its real handshake — once;
//! - a resumed session (a gateway replica continuing a session whose handshake another
//!   replica made): the same revision and client capabilities, no second `initialize`.

use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::types::{Implementation, ListChangedCapability, ServerCapabilities};
use mcpwire_model::{Method, Revision};
use mcpwire_session::{Era, ServerSession, SessionConfig};
use serde_json::{Value, json};

fn config() -> Arc<SessionConfig> {
    Arc::new(SessionConfig {
        server_info: Implementation::new("test", "1.0"),
        capabilities: ServerCapabilities {
            tools: Some(ListChangedCapability {
                list_changed: Some(true),
            }),
            ..Default::default()
        },
        instructions: None,
        limits: Default::default(),
        derived: Default::default(),
    })
}

fn session() -> ServerSession {
    ServerSession::provisional(config())
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

fn initialize(id: i64, version: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {"sampling": {}},
        "clientInfo": {"name": "c", "version": "1"}}})
}

#[test]
fn requests_are_served_before_any_initialize() {
    let mut s = session();
    assert_eq!(s.era(), Era::Handshake(Revision::LATEST_STATEFUL));
    send(
        &mut s,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let d = s
        .poll_dispatch()
        .expect("tools/list is dispatched, not refused");
    assert_eq!(d.method, Method::ToolsList);
    assert_eq!(d.ctx.revision, Revision::LATEST_STATEFUL);
    assert!(d.ctx.client_capabilities.sampling.is_none());
    assert!(out(&mut s).is_empty());
}

#[test]
fn a_later_initialize_is_the_real_handshake_once() {
    let mut s = session();
    send(&mut s, json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_eq!(out(&mut s)[0]["result"], json!({}));
    // A failed one leaves the provisional handshake in place.
    send(
        &mut s,
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize"}),
    );
    let failed = out(&mut s);
    assert_eq!(failed[0]["error"]["code"], -32602, "{failed:?}");
    send(&mut s, initialize(3, "2025-06-18"));
    let answer = out(&mut s);
    assert_eq!(
        answer[0]["result"]["protocolVersion"], "2025-06-18",
        "{answer:?}"
    );
    assert_eq!(s.era(), Era::Handshake(Revision::V2025_06_18));
    assert_eq!(s.client_info().map(|c| c.name.as_str()), Some("c"));
    send(
        &mut s,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    );
    let d = s.poll_dispatch().expect("dispatched");
    assert!(d.ctx.client_capabilities.sampling.is_some());
    // Now initialized for real: another initialize is refused.
    send(&mut s, initialize(5, "2025-11-25"));
    assert_eq!(out(&mut s)[0]["error"]["code"], -32600);
}

#[test]
fn the_handshake_moves_and_nothing_else_is_needed() {
    let mut first = ServerSession::new(config());
    assert!(first.handshake_state().is_none(), "no handshake yet");
    assert!(
        session().handshake_state().is_none(),
        "a provisional one is not moved"
    );
    send(&mut first, initialize(0, "2025-06-18"));
    assert_eq!(out(&mut first).len(), 1);
    let state = first.handshake_state().expect("initialized");
    assert_eq!(state.revision, Revision::V2025_06_18);

    let mut second = ServerSession::resumed(config(), state.clone());
    assert_eq!(second.era(), Era::Handshake(Revision::V2025_06_18));
    assert_eq!(second.client_info().map(|c| c.name.as_str()), Some("c"));
    assert_eq!(second.handshake_state(), Some(state));
    send(
        &mut second,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    );
    let d = second.poll_dispatch().expect("served without initialize");
    assert_eq!(d.method, Method::ToolsList);
    assert_eq!(d.ctx.revision, Revision::V2025_06_18);
    assert!(d.ctx.client_capabilities.sampling.is_some());
    // It is not provisional: a second initialize is refused as on the first replica.
    send(&mut second, initialize(2, "2025-06-18"));
    let refused = out(&mut second);
    assert!(refused[0].get("error").is_some(), "{refused:?}");
}
