//! The relay tests' shared conversation (`relay.rs`, `relay_metrics.rs`, `relay_mcpb.rs`,
//! `relay_http.rs`): a gateway in front of a stdio upstream, relaying or not (bare, or
//! with a policy and rate limits), a raw stdio client of it, and the calls every
//! comparison makes.
#![allow(dead_code)] // each test binary uses its part

pub mod faulty;

use std::num::NonZeroU32;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::peers::UrlServer;
use mcpwire::Service;
use mcpwire::router::Router;
use mcpwire_client::{EraChoice, Target};
use mcpwire_federation::{
    Callers, Effect, Federation, FederationConfig, Glob, Member, Policy, PolicyRule, Targets,
};
use mcpwire_gateway::limits::{Limited, Rate, RateLimits};
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_router::{CallCtx, NoArgs, ToolError, tool};
use mcpwire_testkit::raw::http::{ACCEPT_BOTH, HttpClient, REVISION};
use mcpwire_testkit::raw::stdio::Stdio;
use mcpwire_testkit::serve::{self, Served, serve};
use mcpwire_testkit::wait::wait_until_async;
use serde_json::{Value, json};

/// How long any one answer may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(30);

/// A gateway in front of `argv` (one child per downstream session), relaying or not.
pub async fn gateway(argv: Vec<String>, relay: bool) -> (Arc<UpstreamBackend>, Service) {
    gateway_to(Target::Command { argv }, relay).await
}

/// A gateway in front of `target` (one upstream session per downstream session),
/// relaying or not.
pub async fn gateway_to(target: Target, relay: bool) -> (Arc<UpstreamBackend>, Service) {
    let mut config = UpstreamConfig::new("up", target);
    config.shared = false;
    config.era = EraChoice::Handshake;
    config.relay = relay;
    let backend = UpstreamBackend::connect(config).await.expect("connect");
    let info = backend.server_info().clone();
    let service = Service::new(Router::new(backend.clone()), info, None);
    (backend, service)
}

/// A policy under which the caller `key` (an API key's or token's name) may not see `add`.
pub fn hiding_add_from(key: &str) -> Policy {
    Policy {
        default: Effect::Allow,
        rules: vec![PolicyRule {
            effect: Effect::Deny,
            callers: Callers {
                keys: vec![Glob::new(key).expect("glob")],
                ..Callers::default()
            },
            targets: Targets {
                tools: Some(vec![Glob::new("add").expect("glob")]),
                ..Targets::default()
            },
        }],
    }
}

/// The gateway's stack in front of `mcpwire demo` over stdio, relaying or not: the
/// upstream (`shared` or one per downstream session), the federation with `policy`, ten
/// calls per hour per identity.
pub async fn limited_gateway(
    shared: bool,
    relay: bool,
    policy: Policy,
) -> (Arc<UpstreamBackend>, Service) {
    limited_gateway_to(Target::Command { argv: demo() }, shared, relay, policy).await
}

/// [`limited_gateway`] in front of `target` (`mcpwire demo` over stdio or HTTP).
pub async fn limited_gateway_to(
    target: Target,
    shared: bool,
    relay: bool,
    policy: Policy,
) -> (Arc<UpstreamBackend>, Service) {
    let mut config = UpstreamConfig::new("up", target);
    config.shared = shared;
    config.era = EraChoice::Handshake;
    config.relay = relay;
    let upstream = UpstreamBackend::connect(config).await.expect("connect");
    let info = upstream.server_info().clone();
    let federation = Federation::new(
        FederationConfig::new(info.clone())
            .policy(policy)
            .member(Member::new("up", upstream.clone())),
    )
    .await
    .expect("federation");
    let ten = Rate::new(NonZeroU32::new(10).expect("10"), Duration::from_secs(3600));
    let limits = RateLimits::new(Some(ten), None, None, 1024, Default::default());
    let limited = Arc::new(Limited::new(federation, Arc::new(limits)));
    (upstream, Service::new(Router::new(limited), info, None))
}

/// Waits until `cond` holds (bounded by [`WAIT`]).
pub async fn eventually(what: &str, cond: impl Fn() -> bool) {
    wait_until_async(WAIT, what, async || cond()).await;
}

