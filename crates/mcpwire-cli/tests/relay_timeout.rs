//! The relay keeps a backend's call timeout (`call_timeout_secs`, usual in deployed
//! configurations): a relayed call that waits longer is answered as the general path
//! answers it — `Timeout`, the upstream told — and the session goes on. The same
//! conversation through a gateway that relays and through one that does not
//! (`relay = false`) gives the client the same answers, byte for byte, over stdio and over
//! Streamable HTTP (the seam), to a stdio upstream and to a Streamable HTTP one; and the
//! relay carried the calls, the one that timed out included.

mod peers;
mod relay_conversation;

use std::sync::Arc;
use std::time::Duration;

use mcpwire::Service;
use mcpwire::router::Router;
use mcpwire_client::{EraChoice, Target};
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_testkit::serve::{self, serve};
use relay_conversation::{
    Client, assert_same, demo_upstream as upstream, json_messages, post_each, tool_call,
};
use serde_json::{Value, json};

/// The backend's call timeout: the slow call outlasts it, the others answer at once.
const CALL_TIMEOUT: Duration = Duration::from_secs(1);

/// A gateway in front of `target` with a call timeout, relaying or not.
async fn gateway(target: Target, relay: bool) -> (Arc<UpstreamBackend>, Service) {
    let mut config = UpstreamConfig::new("up", target);
    config.shared = false;
    config.era = EraChoice::Handshake;
    config.call_timeout = Some(CALL_TIMEOUT);
    config.relay = relay;
    let backend = UpstreamBackend::connect(config).await.expect("connect");
    let info = backend.server_info().clone();
    let service = Service::new(Router::new(backend.clone()), info, None);
    (backend, service)
}

/// The first call opens the downstream session's upstream session (the general path);
/// then a call that outlasts the timeout, one answered at once after it, and one more
/// slow call with a string id followed by a quick one.
fn conversation() -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    let mut add = |id: Value, name: &str, args: Value| {
        calls.push((tool_call(&id, name, args), id));
    };
    add(json!(1), "echo", json!({"text": "opens the session"}));
    add(json!(2), "test_slow", json!({"seconds": 30}));
    add(json!(3), "echo", json!({"text": "after a timeout"}));
    add(json!("slow-4"), "test_slow", json!({"seconds": 30}));
    add(json!(5), "add", json!({"a": 2, "b": 3}));
    calls
}

/// Calls 2–5: plain calls once the upstream session is open, the slow ones too.
const RELAYED: u64 = 4;

async fn over_stdio(target: Target, relay: bool) -> (Vec<Value>, u64) {
    let (up, service) = gateway(target, relay).await;
    let mut client = Client::connect(&service).await;
    let mut seen = Vec::new();
    for (line, id) in conversation() {
        seen.extend(client.call(&line, id).await);
    }
    (seen, up.relayed_calls())
}

async fn over_http(target: Target, relay: bool) -> (Vec<String>, u64) {
    let (up, service) = gateway(target, relay).await;
    let served = serve(service, serve::http()).await;
    let http = served.http();
    let sid = http.initialize_with(json!({})).await;
    let lines = conversation().into_iter().map(|(line, _)| line);
    let seen = post_each(&http, &sid, lines).await;
    (seen, up.relayed_calls())
}

/// What the conversation must meet whichever wire carried it.
fn check(seen: &[Value]) {
    let answer = |id: Value| {
        seen.iter()
            .find(|m| m.get("method").is_none() && m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {seen:#?}"))
            .clone()
    };
    for slow in [json!(2), json!("slow-4")] {
        let a = answer(slow);
        assert_eq!(a["error"]["code"], -32001, "timed out: {a}");
    }
    assert_eq!(
        answer(json!(3))["result"]["content"][0]["text"],
        "after a timeout"
    );
    assert_eq!(
        answer(json!(5))["result"]["content"][0]["text"],
        r#"{"sum":5.0}"#
    );
}

async fn compare_stdio(http_upstream: bool) {
    let (target, _server) = upstream(http_upstream);
    let general = over_stdio(target.clone(), false).await;
    let relayed = over_stdio(target, true).await;
    assert_same(&general, &relayed, RELAYED, "the relay");
    check(&relayed.0);
}

async fn compare_http(http_upstream: bool) {
    let (target, _server) = upstream(http_upstream);
    let general = over_http(target.clone(), false).await;
    let relayed = over_http(target, true).await;
    assert_same(&general, &relayed, RELAYED, "the seam");
    check(&json_messages(&relayed.0));
}

#[tokio::test]
async fn a_relayed_call_past_the_call_timeout_is_answered_as_generally_over_stdio() {
    compare_stdio(false).await;
}

#[tokio::test]
async fn a_relayed_call_past_the_call_timeout_is_answered_as_generally_over_http() {
    compare_http(false).await;
}

#[tokio::test]
async fn a_call_relayed_to_an_http_upstream_past_the_call_timeout_is_answered_as_generally() {
    compare_stdio(true).await;
    compare_http(true).await;
}
