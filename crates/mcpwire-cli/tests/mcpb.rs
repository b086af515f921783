//! The MCPB wire end to end: `mcpwire demo --transport mcpb` driven by testkit's raw MCPB
//! client carrying the frames of the crate's own `McpbCodec` — negotiation, token auth, MCP
//! calls, health checks (main and dedicated port), per-message tokens, bad input, the
//! handshake deadline and graceful shutdown on SIGTERM.

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mcpwire_model::{Message, Outbound, RequestId, to_raw};
use mcpwire_testkit::blocking::Mcpb;
use mcpwire_testkit::raw::mcpb::encode_frame;
use mcpwire_testkit::wait::poll_for;
use mcpwire_wire::Limits;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut, VersionOffer, frame_type};
use serde_json::{Value, json};
use tokio_util::codec::{Decoder, Encoder};

const TOKEN: &str = "s3cret-token";

struct Server {
    child: Child,
    addr: String,
    health: Option<String>,
}

impl Server {
    /// `mcpwire demo --transport mcpb` requiring [`TOKEN`].
    fn start(extra: &[&str]) -> Server {
        let mut args = vec!["--mcpb-token", TOKEN];
        args.extend_from_slice(extra);
        Server::start_with(&args)
    }

    /// `mcpwire demo --transport mcpb` with only `args` (no token: authentication off).
    fn start_with(args: &[&str]) -> Server {
        let mut all = vec!["demo", "--transport", "mcpb", "--port", "0"];
        all.extend_from_slice(args);
        let mut prefixes = vec!["mcpwire: listening on mcpb://"];
        if args.contains(&"--mcpb-health-port") {
            prefixes.push("mcpwire: health checks on mcpb://");
        }
        let mut l = common::listen(common::BIN, &all, "warn", &prefixes, false);
        let addr = l.addrs.remove(0);
        Server {
            child: l.child,
            addr,
            health: l.addrs.pop(),
        }
    }

    /// Sends SIGTERM.
    fn terminate(&self) {
        mcpwire_testkit::spawn::terminate(&self.child);
    }

