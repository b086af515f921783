//! First-byte protocol detection: one stdio (or socket) listener serving JSON-RPC and
//! proto-mcp.
//!
//! The first byte of the stream decides, once: `{`, `[` or ASCII whitespace → NDJSON
//! JSON-RPC; any other byte in `0x00`–`0x1F` → proto-mcp frames (a frame's big-endian length
//! starts with `0x00` below 16 MiB; lengths starting `\t`, `\n`, `\r` or `{` would exceed any
//! limit); anything else → JSON-RPC, where it is answered −32700 as before.

use bytes::BytesMut;
use tokio_util::codec::Decoder;

#[cfg(feature = "proto-mcp")]
use crate::proto_mcp::{ProtoDecoded, ProtoMcpCodec};
use crate::{Decoded, FramingError, Limits, NdjsonCodec};

/// What [`AnyCodec`] yields.
#[derive(Debug)]
pub enum WireItem {
    /// A JSON-RPC message (or the error a bad line deserves).
    Json(Decoded),
    /// A JSON-RPC line not decoded yet (or the refusal an oversize one gets), from a codec
    /// made with [`AnyCodec::with_raw_lines`]: decode it with
    /// [`NdjsonCodec::decode_body`].
    Line(crate::ndjson::NdjsonLine),
    /// A proto-mcp message (or the `ErrorResponse` a bad frame deserves).
    #[cfg(feature = "proto-mcp")]
    Proto(ProtoDecoded),
}

/// A decoder that picks its wire from the first byte, then keeps it.
#[derive(Debug)]
pub enum AnyCodec {
    /// Nothing read yet.
    Undecided {
        /// Limits for whichever codec is chosen.
        limits: Limits,
        /// Whether proto-mcp frames are accepted (else everything is JSON-RPC).
        proto: bool,
        /// JSON-RPC lines are yielded undecoded ([`WireItem::Line`]).
        raw: bool,
    },
    /// Newline-delimited JSON-RPC.
    Json(NdjsonCodec),
    /// proto-mcp frames.
    #[cfg(feature = "proto-mcp")]
    Proto(ProtoMcpCodec),
}

impl AnyCodec {
    /// A detecting codec; with `proto` false it is plain NDJSON.
    pub fn new(limits: &Limits, proto: bool) -> AnyCodec {
        if proto && cfg!(feature = "proto-mcp") {
            AnyCodec::Undecided {
                limits: limits.clone(),
                proto,
                raw: false,
            }
        } else {
            AnyCodec::Json(NdjsonCodec::new(limits))
        }
    }

    /// This codec yielding JSON-RPC lines undecoded ([`WireItem::Line`]), for a wire that
    /// looks at some frames before decoding them (the gateway's stdio relay).
    pub fn with_raw_lines(self) -> AnyCodec {
        match self {
            AnyCodec::Undecided { limits, proto, .. } => AnyCodec::Undecided {
                limits,
                proto,
                raw: true,
            },
            AnyCodec::Json(c) => AnyCodec::Json(c.with_raw_lines()),
            #[cfg(feature = "proto-mcp")]
            other => other,
        }
    }

    /// The JSON-RPC codec, once the stream turned out to be JSON-RPC.
    pub fn json(&self) -> Option<&NdjsonCodec> {
        match self {
            AnyCodec::Json(c) => Some(c),
            _ => None,
        }
    }

    /// Whether the stream turned out to be proto-mcp.
    pub fn is_proto(&self) -> bool {
        #[cfg(feature = "proto-mcp")]
        if let AnyCodec::Proto(_) = self {
            return true;
        }
        false
    }

    fn decide(&mut self, first: u8) {
        let AnyCodec::Undecided { limits, proto, raw } = self else {
            return;
        };
        let raw = *raw;
        let json = matches!(first, b'{' | b'[') || first.is_ascii_whitespace() || first > 0x1f;
        #[cfg(feature = "proto-mcp")]
        if *proto && !json {
            *self = AnyCodec::Proto(ProtoMcpCodec::new(limits));
            return;
        }
        let _ = (json, proto);
        let codec = NdjsonCodec::new(limits);
        *self = AnyCodec::Json(if raw { codec.with_raw_lines() } else { codec });
    }
}

impl Decoder for AnyCodec {
    type Item = WireItem;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<WireItem>, FramingError> {
        match self {
            AnyCodec::Json(c) if c.raw_lines() => Ok(c.decode_line(buf)?.map(WireItem::Line)),
            AnyCodec::Json(c) => Ok(c.decode(buf)?.map(WireItem::Json)),
            #[cfg(feature = "proto-mcp")]
            AnyCodec::Proto(c) => Ok(c.decode(buf)?.map(WireItem::Proto)),
            AnyCodec::Undecided { .. } => match buf.first() {
                None => Ok(None),
                Some(&b) => {
                    self.decide(b);
                    self.decode(buf)
                }
            },
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<WireItem>, FramingError> {
        match self {
            AnyCodec::Json(c) if c.raw_lines() => Ok(c.decode_line_eof(buf)?.map(WireItem::Line)),
            AnyCodec::Json(c) => Ok(c.decode_eof(buf)?.map(WireItem::Json)),
            #[cfg(feature = "proto-mcp")]
            AnyCodec::Proto(c) => Ok(c.decode_eof(buf)?.map(WireItem::Proto)),
            AnyCodec::Undecided { .. } => match buf.first() {
                None => Ok(None),
                Some(&b) => {
                    self.decide(b);
                    self.decode_eof(buf)
                }
            },
        }
    }
}

#[cfg(all(test, feature = "proto-mcp"))]
mod tests {
    use super::*;
    use crate::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
    use tokio_util::codec::Encoder;

    fn first(bytes: &[u8]) -> (WireItem, bool) {
        let mut c = AnyCodec::new(&Limits::default(), true);
        let mut buf = BytesMut::from(bytes);
        let item = c.decode_eof(&mut buf).unwrap().unwrap();
        (item, c.is_proto())
    }

    #[test]
    fn json_lines_and_whitespace_pick_json_rpc() {
        for input in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"\n  {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
            b"hello\n",
        ] {
            let (item, proto) = first(input);
            assert!(matches!(item, WireItem::Json(_)) && !proto);
        }
    }

    #[test]
    fn a_frame_picks_proto_mcp() {
        let msg = McpMessage::new(
            3,
            Payload::ListToolsRequest(pb::ListToolsRequest::default()),
        );
        let mut buf = BytesMut::new();
        ProtoMcpCodec::new(&Limits::default())
            .encode(&msg, &mut buf)
            .unwrap();
        let (item, proto) = first(&buf);
        assert!(proto);
        assert!(matches!(item, WireItem::Proto(Ok(m)) if m == msg));
    }

    #[test]
    fn without_proto_everything_is_json() {
        let mut c = AnyCodec::new(&Limits::default(), false);
        let mut buf = BytesMut::from(&[0u8, 0, 0, 2, 8, 1][..]);
        assert!(matches!(
            c.decode_eof(&mut buf).unwrap(),
            Some(WireItem::Json(Err(_)))
        ));
    }
}
