//! Newline-delimited JSON-RPC, the stdio wire.
//!
//! One message per line, UTF-8, `\n`-terminated (a trailing `\r` is tolerated). A line over
//! the limit is discarded up to its newline and answered with −32600; the stream goes on.
//! [`LineSplitter`] is the one line splitter every NDJSON reader uses (the codec, the stdio
//! client), [`encode_line`] and [`encode_request_line`] the writers.

use bytes::{Buf, BufMut, BytesMut};
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{Malformed, McpError, Outbound, RequestId};
use serde_json::value::RawValue;
use tokio_util::codec::{Decoder, Encoder};

use crate::{Decoded, FramingError, Limits};

/// Splits a byte stream into lines — the rules of every NDJSON reader here: a line ends at
/// `\n`, its end and one trailing `\r` removed; a line of only ASCII whitespace is
/// [`RawLine::Blank`]; a line longer than the limit (its `\r` included) is reported once, as
/// soon as the limit is passed, as [`RawLine::Oversize`], and skipped up to its newline as
/// it streams in (never stored); the lines after it are read as usual. The search for a
/// line's end never looks further than one byte past the limit, and each byte is searched
/// once. At the end of input, a last line without `\n` is a line too.
///
/// As a [`Decoder`] it yields [`RawLine`]s (what the stdio client reads servers with);
/// [`NdjsonCodec`] is built on it.
#[derive(Debug)]
pub struct LineSplitter {
    max: usize,
    /// How far into the buffer the newline was already looked for.
    scanned: usize,
    /// Skipping the rest of an over-long line.
    discarding: bool,
}

/// One line of NDJSON input (see [`LineSplitter`]).
#[derive(Debug, PartialEq, Eq)]
pub enum RawLine {
    /// A line's bytes, without its end (not checked to be UTF-8 or JSON).
    Text(BytesMut),
    /// A line of only whitespace (not a message).
    Blank,
    /// A line longer than the limit, skipped.
    Oversize,
}

impl LineSplitter {
    /// A splitter of lines of at most `max` bytes.
    pub fn new(max: usize) -> LineSplitter {
        LineSplitter {
            max,
            scanned: 0,
            discarding: false,
        }
    }

    /// The next line in `buf`, taken from it; `None` until one is complete.
    pub fn next_line(&mut self, buf: &mut BytesMut) -> Option<RawLine> {
        loop {
            if self.discarding {
                // Whatever is buffered belongs to the over-long line up to its newline.
                match memchr::memchr(b'\n', buf) {
                    Some(end) => {
                        buf.advance(end + 1);
                        self.discarding = false;
                        continue;
                    }
                    None => {
                        buf.clear();
                        return None;
                    }
                }
            }
            // Never look further than one byte past the limit for the end of a line.
            let upto = buf.len().min(self.max.saturating_add(1));
            let from = self.scanned.min(upto);
            let Some(offset) = memchr::memchr(b'\n', buf.get(from..upto).unwrap_or_default())
            else {
                if buf.len() > self.max {
                    // Skipped from the next call on (the caller drains before waiting).
                    self.discarding = true;
                    self.scanned = 0;
                    return Some(RawLine::Oversize);
                }
                self.scanned = upto;
                return None;
            };
            let end = from + offset;
            self.scanned = 0;
            let mut line = buf.split_to(end + 1);
            line.truncate(end);
            return Some(line_of(line));
        }
    }

    /// [`LineSplitter::next_line`] at the end of input: a last line without `\n` too.
    pub fn last_line(&mut self, buf: &mut BytesMut) -> Option<RawLine> {
        if let Some(line) = self.next_line(buf) {
            return Some(line);
        }
        if buf.is_empty() {
            return None;
        }
        self.scanned = 0;
        Some(line_of(buf.split()))
    }
}

/// A line without its `\n`: its `\r` removed, blank or not.
fn line_of(mut line: BytesMut) -> RawLine {
    if line.last() == Some(&b'\r') {
        line.truncate(line.len() - 1);
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        RawLine::Blank
    } else {
        RawLine::Text(line)
    }
}

impl Decoder for LineSplitter {
    type Item = RawLine;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<RawLine>, FramingError> {
        Ok(self.next_line(buf))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<RawLine>, FramingError> {
        Ok(self.last_line(buf))
    }
}

/// The NDJSON codec.
#[derive(Debug)]
pub struct NdjsonCodec {
    limits: Limits,
    lines: LineSplitter,
    /// Lines are yielded undecoded (through `AnyCodec`).
    raw: bool,
}

impl NdjsonCodec {
    /// A codec enforcing `limits`.
    pub fn new(limits: &Limits) -> NdjsonCodec {
        NdjsonCodec {
            limits: limits.clone(),
            lines: LineSplitter::new(limits.max_message_bytes),
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
            match self.lines.next_line(buf) {
                Some(RawLine::Blank) => {} // blank lines are not messages
                None => return Ok(None),
                Some(RawLine::Text(line)) => return Ok(Some(Ok(line))),
                Some(RawLine::Oversize) => return Ok(Some(Err(self.oversize()))),
            }
        }
    }

