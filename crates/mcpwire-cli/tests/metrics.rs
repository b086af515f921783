//! The admin listener through the binary: `/metrics` shows the MCPB spec's names and the
//! requests and tool calls of every wire with their labels, and its counters move when
//! clients call; auth failures are counted; `/healthz` and `/readyz` answer.

mod common;

use common::http::{Exchange, HttpServer};
use common::wires::{Conversation, Mcpb};
use mcpwire_testkit::pki;
use mcpwire_testkit::wait::wait_until;
use serde_json::json;

/// A gateway serving the demo on MCPB and HTTP, with its admin listener.
struct Gateway {
    _child: ChildGuard,
    mcpb: String,
    http: String,
    admin: String,
}

struct ChildGuard(std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Gateway {
    fn start(extra: &[&str]) -> Gateway {
        let mut args = vec![
            "serve",
            "--demo",
            "--listen",
            "mcpb://127.0.0.1:0",
            "--listen",
            "http://127.0.0.1:0/mcp",
            "--metrics-listen",
            "127.0.0.1:0",
        ];
        args.extend_from_slice(extra);
        let mut l = common::listen(
            env!("CARGO_BIN_EXE_mcpwire"),
            &args,
            "warn",
            &[
                "mcpwire: listening on mcpb://",
                "mcpwire: listening on http://",
                "mcpwire: admin on http://",
            ],
            false,
        );
        let admin = l.addrs.remove(2);
        let admin = admin.split(' ').next().unwrap_or_default().to_owned();
        let http = l.addrs.remove(1);
        let mcpb = l.addrs.remove(0);
        Gateway {
            _child: ChildGuard(l.child),
            mcpb,
            http,
            admin,
        }
    }

    fn scrape(&self) -> String {
        let r = Exchange::get(&self.admin, "/metrics");
        assert_eq!(r.status, 200);
        assert!(
            r.header("content-type")
                .is_some_and(|c| c.starts_with("text/plain")),
            "{:?}",
            r.headers
        );
        r.text()
    }
}

/// The value of the sample `name{labels}` (labels as rendered, in any order), or 0.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, rest) = series.split_once('{').unwrap_or((series, "}"));
            if n != name {
                return None;
            }
            let all = labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")));
            all.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}

