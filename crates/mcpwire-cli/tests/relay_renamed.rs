//! The relay as a gateway is deployed: several upstreams behind one front door, so every
//! tool is exposed under its member's prefix (`prefix = "conditional"`) or renamed
//! (`[[upstream]] rename`). A relayed call then goes upstream under the member's own name,
//! written into the frame in place of the exposed one, and its answer comes back as it
//! came. The same conversation through a gateway that relays and through one that cannot
//! (`relay = false`: the general path) gives the client the same answers, byte for
//! byte, over stdio and over Streamable HTTP (the seam); the upstreams saw their own
//! names; and the relay carried the plain calls.

mod peers;
mod relay_conversation;

use std::sync::Arc;

use mcpwire::Service;
use mcpwire::router::Router;
use mcpwire_client::{EraChoice, Target};
use mcpwire_federation::{Federation, FederationConfig, Glob, Member};
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_testkit::serve::{self, serve};
use relay_conversation::{Client, assert_same, demo, json_messages, post_each, tool_call};
use serde_json::{Value, json};

/// Two `mcpwire demo` upstreams over stdio, `a` and `b` (one child per downstream session),
/// federated with the default prefixes (`a_echo`, `b_add`, …) and `b`'s `echo` renamed
/// `say`; relaying or not. `b`'s resources are left out: two copies of one server hold the
/// same URIs, so `b`'s would be rewritten, and a member whose URIs are rewritten has its
/// results rewritten too (the general path's work).
async fn gateway(relay: bool) -> ([Arc<UpstreamBackend>; 2], Service) {
    let connect = async |name: &str| {
        let mut config = UpstreamConfig::new(name, Target::Command { argv: demo() });
        config.shared = false;
        config.era = EraChoice::Handshake;
        config.relay = relay;
        UpstreamBackend::connect(config).await.expect("connect")
    };
    let (a, b) = (connect("a").await, connect("b").await);
    let info = a.server_info().clone();
    let federation = Federation::new(
        FederationConfig::new(info.clone())
            .member(Member::new("a", a.clone()))
            .member(
                Member::new("b", b.clone())
                    .rename("echo", "say")
                    .exclude(Glob::new("*://*").expect("glob")),
            ),
    )
    .await
    .expect("federation");
    ([a, b], Service::new(Router::new(federation), info, None))
}

/// The calls, as `(line, id)`: the first call to each member opens its upstream session
/// (the general path); then prefixed and renamed tools, logs, an ask, a tool error, an
/// unknown tool, and a frame whose params come before its id.
fn conversation() -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    let mut add = |id: Value, name: &str, args: Value| {
        calls.push((tool_call(&id, name, args), id));
    };
    add(json!(1), "a_echo", json!({"text": "opens a"}));
    add(json!(2), "say", json!({"text": "opens b"}));
    add(json!(3), "a_echo", json!({"text": "é \"quoted\" a_echo"}));
    add(json!("s-4"), "say", json!({"text": "renamed"}));
    add(json!(5), "b_add", json!({"a": 2, "b": 3}));
    add(json!(6), "a_test_tool_with_logging", json!({}));
    add(json!(7), "b_test_sampling", json!({"prompt": "hi"}));
    add(json!(8), "a_test_error_handling", json!({}));
    add(json!(9), "a_echo", json!({"wrong": 1}));
    add(json!(10), "a_no_such_tool", json!({}));
    add(json!(11), "b_echo", json!({"text": "renamed away"}));
    calls.push((
        r#"{"params":{"arguments":{"a":1,"b":41},"name":"a_add"},"id":12,"method":"tools/call","jsonrpc":"2.0"}"#
            .to_owned(),
        json!(12),
    ));
    calls
}

/// Calls 3–8 and 12 go through the relay: plain calls of tools the catalog has, once each
/// member's upstream session is open (9 is a plain call too: the upstream's own error
/// comes back through the relay).
const RELAYED: u64 = 8;

/// What a stdio client sees of the conversation, and how many calls the relay carried.
async fn over_stdio(relay: bool) -> (Vec<Value>, u64) {
    let ([a, b], service) = gateway(relay).await;
    let mut client = Client::connect(&service).await;
    let mut seen = Vec::new();
    for (line, id) in conversation() {
        seen.extend(client.call(&line, id).await);
    }
    (seen, a.relayed_calls() + b.relayed_calls())
}

/// What a Streamable HTTP client sees of the conversation (each answer's status, content
/// type and JSON body or events' data, as sent), and how many calls the relay carried.
async fn over_http(relay: bool) -> (Vec<String>, u64) {
    let ([a, b], service) = gateway(relay).await;
    let served = serve(service, serve::http()).await;
    let http = served.http();
    let sid = http.initialize_with(json!({"sampling": {}})).await;
    let lines = conversation().into_iter().map(|(line, _)| line);
    let seen = post_each(&http, &sid, lines).await;
    (seen, a.relayed_calls() + b.relayed_calls())
}

/// What the conversation must meet whichever wire carried it.
fn check(seen: &[Value]) {
    let answer = |id: Value| {
        seen.iter()
            .find(|m| m.get("method").is_none() && m["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id}: {seen:#?}"))
    };
    let text = |id: Value| answer(id)["result"]["content"][0]["text"].clone();
    assert_eq!(text(json!(3)), "é \"quoted\" a_echo", "a_echo is a's echo");
    assert_eq!(text(json!("s-4")), "renamed", "say is b's echo");
    assert_eq!(text(json!(5)), r#"{"sum":5.0}"#, "b_add is b's add");
    assert_eq!(text(json!(12)), r#"{"sum":42.0}"#, "params before the id");
    assert_eq!(
        text(json!(7)),
        "LLM response: sampled",
        "b asked the client"
    );
    assert!(
        seen.iter().any(|m| m["method"] == "notifications/message"),
        "a logged"
    );
    assert_eq!(answer(json!(8))["result"]["isError"], true, "a tool error");
    let bad = answer(json!(9));
    assert!(
        bad["result"]["isError"] == true || bad["error"].is_object(),
        "bad arguments: {bad}"
    );
    for unknown in [10, 11] {
        assert_eq!(
            answer(json!(unknown))["error"]["code"],
            -32602,
            "unknown tool"
        );
    }
}

#[tokio::test]
async fn prefixed_and_renamed_tools_are_relayed_under_their_own_names_over_stdio() {
    let general = over_stdio(false).await;
    let relayed = over_stdio(true).await;
    assert_same(&general, &relayed, RELAYED, "the relay");
    check(&relayed.0);
}

#[tokio::test]
async fn prefixed_and_renamed_tools_are_relayed_under_their_own_names_over_http() {
    let general = over_http(false).await;
    let relayed = over_http(true).await;
    assert_same(&general, &relayed, RELAYED, "the seam");
    check(&json_messages(&relayed.0));
}
