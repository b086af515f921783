//! `NdjsonCodec` and `jsonrpc::decode_with_depth` on arbitrary bytes in arbitrary chunk
//! splits, with a small line limit and a small depth limit; `captured::decode_capturing`
//! (the HTTP listener's decoder) against `decode_with_depth` on the whole input.
//!
//! Invariants: no panic and no stack overflow; the same bytes whole or split give the same
//! items; while waiting the codec holds at most one line within the limit; an accepted
//! message nests no deeper than the limit; a decoded message re-encoded as the matching
//! `Outbound` decodes again to an equal message; the capturing decoder makes the same
//! message or the same error, and each member it captured lies where it says.
#![no_main]

use std::borrow::Cow;

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use mcpwire_fuzz::{Split, drive};
use mcpwire_model::captured::{Captured, decode_capturing};
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{ErrorObject, Message, Outbound, RequestId};
use mcpwire_wire::{Limits, NdjsonCodec};
use tokio_util::codec::Encoder;

const MAX: usize = 2048;
const DEPTH: usize = 8;

fn limits() -> Limits {
    Limits {
        max_message_bytes: MAX,
        max_depth: DEPTH,
    }
}

/// Nesting depth of a JSON text the decoder accepted (scalars are 0). Counted on the text,
/// not a parsed `Value`: raw values keep numbers such as `1e999` that `Value` refuses.
fn raw_depth(raw: &serde_json::value::RawValue) -> usize {
    let (mut deepest, mut open) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for c in raw.get().chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '[' | '{' => {
                open += 1;
                deepest = deepest.max(open);
            }
            ']' | '}' => open -= 1,
            _ => {}
        }
    }
    deepest
}

/// The comparable parts of a message: kind, id, method, raw params/result, error.
#[derive(Debug, PartialEq)]
enum Shape {
    Request(RequestId, String, Option<String>),
    Notification(String, Option<String>),
    Result(RequestId, String),
    Error(RequestId, ErrorObject),
}

fn shape(m: &Message) -> Shape {
    let raw = |p: &Option<mcpwire_model::Raw>| p.as_ref().map(|r| r.get().to_owned());
    match m {
        Message::Request(r) => {
            Shape::Request(r.id.clone(), r.method.as_str().into(), raw(&r.params))
        }
        Message::Notification(n) => Shape::Notification(n.method.as_str().into(), raw(&n.params)),
        Message::Response(r) => match &r.outcome {
            Ok(v) => Shape::Result(r.id.clone(), v.get().to_owned()),
            Err(e) => Shape::Error(r.id.clone(), e.clone()),
        },
    }
}

/// The `Outbound` that says the same thing as an inbound message.
fn outbound(m: &Message) -> Outbound {
    match m {
        Message::Request(r) => Outbound::Request {
            id: r.id.clone(),
            method: Cow::Owned(r.method.as_str().to_owned()),
            params: r.params.clone(),
        },
        Message::Notification(n) => Outbound::Notification {
            method: Cow::Owned(n.method.as_str().to_owned()),
            params: n.params.clone(),
        },
        Message::Response(r) => match &r.outcome {
            Ok(v) => Outbound::Response {
                id: r.id.clone(),
                result: v.clone(),
            },
            Err(e) => Outbound::Error {
                id: Some(r.id.clone()),
                error: e.clone(),
            },
        },
    }
}

fn check_message(m: &Message) {
    // Depth: the envelope object is one level, its members add theirs.
    let inner = match m {
        Message::Request(r) => r.params.as_deref().map_or(0, raw_depth),
        Message::Notification(n) => n.params.as_deref().map_or(0, raw_depth),
        Message::Response(r) => match &r.outcome {
            Ok(v) => raw_depth(v),
            Err(e) => 1 + e.data.as_deref().map_or(0, raw_depth),
        },
    };
    assert!(
        1 + inner <= DEPTH,
        "accepted a message nested {} deep",
        1 + inner
    );

    // Re-encode with the codec, decode again.
    let mut line = BytesMut::new();
    NdjsonCodec::new(&limits())
        .encode(&outbound(m), &mut line)
        .expect("encodes");
    assert_eq!(line.last(), Some(&b'\n'));
    let again = decode_with_depth(&line[..line.len() - 1], DEPTH).unwrap_or_else(|e| {
        panic!(
            "re-encoded {:?} does not decode: {e:?}",
            String::from_utf8_lossy(&line)
        )
    });
    assert_eq!(shape(m), shape(&again), "round trip changed the message");
}

fuzz_target!(|data: &[u8]| {
    let split = Split::new(data);
    let idle = |_: &NdjsonCodec, buf: &BytesMut| {
        assert!(buf.len() <= MAX, "{} bytes buffered", buf.len());
    };
    let whole = drive(&mut NdjsonCodec::new(&limits()), &[split.stream], idle);
    let pieces = drive(&mut NdjsonCodec::new(&limits()), &split.chunks(), idle);
    assert_eq!(whole.fingerprint(), pieces.fingerprint(), "whole vs split");
    assert!(
        whole.error.is_none(),
        "in-memory decoding failed: {:?}",
        whole.error
    );
    for item in whole.items.iter().flatten() {
        check_message(item);
    }

    // One whole body (HTTP POST) with the default depth, and with the small one; each
    // also as the HTTP listener decodes it, its params' members captured with the envelope.
    for depth in [mcpwire_model::jsonrpc::DEFAULT_MAX_DEPTH, DEPTH] {
        let plain = decode_with_depth(split.stream, depth);
        let captured = decode_capturing(split.stream, depth);
        match (&plain, &captured) {
            (Ok(p), Ok((c, members))) => {
                assert_eq!(shape(p), shape(c), "captured decoding changed the message");
                if let Some(members) = members {
                    check_members(c, members);
                }
            }
            (Err(p), Err(c)) => assert_eq!(format!("{p:?}"), format!("{c:?}")),
            _ => panic!("plain {plain:?} against captured {captured:?}"),
        }
        if depth == DEPTH
            && let Ok(m) = plain
        {
            check_message(&m);
        }
    }
});

/// Each captured member lies where its range says in the params' text.
fn check_members(m: &Message, captured: &Captured<'_>) {
    let params = match m {
        Message::Request(r) => r.params.as_deref(),
        Message::Notification(n) => n.params.as_deref(),
        Message::Response(_) => panic!("members captured from a response"),
    };
    let text = params.expect("members captured from params").get();
    let c = captured.members;
    for member in [c.meta, c.name, c.arguments, c.uri, c.task_id].into_iter().flatten() {
        assert_eq!(&text[captured.range(member)], member.get());
    }
}