pub fn demo() -> Vec<String> {
    vec![crate::peers::bin().to_owned(), "demo".to_owned()]
}

/// `mcpwire demo` as an upstream: over stdio, or over Streamable HTTP (the server, kept
/// until the comparison is over).
pub fn demo_upstream(http: bool) -> (Target, Option<UrlServer>) {
    if !http {
        return (Target::Command { argv: demo() }, None);
    }
    let args = ["demo", "--transport", "http", "--port", "0"];
    let server = UrlServer::start(std::path::Path::new(crate::peers::bin()), &args, true);
    (Target::Url(server.url.clone()), Some(server))
}

/// POSTs each of `lines` in session `sid` and records what came back as sent: each
/// answer's status and content type, then its JSON body or its events' data (answering
/// the upstream's sampling requests on the way).
pub async fn post_each(
    http: &HttpClient,
    sid: &str,
    lines: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut seen = Vec::new();
    for line in lines {
        let h = [
            ("content-type", "application/json"),
            ("accept", ACCEPT_BOTH),
            ("mcp-session-id", sid),
            ("mcp-protocol-version", REVISION),
        ];
        let mut ex = http.send("POST", &h, line.as_bytes()).await;
        seen.push(format!(
            "{} {}",
            ex.status,
            ex.header("content-type").unwrap_or("-")
        ));
        if !ex.is_sse() {
            seen.push(ex.text().await);
            continue;
        }
        while let Some(data) = ex.next_event_data().await {
            answer_sampling(http, sid, &data).await;
            seen.push(data);
        }
    }
    seen
}

/// The same conversation through a gateway with `relay = false` (`general`: what it saw
/// and how many calls it relayed) and through one that relays (`relayed`): nothing relayed
/// by the first, `expected` calls by the second (`by`: "the relay", "the seam"), and the
/// same bytes seen.
pub fn assert_same<T: PartialEq + std::fmt::Debug>(
    general: &(T, u64),
    relayed: &(T, u64),
    expected: u64,
    by: &str,
) {
    assert_eq!(
        general.1, 0,
        "a gateway with `relay = false` relays nothing"
    );
    assert_eq!(relayed.1, expected, "{by} carried the calls");
    assert_eq!(relayed.0, general.0);
}

/// The JSON messages among `seen` ([`post_each`]'s record: status lines are skipped).
pub fn json_messages(seen: &[String]) -> Vec<Value> {
    seen.iter()
        .filter_map(|s| serde_json::from_str(s).ok())
        .collect()
}

/// Answers `data` when it is the upstream's sampling request.
async fn answer_sampling(http: &HttpClient, sid: &str, data: &str) {
    let msg: Value = serde_json::from_str(data).expect("event data is JSON");
    if msg["method"] != "sampling/createMessage" {
        return;
    }
    let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
        "role": "assistant", "model": "m", "content": {"type": "text", "text": "sampled"}}});
    let r = http.post(Some(sid), &answer).await;
    assert_eq!(r.status, 202);
}

/// One downstream stdio client of a gateway, in this process (testkit's stdio wire and
/// raw client).
pub struct Client {
    pub io: Stdio,
    _served: Served,
}

impl Client {
    /// Connects and initializes (with sampling, so the upstream may ask).
    pub async fn connect(service: &Service) -> Client {
        let mut served = serve(service.clone(), serve::stdio()).await;
        let mut c = Client {
            io: served.stdio(),
            _served: served,
        };
        c.send_line(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "t", "version": "1"}}})
            .to_string(),
        )
        .await;
        c.recv().await;
        c.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        c
    }

    pub async fn send_line(&mut self, line: &str) {
        self.io.write_raw(format!("{line}\n").as_bytes()).await;
    }

    pub async fn recv(&mut self) -> Value {
        self.io.recv_json().await
    }

    /// Reads until the answer to `id`, answering sampling requests; everything read.
    pub async fn until_answer(&mut self, id: &Value) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let msg = self.recv().await;
            if msg["method"] == "sampling/createMessage" {
                let answer = json!({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "role": "assistant", "model": "m",
                    "content": {"type": "text", "text": "sampled"}}});
                self.send_line(&answer.to_string()).await;
            }
            let done = msg.get("method").is_none() && &msg["id"] == id;
            seen.push(msg);
            if done {
                return seen;
            }
        }
    }

    /// Sends `line` (a request with id `id`) and reads until its answer.
    pub async fn call(&mut self, line: &str, id: Value) -> Vec<Value> {
        self.send_line(line).await;
        self.until_answer(&id).await
    }

    /// Cancels request `id` (`notifications/cancelled`).
    pub async fn cancel(&mut self, id: i64) {
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "changed my mind"}});
        self.send_line(&cancel.to_string()).await;
    }

    /// Calls `echo` with `text` as request `id`, and checks that its answer is the only
    /// thing that comes (nothing of a call cancelled before it).
    pub async fn echo_answers_alone(&mut self, id: i64, text: &str) {
        let seen = self
            .call(
                &tool_call(&json!(id), "echo", json!({"text": text})),
                json!(id),
            )
            .await;
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0]["result"]["content"][0]["text"], text);
    }
}

