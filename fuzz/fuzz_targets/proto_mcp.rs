//! `AnyCodec` (first byte picks NDJSON or proto-mcp frames) and `proto_mcp::decode_message`
//! on arbitrary bytes in arbitrary chunk splits, with a small message limit.
//!
//! Invariants: no panic; the same bytes whole or split give the same items; while waiting,
//! a proto-mcp decoder holds less than one frame and never any of an oversize one (oversize
//! frames are skipped as they stream in), an NDJSON one at most one line; every refused
//! frame is an `ErrorResponse` with −32700, or −32600 and id 0 for an oversize one; a
//! decoded message re-encodes (with the codec) to bytes that decode to the same message.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcpwire_fuzz::{Split, drive};
use mcpwire_model::codes;
use mcpwire_wire::proto_mcp::pb::McpMessage;
use mcpwire_wire::proto_mcp::pb::mcp_message::Payload;
use mcpwire_wire::proto_mcp::{ProtoMcpCodec, decode_message, encode_message};
use mcpwire_wire::{AnyCodec, Limits, WireItem};
use tokio_util::codec::{Decoder, Encoder};

const MAX: usize = 4096;

fn limits() -> Limits {
    Limits {
        max_message_bytes: MAX,
        ..Limits::default()
    }
}

fn check_idle(codec: &AnyCodec, buf: &BytesMut) {
    match codec {
        AnyCodec::Proto(_) => assert!(buf.len() < 4 + MAX, "{} bytes buffered", buf.len()),
        AnyCodec::Json(_) => assert!(buf.len() <= MAX, "{} bytes buffered", buf.len()),
        AnyCodec::Undecided { .. } => assert!(buf.is_empty(), "undecided with bytes"),
    }
}

/// A decoded message must survive encode → decode unchanged (compared as bytes: maps are
/// ordered, and NaN doubles compare unequal to themselves).
fn round_trip(msg: &McpMessage) {
    let first = encode_message(msg);
    let mut framed = BytesMut::new();
    let mut codec = ProtoMcpCodec::new(&Limits::default());
    codec.encode(msg, &mut framed).expect("encodes");
    assert_eq!(&framed[4..], &first[..], "codec and encode_message differ");
    let again = match codec.decode(&mut framed) {
        Ok(Some(Ok(m))) => m,
        other => panic!("re-encoded message does not decode: {other:?}"),
    };
    assert!(framed.is_empty(), "bytes left after one frame");
    assert_eq!(
        encode_message(&again),
        first,
        "round trip changed the message"
    );
}

fn check_refusal(err: &McpMessage) {
    let Some(Payload::ErrorResponse(e)) = &err.payload else {
        panic!("a refusal that is not an ErrorResponse: {err:?}");
    };
    let code = i64::from(e.code);
    assert!(
        code == codes::PARSE_ERROR || code == codes::INVALID_REQUEST,
        "unexpected code {code}"
    );
    if code == codes::INVALID_REQUEST {
        assert_eq!(err.id, 0, "oversize answers id 0");
    }
}

fuzz_target!(|data: &[u8]| {
    let split = Split::new(data);
    let whole = drive(
        &mut AnyCodec::new(&limits(), true),
        &[split.stream],
        check_idle,
    );
    let pieces = drive(
        &mut AnyCodec::new(&limits(), true),
        &split.chunks(),
        check_idle,
    );
    assert_eq!(whole.fingerprint(), pieces.fingerprint(), "whole vs split");
    assert!(
        whole.error.is_none(),
        "in-memory decoding failed: {:?}",
        whole.error
    );

    for item in &whole.items {
        match item {
            WireItem::Proto(Ok(m)) => round_trip(m),
            WireItem::Proto(Err(e)) => check_refusal(e),
            WireItem::Json(_) => {}
            WireItem::Line(_) => panic!("a raw line from a codec not asked for raw lines"),
        }
    }

    // A whole message (WebSocket / gRPC body).
    match decode_message(split.stream) {
        Ok(m) => round_trip(&m),
        Err(e) => check_refusal(&e),
    }
});
