//! The client session driven message by message, with no I/O: what it sends as JSON, what
//! the server answers as JSON lines, what the owner sees as events.

use std::time::{Duration, Instant};

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::types::{ClientCapabilities, Implementation};
use mcpwire_model::{McpError, Method, Revision, to_raw};
use mcpwire_session::{
    Answer, ClientConfig, ClientEra, ClientEvent, ClientRequestId, ClientSession, EraChoice,
    ListKind, RequestOptions, TransmitKind,
};
use serde_json::{Value, json};

struct Harness {
    s: ClientSession,
    now: Instant,
}

fn config(era: EraChoice) -> ClientConfig {
    let mut c = ClientConfig::new(Implementation::new("tester", "1.0"));
    c.era = era;
    c.limits.max_in_flight = 4;
    c.limits.max_server_requests = 2;
    c.limits.max_events = 8;
    c.limits.handshake_timeout = Duration::from_secs(30);
    c.limits.discover_timeout = Duration::from_secs(10);
    c.limits.server_request_timeout = Duration::from_secs(60);
    c
}

impl Harness {
    fn new(era: EraChoice) -> Harness {
        Harness::with(config(era))
    }

    fn with(config: ClientConfig) -> Harness {
        let mut s = ClientSession::new(config);
        let now = Instant::now();
        s.start(now);
        Harness { s, now }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
        self.s.handle_timeout(self.now);
    }

    fn recv(&mut self, v: Value) {
        let bytes = serde_json::to_vec(&v).unwrap();
        self.s.handle_inbound(self.now, decode(&bytes));
    }

    /// Everything transmitted since the last call, as JSON.
    fn sent(&mut self) -> Vec<Value> {
        self.sent_with_kinds()
            .into_iter()
            .map(|(v, _, _)| v)
            .collect()
    }

    fn sent_with_kinds(&mut self) -> Vec<(Value, TransmitKind, Option<Revision>)> {
        let mut out = Vec::new();
        while let Some(t) = self.s.poll_transmit() {
            out.push((
                serde_json::from_str(&t.msg.to_json_string()).unwrap(),
                t.kind,
                t.version,
            ));
        }
        out
    }

    fn events(&mut self) -> Vec<ClientEvent> {
        let mut v = Vec::new();
        while let Some(e) = self.s.poll_event() {
            v.push(e);
        }
        v
    }

    fn request(&mut self, method: &str, params: Value) -> ClientRequestId {
        self.request_with(method, params, RequestOptions::default())
    }

    fn request_with(&mut self, method: &str, params: Value, o: RequestOptions) -> ClientRequestId {
        self.s
            .request(self.now, Method::parse(method), Some(to_raw(&params)), o)
            .expect("accepted")
    }

    /// Answers the discover probe with -32601, then `initialize` with 2025-11-25.
    fn handshake(&mut self) {
        let probe = self.sent().remove(0);
        self.recv(json!({"jsonrpc":"2.0","id":probe["id"],"error":{"code":-32601,"message":"no"}}));
        let init = self.sent().remove(0);
        assert_eq!(init["method"], "initialize");
        self.recv(json!({"jsonrpc":"2.0","id":init["id"],"result":{
            "protocolVersion":"2025-11-25","capabilities":{"tools":{}},
            "serverInfo":{"name":"srv","version":"2"}}}));
        assert_eq!(self.sent()[0]["method"], "notifications/initialized");
        assert!(matches!(self.events()[0], ClientEvent::Ready(_)));
    }