    /// Waits (bounded) for the server to exit; its exit status.
    fn wait(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        poll_for(limit, || self.child.try_wait().ok().flatten())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// testkit's raw MCPB client carrying the frames of the crate's own codec (client side).
struct Client {
    raw: Mcpb,
    codec: McpbCodec,
    next_id: i64,
}

impl Client {
    fn connect(addr: &str) -> Client {
        Client {
            raw: Mcpb::connect_raw(addr, None),
            codec: McpbCodec::client(&Limits::default()),
            next_id: 1,
        }
    }

    fn send(&mut self, out: McpbOut<'_>) {
        let mut b = BytesMut::new();
        self.codec.encode(out, &mut b).expect("encode");
        self.raw.write_raw(&b);
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.raw.write_raw(bytes);
    }

    /// Sends `payload` as a Request frame, exactly as given.
    fn send_json(&mut self, payload: &Value) {
        self.raw.frame(frame_type::REQUEST, payload);
    }

    /// Sends `payload` and returns the next Response frame's JSON.
    fn ask_json(&mut self, payload: &Value) -> Value {
        self.send_json(payload);
        let (kind, v) = self.recv_json();
        assert_eq!(kind, frame_type::RESPONSE, "{v}");
        v
    }

    /// The next frame, decoded by the codec; `None` once the server closed the connection.
    fn recv(&mut self) -> Option<McpbFrame> {
        let (kind, body) = self.raw.next_raw_frame()?;
        let mut frame = BytesMut::from(&encode_frame(kind, &body)[..]);
        Some(
            self.codec
                .decode(&mut frame)
                .expect("a valid frame")
                .expect("a whole frame"),
        )
    }

    /// The next frame as (type, payload JSON), read without the codec (for answers the
    /// codec's client side would not accept, such as errors with `"id": null`).
    fn recv_json(&mut self) -> (u16, Value) {
        self.raw.next_frame()
    }

    /// The next MCP message, answering nothing else (health pings are skipped).
    fn recv_mcp(&mut self) -> Value {
        loop {
            match self.recv() {
                Some(McpbFrame::Mcp { msg: Ok(m), .. }) => return message_json(m),
                Some(McpbFrame::Health(None)) => continue,
                other => panic!("expected an MCP message, got {other:?}"),
            }
        }
    }

    fn request(&mut self, method: &str, params: Value, token: Option<&str>) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let req = Outbound::Request {
            id: RequestId::Int(id),
            method: method.to_owned().into(),
            params: Some(to_raw(&params)),
        };
        match token {
            Some(t) => self.send(McpbOut::AuthMcp(&req, t)),
            None => self.send(McpbOut::Mcp(&req)),
        }
        self.recv_mcp()
    }

    fn negotiate(&mut self) {
        self.send(McpbOut::Version(&VersionOffer::ours()));
        match self.recv() {
            Some(McpbFrame::VersionAck(a)) => assert_eq!(a.agreed_version, 1),
            other => panic!("expected a version ack, got {other:?}"),
        }
    }

    /// Negotiates, authenticates with the token, initializes MCP.
    fn ready(addr: &str) -> Client {
        Client::ready_with(addr, None)
    }

    /// [`Client::ready`], sending the MCP handshake with a per-message token.
    fn ready_with(addr: &str, per_message: Option<&str>) -> Client {
        let mut c = Client::connect(addr);
        c.negotiate();
        let auth = c.request("initialize", json!({ "token": TOKEN }), None);
        assert!(
            auth["result"]["sessionId"]
                .as_str()
                .is_some_and(|s| s.len() == 32),
            "{auth}"
        );
        assert!(
            auth["result"]["expiresAt"]
                .as_str()
                .is_some_and(|s| s.ends_with('Z')),
            "{auth}"
        );
        let init = c.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "mcpb-test", "version": "1"}}),
            per_message,
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        let note = Outbound::Notification {
            method: "notifications/initialized".into(),
            params: None,
        };
        c.send(McpbOut::Mcp(&note));
        c
    }
}

fn message_json(m: Message) -> Value {
    match m {
        Message::Response(r) => match r.outcome {
            Ok(raw) => {
                json!({"id": r.id.to_string(), "result": serde_json::from_str::<Value>(raw.get()).unwrap_or_default()})
            }
            Err(e) => {
                json!({"id": r.id.to_string(), "error": {"code": e.code, "message": e.message}})
            }
        },
        other => json!({ "other": format!("{other:?}") }),
    }
}

fn echo(c: &mut Client, text: &str) -> Value {
    c.request(
        "tools/call",
        json!({"name": "echo", "arguments": {"text": text}}),
        None,
    )
}

