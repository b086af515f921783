//! JSON-RPC codec benchmarks: mcpwire vs rmcp's model types.
//!
//! Two groups, each with a small (`echo`, "hello world") and a large (~4 KiB of arguments)
//! payload:
//!
//! - `decode_tools_call_request`: bytes of one `tools/call` request line to a typed message.
//!   - `mcpwire`: `mcpwire_model::jsonrpc::decode` (envelope parsed, `params` kept raw).
//!   - `mcpwire+params`: the above plus parsing `params` into `CallToolParams` (the tool
//!     name is read, `arguments` stay raw), i.e. what a `tools/call` dispatch does.
//!   - `rmcp`: `serde_json::from_slice::<ClientJsonRpcMessage>` (fully typed, arguments
//!     become a `serde_json::Map`).
//! - `encode_tools_call_response`: one `tools/call` response to an NDJSON line.
//!   - `mcpwire`: `NdjsonCodec` `Encoder<&Outbound>` of a response whose result is already raw.
//!   - `mcpwire+result`: building the `CallToolResult`, serializing it to `Raw` and encoding.
//!   - `rmcp`: `serde_json::to_vec` of a prebuilt `ServerJsonRpcMessage` plus the `\n`.
//!   - `rmcp+result`: building the `CallToolResult` and the message, then encoding.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire_model::types::{CallToolParams, CallToolResult};
use mcpwire_model::{Message, Outbound, RequestId, jsonrpc, to_raw};
use mcpwire_wire::{Limits, NdjsonCodec};
use rmcp::model::{
    ClientJsonRpcMessage, ContentBlock, NumberOrString, ServerJsonRpcMessage, ServerResult,
};
use tokio_util::codec::Encoder;

/// A payload: the text sent to `echo` and echoed back.
struct Payload {
    name: &'static str,
    text: String,
}

fn payloads() -> Vec<Payload> {
    // ~4 KiB of plain text, with a few characters that JSON must escape.
    let mut large = String::with_capacity(4200);
    while large.len() < 4096 {
        large.push_str("The quick brown fox jumps over the lazy dog; \"quoted\"\tand tabbed.\n");
    }
    vec![
        Payload {
            name: "small",
            text: "hello world".to_owned(),
        },
        Payload {
            name: "large",
            text: large,
        },
    ]
}

fn request_line(text: &str) -> Vec<u8> {
    let req = serde_json::json!({
        "jsonrpc": "2.0",
        "id": 12345,
        "method": "tools/call",
        "params": { "name": "echo", "arguments": { "text": text } },
    });
    serde_json::to_vec(&req).expect("serializable")
}

fn mcpwire_outbound(text: &str) -> Outbound {
    Outbound::Response {
        id: RequestId::Int(12345),
        result: to_raw(&CallToolResult::text(text)),
    }
}

fn rmcp_response(text: &str) -> ServerJsonRpcMessage {
    let mut result = ServerResult::CallToolResult(rmcp::model::CallToolResult::success(vec![
        ContentBlock::text(text),
    ]));
    // What rmcp's server does for a peer that negotiated a pre-2026-07-28 revision.
    result.strip_result_type_for_legacy_peer();
    ServerJsonRpcMessage::response(result, NumberOrString::Number(12345))
}

fn mcpwire_encode(codec: &mut NdjsonCodec, msg: &Outbound, dst: &mut BytesMut) {
    dst.clear();
    codec.encode(msg, dst).expect("encodes");
}

fn rmcp_encode(msg: &ServerJsonRpcMessage, dst: &mut Vec<u8>) {
    dst.clear();
    serde_json::to_writer(&mut *dst, msg).expect("encodes");
    dst.push(b'\n');
}

/// Checks once, outside the timed loops, that both sides decode/encode the same thing.
fn sanity(p: &Payload) {
    let line = request_line(&p.text);
    let Ok(Message::Request(req)) = jsonrpc::decode(&line) else {
        panic!("mcpwire did not decode a request");
    };
    let params: CallToolParams =
        serde_json::from_str(req.params.as_deref().expect("params").get()).expect("params");
    assert_eq!(params.name, "echo");
    let parsed: ClientJsonRpcMessage = serde_json::from_slice(&line).expect("rmcp decodes");
    assert!(matches!(parsed, ClientJsonRpcMessage::Request(_)));

    let mut codec = NdjsonCodec::new(&Limits::default());
    let mut a = BytesMut::new();
    mcpwire_encode(&mut codec, &mcpwire_outbound(&p.text), &mut a);
    let mut b = Vec::new();
    rmcp_encode(&rmcp_response(&p.text), &mut b);
    let a: serde_json::Value = serde_json::from_slice(&a).expect("mcpwire output is JSON");
    let b: serde_json::Value = serde_json::from_slice(&b).expect("rmcp output is JSON");
    assert_eq!(a["result"]["content"], b["result"]["content"]);
    assert_eq!(a["result"]["content"][0]["text"], p.text.as_str());
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("decode_tools_call_request");
    for p in payloads() {
        sanity(&p);
        let line = request_line(&p.text);
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_with_input(BenchmarkId::new("mcpwire", p.name), &line, |b, line| {
            b.iter(|| jsonrpc::decode(black_box(line)))
        });
        group.bench_with_input(
            BenchmarkId::new("mcpwire+params", p.name),
            &line,
            |b, line| {
                b.iter(|| {
                    let Ok(Message::Request(req)) = jsonrpc::decode(black_box(line)) else {
                        unreachable!("checked by sanity()")
                    };
                    let raw = req.params.as_deref().map_or("{}", |r| r.get());
                    let params: CallToolParams = serde_json::from_str(raw).expect("params");
                    (req.id, params)
                })
            },
        );
        group.bench_with_input(BenchmarkId::new("rmcp", p.name), &line, |b, line| {
            b.iter(|| {
                serde_json::from_slice::<ClientJsonRpcMessage>(black_box(line)).expect("decodes")
            })
        });
    }
    group.finish();
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("encode_tools_call_response");
    for p in payloads() {
        let mut codec = NdjsonCodec::new(&Limits::default());
        let mut bytes = BytesMut::with_capacity(8192);
        let mut vec = Vec::with_capacity(8192);
        mcpwire_encode(&mut codec, &mcpwire_outbound(&p.text), &mut bytes);
        group.throughput(Throughput::Bytes(bytes.len() as u64));

        let out = mcpwire_outbound(&p.text);
        group.bench_function(BenchmarkId::new("mcpwire", p.name), |b| {
            b.iter(|| mcpwire_encode(&mut codec, black_box(&out), &mut bytes))
        });
        group.bench_function(BenchmarkId::new("mcpwire+result", p.name), |b| {
            b.iter(|| {
                let out = mcpwire_outbound(black_box(&p.text));
                mcpwire_encode(&mut codec, &out, &mut bytes)
            })
        });
        let msg = rmcp_response(&p.text);
        group.bench_function(BenchmarkId::new("rmcp", p.name), |b| {
            b.iter(|| rmcp_encode(black_box(&msg), &mut vec))
        });
        group.bench_function(BenchmarkId::new("rmcp+result", p.name), |b| {
            b.iter(|| {
                let msg = rmcp_response(black_box(&p.text));
                rmcp_encode(&msg, &mut vec)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, decode, encode);
criterion_main!(benches);
