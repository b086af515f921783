//! proto-mcp vs JSON-RPC: encode + decode of one `tools/call` request and its response.
//!
//! The proto-mcp spec claims protobuf serialization is 5× faster than JSON. Each case
//! encodes a message into a frame and decodes it back, on the `echo` tool with a small
//! ("hello world") and a large (~4 KiB) text:
//!
//! - `call_tool_request/json`: the request as an NDJSON line → `jsonrpc::decode` → the
//!   arguments parsed to a `serde_json::Value` (what a tool does with them).
//! - `call_tool_request/proto`: `MCPMessage{call_tool_request{Any}}` framed → decoded →
//!   the `Any` decoded as the tool's input `DynamicMessage` (schema from `mcpwire-schema`).
//! - `call_tool_request/proto+json`: the above plus the message → JSON arguments, which
//!   mcpwire's translator does because the core and its validators speak JSON.
//! - `call_tool_response/json` and `/proto`: a text result encoded and decoded (proto:
//!   `CallToolResponse{success{text}}`; JSON: the result parsed back to a `Value`).

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire_model::{Message, Outbound, RequestId, jsonrpc, to_raw};
use mcpwire_wire::proto_mcp::ProtoMcpCodec;
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use mcpwire_wire::{Limits, NdjsonCodec};
use prost::Message as _;
use prost_reflect::DynamicMessage;
use serde_json::{Value, json};
use tokio_util::codec::{Decoder, Encoder};

fn texts() -> Vec<(&'static str, String)> {
    let mut large = String::with_capacity(4200);
    while large.len() < 4096 {
        large.push_str("The quick brown fox jumps over the lazy dog; \"quoted\"\tand tabbed.\n");
    }
    vec![("small", "hello world".to_owned()), ("large", large)]
}

fn schemas() -> mcpwire_schema::ToolSchemas {
    let input =
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]});
    match mcpwire_schema::tool_schemas("echo", &input, None) {
        Ok(s) => s,
        Err(e) => panic!("echo schema: {e}"),
    }
}

fn json_request(text: &str) -> Outbound {
    Outbound::Request {
        id: RequestId::Int(7),
        method: "tools/call".into(),
        params: Some(to_raw(
            &json!({"name": "echo", "arguments": {"text": text}}),
        )),
    }
}

fn proto_request(s: &mcpwire_schema::ToolSchemas, text: &str) -> McpMessage {
    let args = match s.json_to_input(&json!({ "text": text })) {
        Ok(m) => m,
        Err(e) => panic!("arguments: {e}"),
    };
    McpMessage::new(
        7,
        Payload::CallToolRequest(pb::CallToolRequest {
            name: "echo".into(),
            arguments: Some(prost_types::Any {
                type_url: format!("type.googleapis.com/{}", s.input.full_name()),
                value: args.encode_to_vec(),
            }),
            metadata: Default::default(),
        }),
    )
}

fn proto_response(text: &str) -> McpMessage {
    McpMessage::new(
        7,
        Payload::CallToolResponse(pb::CallToolResponse {
            result: Some(pb::call_tool_response::Result::Success(pb::ToolResult {
                content: vec![pb::ToolContent {
                    content: Some(pb::tool_content::Content::Text(text.to_owned())),
                    mime_type: String::new(),
                }],
                is_error: false,
            })),
            metadata: Default::default(),
        }),
    )
}

fn json_roundtrip(codec: &mut NdjsonCodec, msg: &Outbound, buf: &mut BytesMut) -> Value {
    buf.clear();
    let _ = codec.encode(msg, buf);
    let line = buf.split();
    let decoded = jsonrpc::decode(&line[..line.len() - 1]);
    let params = match &decoded {
        Ok(Message::Request(r)) => r.params.as_ref().map(|p| p.get()),
        Ok(Message::Response(r)) => r.outcome.as_ref().ok().map(|p| p.get()),
        _ => None,
    };
    serde_json::from_str(params.unwrap_or("null")).unwrap_or(Value::Null)
}

fn proto_roundtrip(codec: &mut ProtoMcpCodec, msg: &McpMessage, buf: &mut BytesMut) -> McpMessage {
    buf.clear();
    let _ = codec.encode(msg, buf);
    match codec.decode(buf) {
        Ok(Some(Ok(m))) => m,
        _ => McpMessage::default(),
    }
}

fn unpack(s: &mcpwire_schema::ToolSchemas, m: &McpMessage) -> Option<DynamicMessage> {
    let Some(Payload::CallToolRequest(r)) = &m.payload else {
        return None;
    };
    DynamicMessage::decode(s.input.clone(), r.arguments.as_ref()?.value.as_slice()).ok()
}

fn request(c: &mut Criterion) {
    let s = schemas();
    let limits = Limits::default();
    let mut group = c.benchmark_group("call_tool_request");
    for (name, text) in texts() {
        let (jm, pm) = (json_request(&text), proto_request(&s, &text));
        let mut buf = BytesMut::with_capacity(16 * 1024);
        let mut nd = NdjsonCodec::new(&limits);
        let mut pc = ProtoMcpCodec::new(&limits);
        // Sanity: both carry the text back.
        assert_eq!(
            json_roundtrip(&mut nd, &jm, &mut buf)["arguments"]["text"],
            text.as_str()
        );
        let back = proto_roundtrip(&mut pc, &pm, &mut buf);
        let args = unpack(&s, &back).and_then(|d| s.arguments_to_json(&d).ok());
        assert_eq!(args, Some(json!({ "text": text })));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(BenchmarkId::new("json", name), |b| {
            b.iter(|| black_box(json_roundtrip(&mut nd, black_box(&jm), &mut buf)))
        });
        group.bench_function(BenchmarkId::new("proto", name), |b| {
            b.iter(|| {
                let m = proto_roundtrip(&mut pc, black_box(&pm), &mut buf);
                black_box(unpack(&s, &m))
            })
        });
        group.bench_function(BenchmarkId::new("proto+json", name), |b| {
            b.iter(|| {
                let m = proto_roundtrip(&mut pc, black_box(&pm), &mut buf);
                black_box(unpack(&s, &m).and_then(|d| s.arguments_to_json(&d).ok()))
            })
        });
    }
    group.finish();
}

fn response(c: &mut Criterion) {
    let limits = Limits::default();
    let mut group = c.benchmark_group("call_tool_response");
    for (name, text) in texts() {
        let jm = Outbound::Response {
            id: RequestId::Int(7),
            result: to_raw(&json!({"content": [{"type": "text", "text": text}]})),
        };
        let pm = proto_response(&text);
        let mut buf = BytesMut::with_capacity(16 * 1024);
        let mut nd = NdjsonCodec::new(&limits);
        let mut pc = ProtoMcpCodec::new(&limits);
        assert_eq!(
            json_roundtrip(&mut nd, &jm, &mut buf)["content"][0]["text"],
            text.as_str()
        );
        assert_eq!(proto_roundtrip(&mut pc, &pm, &mut buf), pm);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(BenchmarkId::new("json", name), |b| {
            b.iter(|| black_box(json_roundtrip(&mut nd, black_box(&jm), &mut buf)))
        });
        group.bench_function(BenchmarkId::new("proto", name), |b| {
            b.iter(|| black_box(proto_roundtrip(&mut pc, black_box(&pm), &mut buf)))
        });
    }
    group.finish();
}

criterion_group!(benches, request, response);
criterion_main!(benches);