#[test]
fn negotiate_authenticate_and_call_tools() {
    let server = Server::start(&[]);
    let mut c = Client::ready(&server.addr);
    let r = echo(&mut c, "over mcpb");
    assert_eq!(r["result"]["content"][0]["text"], "over mcpb", "{r}");
    // Pipelined requests are all answered.
    for i in 0..20 {
        let req = Outbound::Request {
            id: RequestId::Int(100 + i),
            method: "ping".into(),
            params: None,
        };
        c.send(McpbOut::Mcp(&req));
    }
    let mut ids: Vec<String> = (0..20)
        .map(|_| c.recv_mcp()["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 20);
    // Health checks on the main port: an empty ping gets an empty pong, a detailed one a report.
    c.send(McpbOut::Health(None));
    assert!(matches!(c.recv(), Some(McpbFrame::Health(None))));
    c.send(McpbOut::Health(Some(&json!({"check": "detailed"}))));
    match c.recv() {
        Some(McpbFrame::Health(Some(h))) => {
            assert_eq!(h["healthy"], true, "{h}");
            assert_eq!(h["checks"]["tcp_service"]["healthy"], true, "{h}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_token_or_a_skipped_step_closes_the_connection() {
    let server = Server::start(&[]);
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let r = c.request("initialize", json!({ "token": "wrong" }), None);
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(c.recv().is_none(), "closed after a failed authentication");

    // MCP before authenticating.
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let req = Outbound::Request {
        id: RequestId::Int(1),
        method: "tools/list".into(),
        params: None,
    };
    c.send(McpbOut::Mcp(&req));
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("authenticate")));
    assert!(c.recv().is_none());

    // Anything before the version negotiation.
    let mut c = Client::connect(&server.addr);
    c.send(McpbOut::Health(None));
    c.send(McpbOut::Mcp(&req));
    // Health checks are answered in any phase; the request is not.
    assert!(matches!(c.recv(), Some(McpbFrame::Health(None))));
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("version negotiation")));
    assert!(c.recv().is_none());

    // A version offer with nothing in common.
    let mut c = Client::connect(&server.addr);
    let offer = VersionOffer {
        min_version: 2,
        max_version: 3,
        preferred_version: 3,
        supported_versions: vec![2, 3],
    };
    c.send(McpbOut::Version(&offer));
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(_))));
    assert!(c.recv().is_none());

    // The server still serves everyone else.
    let mut ok = Client::ready(&server.addr);
    assert_eq!(
        echo(&mut ok, "still here")["result"]["content"][0]["text"],
        "still here"
    );
}

#[test]
fn bad_bytes_get_an_error_frame_and_other_clients_are_unaffected() {
    let server = Server::start(&["--max-message-bytes", "4096"]);
    let mut other = Client::ready(&server.addr);

    // Garbage instead of a header: Error frame, then close.
    let mut c = Client::connect(&server.addr);
    c.send_raw(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("not an MCPB frame")));
    assert!(c.recv().is_none());

    // Oversize, malformed and unknown frames are answered and the stream goes on.
    let mut c = Client::ready(&server.addr);
    let mut header = Vec::new();
    header.extend_from_slice(b"MCPB");
    header.extend_from_slice(&1u16.to_be_bytes());
    header.extend_from_slice(&frame_type::REQUEST.to_be_bytes());
    header.extend_from_slice(&(1u32 << 20).to_be_bytes());
    c.send_raw(&header);
    c.send_raw(&vec![b' '; 1 << 20]);
    let (kind, r) = c.recv_json();
    assert_eq!(
        (kind, &r["error"]["code"], &r["id"]),
        (frame_type::RESPONSE, &json!(-32600), &Value::Null),
        "{r}"
    );
    let mut bad = Vec::new();
    bad.extend_from_slice(b"MCPB");
    bad.extend_from_slice(&1u16.to_be_bytes());
    bad.extend_from_slice(&frame_type::REQUEST.to_be_bytes());
    bad.extend_from_slice(&3u32.to_be_bytes());
    bad.extend_from_slice(b"\xff\xfe{");
    c.send_raw(&bad);
    assert_eq!(c.recv_json().1["error"]["code"], -32700);
    let mut unknown = Vec::new();
    unknown.extend_from_slice(b"MCPB");
    unknown.extend_from_slice(&1u16.to_be_bytes());
    unknown.extend_from_slice(&0x99u16.to_be_bytes());
    unknown.extend_from_slice(&2u32.to_be_bytes());
    unknown.extend_from_slice(b"{}");
    c.send_raw(&unknown);
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("unknown frame type")));
    // A request id outside the spec's alphabet is refused with its id.
    let bad_id = Outbound::Request {
        id: RequestId::Str("has space".into()),
        method: "ping".into(),
        params: None,
    };
    c.send(McpbOut::Mcp(&bad_id));
    let r = c.recv_json().1;
    assert_eq!(
        (&r["error"]["code"], &r["id"]),
        (&json!(-32600), &json!("has space")),
        "{r}"
    );
    assert_eq!(
        echo(&mut c, "after")["result"]["content"][0]["text"],
        "after"
    );
    assert_eq!(
        echo(&mut other, "other")["result"]["content"][0]["text"],
        "other"
    );
}

