use bytes::{BufMut, BytesMut};
use mcpwire_model::{Message, Outbound, RequestId, codes};
use serde_json::json;
use tokio_util::codec::{Decoder, Encoder};

use super::*;

fn frame(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn server(max: usize) -> McpbCodec {
    McpbCodec::server(&Limits {
        max_message_bytes: max,
        ..Limits::default()
    })
}

fn drain(c: &mut McpbCodec, buf: &mut BytesMut) -> Vec<McpbFrame> {
    let mut out = Vec::new();
    while let Some(f) = c.decode(buf).expect("no fatal error") {
        out.push(f);
    }
    out
}

fn code_of(f: &McpbFrame) -> i64 {
    match f {
        McpbFrame::Mcp { msg: Err(m), .. } => m.error.code,
        other => panic!("expected a refused MCP message, got {other:?}"),
    }
}

const PING: &[u8] = br#"{"jsonrpc":"2.0","id":"a-1","method":"ping"}"#;

#[test]
fn decodes_frames_split_at_every_byte() {
    let mut bytes = frame(
        frame_type::VERSION_NEGOTIATION,
        br#"{"min_version":1,"max_version":1,"preferred_version":1,"supported_versions":[1]}"#,
    );
    bytes.extend(frame(frame_type::REQUEST, PING));
    bytes.extend(frame(frame_type::HEALTH_CHECK, b""));
    bytes.extend(frame(
        frame_type::CONTROL,
        br#"{"command":"shutdown_ack","status":"ok"}"#,
    ));
    let mut c = server(1024);
    let mut buf = BytesMut::new();
    let mut got = Vec::new();
    for b in &bytes {
        buf.put_u8(*b);
        got.extend(drain(&mut c, &mut buf));
    }
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(matches!(&got[0], McpbFrame::Version(o) if o.negotiate() == Some(1)));
    assert!(
        matches!(&got[1], McpbFrame::Mcp { auth_token: None, msg: Ok(Message::Request(r)), shape: McpbShape::Plain }
        if r.id == RequestId::Str("a-1".into()))
    );
    assert!(matches!(got[2], McpbFrame::Health(None)));
    assert!(matches!(&got[3], McpbFrame::Control(v) if v["command"] == "shutdown_ack"));
}

#[test]
fn auth_wrappers_are_unwrapped_under_either_key() {
    let mut c = server(1024);
    for key in ["message", "request"] {
        let body = format!(
            r#"{{"auth_token":"tok","{key}":{}}}"#,
            std::str::from_utf8(PING).unwrap_or_default()
        );
        let mut buf = BytesMut::from(&frame(frame_type::REQUEST, body.as_bytes())[..]);
        let got = drain(&mut c, &mut buf);
        assert!(
            matches!(&got[0], McpbFrame::Mcp { auth_token: Some(t), msg: Ok(Message::Request(_)), shape: McpbShape::AuthWrapper } if t == "tok"),
            "{got:?}"
        );
    }
    let long = format!(
        r#"{{"auth_token":"{}","message":{{}}}}"#,
        "t".repeat(MAX_TOKEN + 1)
    );
    let mut buf = BytesMut::from(&frame(frame_type::REQUEST, long.as_bytes())[..]);
    assert_eq!(code_of(&drain(&mut c, &mut buf)[0]), codes::INVALID_REQUEST);
}

#[test]
fn oversize_frames_are_skipped_without_buffering_and_the_stream_goes_on() {
    let mut c = server(64);
    let mut buf = BytesMut::new();
    // Header of a 1 MiB request, then its payload in pieces, then a good frame.
    buf.extend_from_slice(&frame(frame_type::REQUEST, b"")[..8]);
    buf.put_u32(1 << 20);
    let got = drain(&mut c, &mut buf);
    assert_eq!(code_of(&got[0]), codes::INVALID_REQUEST);
    for _ in 0..16 {
        buf.extend_from_slice(&[b'x'; 65536]);
        assert!(drain(&mut c, &mut buf).is_empty());
        assert!(buf.capacity() < 1 << 20, "the payload must not be buffered");
    }
    buf.extend_from_slice(&frame(frame_type::REQUEST, PING));
    let got = drain(&mut c, &mut buf);
    assert!(
        matches!(&got[0], McpbFrame::Mcp { msg: Ok(_), .. }),
        "{got:?}"
    );
    // Oversize non-MCP frames are refused the same way.
    let mut buf = BytesMut::from(&frame(frame_type::CONTROL, &[b'{'; 100])[..]);
    assert!(matches!(drain(&mut c, &mut buf)[0], McpbFrame::Refused(_)));
}

#[test]
fn bad_magic_and_versions_are_fatal() {
    let mut c = server(1024);
    let mut bad = frame(frame_type::REQUEST, PING);
    bad[0] = b'X';
    assert!(matches!(
        c.decode(&mut BytesMut::from(&bad[..])),
        Err(FramingError::Fatal(_))
    ));
    let mut v2 = frame(frame_type::REQUEST, PING);
    v2[5] = 2;
    assert!(matches!(
        c.decode(&mut BytesMut::from(&v2[..])),
        Err(FramingError::Fatal(_))
    ));
    // A truncated frame at EOF is fatal too; a clean EOF is not.
    let mut cut = BytesMut::from(&frame(frame_type::REQUEST, PING)[..20]);
    assert!(c.decode_eof(&mut cut).is_err());
    assert!(matches!(c.decode_eof(&mut BytesMut::new()), Ok(None)));
}

#[test]
fn bad_payloads_are_answered_and_unknown_types_skipped() {
    let mut c = server(4096);
    let cases: Vec<(Vec<u8>, i64)> = vec![
        (frame(frame_type::REQUEST, b"\xff\xfe"), codes::PARSE_ERROR),
        (
            frame(frame_type::REQUEST, b"{\"jsonrpc\":\"2.0\",\"id\":1"),
            codes::PARSE_ERROR,
        ),
        (
            frame(frame_type::REQUEST, "[".repeat(500).as_bytes()),
            codes::PARSE_ERROR,
        ),
        (
            frame(
                frame_type::REQUEST,
                br#"{"jsonrpc":"2.0","id":"has space","method":"ping"}"#,
            ),
            codes::INVALID_REQUEST,
        ),
        (
            frame(
                frame_type::REQUEST,
                format!(
                    r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#,
                    "i".repeat(256)
                )
                .as_bytes(),
            ),
            codes::INVALID_REQUEST,
        ),
        (
            frame(
                frame_type::REQUEST,
                br#"{"jsonrpc":"2.0","id":1,"method":"tools call"}"#,
            ),
            codes::INVALID_REQUEST,
        ),
    ];
    for (bytes, code) in cases {
        let mut buf = BytesMut::from(&bytes[..]);
        let got = drain(&mut c, &mut buf);
        assert_eq!(code_of(&got[0]), code, "{got:?}");
    }
    // The id of an invalid request is echoed so the client can correlate the error.
    let mut buf = BytesMut::from(
        &frame(
            frame_type::REQUEST,
            br#"{"jsonrpc":"2.0","id":7,"method":"a b"}"#,
        )[..],
    );
    match &drain(&mut c, &mut buf)[0] {
        McpbFrame::Mcp { msg: Err(m), .. } => assert_eq!(m.id, Some(RequestId::Int(7))),
        other => panic!("{other:?}"),
    }
    for (kind, body) in [
        (0x0042u16, &b"{}"[..]),
        (frame_type::CONTROL, b"[1]"),
        (frame_type::VERSION_NEGOTIATION, b"{\"min_version\":-1}"),
        (frame_type::HEALTH_CHECK, b"{nope"),
    ] {
        let mut buf = BytesMut::from(&frame(kind, body)[..]);
        buf.extend_from_slice(&frame(frame_type::REQUEST, PING));
        let got = drain(&mut c, &mut buf);
        assert!(matches!(got[0], McpbFrame::Refused(_)), "{kind}: {got:?}");
        assert!(matches!(got[1], McpbFrame::Mcp { msg: Ok(_), .. }));
    }
    let mut buf = BytesMut::from(&frame(frame_type::ERROR, b"bad \xff")[..]);
    assert!(
        matches!(&drain(&mut c, &mut buf)[0], McpbFrame::PeerError(s) if s.starts_with("bad "))
    );
}

#[test]
fn negotiation_picks_the_highest_common_version() {
    let offer = |min, max, supported: Vec<u16>| VersionOffer {
        min_version: min,
        max_version: max,
        preferred_version: max,
        supported_versions: supported,
    };
    assert_eq!(offer(1, 3, vec![]).negotiate(), Some(1));
    assert_eq!(offer(2, 3, vec![]).negotiate(), None);
    assert_eq!(offer(0, 0, vec![1, 2]).negotiate(), Some(1));
    assert_eq!(offer(1, 1, vec![2]).negotiate(), None);
    assert_eq!(VersionOffer::ours().negotiate(), Some(MAX_VERSION));
}

#[test]
fn encodes_every_frame_and_a_client_reads_them_back() {
    let mut s = server(1 << 20);
    let mut c = McpbCodec::client(&Limits::default());
    let mut wire = BytesMut::new();
    let resp = Outbound::Response {
        id: RequestId::Str("a-1".into()),
        result: mcpwire_model::to_raw(&json!({"ok": true})),
    };
    s.encode(
        McpbOut::VersionAck(VersionAck { agreed_version: 1 }),
        &mut wire,
    )
    .expect("encodes");
    s.encode(McpbOut::Mcp(&resp), &mut wire).expect("encodes");
    s.encode(McpbOut::Health(Some(&json!({"healthy": true}))), &mut wire)
        .expect("encodes");
    s.encode(McpbOut::Control(&json!({"command": "shutdown"})), &mut wire)
        .expect("encodes");
    s.encode(McpbOut::Error("going away"), &mut wire)
        .expect("encodes");
    assert_eq!(&wire[..4], b"MCPB");
    assert_eq!(
        u16::from_be_bytes([wire[6], wire[7]]),
        frame_type::VERSION_ACK
    );
    let got = drain(&mut c, &mut wire);
    assert!(matches!(
        got[0],
        McpbFrame::VersionAck(VersionAck { agreed_version: 1 })
    ));
    assert!(matches!(
        &got[1],
        McpbFrame::Mcp {
            msg: Ok(Message::Response(_)),
            ..
        }
    ));
    assert!(matches!(&got[2], McpbFrame::Health(Some(v)) if v["healthy"] == true));
    assert!(matches!(&got[3], McpbFrame::Control(v) if v["command"] == "shutdown"));
    assert!(matches!(&got[4], McpbFrame::PeerError(t) if t == "going away"));
    // A client's message goes out as a Request frame, optionally wrapped with a token.
    let req = Outbound::Request {
        id: RequestId::Int(1),
        method: "ping".into(),
        params: None,
    };
    c.encode(McpbOut::AuthMcp(&req, "secret"), &mut wire)
        .expect("encodes");
    assert_eq!(u16::from_be_bytes([wire[6], wire[7]]), frame_type::REQUEST);
    let got = drain(&mut s, &mut wire);
    assert!(
        matches!(&got[0], McpbFrame::Mcp { auth_token: Some(t), msg: Ok(Message::Request(_)), .. } if t == "secret")
    );
}

#[test]
fn the_router_envelope_is_unwrapped_and_answered_as_mcp_payload() {
    let mut s = server(4096);
    let body = format!(
        r#"{{"id":"a-1","timestamp":"2026-11-26T05:00:00Z","source":"local-router","target_namespace":"system","auth_token":"tok","mcp_payload":{}}}"#,
        std::str::from_utf8(PING).unwrap_or_default()
    );
    let mut buf = BytesMut::from(&frame(frame_type::REQUEST, body.as_bytes())[..]);
    let got = drain(&mut s, &mut buf);
    assert!(
        matches!(&got[0], McpbFrame::Mcp { auth_token: Some(t), msg: Ok(Message::Request(r)), shape: McpbShape::Envelope }
            if t == "tok" && r.id == RequestId::Str("a-1".into())),
        "{got:?}"
    );
    // Without a token (authentication off) and without a namespace it is still an envelope.
    let bare = format!(
        r#"{{"id":1,"mcp_payload":{}}}"#,
        std::str::from_utf8(PING).unwrap_or_default()
    );
    let mut buf = BytesMut::from(&frame(frame_type::REQUEST, bare.as_bytes())[..]);
    assert!(matches!(
        &drain(&mut s, &mut buf)[0],
        McpbFrame::Mcp {
            auth_token: None,
            msg: Ok(_),
            shape: McpbShape::Envelope
        }
    ));
    // A namespace outside the spec's alphabet is refused.
    let bad = format!(
        r#"{{"target_namespace":"a b","mcp_payload":{}}}"#,
        std::str::from_utf8(PING).unwrap_or_default()
    );
    let mut buf = BytesMut::from(&frame(frame_type::REQUEST, bad.as_bytes())[..]);
    assert_eq!(code_of(&drain(&mut s, &mut buf)[0]), codes::INVALID_REQUEST);

    // Answers go out as {"mcp_payload": …}, including the refusal of one that is too big.
    let ok = Outbound::Response {
        id: RequestId::Str("a-1".into()),
        result: mcpwire_model::to_raw(&json!({})),
    };
    let mut wire = BytesMut::new();
    s.encode(McpbOut::Envelope(&ok), &mut wire)
        .expect("encodes");
    let payload: serde_json::Value = serde_json::from_slice(&wire[HEADER_LEN..]).expect("JSON");
    assert_eq!(
        payload,
        json!({"mcp_payload": {"jsonrpc": "2.0", "id": "a-1", "result": {}}})
    );
    let mut small = server(256);
    let big = Outbound::Response {
        id: RequestId::Int(9),
        result: mcpwire_model::to_raw(&json!({"text": "x".repeat(1000)})),
    };
    let mut wire = BytesMut::new();
    small
        .encode(McpbOut::Envelope(&big), &mut wire)
        .expect("encodes");
    let payload: serde_json::Value = serde_json::from_slice(&wire[HEADER_LEN..]).expect("JSON");
    assert_eq!(payload["mcp_payload"]["id"], 9, "{payload}");
    assert_eq!(
        payload["mcp_payload"]["error"]["code"],
        codes::INTERNAL_ERROR,
        "{payload}"
    );
    // A client codec reads such answers.
    let mut c = McpbCodec::client(&Limits::default());
    assert!(matches!(
        &drain(&mut c, &mut wire)[0],
        McpbFrame::Mcp {
            msg: Ok(Message::Response(_)),
            shape: McpbShape::Envelope,
            ..
        }
    ));
}

#[test]
fn an_answer_over_the_frame_limit_becomes_an_error_for_its_request() {
    let mut s = server(256);
    let big = Outbound::Response {
        id: RequestId::Int(9),
        result: mcpwire_model::to_raw(&json!({"text": "x".repeat(1000)})),
    };
    let mut wire = BytesMut::new();
    s.encode(McpbOut::Mcp(&big), &mut wire).expect("encodes");
    let mut c = McpbCodec::client(&Limits::default());
    match &drain(&mut c, &mut wire)[0] {
        McpbFrame::Mcp {
            msg: Ok(Message::Response(r)),
            ..
        } => {
            assert_eq!(r.id, RequestId::Int(9));
            assert!(r.outcome.is_err(), "{r:?}");
        }
        other => panic!("{other:?}"),
    }
}
