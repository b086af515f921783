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
//! - `relay_call_line`: what the gateway's stdio relay does to a `tools/call` line on its way
//!   upstream: find that it is a plain call (its id, tool and arguments) and write it with
//!   the relay's own id.
//!   - `json_frame`: `mcpwire_wire::json_frame::plain_call` + `PlainCall::write_line_with_id`.
//!   - `serde`: the borrowed serde passes the relay used before (a UTF-8 check, the nesting
//!     check, a `deny_unknown_fields` frame struct, the params read again as a `RawValue`
//!     and a plain-params struct), then the same splice — kept here for comparison.
//! - `relay_answer_line`: the same for the answer on its way back (a plain result, the
//!   client's id written back): `json_frame` (`plain_result`) and `serde`.

use std::hint::black_box;

use bytes::BytesMut;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mcpwire_model::types::{CallToolParams, CallToolResult};
use mcpwire_model::{Message, Outbound, RequestId, jsonrpc, to_raw};
use mcpwire_wire::{Limits, NdjsonCodec, json_frame};
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

/// The relay's reading of a call line before `json_frame`: borrowed serde passes.
mod serde_relay {
    use std::borrow::Cow;
    use std::ops::Range;

    use bytes::{BufMut, BytesMut};
    use mcpwire_model::RequestId;
    use mcpwire_model::jsonrpc::nesting_exceeds;
    use serde::Deserialize;
    use serde_json::value::RawValue;

    /// Where `part` (borrowed from `whole`) sits in it.
    fn at(whole: &str, part: &str) -> Option<Range<usize>> {
        let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
        (start + part.len() <= whole.len()).then(|| start..start + part.len())
    }

    /// A plain call's id, tool, and where its id is.
    pub fn scan_call(line: &[u8], depth: usize) -> Option<(RequestId, &str, Range<usize>)> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct CallFrame<'a> {
            jsonrpc: &'a str,
            #[serde(borrow)]
            id: &'a RawValue,
            method: &'a str,
            #[serde(borrow)]
            params: &'a RawValue,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Plain<'a> {
            #[serde(borrow)]
            name: Cow<'a, str>,
            #[serde(borrow, default)]
            arguments: Option<&'a RawValue>,
        }
        let text = std::str::from_utf8(line).ok()?;
        if nesting_exceeds(line, depth) {
            return None;
        }
        let frame: CallFrame<'_> = serde_json::from_str(text).ok()?;
        if frame.jsonrpc != "2.0" || frame.method != "tools/call" {
            return None;
        }
        let params: &RawValue = serde_json::from_str(frame.params.get()).ok()?;
        let plain: Plain<'_> = serde_json::from_str(params.get()).ok()?;
        if plain.arguments.is_some_and(|a| !a.get().starts_with('{')) {
            return None;
        }
        let Cow::Borrowed(tool) = plain.name else {
            return None;
        };
        let id = frame.id.get();
        let request_id = match id.as_bytes().first()? {
            b'"' => RequestId::Str(id.get(1..id.len() - 1)?.into()),
            _ => RequestId::Int(id.parse().ok()?),
        };
        Some((request_id, tool, at(text, id)?))
    }

    /// A plain result's id and where it is (`text` was checked to be UTF-8 before: the
    /// stdio client reads it so on either path).
    pub fn scan_result(text: &str, depth: usize) -> Option<(u64, Range<usize>)> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct ResultFrame<'a> {
            jsonrpc: &'a str,
            #[serde(borrow)]
            id: &'a RawValue,
            #[serde(borrow)]
            result: &'a RawValue,
        }
        if nesting_exceeds(text.as_bytes(), depth) {
            return None;
        }
        let frame: ResultFrame<'_> = serde_json::from_str(text).ok()?;
        if frame.jsonrpc != "2.0" {
            return None;
        }
        let id = frame.id.get();
        Some((id.parse().ok()?, at(text, id)?))
    }

    /// `line` with `at` replaced by `id`, and a newline.
    pub fn splice(line: &[u8], at: Range<usize>, id: &[u8], out: &mut BytesMut) {
        out.reserve(line.len() - at.len() + id.len() + 1);
        out.put_slice(&line[..at.start]);
        out.put_slice(id);
        out.put_slice(&line[at.end..]);
        out.put_u8(b'\n');
    }
}

/// An answer line: the echo tool's result for `text`.
fn answer_line(text: &str) -> String {
    let mut line = BytesMut::new();
    mcpwire_encode(
        &mut NdjsonCodec::new(&Limits::default()),
        &Outbound::Response {
            id: RequestId::Int(17),
            result: to_raw(&CallToolResult::text(text)),
        },
        &mut line,
    );
    line.truncate(line.len() - 1);
    String::from_utf8(line.to_vec()).expect("UTF-8")
}

fn relay(c: &mut Criterion) {
    const DEPTH: usize = 64;
    let mut calls = c.benchmark_group("relay_call_line");
    for p in payloads() {
        let line = request_line(&p.text);
        let call = json_frame::plain_call(&line, DEPTH).expect("a plain call");
        let old = serde_relay::scan_call(&line, DEPTH).expect("a plain call");
        assert_eq!(
            (call.request_id(), call.tool(), call.id_at()),
            (&old.0, old.1, old.2)
        );
        let mut out = BytesMut::with_capacity(8192);
        calls.throughput(Throughput::Bytes(line.len() as u64));
        calls.bench_with_input(BenchmarkId::new("json_frame", p.name), &line, |b, line| {
            b.iter(|| {
                out.clear();
                let call = json_frame::plain_call(black_box(line), DEPTH).expect("plain");
                call.write_line_with_id(black_box(9), &mut out);
            })
        });
        calls.bench_with_input(BenchmarkId::new("serde", p.name), &line, |b, line| {
            b.iter(|| {
                out.clear();
                let (_, _, at) = serde_relay::scan_call(black_box(line), DEPTH).expect("plain");
                let mut digits = itoa::Buffer::new();
                serde_relay::splice(line, at, digits.format(black_box(9)).as_bytes(), &mut out);
            })
        });
    }
    calls.finish();
    let mut answers = c.benchmark_group("relay_answer_line");
    let client = br#"{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"echo"}}"#;
    let id_text = json_frame::plain_call(client, DEPTH)
        .expect("plain")
        .id_text();
    for p in payloads() {
        let line = answer_line(&p.text);
        let mut out = BytesMut::with_capacity(8192);
        answers.throughput(Throughput::Bytes(line.len() as u64));
        answers.bench_with_input(BenchmarkId::new("json_frame", p.name), &line, |b, line| {
            b.iter(|| {
                out.clear();
                let answer =
                    json_frame::plain_result(black_box(line).as_bytes(), DEPTH).expect("plain");
                answer.write_line_with_id(&id_text, &mut out);
            })
        });
        answers.bench_with_input(BenchmarkId::new("serde", p.name), &line, |b, line| {
            b.iter(|| {
                out.clear();
                let (_, at) = serde_relay::scan_result(black_box(line), DEPTH).expect("plain");
                serde_relay::splice(line.as_bytes(), at, id_text.as_bytes(), &mut out);
            })
        });
    }
    answers.finish();
}

criterion_group!(benches, decode, encode, relay);
criterion_main!(benches);