#[test]
fn a_silent_connection_is_closed_at_the_handshake_deadline() {
    let server = Server::start(&["--mcpb-handshake-timeout-ms", "300"]);
    let mut c = Client::connect(&server.addr);
    let started = Instant::now();
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("timed out")));
    assert!(c.recv().is_none());
    assert!(started.elapsed() < Duration::from_secs(9));
}

#[test]
fn per_message_tokens_are_checked_when_required() {
    let server = Server::start(&["--mcpb-per-message-auth"]);
    let mut c = Client::ready_with(&server.addr, Some(TOKEN));
    let no_token = echo(&mut c, "x");
    assert_eq!(no_token["error"]["code"], -32600, "{no_token}");
    let params = json!({"name": "echo", "arguments": {"text": "with token"}});
    let ok = c.request("tools/call", params.clone(), Some(TOKEN));
    assert_eq!(ok["result"]["content"][0]["text"], "with token", "{ok}");
    let wrong = c.request("tools/call", params, Some("nope"));
    assert_eq!(wrong["error"]["code"], -32600, "{wrong}");
}

#[test]
fn the_dedicated_health_port_answers_health_checks_only() {
    let server = Server::start(&["--mcpb-health-port", "0"]);
    let addr = server.health.clone().expect("health port");
    let mut c = Client::connect(&addr);
    c.send(McpbOut::Health(Some(&json!({"check": "simple"}))));
    assert!(matches!(c.recv(), Some(McpbFrame::Health(Some(h))) if h == json!({"healthy": true})));
    c.send(McpbOut::Health(Some(&json!({"check": "detailed"}))));
    assert!(
        matches!(c.recv(), Some(McpbFrame::Health(Some(h))) if h["checks"]["tcp_service"]["healthy"] == true)
    );
    c.send(McpbOut::Version(&VersionOffer::ours()));
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(_))));
    assert!(c.recv().is_none());
}