#[test]
fn metrics_name_the_mcpb_spec_and_every_wire_and_move() {
    let gw = Gateway::start(&[]);
    let before = gw.scrape();

    // MCPB: a session, a tool call, an unknown tool.
    let mut mcpb = Conversation::new(Mcpb::connect(&gw.mcpb));
    mcpb.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    mcpb.notify("notifications/initialized", json!({}));
    let r = mcpb.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert!(r.get("result").is_some(), "{r}");
    mcpb.request(
        3,
        "tools/call",
        json!({"name": "made-up-1", "arguments": {}}),
    );

    // HTTP: a session and a tool call.
    let http = HttpServer::at(&gw.http);
    let sid = http.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "hi"}}});
    let r = http.post(Some(&sid), &call);
    assert_eq!(r.status, 200);
    r.text();

    let after = gw.scrape();
    // The MCPB spec's names.
    for name in [
        "mcp_gateway_tcp_connections_total",
        "mcp_gateway_tcp_connections_active",
        "mcp_gateway_tcp_messages_total",
        "mcp_gateway_tcp_bytes_total",
        "mcp_gateway_tcp_message_duration_seconds_bucket",
        "mcpwire_requests_total",
        "mcpwire_request_duration_seconds_bucket",
        "mcpwire_tool_calls_total",
        "mcpwire_tool_call_duration_seconds_bucket",
        "mcpwire_backend_up",
    ] {
        assert!(after.contains(name), "{name} missing:\n{after}");
    }
    let moved = |name: &str, labels: &[(&str, &str)]| {
        sample(&after, name, labels) - sample(&before, name, labels)
    };
    assert_eq!(moved("mcp_gateway_tcp_connections_total", &[]), 1.0);
    assert_eq!(
        sample(&after, "mcp_gateway_tcp_connections_active", &[]),
        1.0
    );
    let inbound_requests = [("type", "request"), ("direction", "inbound")];
    assert_eq!(
        moved("mcp_gateway_tcp_messages_total", &inbound_requests),
        3.0
    );
    let outbound = [("type", "response"), ("direction", "outbound")];
    assert_eq!(moved("mcp_gateway_tcp_messages_total", &outbound), 3.0);
    let version = [("type", "version"), ("direction", "inbound")];
    assert_eq!(moved("mcp_gateway_tcp_messages_total", &version), 1.0);
    assert!(moved("mcp_gateway_tcp_bytes_total", &[("direction", "inbound")]) > 100.0);
    assert!(moved("mcp_gateway_tcp_bytes_total", &[("direction", "outbound")]) > 100.0);
    assert!(moved("mcp_gateway_tcp_message_duration_seconds_count", &[]) >= 5.0);

    // Requests and tool calls, per wire, with their outcome.
    let ok_call = |wire| [("wire", wire), ("tool", "echo"), ("outcome", "ok")];
    assert_eq!(moved("mcpwire_tool_calls_total", &ok_call("mcpb")), 1.0);
    assert_eq!(moved("mcpwire_tool_calls_total", &ok_call("http")), 1.0);
    let unknown = [
        ("wire", "mcpb"),
        ("tool", "(unknown)"),
        ("outcome", "error"),
    ];
    assert_eq!(moved("mcpwire_tool_calls_total", &unknown), 1.0, "{after}");
    assert!(
        !after.contains("made-up-1"),
        "a made-up tool name made a series"
    );
    // Requests the router answers (the session answers `initialize` and `ping` itself).
    let http_calls = [
        ("wire", "http"),
        ("method", "tools/call"),
        ("outcome", "ok"),
    ];
    assert_eq!(moved("mcpwire_requests_total", &http_calls), 1.0, "{after}");
    let calls = [("wire", "mcpb"), ("method", "tools/call")];
    assert_eq!(moved("mcpwire_requests_total", &calls), 2.0);
    assert_eq!(
        moved(
            "mcpwire_tool_call_duration_seconds_count",
            &[("wire", "http"), ("tool", "echo")]
        ),
        1.0
    );
    assert_eq!(
        sample(&after, "mcpwire_backend_up", &[("backend", "demo")]),
        1.0
    );

    // A protocol error: a frame of an unknown type is refused, the connection goes on.
    drop(mcpb);
    let mut raw = std::net::TcpStream::connect(&gw.mcpb).expect("connect");
    use std::io::Write;
    let mut frame = Vec::new();
    frame.extend_from_slice(&0x4D43_5042u32.to_be_bytes());
    frame.extend_from_slice(&1u16.to_be_bytes());
    frame.extend_from_slice(&0x0777u16.to_be_bytes());
    frame.extend_from_slice(&0u32.to_be_bytes());
    raw.write_all(&frame).expect("write");
    // The Error frame answering it is written after the error was counted.
    use std::io::Read;
    raw.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    let mut header = [0u8; 12];
    raw.read_exact(&mut header).expect("an Error frame");
    assert_eq!(u16::from_be_bytes([header[6], header[7]]), 0x0005);
    let now = gw.scrape();
    let refused = [("type", "refused")];
    assert_eq!(
        sample(&now, "mcp_gateway_tcp_protocol_errors_total", &refused)
            - sample(&after, "mcp_gateway_tcp_protocol_errors_total", &refused),
        1.0,
        "{now}"
    );
}

