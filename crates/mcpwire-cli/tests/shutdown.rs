//! Graceful shutdown through the binary: SIGTERM while calls are in flight on HTTP, MCPB,
//! gRPC and WebSocket — every accepted call is answered, MCPB clients get the `shutdown`
//! control frame, WebSocket clients a Close (1001), `/readyz` says 503 while draining, and
//! the process exits by itself. The HTTP calls outlast the MCPB one, so the process must
//! wait for HTTP to drain, not only for MCPB.

mod common;

use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use common::http::{Exchange, HttpServer};
use common::wires::{Mcpb, Peer, Ws, grpc_call};
use mcpwire_testkit::wait::{poll_for, wait_for};
use mcpwire_wire::mcpb::frame_type;
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

/// A `slow_compute` call of `seconds`, reporting progress with `token` as it starts.
fn slow_call(id: i64, token: &str, seconds: f64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "slow_compute", "arguments": {"seconds": seconds},
                      "_meta": {"progressToken": token}}})
}

#[test]
fn sigterm_answers_every_accepted_call_on_http_mcpb_and_grpc() {
    let l = common::listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &[
            "serve",
            "--demo",
            "--listen",
            "http://127.0.0.1:0/mcp",
            "--listen",
            "mcpb://127.0.0.1:0",
            "--listen",
            "grpc://127.0.0.1:0",
            "--listen",
            "ws://127.0.0.1:0/ws",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
        "warn",
        &[
            "mcpwire: listening on http://",
            "mcpwire: listening on mcpb://",
            "mcpwire: listening on grpc://",
            "mcpwire: listening on ws://",
            "mcpwire: admin on http://",
        ],
        false,
    );
    let mut child = l.child;
    let (http_url, mcpb_addr, grpc_addr) =
        (l.addrs[0].clone(), l.addrs[1].clone(), l.addrs[2].clone());
    let ws_addr = l.addrs[3].clone();
    let admin = l.addrs[4].split(' ').next().unwrap_or_default().to_owned();

    // gRPC: a call in flight (`test_slow`, its input message `{double seconds = 1;}`),
    // outlasting the others, so the process must wait for gRPC to drain too.
    let (grpc_tx, grpc_answer) = mpsc::channel();
    std::thread::spawn(move || {
        let mut input = vec![0x09];
        input.extend_from_slice(&2.5f64.to_le_bytes());
        let req = pb::CallToolRequest {
            name: "test_slow".into(),
            arguments: Some(prost_types::Any {
                type_url: "type.googleapis.com/mcpwire.tools.test_slow.Input".into(),
                value: input,
            }),
            ..Default::default()
        };
        let r = grpc_call::<pb::CallToolResponse>(&grpc_addr, "CallTool", &req);
        grpc_tx.send(format!("{r:?}")).expect("send");
    });
    let mut text = String::new();
    let started = poll_for(Duration::from_secs(10), || {
        text = Exchange::get(&admin, "/metrics").text();
        text.contains(r#"mcpwire_requests_in_flight{wire="grpc"} 1"#)
            .then_some(())
    });
    assert!(started.is_some(), "the gRPC call did not start:\n{text}");

    // HTTP: two calls in flight, each seen started (its progress event arrived).
    let http = HttpServer::at(&http_url);
    let sid = http.initialize();
    let (answers, answered) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    for id in [10, 11] {
        let (url, sid, answers, started_tx) = (
            http_url.clone(),
            sid.clone(),
            answers.clone(),
            started_tx.clone(),
        );
        std::thread::spawn(move || {
            let http = HttpServer::at(&url);
            let mut r = http.post(Some(&sid), &slow_call(id, &format!("h{id}"), 1.5));
            assert_eq!(r.status, 200);
            let (_, first) = r.next_event().expect("progress");
            assert_eq!(first["method"], "notifications/progress", "{first}");
            started_tx.send(()).expect("send");
            while let Some((_, v)) = r.next_event() {
                if v.get("id").is_some() {
                    answers.send(v).expect("send");
                    return;
                }
            }
            panic!("HTTP call {id} was not answered");
        });
    }

    // MCPB: a call in flight.
    let mut mcpb = Mcpb::connect(&mcpb_addr);
    mcpb.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"}}}));
    let init = mcpb.recv();
    assert!(init.get("result").is_some(), "{init}");
    mcpb.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    mcpb.send(slow_call(2, "m2", 0.3));
    let progress = mcpb.recv();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    for _ in 0..2 {
        started
            .recv_timeout(Duration::from_secs(10))
            .expect("HTTP call started");
    }

    // WebSocket: a call in flight.
    let mut ws = Ws::connect(&ws_addr);
    ws.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "0"}}}));
    let init = ws.recv();
    assert!(init.get("result").is_some(), "{init}");
    ws.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    ws.send(slow_call(5, "w5", 2.0));
    let progress = ws.recv();
    assert_eq!(progress["method"], "notifications/progress", "{progress}");

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());

    // MCPB: told to shut down, then the call's answer; a request sent now is refused.
    let mut told = false;
    let answer = loop {
        match mcpb.next_frame() {
            (frame_type::CONTROL, v) => {
                assert_eq!(v["command"], "shutdown", "{v}");
                told = true;
                mcpb.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
            }
            (frame_type::RESPONSE, v) if v["id"] == 2 => break v,
            (frame_type::RESPONSE, v) if v["id"] == 3 => {
                assert!(v.get("error").is_some(), "accepted during shutdown: {v}");
            }
            (frame_type::RESPONSE | frame_type::HEALTH_CHECK, _) => {}
            (kind, v) => panic!("unexpected frame {kind}: {v}"),
        }
    };
    assert!(told, "no shutdown control frame before the answer");
    let ready = Exchange::get(&admin, "/readyz");
    assert_eq!(ready.status, 503, "ready while draining");
    assert!(
        answer["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("computed after")),
        "{answer}"
    );
    mcpb.frame(
        frame_type::CONTROL,
        &json!({"command": "shutdown_ack", "status": "ok"}),
    );

    // HTTP: both calls answered.
    let mut ids = Vec::new();
    for _ in 0..2 {
        let v = answered
            .recv_timeout(Duration::from_secs(20))
            .expect("an HTTP call answered after SIGTERM");
        assert!(v.get("result").is_some(), "{v}");
        ids.push(v["id"].as_i64().expect("id"));
    }
    ids.sort_unstable();
    assert_eq!(ids, [10, 11]);

    // WebSocket: answered, then closed as going away.
    let answer = ws.recv();
    assert_eq!(answer["id"], 5, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");
    assert_eq!(ws.close_code(), Some(1001));

    // gRPC: answered.
    let grpc = grpc_answer
        .recv_timeout(Duration::from_secs(20))
        .expect("the gRPC call answered after SIGTERM");
    assert!(grpc.contains("Success") && grpc.contains("done"), "{grpc}");

    // The process ends by itself, successfully.
    let exit = wait_for(
        Duration::from_secs(20),
        "the process ends after the drain",
        || child.try_wait().expect("wait"),
    );
    assert!(exit.success(), "{exit}");
}