#[test]
fn sigterm_shuts_down_gracefully_and_calls_in_flight_finish() {
    let mut server = Server::start(&["--mcpb-shutdown-grace-secs", "10"]);
    let mut c = Client::ready(&server.addr);
    let slow = Outbound::Request {
        id: RequestId::Int(77),
        method: "tools/call".into(),
        params: Some(to_raw(
            &json!({"name": "test_slow", "arguments": {"seconds": 0.5}}),
        )),
    };
    c.send(McpbOut::Mcp(&slow));
    // A ping answered after it means the call was read and is running.
    let ping = Outbound::Request {
        id: RequestId::Int(76),
        method: "ping".into(),
        params: None,
    };
    c.send(McpbOut::Mcp(&ping));
    assert!(c.recv_mcp()["result"].is_object());
    server.terminate();
    assert!(matches!(c.recv(), Some(McpbFrame::Control(v)) if v["command"] == "shutdown"));
    // New requests are refused; the one in flight still finishes.
    let late = Outbound::Request {
        id: RequestId::Int(78),
        method: "ping".into(),
        params: None,
    };
    c.send(McpbOut::Mcp(&late));
    let mut answers = vec![c.recv_mcp(), c.recv_mcp()];
    answers.sort_by_key(|a| a["id"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        answers[0]["result"]["content"][0]["text"], "done",
        "{answers:?}"
    );
    assert_eq!(answers[1]["error"]["code"], -32603, "{answers:?}");
    c.send(McpbOut::Control(
        &json!({"command": "shutdown_ack", "status": "ok"}),
    ));
    assert!(c.recv().is_none(), "closed after the acknowledgement");
    let status = server
        .wait(Duration::from_secs(10))
        .expect("the server exits");
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_quiet_connection_is_pinged_then_closed_and_sessions_expire() {
    let server = Server::start(&["--mcpb-idle-ping-secs", "1"]);
    let mut c = Client::ready(&server.addr);
    // Quiet for a second: the server pings; no answer for another: it closes.
    assert!(matches!(c.recv(), Some(McpbFrame::Health(None))));
    assert!(c.recv().is_none(), "closed after an unanswered ping");
    // Answering the ping keeps the connection.
    let mut c = Client::ready(&server.addr);
    assert!(matches!(c.recv(), Some(McpbFrame::Health(None))));
    c.send(McpbOut::Health(None));
    assert_eq!(
        echo(&mut c, "alive")["result"]["content"][0]["text"],
        "alive"
    );

    let server = Server::start(&["--mcpb-session-ttl-secs", "1"]);
    let mut c = Client::ready(&server.addr);
    assert!(matches!(c.recv(), Some(McpbFrame::PeerError(e)) if e.contains("expired")));
    assert!(c.recv().is_none());
}

#[test]
fn connections_over_the_limit_are_told_and_closed() {
    let server = Server::start(&["--mcpb-max-connections", "1"]);
    let mut first = Client::ready(&server.addr);
    let mut second = Client::connect(&server.addr);
    assert!(matches!(second.recv(), Some(McpbFrame::PeerError(e)) if e.contains("too many")));
    assert!(second.recv().is_none());
    assert_eq!(
        echo(&mut first, "first")["result"]["content"][0]["text"],
        "first"
    );
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn standard_init(id: i64, version: &str, token: Option<&str>) -> Value {
    let mut params = json!({"protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "reference-style", "version": "1"}});
    if let Some(t) = token {
        params["token"] = json!(t);
    }
    rpc(id, "initialize", params)
}

fn has_session(answer: &Value) -> bool {
    let r = &answer["result"];
    r["sessionId"].as_str().is_some_and(|s| s.len() == 32)
        && r["expiresAt"].as_str().is_some_and(|s| s.ends_with('Z'))
}

/// Issue 10, defect 1: after `initialize {token}` every request is served directly, as the
/// reference gateway does; a later standard `initialize` is the real handshake, once.
#[test]
fn the_token_initialize_opens_the_mcp_session() {
    let server = Server::start(&[]);
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let auth = c.ask_json(&rpc(1, "initialize", json!({"token": TOKEN})));
    assert!(has_session(&auth), "{auth}");
    assert!(auth["result"].get("protocolVersion").is_none(), "{auth}");
    let tools = c.ask_json(&rpc(2, "tools/list", json!({})));
    assert!(
        tools["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{tools}"
    );
    let call = c.ask_json(&rpc(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    ));
    assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
    // The client's own initialize is its real handshake, not "already initialized"…
    let init = c.ask_json(&standard_init(4, "2025-06-18", None));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert!(init["result"]["serverInfo"]["name"].is_string(), "{init}");
    // … once.
    let again = c.ask_json(&standard_init(5, "2025-06-18", None));
    assert_eq!(again["error"]["code"], -32600, "{again}");
}

/// Defect 1: standard params riding along with the token are negotiated, and the answer
/// carries the standard fields beside the session id and expiry.
#[test]
fn standard_params_ride_along_with_the_token() {
    let server = Server::start(&[]);
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let init = c.ask_json(&standard_init(1, "2025-06-18", Some(TOKEN)));
    assert!(has_session(&init), "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let tools = c.ask_json(&rpc(2, "tools/list", json!({})));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    // A wrong token with standard params is refused like any wrong token.
    let mut bad = Client::connect(&server.addr);
    bad.negotiate();
    let r = bad.ask_json(&standard_init(1, "2025-06-18", Some("wrong")));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(bad.recv().is_none(), "closed after a failed authentication");
    // So is a standard initialize with no token at all.
    let mut none = Client::connect(&server.addr);
    none.negotiate();
    let r = none.ask_json(&standard_init(1, "2025-06-18", None));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(none.recv().is_none());
}

/// Defect 1: with authentication off, a token initialize and a plain MCP initialize both
/// work as the first request.
#[test]
fn without_authentication_either_order_works() {
    let server = Server::start_with(&[]);
    // Token first (any token is accepted as is), then straight to requests.
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let auth = c.ask_json(&rpc(1, "initialize", json!({"token": "anything"})));
    assert!(has_session(&auth), "{auth}");
    let tools = c.ask_json(&rpc(2, "tools/list", json!({})));
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    let init = c.ask_json(&standard_init(3, "2025-11-25", None));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    // MCP initialize first, no token: a plain MCP session.
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let init = c.ask_json(&standard_init(1, "2025-11-25", None));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert!(init["result"].get("sessionId").is_none(), "{init}");
    let call = c.ask_json(&rpc(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "open"}}),
    ));
    assert_eq!(call["result"]["content"][0]["text"], "open", "{call}");
}

/// Defect 2: the three wrapper shapes, each connection answered in its client's shape: the
/// auth wrappers plainly (as the reference gateway answers), the router's envelope as
/// `{"mcp_payload": …}` (what the reference router reads). The envelope's token
/// authenticates its `initialize` (the router never sends `params.token`).
#[test]
fn every_wrapper_shape_is_accepted_and_answered_in_kind() {
    let server = Server::start(&["--mcpb-per-message-auth"]);
    for key in ["request", "message"] {
        let wrap = |m: Value| json!({"auth_token": TOKEN, key: m});
        let mut c = Client::connect(&server.addr);
        c.negotiate();
        let auth = c.ask_json(&wrap(rpc(1, "initialize", json!({"token": TOKEN}))));
        assert!(has_session(&auth), "{key}: {auth}");
        let tools = c.ask_json(&wrap(rpc(2, "tools/list", json!({}))));
        assert!(tools["result"]["tools"].is_array(), "{key}: {tools}");
        let refused = c.ask_json(&json!({"auth_token": "wrong", key: rpc(3, "ping", json!({}))}));
        assert_eq!(refused["error"]["code"], -32600, "{key}: {refused}");
    }
    let envelope = |m: Value, token: &str| {
        json!({"id": m["id"], "timestamp": "2026-11-26T05:00:00Z", "source": "local-router",
               "target_namespace": "system", "auth_token": token, "mcp_payload": m})
    };
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let init = c.ask_json(&envelope(standard_init(1, "2025-11-25", None), TOKEN));
    let init = &init["mcp_payload"];
    assert!(has_session(init), "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let tools = c.ask_json(&envelope(rpc(2, "tools/list", json!({})), TOKEN));
    assert!(
        tools["mcp_payload"]["result"]["tools"].is_array(),
        "{tools}"
    );
    let refused = c.ask_json(&envelope(rpc(3, "ping", json!({})), "wrong"));
    assert_eq!(refused["mcp_payload"]["error"]["code"], -32600, "{refused}");
    // Errors the codec makes are enveloped too.
    let bad = c.ask_json(&envelope(
        json!({"jsonrpc": "2.0", "id": "has space", "method": "ping"}),
        TOKEN,
    ));
    assert_eq!(bad["mcp_payload"]["error"]["code"], -32600, "{bad}");
}

/// Issue 23 item 10: each message is answered in the shape it came in — a connection that
/// initializes plainly and then sends the router's envelope gets enveloped answers, and
/// plain ones again when it goes back to plain.
#[test]
fn each_message_is_answered_in_its_own_shape() {
    let server = Server::start_with(&[]);
    let envelope = |m: Value| {
        json!({"id": m["id"], "timestamp": "2026-12-05T05:00:00Z", "source": "local-router",
               "target_namespace": "system", "auth_token": "t", "mcp_payload": m})
    };
    let mut c = Client::connect(&server.addr);
    c.negotiate();
    let init = c.ask_json(&standard_init(1, "2025-11-25", None));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    let tools = c.ask_json(&envelope(rpc(2, "tools/list", json!({}))));
    assert!(
        tools["mcp_payload"]["result"]["tools"].is_array(),
        "{tools}"
    );
    let plain = c.ask_json(&rpc(3, "ping", json!({})));
    assert_eq!(plain["id"], 3, "{plain}");
    assert!(plain.get("mcp_payload").is_none(), "{plain}");
}