    /// Answers the discover probe with a 2026-07-28 result.
    fn discover(&mut self) {
        let probe = self.sent().remove(0);
        self.recv(json!({"jsonrpc":"2.0","id":probe["id"],"result":{
            "supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
            "resultType":"complete","ttlMs":0,"cacheScope":"private",
            "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"3"}}}}));
        assert!(matches!(self.events()[0], ClientEvent::Ready(_)));
    }
}

fn response(e: ClientEvent) -> (ClientRequestId, Result<Answer, McpError>) {
    match e {
        ClientEvent::Response { id, outcome } => (id, outcome),
        other => panic!("not a response: {other:?}"),
    }
}

fn complete(r: Result<Answer, McpError>) -> Value {
    match r {
        Ok(Answer::Complete(raw)) => serde_json::from_str(raw.get()).unwrap(),
        other => panic!("not a complete answer: {other:?}"),
    }
}

#[test]
fn auto_adopts_2026_when_discover_offers_it() {
    let mut h = Harness::new(EraChoice::Auto);
    // A request made before negotiation waits for it.
    let early = h.request("tools/list", json!({}));
    let sent = h.sent_with_kinds();
    assert_eq!(sent.len(), 1, "only the probe goes out first");
    let (probe, kind, version) = &sent[0];
    assert_eq!(probe["method"], "server/discover");
    assert!(matches!(kind, TransmitKind::Request(_)));
    assert_eq!(*version, Some(Revision::V2026_07_28));
    let meta = &probe["params"]["_meta"];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert_eq!(
        meta["io.modelcontextprotocol/clientCapabilities"],
        json!({})
    );
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "tester");
    h.recv(json!({"jsonrpc":"2.0","id":1,"result":{
        "supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},
        "instructions":"be nice",
        "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"modern","version":"3"}}}}));
    let ready = h.events();
    let ClientEvent::Ready(n) = &ready[0] else {
        panic!("{ready:?}")
    };
    assert_eq!(n.era, ClientEra::Stateless);
    assert_eq!(n.server_info.name, "modern");
    assert_eq!(n.instructions.as_deref(), Some("be nice"));
    assert!(n.capabilities.tools.is_some());
    // The queued request goes out stamped with the envelope.
    let out = h.sent();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 2);
    assert_eq!(out[0]["method"], "tools/list");
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    h.recv(json!({"jsonrpc":"2.0","id":2,"result":{"tools":[],"resultType":"complete"}}));
    let (id, r) = response(h.events().remove(0));
    assert_eq!(id, early);
    assert_eq!(complete(r)["tools"], json!([]));
    // Later requests too, and without params they still carry `_meta`.
    h.s.request(h.now, Method::PromptsList, None, RequestOptions::default())
        .unwrap();
    let out = h.sent();
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/clientInfo"]["version"],
        "1.0"
    );
    // A request may declare other capabilities than the session's (a gateway forwarding
    // its downstream client's).
    let theirs = ClientCapabilities {
        elicitation: Some(json!({"form": {}})),
        ..ClientCapabilities::default()
    };
    let opts = RequestOptions {
        capabilities: Some(std::sync::Arc::new(theirs)),
        ..RequestOptions::default()
    };
    h.s.request(h.now, Method::PromptsList, None, opts).unwrap();
    let out = h.sent();
    assert_eq!(
        out[0]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"],
        json!({"elicitation": {"form": {}}})
    );
}

#[test]
fn auto_falls_back_to_initialize_on_an_error() {
    let mut h = Harness::new(EraChoice::Auto);
    let probe = h.sent().remove(0);
    h.recv(json!({"jsonrpc":"2.0","id":probe["id"],"error":{"code":-32601,"message":"Method not found"}}));
    let sent = h.sent_with_kinds();
    let (init, _, version) = &sent[0];
    assert_eq!(init["method"], "initialize");
    assert_eq!(*version, None, "no MCP-Protocol-Version on initialize");
    assert_eq!(
        init["params"],
        json!({"protocolVersion":"2025-11-25","capabilities":{},
               "clientInfo":{"name":"tester","version":"1.0"}})
    );
    h.recv(json!({"jsonrpc":"2.0","id":init["id"],"result":{
        "protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}));
    let out = h.sent_with_kinds();
    assert_eq!(
        out[0].0,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"})
    );
    assert_eq!(out[0].2, Some(Revision::V2025_06_18));
    let ClientEvent::Ready(n) = h.events().remove(0) else {
        panic!()
    };
    assert_eq!(n.era, ClientEra::Handshake(Revision::V2025_06_18));
    // Handshake-era requests carry no envelope; a progress request carries its token.
    let id = h.request_with(
        "tools/call",
        json!({"name":"t","arguments":{}}),
        RequestOptions {
            progress: true,
            ..Default::default()
        },
    );
    let out = h.sent();
    assert_eq!(
        out[0]["params"],
        json!({"_meta":{"progressToken":id.wire_id()},"name":"t","arguments":{}})
    );
    h.request("tools/list", json!({}));
    assert_eq!(h.sent()[0]["params"], json!({}));
}

#[test]
fn a_discover_result_without_a_modern_version_falls_back() {
    for result in [
        json!({}),
        json!({"supportedVersions":["2025-11-25"],"capabilities":{}}),
        json!({"supportedVersions":"x"}),
    ] {
        let mut h = Harness::new(EraChoice::Auto);
        h.recv(json!({"jsonrpc":"2.0","id":1,"result":result}));
        assert_eq!(h.sent()[1]["method"], "initialize", "{result}");
    }
}

#[test]
fn a_silent_probe_falls_back_after_the_discover_timeout() {
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    h.advance(Duration::from_millis(9_999));
    assert!(h.sent().is_empty());
    h.advance(Duration::from_millis(1));
    let init = h.sent().remove(0);
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["id"], 2);
    // The late discover answer is ignored; the handshake goes on.
    h.recv(json!({"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}));
    assert!(h.events().is_empty());
    h.recv(json!({"jsonrpc":"2.0","id":2,"result":{
        "protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}));
    let ClientEvent::Ready(n) = h.events().remove(0) else {
        panic!()
    };
    assert_eq!(n.era, ClientEra::Handshake(Revision::V2025_11_25));
}

#[test]
fn the_discover_timeout_is_at_most_half_the_handshake() {
    let mut c = config(EraChoice::Auto);
    c.limits.handshake_timeout = Duration::from_secs(1);
    let mut h = Harness::with(c);
    h.sent();
    h.advance(Duration::from_millis(500));
    assert_eq!(h.sent()[0]["method"], "initialize");
    h.advance(Duration::from_millis(500));
    match h.events().remove(0) {
        ClientEvent::NegotiationFailed { method, error, .. } => {
            assert_eq!(method, Method::Initialize);
            assert_eq!(error, McpError::Timeout);
        }
        other => panic!("{other:?}"),
    }
}

/// SEP-2575's retry: a −32022 naming 2026-07-28 is probed again, once.
#[test]
fn unsupported_version_naming_2026_is_probed_again() {
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    let refusal = json!({"jsonrpc":"2.0","id":1,"error":{"code":-32022,
        "message":"Unsupported protocol version",
        "data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}});
    h.recv(refusal.clone());
    let again = h.sent().remove(0);
    assert_eq!(again["method"], "server/discover");
    assert_eq!(again["id"], 2);
    // A second refusal listing only 2026-07-28 ends negotiation.
    let mut second = refusal;
    second["id"] = json!(2);
    h.recv(second);
    match h.events().remove(0) {
        ClientEvent::NegotiationFailed { method, error, .. } => {
            assert_eq!(method, Method::ServerDiscover);
            assert!(
                matches!(error, McpError::UnsupportedVersion { .. }),
                "{error:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(h.s.is_finished());
}

#[test]
fn unsupported_version_with_no_common_revision_fails() {
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    h.recv(
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no",
        "data":{"supported":["2099-01-01"],"requested":"2026-07-28"}}}),
    );
    assert!(h.sent().is_empty());
    assert!(matches!(
        h.events().remove(0),
        ClientEvent::NegotiationFailed {
            error: McpError::UnsupportedVersion { .. },
            ..
        }
    ));
    // One listing 2025-11-25 falls back instead.
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    h.recv(
        json!({"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no",
        "data":{"supported":["2025-11-25"],"requested":"2026-07-28"}}}),
    );
    assert_eq!(h.sent()[0]["method"], "initialize");
}

#[test]
fn an_initialize_refused_for_2026_probes_again() {
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    h.advance(Duration::from_secs(10));
    assert_eq!(h.sent()[0]["method"], "initialize");
    h.recv(
        json!({"jsonrpc":"2.0","id":2,"error":{"code":-32022,"message":"no",
        "data":{"supported":["2026-07-28"],"requested":"2025-11-25"}}}),
    );
    assert_eq!(h.sent()[0]["method"], "server/discover");
    h.recv(json!({"jsonrpc":"2.0","id":3,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}));
    assert!(matches!(h.events()[0], ClientEvent::Ready(_)));
}

#[test]
fn initialize_answers_that_cannot_be_used_fail_negotiation() {
    for (result, want) in [
        (
            json!({"protocolVersion":"1999-01-01","capabilities":{},"serverInfo":{"name":"x"}}),
            "UnsupportedVersion",
        ),
        (
            json!({"protocolVersion":"2026-07-28","capabilities":{},"serverInfo":{"name":"x"}}),
            "UnsupportedVersion",
        ),
        (
            json!({"protocolVersion":"2025-11-25","capabilities":{}}),
            "BadPeerMessage",
        ),
    ] {
        let mut h = Harness::new(EraChoice::Handshake);
        let queued = h.request("tools/list", json!({}));
        let init = h.sent().remove(0);
        assert_eq!(init["method"], "initialize");
        h.recv(json!({"jsonrpc":"2.0","id":init["id"],"result":result}));
        let events = h.events();
        match &events[0] {
            ClientEvent::NegotiationFailed { error, .. } => {
                assert!(format!("{error:?}").starts_with(want), "{error:?}")
            }
            other => panic!("{other:?}"),
        }
        // The queued request ends with the same error.
        let (id, r) = response(events.into_iter().nth(1).expect("a response"));
        assert_eq!(id, queued);
        assert!(r.is_err());
        assert!(h.sent().is_empty());
        assert!(
            h.s.request(h.now, Method::ToolsList, None, RequestOptions::default())
                .is_err()
        );
    }
}

#[test]
fn stateless_choice_never_falls_back() {
    let mut h = Harness::new(EraChoice::Stateless);
    h.sent();
    h.advance(Duration::from_secs(20));
    assert!(
        h.sent().is_empty(),
        "no discover timeout in fixed 2026 mode"
    );
    h.recv(json!({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}));
    assert!(h.sent().is_empty());
    assert!(matches!(
        h.events().remove(0),
        ClientEvent::NegotiationFailed {
            method: Method::ServerDiscover,
            error: McpError::Wire(_),
            ..
        }
    ));
}

/// The connection closing while the probe waits reports the fallback that could not be
/// sent, as the Python client does.
#[test]
fn closing_during_the_probe_fails_naming_initialize() {
    let mut h = Harness::new(EraChoice::Auto);
    h.sent();
    let queued = h.request("tools/list", json!({}));
    h.s.handle_closed(McpError::ConnectionClosed("exited with status 3".into()));
    let events = h.events();
    match &events[0] {
        ClientEvent::NegotiationFailed { method, error, .. } => {
            assert_eq!(*method, Method::Initialize);
            assert_eq!(
                *error,
                McpError::ConnectionClosed("exited with status 3".into())
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(response(events.into_iter().nth(1).unwrap()).0, queued);
    assert!(h.sent().is_empty());
}

#[test]
fn requests_time_out_and_the_server_is_told() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    let id = h.request_with(
        "tools/call",
        json!({"name":"slow"}),
        RequestOptions {
            timeout: Some(Duration::from_secs(5)),
            progress: true,
            reset_timeout_on_progress: true,
            ..Default::default()
        },
    );
    h.sent();
    h.advance(Duration::from_secs(4));
    // Progress restarts the timeout.
    h.recv(json!({"jsonrpc":"2.0","method":"notifications/progress",
        "params":{"progressToken":id.wire_id(),"progress":1,"total":2,"message":"half"}}));
    match h.events().remove(0) {
        ClientEvent::Progress { request, update } => {
            assert_eq!(request, id);
            assert_eq!(update.total, Some(2.0));
            assert_eq!(update.message.as_deref(), Some("half"));
        }
        other => panic!("{other:?}"),
    }
    h.advance(Duration::from_secs(4));
    assert!(h.events().is_empty(), "the deadline moved");
    h.advance(Duration::from_secs(1));
    let (rid, r) = response(h.events().remove(0));
    assert_eq!(rid, id);
    assert_eq!(r.unwrap_err(), McpError::Timeout);
    let out = h.sent_with_kinds();
    assert_eq!(
        out[0].0,
        json!({"jsonrpc":"2.0","method":"notifications/cancelled",
               "params":{"requestId":id.wire_id(),"reason":"timed out"}})
    );
    assert_eq!(out[0].1, TransmitKind::Cancel(id));
    // The late answer is ignored.
    h.recv(json!({"jsonrpc":"2.0","id":id.wire_id(),"result":{"content":[]}}));
    assert!(h.events().is_empty());
    assert_eq!(h.s.in_flight(), 0);
}

#[test]
fn requests_go_out_under_ids_the_caller_chose_above_the_minted_ones() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    let floor = h.s.minted();
    assert!(floor >= 2, "the probe and `initialize` used ids");
    let call = |h: &mut Harness, n: u64| {
        let params = Some(to_raw(&json!({"name": "echo"})));
        h.s.request_as(
            h.now,
            ClientRequestId::new(n),
            Method::parse("tools/call"),
            params,
            RequestOptions::default(),
        )
    };
    // Ids the session used, and ids in flight, are refused.
    assert!(matches!(
        call(&mut h, floor),
        Err(McpError::InvalidRequest(_))
    ));
    call(&mut h, floor + 2).expect("a fresh id");
    assert!(matches!(
        call(&mut h, floor + 2),
        Err(McpError::InvalidRequest(_))
    ));
    // Out of order is fine (two handles racing to the connection).
    call(&mut h, floor + 1).expect("a lower fresh id");
    let ids: Vec<Value> = h.sent().into_iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, vec![json!(floor + 2), json!(floor + 1)]);
    h.recv(json!({"jsonrpc":"2.0","id":floor + 1,"result":{"content":[]}}));
    let (id, r) = response(h.events().remove(0));
    assert_eq!(id, ClientRequestId::new(floor + 1));
    assert_eq!(complete(r), json!({"content":[]}));
    // The session's own ids go above every chosen one.
    let minted = h.request("tools/list", json!({}));
    assert_eq!(minted, ClientRequestId::new(floor + 3));
}

#[test]
fn cancel_tells_the_server_and_ends_the_request() {
    let mut h = Harness::new(EraChoice::Auto);
    h.discover();
    let id = h.request("tools/call", json!({"name":"slow"}));
    h.sent();
    assert!(h.s.cancel(id, "caller cancelled"));
    assert!(!h.s.cancel(id, "again"));
    let out = h.sent();
    assert_eq!(out[0]["method"], "notifications/cancelled");
    assert_eq!(out[0]["params"]["reason"], "caller cancelled");
    let (_, r) = response(h.events().remove(0));
    assert_eq!(r.unwrap_err(), McpError::Cancelled);
    // A request cancelled before negotiation ends is never sent.
    let mut h = Harness::new(EraChoice::Auto);
    let id = h.request("tools/list", json!({}));
    h.s.cancel(id, "x");
    assert!(matches!(h.events()[0], ClientEvent::Response { .. }));
    h.discover();
    assert!(h.sent().is_empty());
}

#[test]
fn server_requests_are_surfaced_checked_and_answered() {
    let mut c = config(EraChoice::Auto);
    c.capabilities = ClientCapabilities {
        sampling: Some(json!({})),
        ..Default::default()
    };
    let mut h = Harness::with(c);
    h.handshake();
    // ping is answered by the session itself.
    h.recv(json!({"jsonrpc":"2.0","id":"p1","method":"ping"}));
    assert_eq!(h.sent()[0], json!({"jsonrpc":"2.0","id":"p1","result":{}}));
    // No elicitation capability: refused with the model's error.
    h.recv(json!({"jsonrpc":"2.0","id":7,"method":"elicitation/create","params":{"message":"?"}}));
    let refusal = h.sent().remove(0);
    assert_eq!(refusal["error"]["code"], -32600);
    assert_eq!(
        refusal["error"]["data"]["requiredCapabilities"],
        json!({"elicitation":{}})
    );
    h.recv(json!({"jsonrpc":"2.0","id":8,"method":"no/such"}));
    assert_eq!(h.sent()[0]["error"]["code"], -32601);
    // Sampling is declared: surfaced, answered by the owner.
    h.recv(
        json!({"jsonrpc":"2.0","id":9,"method":"sampling/createMessage",
        "params":{"messages":[],"maxTokens":5}}),
    );
    let ClientEvent::ServerRequest(req) = h.events().remove(0) else {
        panic!()
    };
    assert_eq!(req.method, Method::SamplingCreateMessage);
    assert!(h.sent().is_empty());
    assert!(h.s.answer(
        req.id,
        Ok(to_raw(
            &json!({"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"})
        ))
    ));
    assert!(!h.s.answer(req.id, Ok(to_raw(&json!({})))));
    let out = h.sent();
    assert_eq!(out[0]["id"], 9);
    assert_eq!(out[0]["result"]["model"], "m");
    // The same id twice at once is refused.
    h.recv(json!({"jsonrpc":"2.0","id":10,"method":"sampling/createMessage","params":{}}));
    h.recv(json!({"jsonrpc":"2.0","id":10,"method":"sampling/createMessage","params":{}}));
    assert_eq!(h.sent()[0]["error"]["code"], -32600);
    // The server cancels its request.
    let ClientEvent::ServerRequest(req) = h.events().remove(0) else {
        panic!()
    };
    h.recv(json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}));
    assert!(matches!(h.events()[0], ClientEvent::ServerRequestCancelled(id) if id == req.id));
    assert!(!h.s.answer(req.id, Ok(to_raw(&json!({})))));
    // An unanswered one times out: the server gets an error, the owner a cancellation.
    h.recv(json!({"jsonrpc":"2.0","id":11,"method":"sampling/createMessage","params":{}}));
    h.events();
    h.advance(Duration::from_secs(60));
    assert_eq!(h.sent()[0]["error"]["code"], -32001);
    assert!(matches!(
        h.events()[0],
        ClientEvent::ServerRequestCancelled(_)
    ));
    // At most two pending at once.
    for id in 20..23 {
        h.recv(json!({"jsonrpc":"2.0","id":id,"method":"sampling/createMessage","params":{}}));
    }
    let out = h.sent();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0]["id"], 22);
    assert_eq!(out[0]["error"]["code"], -32600);
    assert_eq!(h.s.server_requests_pending(), 2);
}

#[test]
fn in_2026_server_requests_are_method_not_found() {
    let mut c = config(EraChoice::Auto);
    c.capabilities.sampling = Some(json!({}));
    let mut h = Harness::with(c);
    h.discover();
    for method in ["sampling/createMessage", "ping"] {
        h.recv(json!({"jsonrpc":"2.0","id":1,"method":method,"params":{}}));
        assert_eq!(h.sent()[0]["error"]["code"], -32601, "{method}");
    }
    assert!(h.events().is_empty());
}

#[test]
fn notifications_become_events() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    for (method, params) in [
        (
            "notifications/message",
            json!({"level":"warning","logger":"l","data":{"x":1}}),
        ),
        ("notifications/tools/list_changed", json!({})),
        ("notifications/prompts/list_changed", json!({})),
        ("notifications/resources/list_changed", json!({})),
        (
            "notifications/resources/updated",
            json!({"uri":"file:///a"}),
        ),
        (
            "notifications/tasks/status",
            json!({"taskId":"t1","status":"working"}),
        ),
        // progress for a request that did not ask, or for nobody: dropped
        (
            "notifications/progress",
            json!({"progressToken":99,"progress":1}),
        ),
    ] {
        h.recv(json!({"jsonrpc":"2.0","method":method,"params":params}));
    }
    let e = h.events();
    assert_eq!(e.len(), 6, "{e:?}");
    assert!(
        matches!(&e[0], ClientEvent::Log { entry, related: None } if entry.logger.as_deref() == Some("l") && entry.data.get() == "{\"x\":1}")
    );
    assert!(matches!(e[1], ClientEvent::ListChanged(ListKind::Tools)));
    assert!(matches!(e[2], ClientEvent::ListChanged(ListKind::Prompts)));
    assert!(matches!(
        e[3],
        ClientEvent::ListChanged(ListKind::Resources)
    ));
    assert!(matches!(&e[4], ClientEvent::ResourceUpdated { uri } if uri == "file:///a"));
    assert!(
        matches!(&e[5], ClientEvent::Notification { method, .. } if method.as_str() == "notifications/tasks/status")
    );
}

#[test]
fn input_required_is_surfaced_and_retried_as_a_new_request() {
    let mut h = Harness::new(EraChoice::Auto);
    h.discover();
    let params = json!({"name":"ask","arguments":{"q":1}});
    let id = h.request("tools/call", params.clone());
    h.sent();
    h.recv(json!({"jsonrpc":"2.0","id":id.wire_id(),"result":{
        "resultType":"input_required","requestState":"opaque",
        "inputRequests":{"e1":{"method":"elicitation/create",
            "params":{"message":"name?","requestedSchema":{"type":"object"}}}}}}));
    let (_, r) = response(h.events().remove(0));
    let Ok(Answer::InputRequired(ir)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(ir.request_state.as_deref(), Some("opaque"));
    assert_eq!(ir.input_requests[0].key, "e1");
    assert_eq!(ir.input_requests[0].method, Method::ElicitationCreate);
    let retry = ir
        .retry_params(
            Some(&to_raw(&params)),
            [(
                "e1".to_owned(),
                to_raw(&json!({"action":"accept","content":{"n":"bob"}})),
            )],
        )
        .unwrap();
    let again =
        h.s.request(
            h.now,
            Method::ToolsCall,
            Some(retry),
            RequestOptions::default(),
        )
        .unwrap();
    assert_ne!(again, id);
    let out = h.sent().remove(0);
    assert_eq!(out["params"]["requestState"], "opaque");
    assert_eq!(out["params"]["inputResponses"]["e1"]["content"]["n"], "bob");
    assert_eq!(out["params"]["arguments"], json!({"q":1}));
    assert_eq!(
        out["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
}

#[test]
fn errors_and_closing_end_every_request() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    let a = h.request("tools/call", json!({"name":"a"}));
    let b = h.request("tools/call", json!({"name":"b"}));
    h.sent();
    h.recv(json!({"jsonrpc":"2.0","id":a.wire_id(),"error":{"code":-32602,"message":"Unknown tool: a"}}));
    let (id, r) = response(h.events().remove(0));
    assert_eq!(id, a);
    let Err(McpError::Wire(obj)) = r else {
        panic!()
    };
    assert_eq!(obj.code, -32602);
    h.s.handle_closed(McpError::ConnectionClosed("gone".into()));
    let (id, r) = response(h.events().remove(0));
    assert_eq!(id, b);
    assert_eq!(r.unwrap_err(), McpError::ConnectionClosed("gone".into()));
    assert!(
        h.s.request(h.now, Method::ToolsList, None, RequestOptions::default())
            .is_err()
    );
    assert!(h.sent().is_empty());
}

#[test]
fn bounds_hold() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    for _ in 0..4 {
        h.request("tools/list", json!({}));
    }
    let over =
        h.s.request(h.now, Method::ToolsList, None, RequestOptions::default());
    assert!(matches!(over, Err(McpError::LimitExceeded(_))));
    assert!(
        h.s.request(
            h.now,
            Method::ToolsCall,
            Some(to_raw(&json!([1]))),
            RequestOptions::default()
        )
        .is_err()
    );
    assert!(
        h.s.request(h.now, Method::Initialize, None, RequestOptions::default())
            .is_err()
    );
    // An owner that does not take its events: notifications past the queue's bound are
    // dropped and counted, server requests refused, memory stays flat.
    let mut c = config(EraChoice::Auto);
    c.capabilities.roots = Some(json!({}));
    c.limits.max_server_requests = 100;
    let mut h = Harness::with(c);
    h.handshake();
    for i in 0..10_000 {
        h.recv(json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"}));
        if i % 1000 == 0 {
            h.recv(json!({"jsonrpc":"2.0","id":i,"method":"roots/list"}));
        }
    }
    // The first server request found room (after one notification); 7 notifications did.
    assert_eq!(h.s.events_dropped(), 10_000 - 7);
    let refused = h.sent();
    assert_eq!(
        refused.len(),
        9,
        "every later server request refused: the queue is full"
    );
    assert!(refused.iter().all(|m| m["error"]["code"] == -32600));
    assert_eq!(h.events().len(), 8);
}

#[test]
fn malformed_server_messages_are_answered_or_ignored() {
    let mut h = Harness::new(EraChoice::Auto);
    h.handshake();
    h.s.handle_inbound(h.now, decode(br#"{"jsonrpc":"1.0","id":3,"method":"x"}"#));
    assert_eq!(h.sent()[0]["error"]["code"], -32600);
    h.s.handle_inbound(h.now, decode(br#"{"jsonrpc":"2.0","id":99,"result":{}}"#));
    h.s.handle_inbound(h.now, decode(b"not json"));
    assert!(h.sent().is_empty());
    assert!(h.events().is_empty());
}

/// A transport that cannot deliver a request (an HTTP status that is not an MCP answer)
/// ends it as an error answer would: the probe falls back, `initialize` fails naming its id.
#[test]
fn transport_failures_end_requests() {
    let mut h = Harness::new(EraChoice::Auto);
    let probe = h.sent_with_kinds().remove(0).1;
    let TransmitKind::Request(probe) = probe else {
        panic!()
    };
    assert!(h.s.is_awaiting(probe));
    h.s.handle_failed(h.now, probe, McpError::ConnectionClosed("HTTP 404".into()));
    assert!(!h.s.is_awaiting(probe));
    let (init, kind, _) = h.sent_with_kinds().remove(0);
    assert_eq!(init["method"], "initialize");
    let TransmitKind::Request(init_id) = kind else {
        panic!()
    };
    h.s.handle_failed(
        h.now,
        init_id,
        McpError::ConnectionClosed("HTTP 404".into()),
    );
    match h.events().remove(0) {
        ClientEvent::NegotiationFailed { id, method, .. } => {
            assert_eq!(id, init_id);
            assert_eq!(method, Method::Initialize);
        }
        other => panic!("{other:?}"),
    }
    // After negotiation, a failed request ends with the transport's error.
    let mut h = Harness::new(EraChoice::Auto);
    h.discover();
    let id = h.request("tools/list", json!({}));
    h.s.handle_failed(h.now, id, McpError::ConnectionClosed("reset".into()));
    let (rid, r) = response(h.events().remove(0));
    assert_eq!(rid, id);
    assert_eq!(r.unwrap_err(), McpError::ConnectionClosed("reset".into()));
}
