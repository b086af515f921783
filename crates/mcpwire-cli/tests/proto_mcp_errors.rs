//! proto-mcp error codes through the demo served in-process on every proto-mcp wire — stdio frames,
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

use common::wires::{Ws, grpc_call};
use common::{Demo, StdioDemo};
use mcpwire_testkit::serve;
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

/// One proto-mcp frame to the demo on stdio, and the frame it answers.
fn exchange_on_stdio(p: &mut StdioDemo, m: McpMessage) -> McpMessage {
    let body = m.encode_to_vec();
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    p.write_raw(&frame);
    let len = p.read_exact(4);
    let body = p.read_exact(u32::from_be_bytes(len.try_into().expect("4 bytes")) as usize);
    let answer = McpMessage::decode(&body[..]).expect("MCPMessage");
    assert_eq!(answer.id, m.id);
    answer
}

#[test]
fn proto_mcp_errors_on_stdio() {
    let mut p = StdioDemo::start();
    proto_mcp_checks(|m| exchange_on_stdio(&mut p, m));
}

#[test]
fn proto_mcp_errors_on_websocket() {
    let s = Demo::serve(serve::ws(), |_| {});
    let mut ws = Ws::connect(&s.url());
    proto_mcp_checks(|m| {
        ws.send_proto(&m);
        ws.recv_proto()
    });
}

#[test]
fn proto_mcp_errors_on_grpc() {
    const INVALID_ARGUMENT: i32 = 3;
    const FAILED_PRECONDITION: i32 = 9;
    let s = Demo::serve(serve::grpc(), |_| {});
    let addr = &s.addr();
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
