//! A client session started already negotiated (`ClientSession::start_negotiated`): an HTTP
//! session re-attached from a recorded `initialize` result sends no negotiation, and its
//! requests go out at once in the recorded revision.

use std::time::{Duration, Instant};

use mcpwire_model::types::Implementation;
use mcpwire_model::{Method, to_raw};
use mcpwire_session::{
    ClientConfig, ClientEra, ClientEvent, ClientSession, EraChoice, RequestOptions,
};
use serde_json::{Value, json};

fn session() -> ClientSession {
    let mut c = ClientConfig::new(Implementation::new("tester", "1.0"));
    c.era = EraChoice::Handshake;
    c.limits.handshake_timeout = Duration::from_secs(30);
    ClientSession::new(c)
}

fn recorded(version: &str) -> Box<serde_json::value::RawValue> {
    to_raw(&json!({
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": {"name": "upstream", "version": "7"},
        "instructions": "be brief",
    }))
}

#[test]
fn nothing_is_sent_to_negotiate_and_requests_go_out_at_once() {
    let mut s = session();
    let now = Instant::now();
    s.start_negotiated(&recorded("2025-06-18"))
        .expect("attached");
    s.start(now); // the driver's usual start does nothing now
    let n = s.negotiated().expect("negotiated").clone();
    assert_eq!(n.era.revision().as_str(), "2025-06-18");
    assert!(matches!(n.era, ClientEra::Handshake(_)));
    assert_eq!(n.server_info.name, "upstream");
    assert_eq!(n.instructions.as_deref(), Some("be brief"));
    assert!(n.capabilities.tools.is_some());
    assert!(matches!(s.poll_event(), Some(ClientEvent::Ready(_))));

    s.request(now, Method::ToolsList, None, RequestOptions::default())
        .expect("request");
    let mut sent = Vec::new();
    while let Some(t) = s.poll_transmit() {
        assert_eq!(t.version.map(|v| v.as_str()), Some("2025-06-18"));
        sent.push(serde_json::from_str::<Value>(&t.msg.to_json_string()).expect("json"));
    }
    assert_eq!(sent.len(), 1, "only the request: {sent:?}");
    assert_eq!(sent[0]["method"], "tools/list");
    // No handshake deadline is left running.
    assert!(s.poll_timeout().is_none());
}

#[test]
fn a_result_in_no_handshake_revision_is_refused_and_only_before_starting() {
    let mut s = session();
    assert!(s.start_negotiated(&recorded("2026-07-28")).is_err());
    assert!(
        s.start_negotiated(&to_raw(&json!({"nonsense": 1})))
            .is_err()
    );
    assert!(s.negotiated().is_none());

    let mut started = session();
    started.start(Instant::now());
    assert!(started.start_negotiated(&recorded("2025-06-18")).is_err());
    assert!(started.negotiated().is_none(), "still negotiating");
}
