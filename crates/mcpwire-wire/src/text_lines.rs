//! [`TextLines`]: a child process's diagnostic output (stderr, a tool process's stdout) as
//! lines of text for a log. Unlike the protocol's [`crate::LineSplitter`], nothing is ever
//! refused: a line longer than the limit is cut at it (the rest of it skipped as it
//! arrives, never stored), invalid UTF-8 is replaced, and the last line is given even
//! without its newline. Decoding never fails, so a reader keeps draining the pipe and the
//! child never blocks on a full one.

use bytes::{Buf, BytesMut};
use tokio_util::codec::Decoder;

/// Longest line kept by default (longer ones are cut).
pub const DEFAULT_MAX_TEXT_LINE: usize = 8 * 1024;

/// Splits bytes into lines of at most `max` bytes (before lossy UTF-8 decoding); see the
/// module documentation.
#[derive(Debug)]
pub struct TextLines {
    max: usize,
    /// The current line's kept bytes.
    line: Vec<u8>,
    /// Whether the current line was cut.
    cut: bool,
}

/// One line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextLine {
    /// Its text (a trailing `\r` removed, invalid UTF-8 replaced).
    pub text: String,
    /// Whether it was longer than the limit and cut.
    pub cut: bool,
}

impl TextLines {
    /// Lines of at most `max` bytes.
    pub fn new(max: usize) -> TextLines {
        TextLines {
            max,
            line: Vec::new(),
            cut: false,
        }
    }

    fn take(&mut self) -> TextLine {
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        let text = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        TextLine {
            text,
            cut: std::mem::take(&mut self.cut),
        }
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = self.max.saturating_sub(self.line.len());
        if bytes.len() > room {
            self.cut = true;
        }
        self.line.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }
}

impl Default for TextLines {
    fn default() -> Self {
        TextLines::new(DEFAULT_MAX_TEXT_LINE)
    }
}

impl Decoder for TextLines {
    type Item = TextLine;
    type Error = std::io::Error;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<TextLine>, std::io::Error> {
        match memchr::memchr(b'\n', src) {
            Some(end) => {
                self.keep(&src[..end]);
                src.advance(end + 1);
                Ok(Some(self.take()))
            }
            None => {
                let all = src.split();
                self.keep(&all);
                Ok(None)
            }
        }
    }

    fn decode_eof(&mut self, src: &mut BytesMut) -> Result<Option<TextLine>, std::io::Error> {
        if let Some(line) = self.decode(src)? {
            return Ok(Some(line));
        }
        if self.line.is_empty() && !self.cut {
            return Ok(None);
        }
        Ok(Some(self.take()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(max: usize, chunks: &[&[u8]]) -> Vec<TextLine> {
        let mut d = TextLines::new(max);
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for c in chunks {
            buf.extend_from_slice(c);
            while let Some(l) = d.decode(&mut buf).unwrap() {
                out.push(l);
            }
        }
        while let Some(l) = d.decode_eof(&mut buf).unwrap() {
            out.push(l);
        }
        out
    }

    #[test]
    fn long_lines_are_cut_and_reading_goes_on() {
        let long = [b'x'; 30];
        let got = lines(
            8,
            &[&long[..10], &long[10..], b"\r\nsecond\n", b"last \xff"],
        );
        let texts: Vec<&str> = got.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(texts, ["xxxxxxxx", "second", "last \u{fffd}"]);
        assert_eq!(
            got.iter().map(|l| l.cut).collect::<Vec<_>>(),
            [true, false, false]
        );
    }

    #[test]
    fn nothing_stored_past_the_limit() {
        let mut d = TextLines::new(4);
        let mut buf = BytesMut::from(&vec![b'y'; 1 << 20][..]);
        assert!(d.decode(&mut buf).unwrap().is_none());
        assert!(buf.is_empty());
        assert_eq!(d.line.len(), 4);
        assert!(lines(4, &[b""]).is_empty());
    }
}