pub fn tool_call(id: &Value, name: &str, arguments: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}})
    .to_string()
}

/// The calls the conversation makes, as `(line, id)`.
pub fn conversation() -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    let mut add = |id: Value, name: &str, args: Value| {
        calls.push((tool_call(&id, name, args), id));
    };
    // The first call opens the upstream session (always the general path).
    add(json!(1), "echo", json!({"text": "first"}));
    add(
        json!(2),
        "echo",
        json!({"text": "é \"quoted\" \\ \u{2028}"}),
    );
    add(json!("str-3"), "echo", json!({"text": "string id"}));
    add(json!(4), "add", json!({"a": 2, "b": 3}));
    add(json!(5), "echo", json!({"wrong": 1}));
    add(json!(6), "test_error_handling", json!({}));
    add(json!(7), "no_such_tool", json!({}));
    add(json!(8), "test_tool_with_logging", json!({}));
    add(json!(9), "test_sampling", json!({"prompt": "hi"}));
    add(json!(10), "test_slow", json!({"seconds": 0}));
    add(json!(-11), "echo", json!({"text": "negative id"}));
    // Not relayable: read the general way in both gateways.
    calls.push((
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"},"_meta":{"k":1}}}"#.to_owned(),
        json!(12),
    ));
    calls.push((
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"e\u0063ho","arguments":{"text":"escaped name"}}}"#.to_owned(),
        json!(13),
    ));
    calls.push((
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"echo","arguments":[1]}}"#
            .to_owned(),
        json!(14),
    ));
    calls
}

/// What a client sees of `conversation` through a gateway in front of `argv`, and how
/// many calls it relayed.
pub async fn transcript(argv: Vec<String>, relay: bool) -> (Vec<Value>, u64) {
    let (backend, service) = gateway(argv, relay).await;
    let mut client = Client::connect(&service).await;
    let mut seen = Vec::new();
    for (line, id) in conversation() {
        seen.extend(client.call(&line, id).await);
    }
    // Bad input, answered as before.
    client.send_line("{\"jsonrpc\":\"2.0\",\"id\":20,").await;
    seen.push(client.recv().await);
    client
        .io
        .write_raw(b"{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}}\n")
        .await;
    seen.push(client.recv().await);
    (seen, backend.relayed_calls())
}

/// Starts and cancellations of `wait_for_cancel`.
#[derive(Default)]
pub struct Counts {
    pub started: AtomicUsize,
    pub cancelled: AtomicUsize,
}

/// The example server over Streamable HTTP, in this process, with `wait_for_cancel`
/// (counting its starts and the cancellations it saw).
pub async fn upstream() -> (Served, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let server = mcpwire_example_everything::server();
    let c = counts.clone();
    server.add_tool(
        tool("wait_for_cancel", move |ctx: CallCtx, _: NoArgs| {
            let c = c.clone();
            async move {
                c.started.fetch_add(1, Ordering::SeqCst);
                tokio::select! {
                    _ = ctx.cancelled() => {
                        c.cancelled.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, ToolError>("cancelled")
                    }
                    _ = tokio::time::sleep(Duration::from_secs(60)) => Ok("not cancelled"),
                }
            }
        })
        .description("Waits until cancelled (or 60 s)"),
    );
    (serve(server, serve::http()).await, counts)
}
