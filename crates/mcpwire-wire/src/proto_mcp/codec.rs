//! The length-prefixed frame codec and whole-message helpers.

use bytes::{Buf, BufMut, BytesMut};
use mcpwire_model::McpError;
use prost::Message as _;
use tokio_util::codec::{Decoder, Encoder};

use super::pb::McpMessage;
use crate::{FramingError, Limits};

/// What the decoder yields: a message, or the `ErrorResponse` a bad frame deserves.
pub type ProtoDecoded = Result<McpMessage, McpMessage>;

/// Bytes reserved ahead of what has arrived, at most: a peer announcing a 16 MiB frame
/// does not make us allocate 16 MiB before sending it.
const RESERVE_AHEAD: usize = 64 * 1024;

/// `[u32 BE length][MCPMessage]` frames, bounded by [`Limits::max_message_bytes`].
#[derive(Debug)]
pub struct ProtoMcpCodec {
    max: usize,
    /// Bytes of an oversize frame still to skip.
    skipping: u64,
}

impl ProtoMcpCodec {
    /// A codec enforcing `limits`.
    pub fn new(limits: &Limits) -> ProtoMcpCodec {
        ProtoMcpCodec {
            max: limits.max_message_bytes,
            skipping: 0,
        }
    }
}

impl Decoder for ProtoMcpCodec {
    type Item = ProtoDecoded;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<ProtoDecoded>, FramingError> {
        if self.skipping > 0 {
            let n = usize::try_from(self.skipping)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            buf.advance(n);
            self.skipping -= n as u64;
            if self.skipping > 0 {
                return Ok(None);
            }
        }
        if buf.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
        if len > self.max {
            buf.advance(4);
            self.skipping = len as u64;
            return self.oversize(len, buf);
        }
        if buf.len() < 4 + len {
            let want = (4 + len - buf.len()).min(RESERVE_AHEAD);
            buf.reserve(want);
            return Ok(None);
        }
        buf.advance(4);
        let frame = buf.split_to(len);
        Ok(Some(decode_message(&frame)))
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
            &McpError::ParseError(format!(
                "input ended inside a frame ({n} bytes of it arrived)"
            )),
        ))))
    }
}

impl ProtoMcpCodec {
    fn oversize(
        &mut self,
        len: usize,
        buf: &mut BytesMut,
    ) -> Result<Option<ProtoDecoded>, FramingError> {
        let n = len.min(buf.len());
        buf.advance(n);
        self.skipping -= n as u64;
        Ok(Some(Err(McpMessage::error(
            0,
            &McpError::MessageTooLarge { max: self.max },
        ))))
    }
}

impl Encoder<&McpMessage> for ProtoMcpCodec {
    type Error = FramingError;

    fn encode(&mut self, msg: &McpMessage, dst: &mut BytesMut) -> Result<(), FramingError> {
        let len = msg.encoded_len();
        let Ok(len32) = u32::try_from(len) else {
            return Err(FramingError::Io(std::io::Error::other(
                "message longer than a u32 length prefix",
            )));
        };
        dst.reserve(4 + len);
        dst.put_u32(len32);
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
            &McpError::ParseError(format!("not a buf.mcp.v1.MCPMessage: {e}")),
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
