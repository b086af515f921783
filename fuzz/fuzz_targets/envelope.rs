//! `EnvelopeCodec` (`[u32 BE len][Envelope]` frames plus the raw sideband) and
//! `sideband::decode_result` on arbitrary bytes in arbitrary chunk splits.
//!
//! Invariants: no panic; no single allocation beyond what the limits allow (a declared
//! length must not become a huge reservation); while waiting for bytes the decoder buffers
//! at most one frame (envelope or raw payload); the same bytes decoded whole or split give
//! the same items and the same ending (an oversize envelope is skipped, never stored, and
//! reported with the same salvaged request id however it was split); a raw payload decodes to
//! at most `MAX_RAW` bytes or is refused.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire_fuzz::{LargestAlloc, Split, drive};
use mcpwire_process::pb::RawHeader;
use mcpwire_process::{EnvelopeCodec, ProcFrame, sideband};
use mcpwire_wire::length_prefixed::RESERVE_AHEAD as READ_AHEAD;

#[global_allocator]
static ALLOC: LargestAlloc = LargestAlloc;

const MAX_ENVELOPE: usize = 64 * 1024;
const MAX_RAW: u64 = 256 * 1024;

fn decode_raw(header: &RawHeader, payload: &[u8], max: u64) {
    let decoded = LargestAlloc::measure(|| sideband::decode_result(header, payload, max));
    if let Ok(text) = decoded {
        assert!(
            text.len() as u64 <= max,
            "{} bytes decoded under a {max}-byte limit",
            text.len()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let split = Split::new(data);
    // What the codec and sideband decoder may legitimately allocate at once: the input
    // buffer grown by a read-ahead reservation, one raw payload or decompressed result.
    let bound = 4 * data.len() + 2 * READ_AHEAD + 2 * MAX_RAW as usize + 4096;
    LargestAlloc::reset();

    let check_idle = |_: &EnvelopeCodec, buf: &bytes::BytesMut| {
        // Waiting for more: only part of one frame (or one raw payload) is kept.
        assert!(
            buf.len() < 4 + MAX_ENVELOPE.max(MAX_RAW as usize) + 256,
            "{} bytes buffered while waiting",
            buf.len()
        );
    };
    let whole = drive(
        &mut EnvelopeCodec::new(MAX_ENVELOPE, MAX_RAW),
        &[split.stream],
        check_idle,
    );
    let pieces = drive(
        &mut EnvelopeCodec::new(MAX_ENVELOPE, MAX_RAW),
        &split.chunks(),
        check_idle,
    );
    assert_eq!(whole.fingerprint(), pieces.fingerprint(), "whole vs split");

    for item in &whole.items {
        match item {
            ProcFrame::Raw { header, payload } => {
                assert_eq!(payload.len() as u64, header.size, "payload size");
                assert!(header.size <= MAX_RAW, "raw over the limit delivered");
                decode_raw(header, payload, MAX_RAW);
            }
            ProcFrame::RawRefused { header, .. } => {
                assert!(header.size > MAX_RAW, "refused a raw within the limit");
            }
            ProcFrame::Env(env) => {
                assert!(
                    !matches!(
                        env.msg,
                        Some(mcpwire_process::pb::envelope::Msg::RawHeader(_))
                    ),
                    "raw_header leaked as an Env"
                );
            }
            ProcFrame::Oversize {
                declared, limit, ..
            } => {
                assert!(declared > limit, "skipped a frame within the limit");
            }
            ProcFrame::Garbage(_) => {}
        }
    }

    // The sideband decoder straight on the stream as a payload: uncompressed, and as zstd
    // with the declared size the frame itself states (so the decompressor is reached) or a
    // lying one; under the codec's limit and under one smaller than the stream.
    let stated = zstd_content_size(split.stream);
    for max in [MAX_RAW, split.stream.len() as u64 / 2] {
        for (compression, uncompressed_size) in [
            ("", 0),
            ("zstd", stated),
            ("zstd", stated.wrapping_add(1)),
            ("zstd", u64::MAX),
        ] {
            let header = RawHeader {
                request_id: String::new(),
                field_name: "result_json".into(),
                size: split.stream.len() as u64,
                compression: compression.into(),
                uncompressed_size,
            };
            decode_raw(&header, split.stream, max);
        }
    }

    let largest = LargestAlloc::largest();
    assert!(
        largest <= bound,
        "allocated {largest} bytes at once (bound {bound}) for a {}-byte input",
        data.len()
    );
});

/// The content size a zstd frame header states (0 when it states none or is not one).
fn zstd_content_size(frame: &[u8]) -> u64 {
    zstd::zstd_safe::get_frame_content_size(frame)
        .ok()
        .flatten()
        .unwrap_or(0)
}
