use bytes::BufMut;

use super::*;
use crate::proto_mcp::pb::{self, mcp_message::Payload};

fn codec(max: usize) -> ProtoMcpCodec {
    ProtoMcpCodec::new(&Limits {
        max_message_bytes: max,
        ..Limits::default()
    })
}

fn ping(id: u64) -> McpMessage {
    McpMessage::new(
        id,
        Payload::ListToolsRequest(pb::ListToolsRequest {
            include_schemas: true,
            ..Default::default()
        }),
    )
}

fn frame(msg: &McpMessage) -> BytesMut {
    let mut b = BytesMut::new();
    codec(1 << 20).encode(msg, &mut b).unwrap();
    b
}

fn drain(c: &mut ProtoMcpCodec, buf: &mut BytesMut) -> Vec<ProtoDecoded> {
    let mut out = Vec::new();
    while let Some(d) = c.decode(buf).unwrap() {
        out.push(d);
    }
    out
}

fn error_of(d: &ProtoDecoded) -> (u64, i32) {
    let m = d.as_ref().unwrap_err();
    match &m.payload {
        Some(Payload::ErrorResponse(e)) => (m.id, e.code),
        other => panic!("not an error response: {other:?}"),
    }
}

#[test]
fn round_trips_and_waits_for_partial_frames() {
    let mut c = codec(1024);
    let whole = frame(&ping(7));
    let mut buf = BytesMut::from(&whole[..3]);
    assert!(drain(&mut c, &mut buf).is_empty());
    buf.extend_from_slice(&whole[3..whole.len() - 1]);
    assert!(drain(&mut c, &mut buf).is_empty());
    buf.extend_from_slice(&whole[whole.len() - 1..]);
    buf.extend_from_slice(&frame(&ping(8)));
    let got = drain(&mut c, &mut buf);
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().unwrap(), &ping(7));
    assert_eq!(got[1].as_ref().unwrap(), &ping(8));
}

#[test]
fn malformed_body_is_answered_with_its_id_and_the_stream_goes_on() {
    let mut c = codec(1024);
    // id = 42, then field 2 (initialize_request, length-delimited) claiming 100 bytes.
    let body = [0x08, 42, 0x12, 100, 1, 2];
    let mut buf = BytesMut::new();
    buf.put_u32(body.len() as u32);
    buf.extend_from_slice(&body);
    buf.extend_from_slice(&frame(&ping(9)));
    let got = drain(&mut c, &mut buf);
    assert_eq!(got.len(), 2);
    assert_eq!(error_of(&got[0]), (42, codes::PARSE_ERROR as i32));
    assert_eq!(got[1].as_ref().unwrap().id, 9);
}

#[test]
fn garbage_without_an_id_is_answered_with_id_zero() {
    let mut c = codec(1024);
    let mut buf = BytesMut::new();
    buf.put_u32(3);
    buf.extend_from_slice(&[0xff, 0xff, 0xff]);
    let got = drain(&mut c, &mut buf);
    assert_eq!(error_of(&got[0]), (0, codes::PARSE_ERROR as i32));
}

#[test]
fn oversize_frame_is_skipped_as_it_streams_in() {
    let mut c = codec(64);
    let mut buf = BytesMut::new();
    buf.put_u32(1000);
    buf.extend_from_slice(&[0u8; 100]);
    let got = drain(&mut c, &mut buf);
    assert_eq!(got.len(), 1);
    assert_eq!(error_of(&got[0]), (0, codes::INVALID_REQUEST as i32));
    assert!(buf.is_empty(), "skipped bytes are not buffered");
    for _ in 0..9 {
        buf.extend_from_slice(&[0u8; 100]);
        assert!(drain(&mut c, &mut buf).is_empty());
    }
    buf.extend_from_slice(&frame(&ping(3)));
    let got = drain(&mut c, &mut buf);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].as_ref().unwrap().id, 3);
}

#[test]
fn huge_declared_length_does_not_allocate_it() {
    let mut c = codec(16 << 20);
    let mut buf = BytesMut::new();
    buf.put_u32(15 << 20);
    buf.extend_from_slice(&[0u8; 10]);
    assert!(drain(&mut c, &mut buf).is_empty());
    assert!(buf.capacity() < 1 << 20, "capacity {}", buf.capacity());
}

#[test]
fn truncated_final_frame_is_reported_at_eof() {
    let mut c = codec(1024);
    let whole = frame(&ping(5));
    let mut buf = BytesMut::from(&whole[..whole.len() - 2]);
    assert!(c.decode(&mut buf).unwrap().is_none());
    let got = c.decode_eof(&mut buf).unwrap().unwrap();
    assert_eq!(error_of(&got), (0, codes::PARSE_ERROR as i32));
    assert!(c.decode_eof(&mut buf).unwrap().is_none());
}

#[test]
fn empty_frame_is_an_empty_message() {
    let mut c = codec(1024);
    let mut buf = BytesMut::from(&[0u8, 0, 0, 0][..]);
    let got = drain(&mut c, &mut buf);
    assert_eq!(got[0].as_ref().unwrap(), &McpMessage::default());
}
