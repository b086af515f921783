//! proto-mcp error codes through the binary on every proto-mcp wire — stdio frames,
//! WebSocket binary messages, gRPC (issue 10, defects 3 and 5):
//!
//! - an `Any` whose type URL is not the tool's input message is a validation failure,
//!   −33001 (gRPC INVALID_ARGUMENT), whatever the type — −33000 is for schemas the server
//!   cannot resolve;
//! - a refused `initialize` (an unsupported version, −33002) leaves the connection
//!   uninitialized, and a supported one then succeeds.
//!
//! (proto-mcp cannot carry the malformed `tools/call` params of defect 4: the arguments
//! are an `Any` and the name a string by the schema.)

mod common;

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use common::served::Served;
use common::wires::{Ws, grpc_call};
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, call_tool_response, mcp_message::Payload};
use prost::Message as _;

const WRONG_TYPES: [&str; 3] = [
    "type.googleapis.com/google.protobuf.StringValue",
    "type.googleapis.com/no.such.Message",
    "not-even-a-url",
];

fn initialize(id: u64, version: &str) -> McpMessage {
    McpMessage::new(
        id,
        Payload::InitializeRequest(pb::InitializeRequest {
            protocol_version: version.into(),
            ..Default::default()
        }),
    )
}

fn call(id: u64, tool: &str, type_url: Option<&str>) -> McpMessage {
    McpMessage::new(id, Payload::CallToolRequest(call_request(tool, type_url)))
}

fn call_request(tool: &str, type_url: Option<&str>) -> pb::CallToolRequest {
    pb::CallToolRequest {
        name: tool.into(),
        arguments: type_url.map(|u| prost_types::Any {
            type_url: u.into(),
            value: b"\x0a\x02hi".to_vec(),
        }),
        ..Default::default()
    }
}

fn error_code(m: &McpMessage) -> i32 {
    match &m.payload {
        Some(Payload::ErrorResponse(e)) => e.code,
        Some(Payload::CallToolResponse(pb::CallToolResponse {
            result: Some(call_tool_response::Result::Error(e)),
            ..
        })) => e.code,
        other => panic!("not an error: {other:?}"),
    }
}

/// The proto-mcp checks over a request/answer connection.
fn proto_mcp_checks(mut exchange: impl FnMut(McpMessage) -> McpMessage) {
    // Defect 3: refused, then served.
    assert_eq!(error_code(&exchange(initialize(1, "2.0.0"))), -33002);
    let ok = exchange(initialize(2, "1.0.0"));
    assert!(
        matches!(ok.payload, Some(Payload::InitializeResponse(_))),
        "{ok:?}"
    );
    // Defect 5: arguments of any other type than add's input are −33001.
    for (i, url) in WRONG_TYPES.iter().enumerate() {
        let m = exchange(call(10 + i as u64, "add", Some(url)));
        assert_eq!(error_code(&m), -33001, "{url}: {m:?}");
    }
    // The control: a tool called without arguments is served.
    let m = exchange(call(20, "test_simple_text", None));
    assert!(
        matches!(
            m.payload,
            Some(Payload::CallToolResponse(pb::CallToolResponse {
                result: Some(call_tool_response::Result::Success(_)),
                ..
            }))
        ),
        "{m:?}"
    );
}

/// `mcpwire demo` speaking proto-mcp frames on stdio (its first byte picks the protocol).
struct ProtoStdio {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
}

impl ProtoStdio {
    fn start() -> ProtoStdio {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcpwire"))
            .arg("demo")
            .env("MCPWIRE_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mcpwire");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        ProtoStdio {
            child,
            stdin,
            stdout,
        }
    }

    fn exchange(&mut self, m: McpMessage) -> McpMessage {
        let body = m.encode_to_vec();
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.stdin.write_all(&frame).expect("write");
        self.stdin.flush().expect("flush");
        let mut len = [0u8; 4];
        self.stdout.read_exact(&mut len).expect("a frame");
        let mut body = vec![0; u32::from_be_bytes(len) as usize];
        self.stdout.read_exact(&mut body).expect("a frame");
        let answer = McpMessage::decode(&body[..]).expect("MCPMessage");
        assert_eq!(answer.id, m.id);
        answer
    }
}

impl Drop for ProtoStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn proto_mcp_errors_on_stdio() {
    let mut p = ProtoStdio::start();
    proto_mcp_checks(|m| p.exchange(m));
}

#[test]
fn proto_mcp_errors_on_websocket() {
    let s = Served::start("ws", &[]);
    let mut ws = Ws::connect(&s.addr);
    proto_mcp_checks(|m| {
        ws.send_proto(&m);
        ws.recv_proto()
    });
}

#[test]
fn proto_mcp_errors_on_grpc() {
    const INVALID_ARGUMENT: i32 = 3;
    const FAILED_PRECONDITION: i32 = 9;
    let s = Served::start("grpc", &[]);
    let addr = s.host_port();
    let request = pb::InitializeRequest {
        protocol_version: "2.0.0".into(),
        ..Default::default()
    };
    let e = grpc_call::<pb::InitializeResponse>(addr, "Initialize", &request).unwrap_err();
    assert_eq!(e.status, FAILED_PRECONDITION);
    assert_eq!(e.details.map(|d| d.code), Some(-33002));
    let request = pb::InitializeRequest {
        protocol_version: "1.0.0".into(),
        ..Default::default()
    };
    let ok = grpc_call::<pb::InitializeResponse>(addr, "Initialize", &request).unwrap();
    assert_eq!(ok.protocol_version, "1.0.0");
    for url in WRONG_TYPES {
        let e =
            grpc_call::<pb::CallToolResponse>(addr, "CallTool", &call_request("add", Some(url)))
                .unwrap_err();
        assert_eq!(e.status, INVALID_ARGUMENT, "{url}");
        assert_eq!(e.details.map(|d| d.code), Some(-33001), "{url}");
    }
    let control = call_request("test_simple_text", None);
    let ok = grpc_call::<pb::CallToolResponse>(addr, "CallTool", &control);
    assert!(
        matches!(
            ok,
            Ok(pb::CallToolResponse {
                result: Some(call_tool_response::Result::Success(_)),
                ..
            })
        ),
        "{ok:?}"
    );
}