#[test]
fn auth_failures_are_counted_and_health_answers() {
    let dir = std::env::temp_dir().join(format!("mcpwire-metrics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let keys = dir.join("keys");
    std::fs::write(&keys, "ops=secret-key-1\n").expect("keys");
    let gw = Gateway::start(&["--api-key-file", keys.to_str().expect("utf-8")]);

    let healthz = Exchange::get(&gw.admin, "/healthz");
    assert_eq!(healthz.status, 200);
    let readyz = Exchange::get(&gw.admin, "/readyz");
    assert_eq!(readyz.status, 200);
    let body = readyz.json();
    assert_eq!(body["ready"], true, "{body}");
    assert_eq!(body["backends"][0]["name"], "demo", "{body}");

    let before = gw.scrape();
    let http = HttpServer::at(&gw.http);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "0"}}});
    let r = http.post(None, &init);
    assert_eq!(r.status, 401);
    let r = http.send(
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("authorization", "Bearer not-a-key"),
        ],
        init.to_string().as_bytes(),
    );
    assert_eq!(r.status, 401);
    let after = gw.scrape();
    let moved = |reason| {
        let l = [("reason", reason)];
        sample(&after, "mcpwire_auth_failures_total", &l)
            - sample(&before, "mcpwire_auth_failures_total", &l)
    };
    assert_eq!(moved("missing"), 1.0, "{after}");
    assert_eq!(moved("unknown"), 1.0, "{after}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rate_and_connection_refusals_are_counted() {
    let gw = Gateway::start(&["--rate-per-tool", "1/h", "--connections-per-ip", "2"]);
    let before = gw.scrape();

    // Two MCPB connections hold this address's two slots (each has negotiated its version,
    // so the listener took its slot); an HTTP connection is then refused with 429.
    let mut first = Conversation::new(Mcpb::connect(&gw.mcpb));
    let _second = Mcpb::connect(&gw.mcpb);
    let http = HttpServer::at(&gw.http);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                 "clientInfo": {"name": "t", "version": "0"}}});
    let r = http.post(None, &init);
    assert_eq!(r.status, 429);

    // The tool rate (1 an hour): the second call of `echo` is refused.
    first.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "0"}}),
    );
    first.notify("notifications/initialized", json!({}));
    let ok = first.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "a"}}),
    );
    assert!(ok.get("result").is_some(), "{ok}");
    let refused = first.request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "b"}}),
    );
    assert_eq!(refused["error"]["data"]["limit"], "tool", "{refused}");

    let after = gw.scrape();
    let moved = |wire, limit| {
        let l = [("wire", wire), ("limit", limit)];
        sample(&after, "mcpwire_rate_limited_total", &l)
            - sample(&before, "mcpwire_rate_limited_total", &l)
    };
    assert_eq!(moved("http", "connections"), 1.0, "{after}");
    assert_eq!(moved("mcpb", "tool"), 1.0, "{after}");
    assert_eq!(moved("mcpb", "connections"), 0.0, "{after}");
    // The refused call is also a request answered with an error.
    let refused_call = [("wire", "mcpb"), ("tool", "echo"), ("outcome", "error")];
    assert_eq!(
        sample(&after, "mcpwire_tool_calls_total", &refused_call)
            - sample(&before, "mcpwire_tool_calls_total", &refused_call),
        1.0,
        "{after}"
    );
}

#[test]
fn failed_tls_handshakes_are_counted() {
    use std::io::{Read, Write};
    let setup = pki::Setup::new("metrics-tls");
    let flags = setup.flags();
    let mut args = vec!["serve", "--demo", "--listen", "https://127.0.0.1:0/mcp"];
    args.extend(["--metrics-listen", "127.0.0.1:0"]);
    args.extend(flags.iter().map(String::as_str));
    let mut l = common::listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &args,
        "warn",
        &[
            "mcpwire: listening on https://",
            "mcpwire: admin on http://",
        ],
        false,
    );
    let _child = ChildGuard(l.child);
    let https = l.addrs.remove(0);
    let https = https.trim_end_matches("/mcp");
    let admin = l.addrs.remove(0);
    let admin = admin.split(' ').next().unwrap_or_default();
    let failures = || {
        let r = Exchange::get(admin, "/metrics");
        let l = [("reason", "error")];
        sample(&r.text(), "mcpwire_tls_handshake_failures_total", &l)
    };
    let before = failures();

    // Plaintext HTTP on the TLS port: the handshake fails and the connection closes.
    let mut plain = std::net::TcpStream::connect(https).expect("connect");
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .expect("timeout");
    plain
        .write_all(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("write");
    let _ = plain.read_to_end(&mut Vec::new());

    // The server counts right after closing: scraped until it shows (bounded).
    wait_until(
        std::time::Duration::from_secs(3),
        "the failed handshake was counted",
        || failures() >= before + 1.0,
    );
}
