//! The length-prefixed frame codec and whole-message helpers.

use bytes::BytesMut;
use mcpwire_model::codes;
use prost::Message as _;
use tokio_util::codec::{Decoder, Encoder};

use super::pb::McpMessage;
use crate::length_prefixed::{LengthPrefixed, Piece};
use crate::{FramingError, Limits};

/// What the decoder yields: a message, or the `ErrorResponse` a bad frame deserves.
pub type ProtoDecoded = Result<McpMessage, McpMessage>;

/// `[u32 BE length][MCPMessage]` frames, bounded by [`Limits::max_message_bytes`]; the
/// framing (and its oversize policy) is [`LengthPrefixed`]'s. An oversize frame is answered
/// at its prefix with −32600 and id 0 (its id is still to come), then skipped.
#[derive(Debug)]
pub struct ProtoMcpCodec {
    frames: LengthPrefixed,
}

impl ProtoMcpCodec {
    /// A codec enforcing `limits`.
    pub fn new(limits: &Limits) -> ProtoMcpCodec {
        ProtoMcpCodec {
            frames: LengthPrefixed::new(limits.max_message_bytes),
        }
    }
}

impl Decoder for ProtoMcpCodec {
    type Item = ProtoDecoded;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ProtoDecoded>, FramingError> {
        loop {
            let decoded = match self.frames.decode(buf) {
                None => return Ok(None),
                Some(Piece::Frame(body)) => decode_message(&body),
                Some(Piece::Oversize { declared, limit }) => Err(McpMessage::error(
                    0,
                    codes::INVALID_REQUEST,
                    format!(
                        "Invalid Request: frame of {declared} bytes exceeds the {limit} byte limit"
                    ),
                )),
                // Already answered at its prefix; proto-mcp announces no raw runs.
                Some(Piece::Skipped { .. } | Piece::Raw(_)) => continue,
            };
            return Ok(Some(decoded));
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<ProtoDecoded>, FramingError> {
        if let Some(item) = self.decode(buf)? {
            return Ok(Some(item));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A truncated final frame: nobody is left to read an answer, but say so once.
        let n = buf.len();
        buf.clear();
        Ok(Some(Err(McpMessage::error(
            0,
            codes::PARSE_ERROR,
            format!("input ended inside a frame ({n} bytes of it arrived)"),
        ))))
    }
}

impl Encoder<&McpMessage> for ProtoMcpCodec {
    type Error = FramingError;

    fn encode(&mut self, msg: &McpMessage, dst: &mut BytesMut) -> Result<(), FramingError> {
        LengthPrefixed::write_prefix(msg.encoded_len(), dst)
            .map_err(|e| FramingError::Io(std::io::Error::other(e)))?;
        msg.encode_raw(dst);
        Ok(())
    }
}

/// Decodes one whole `MCPMessage` (a frame's body, a WebSocket message); on failure the
/// `ErrorResponse` to send, echoing the id when field 1 is still readable.
pub fn decode_message(bytes: &[u8]) -> ProtoDecoded {
    McpMessage::decode(bytes).map_err(|e| {
        McpMessage::error(
            salvage_id(bytes),
            codes::PARSE_ERROR,
            format!("Parse error: not a buf.mcp.v1.MCPMessage: {e}"),
        )
    })
}

/// Encodes one whole `MCPMessage` (no length prefix).
pub fn encode_message(msg: &McpMessage) -> Vec<u8> {
    msg.encode_to_vec()
}

/// Reads fields until one fails, returning the last well-formed `uint64 id = 1` seen (0 if
/// none), so an answer to a half-broken frame still reaches the right request.
fn salvage_id(mut bytes: &[u8]) -> u64 {
    use prost::encoding::{DecodeContext, WireType, decode_key, decode_varint, skip_field};
    let mut id = 0;
    while !bytes.is_empty() {
        let Ok((tag, wire)) = decode_key(&mut bytes) else {
            break;
        };
        if tag == 1 && wire == WireType::Varint {
            match decode_varint(&mut bytes) {
                Ok(v) => id = v,
                Err(_) => break,
            }
        } else if skip_field(wire, tag, &mut bytes, DecodeContext::default()).is_err() {
            break;
        }
    }
    id
}

#[cfg(test)]
mod tests;