    /// [`NdjsonCodec::decode_line`] at the end of input: a final line without `\n` too.
    pub fn decode_line_eof(
        &mut self,
        buf: &mut BytesMut,
    ) -> Result<Option<NdjsonLine>, FramingError> {
        loop {
            match self.lines.last_line(buf) {
                Some(RawLine::Blank) => {}
                None => return Ok(None),
                Some(RawLine::Text(line)) => return Ok(Some(Ok(line))),
                Some(RawLine::Oversize) => return Ok(Some(Err(self.oversize()))),
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
        encode_line(msg, dst)
    }
}

/// Writes `msg` as one NDJSON line (what [`NdjsonCodec`] encodes).
pub fn encode_line(msg: &Outbound, dst: &mut BytesMut) -> Result<(), FramingError> {
    msg.write_json(dst.writer())?;
    dst.put_u8(b'\n');
    Ok(())
}

/// Writes the NDJSON line of the request `id` calling `method` with `params`: the bytes
/// [`encode_line`] writes for that [`Outbound::Request`], without building one (a client's
/// hot path writes its `tools/call` requests so).
pub fn encode_request_line(
    dst: &mut BytesMut,
    id: &RequestId,
    method: &str,
    params: Option<&RawValue>,
) {
    dst.put_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    match id {
        RequestId::Int(n) => dst.put_slice(itoa::Buffer::new().format(*n).as_bytes()),
        RequestId::Str(s) => json_string(dst, s),
    }
    dst.put_slice(b",\"method\":");
    json_string(dst, method);
    if let Some(params) = params {
        dst.put_slice(b",\"params\":");
        dst.put_slice(params.get().as_bytes());
    }
    dst.put_slice(b"}\n");
}

/// `text` as a JSON string, escaped as serde escapes it.
fn json_string(dst: &mut BytesMut, text: &str) {
    if text.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        dst.put_u8(b'"');
        dst.put_slice(text.as_bytes());
        dst.put_u8(b'"');
    } else {
        // Writing to memory cannot fail.
        let _ = serde_json::to_writer(dst.writer(), text);
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

    fn lines(splitter: &mut LineSplitter, input: &[&[u8]]) -> Vec<RawLine> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for chunk in input {
            buf.extend_from_slice(chunk);
            while let Some(line) = splitter.next_line(&mut buf) {
                out.push(line);
            }
        }
        while let Some(line) = splitter.last_line(&mut buf) {
            out.push(line);
        }
        out
    }

    fn text(line: &[u8]) -> RawLine {
        RawLine::Text(BytesMut::from(line))
    }

    #[test]
    fn lines_split_across_reads_without_their_ends() {
        let got = lines(
            &mut LineSplitter::new(64),
            &[b"{\"a\":", b"1}\r\n{\"b\"", b":2}\n\n \t\r\nlast\r"],
        );
        let want = [
            text(b"{\"a\":1}"),
            text(b"{\"b\":2}"),
            RawLine::Blank,
            RawLine::Blank,
            text(b"last"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn an_over_long_line_is_reported_once_and_skipped() {
        // Exactly the limit passes; one byte more is reported, arriving in pieces or whole,
        // and the lines after it are read.
        let got = lines(
            &mut LineSplitter::new(8),
            &[
                b"12345678\n",
                b"123456",
                b"789abc",
                b"def\nok\n123456789\nok2",
            ],
        );
        let want = [
            text(b"12345678"),
            RawLine::Oversize,
            text(b"ok"),
            RawLine::Oversize,
            text(b"ok2"),
        ];
        assert_eq!(got, want);
        let got = lines(&mut LineSplitter::new(8), &[b"123456789abc"]);
        assert_eq!(got, [RawLine::Oversize], "at the end of input too");
    }

    #[test]
    fn a_request_line_is_what_the_codec_writes_for_it() {
        let params = mcpwire_model::to_raw(&serde_json::json!({"name": "e", "arguments": {}}));
        for (id, method, params) in [
            (RequestId::Int(7), "tools/call", Some(&params)),
            (RequestId::Int(i64::MIN), "ping", None),
            (
                RequestId::Str("x\"\u{7f}é".into()),
                "a\"b\\c\u{1}é",
                Some(&params),
            ),
        ] {
            let mut direct = BytesMut::new();
            encode_request_line(&mut direct, &id, method, params.map(|p| &**p));
            let msg = Outbound::Request {
                id,
                method: method.to_owned().into(),
                params: params.cloned(),
            };
            let mut encoded = BytesMut::new();
            codec(1024).encode(&msg, &mut encoded).unwrap();
            assert_eq!(direct, encoded);
        }
    }
}
