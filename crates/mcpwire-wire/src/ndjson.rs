//! Newline-delimited JSON-RPC, the stdio wire.
//!
//! One message per line, UTF-8, `\n`-terminated (a trailing `\r` is tolerated). A line over
//! the limit is discarded up to its newline and answered with −32600; the stream goes on.

use bytes::{Buf, BufMut, BytesMut};
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{Malformed, McpError, Outbound};
use tokio_util::codec::{Decoder, Encoder};

use crate::{Decoded, FramingError, Limits};

/// The NDJSON codec.
#[derive(Debug)]
pub struct NdjsonCodec {
    limits: Limits,
    /// How far into the buffer we have already searched for `\n`.
    scanned: usize,
    /// Discarding the rest of an oversize line.
    discarding: bool,
    /// Lines are yielded undecoded (through `AnyCodec`).
    raw: bool,
}

impl NdjsonCodec {
    /// A codec enforcing `limits`.
    pub fn new(limits: &Limits) -> NdjsonCodec {
        NdjsonCodec {
            limits: limits.clone(),
            scanned: 0,
            discarding: false,
            raw: false,
        }
    }

    fn oversize(&self) -> Malformed {
        Malformed::new(
            None,
            McpError::MessageTooLarge {
                max: self.limits.max_message_bytes,
            },
        )
    }
}

/// One input line as its bytes (its end and a trailing `\r` removed), or the refusal an
/// oversize one gets.
pub type NdjsonLine = Result<BytesMut, Malformed>;

impl NdjsonCodec {
    /// Whether lines are yielded undecoded ([`WireItem::Line`](crate::WireItem::Line)):
    /// a raw-frame path looks at them before they are decoded (see
    /// [`NdjsonCodec::with_raw_lines`]).
    pub fn raw_lines(&self) -> bool {
        self.raw
    }

    /// This codec, splitting lines for a caller that decodes them itself (with
    /// [`NdjsonCodec::decode_body`]): through [`AnyCodec`](crate::AnyCodec) it yields
    /// [`WireItem::Line`](crate::WireItem::Line) instead of decoded messages.
    pub fn with_raw_lines(mut self) -> NdjsonCodec {
        self.raw = true;
        self
    }

    /// Decodes one line's bytes as this codec does (its depth limit).
    pub fn decode_body(&self, body: &[u8]) -> Decoded {
        decode_with_depth(body, self.limits.max_depth)
    }

    /// The deepest nesting accepted.
    pub fn max_depth(&self) -> usize {
        self.limits.max_depth
    }

    /// The next complete, non-blank line (an oversize one is refused, then skipped).
    pub fn decode_line(&mut self, buf: &mut BytesMut) -> Result<Option<NdjsonLine>, FramingError> {
        loop {
            let newline = memchr::memchr(b'\n', &buf[self.scanned..]);
            let Some(offset) = newline else {
                if self.discarding {
                    buf.clear();
                    self.scanned = 0;
                } else if buf.len() > self.limits.max_message_bytes {
                    buf.clear();
                    self.scanned = 0;
                    self.discarding = true;
                    return Ok(Some(Err(self.oversize())));
                } else {
                    self.scanned = buf.len();
                }
                return Ok(None);
            };
            let end = self.scanned + offset;
            self.scanned = 0;
            if self.discarding {
                buf.advance(end + 1);
                self.discarding = false;
                continue;
            }
            if end > self.limits.max_message_bytes {
                buf.advance(end + 1);
                return Ok(Some(Err(self.oversize())));
            }
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            if line.last() == Some(&b'\r') {
                line.truncate(end - 1);
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue; // blank lines are not messages
            }
            return Ok(Some(Ok(line)));
        }
    }

    /// [`NdjsonCodec::decode_line`] at the end of input: a final line without `\n` too.
    pub fn decode_line_eof(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<NdjsonLine>, FramingError> {
        match self.decode_line(buf)? {
            Some(item) => Ok(Some(item)),
            None => {
                if buf.is_empty() || self.discarding {
                    buf.clear();
                    return Ok(None);
                }
                let line = buf.split();
                self.scanned = 0;
                if line.iter().all(u8::is_ascii_whitespace) {
                    return Ok(None);
                }
                Ok(Some(Ok(line)))
            }
        }
    }
}

impl Decoder for NdjsonCodec {
    type Item = Decoded;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, FramingError> {
        Ok(self
            .decode_line(buf)?
            .map(|line| line.and_then(|body| self.decode_body(&body))))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Decoded>, FramingError> {
        Ok(self
            .decode_line_eof(buf)?
            .map(|line| line.and_then(|body| self.decode_body(&body))))
    }
}

impl Encoder<&Outbound> for NdjsonCodec {
    type Error = FramingError;

    fn encode(&mut self, msg: &Outbound, dst: &mut BytesMut) -> Result<(), FramingError> {
        msg.write_json(dst.writer())?;
        dst.put_u8(b'\n');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_model::{Message, codes};

    fn codec(max: usize) -> NdjsonCodec {
        NdjsonCodec::new(&Limits {
            max_message_bytes: max,
            ..Limits::default()
        })
    }

    fn drain(c: &mut NdjsonCodec, buf: &mut BytesMut) -> Vec<Decoded> {
        let mut out = Vec::new();
        while let Some(d) = c.decode(buf).unwrap() {
            out.push(d);
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_partial_ones() {
        let mut c = codec(1024);
        let mut buf = BytesMut::from(
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n\n{\"jsonrpc\""[..],
        );
        let got = drain(&mut c, &mut buf);
        assert_eq!(got.len(), 1);
        assert!(matches!(got[0], Ok(Message::Request(_))));
        buf.extend_from_slice(b":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        let got = drain(&mut c, &mut buf);
        assert!(matches!(got[0], Ok(Message::Notification(_))));
    }

    #[test]
    fn oversize_line_is_refused_and_the_stream_goes_on() {
        let mut c = codec(64);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[b'x'; 100]);
        let got = drain(&mut c, &mut buf);
        assert_eq!(got.len(), 1);
        assert_eq!(
            got[0].as_ref().unwrap_err().error.code,
            codes::INVALID_REQUEST
        );
        buf.extend_from_slice(&[b'y'; 100]);
        buf.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        let got = drain(&mut c, &mut buf);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(matches!(got[0], Ok(Message::Request(_))));
        // An oversize line that arrives whole is refused too.
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[b'z'; 70]);
        buf.extend_from_slice(b"\n");
        let got = drain(&mut c, &mut buf);
        assert_eq!(
            got[0].as_ref().unwrap_err().error.code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn invalid_utf8_is_a_parse_error() {
        let mut c = codec(1024);
        let mut buf = BytesMut::from(&b"\xff\xfe\xfd\n"[..]);
        let got = drain(&mut c, &mut buf);
        assert_eq!(got[0].as_ref().unwrap_err().error.code, codes::PARSE_ERROR);
    }

    #[test]
    fn final_line_without_newline_is_decoded_at_eof() {
        let mut c = codec(1024);
        let mut buf = BytesMut::from(&b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"[..]);
        assert!(c.decode(&mut buf).unwrap().is_none());
        assert!(matches!(c.decode_eof(&mut buf).unwrap(), Some(Ok(_))));
    }

    #[test]
    fn encodes_one_line() {
        let mut c = codec(1024);
        let mut dst = BytesMut::new();
        let msg = Outbound::Notification {
            method: "x".into(),
            params: None,
        };
        c.encode(&msg, &mut dst).unwrap();
        assert_eq!(&dst[..], b"{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n");
    }
}
