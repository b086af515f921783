//! A session resumed from another's handshake (a gateway replica continuing a session it
//! never saw): the same revision and client capabilities, no second `initialize`.

use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::types::{Implementation, ServerCapabilities};
use mcpwire_model::{Method, Revision};
use mcpwire_session::{Era, ServerSession, SessionConfig};
use serde_json::{Value, json};

fn config() -> Arc<SessionConfig> {
    Arc::new(SessionConfig {
        server_info: Implementation::new("test", "1.0"),
        capabilities: ServerCapabilities::default(),
        instructions: None,
        limits: Default::default(),
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

#[test]
fn the_handshake_moves_and_nothing_else_is_needed() {
    let mut first = ServerSession::new(config());
    assert!(first.handshake_state().is_none(), "no handshake yet");
    send(
        &mut first,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"sampling": {}, "roots": {}},
            "clientInfo": {"name": "c", "version": "7"}}}),
    );
    assert_eq!(out(&mut first).len(), 1);
    let state = first.handshake_state().expect("initialized");
    assert_eq!(state.revision, Revision::V2025_06_18);

    let mut second = ServerSession::resumed(config(), state.clone());
    assert_eq!(second.era(), Era::Handshake(Revision::V2025_06_18));
    assert_eq!(second.client_info().map(|c| c.version.as_str()), Some("7"));
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
    send(
        &mut second,
        json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "c", "version": "7"}}}),
    );
    let refused = out(&mut second);
    assert!(refused[0].get("error").is_some(), "{refused:?}");
}
