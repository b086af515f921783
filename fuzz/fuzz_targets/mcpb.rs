//! `McpbCodec` (MCPB frames: 12-byte header, payload cap, input rules, auth wrapper) on
//! arbitrary bytes in arbitrary chunk splits, with a small payload limit.
//!
//! Invariants: no panic; the same bytes whole or split give the same items and the same
//! ending; while waiting, the decoder holds less than one header plus one allowed payload
//! (an oversize payload is skipped as it streams in, never buffered); no single allocation
//! inside the decoder beyond that bound; a decoded request re-encodes (client side) to a
//! frame the server side decodes to the same message.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcpwire_fuzz::{LargestAlloc, Split, drive};
use mcpwire_model::{Message, Outbound};
use mcpwire_wire::Limits;
use mcpwire_wire::mcpb::{HEADER_LEN, McpbCodec, McpbFrame, McpbOut};
use tokio_util::codec::{Decoder, Encoder};

#[global_allocator]
static ALLOC: LargestAlloc = LargestAlloc;

const MAX: usize = 4096;

fn codec() -> McpbCodec {
    McpbCodec::server(&Limits {
        max_message_bytes: MAX,
        ..Limits::default()
    })
}

fn check_idle(_: &McpbCodec, buf: &BytesMut) {
    assert!(buf.len() < HEADER_LEN + MAX, "{} bytes buffered", buf.len());
}

/// A decoded client request, sent again by a client codec, decodes to the same message.
fn round_trip(msg: &Message) {
    let Message::Request(r) = msg else { return };
    let out = Outbound::Request {
        id: r.id.clone(),
        method: r.method.as_str().to_owned().into(),
        params: r.params.clone(),
    };
    let mut wire = BytesMut::new();
    let mut client = McpbCodec::client(&Limits::default());
    client.encode(McpbOut::Mcp(&out), &mut wire).expect("encodes");
    match codec().decode(&mut wire) {
        Ok(Some(McpbFrame::Mcp { msg: Ok(Message::Request(again)), .. })) => {
            assert_eq!(again.id, r.id);
            assert_eq!(again.method.as_str(), r.method.as_str());
            assert_eq!(
                again.params.as_ref().map(|p| p.get().to_owned()),
                r.params.as_ref().map(|p| p.get().to_owned())
            );
        }
        other => panic!("re-encoded request does not decode: {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let split = Split::new(data);
    LargestAlloc::reset();
    let whole = drive(&mut codec(), &[split.stream], check_idle);
    let pieces = drive(&mut codec(), &split.chunks(), check_idle);
    // Relative to the input (the harness's buffer may be shared and regrown), never to a
    // declared length.
    let bound = 4 * data.len() + 2 * (HEADER_LEN + MAX) + 4096;
    assert!(
        LargestAlloc::largest() <= bound,
        "allocated {} bytes at once (bound {bound})",
        LargestAlloc::largest()
    );
    assert_eq!(whole.fingerprint(), pieces.fingerprint(), "whole vs split");
    for item in &whole.items {
        if let McpbFrame::Mcp { msg: Ok(m), .. } = item {
            round_trip(m);
        }
    }
});
