//! `[u32 BE length][body]` framing: the one splitter behind every length-prefixed wire
//! (proto-mcp's `ProtoMcpCodec`, the tool-process Envelope codec in `mcpwire-process`).
//!
//! **One oversize policy.** A frame whose declared length is over the limit is reported at
//! its prefix ([`Piece::Oversize`]), then skipped as its bytes stream in — never buffered —
//! and reported again when its last byte has passed ([`Piece::Skipped`]). The length was
//! readable, so the stream stays in sync and the next frame decodes normally. Skipped bytes
//! can be watched on their way past (to salvage an id, see [`LengthPrefixed::decode_watching`])
//! but are never stored. Each protocol decides how to answer: proto-mcp at the prefix, the
//! Envelope host once the request id has gone by.
//!
//! **Bounded buffering.** While a frame is incomplete, at most [`RESERVE_AHEAD`] bytes are
//! reserved beyond what has arrived, so a declared length costs nothing until its bytes do.
//!
//! **Unframed runs.** A protocol may announce that the next `n` bytes are not framed (the
//! Envelope protocol's raw sideband): [`LengthPrefixed::expect_raw`] delivers them whole as
//! [`Piece::Raw`], [`LengthPrefixed::skip_raw`] drops them unseen.
//!
//! Decoding never fails: every byte sequence is some sequence of pieces.

use bytes::{Buf, BufMut, BytesMut};

/// Most bytes reserved ahead of what has arrived while a frame or raw run is incomplete.
pub const RESERVE_AHEAD: usize = 64 * 1024;

/// Bytes of the length prefix.
pub const PREFIX_LEN: usize = 4;

/// One unit of a length-prefixed stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// A whole frame's body (possibly empty).
    Frame(BytesMut),
    /// The prefix of a frame over the limit: its body is being skipped.
    Oversize {
        /// The declared body length.
        declared: u64,
        /// The limit it broke.
        limit: u64,
    },
    /// The last byte of the oversize frame announced before has been skipped.
    Skipped {
        /// Its declared body length.
        declared: u64,
    },
    /// An unframed run announced with [`LengthPrefixed::expect_raw`].
    Raw(BytesMut),
}

/// A body too long for a `u32` length prefix.
#[derive(Debug, thiserror::Error)]
#[error("a body of {0} bytes does not fit a u32 length prefix")]
pub struct TooLong(pub usize);

#[derive(Debug)]
enum State {
    Prefix,
    /// Dropping bytes; `frame` carries the declared length of an oversize frame (reported as
    /// [`Piece::Skipped`] at the end), `None` for an unframed run.
    Skip {
        remaining: u64,
        frame: Option<u64>,
    },
    Raw {
        size: usize,
    },
}

/// The splitter: a sans-IO state machine over a `BytesMut` read buffer.
#[derive(Debug)]
pub struct LengthPrefixed {
    max_body: usize,
    state: State,
}

impl LengthPrefixed {
    /// A splitter accepting frame bodies up to `max_body` bytes.
    pub fn new(max_body: usize) -> LengthPrefixed {
        LengthPrefixed {
            max_body,
            state: State::Prefix,
        }
    }

    /// The largest frame body accepted.
    pub fn max_body(&self) -> usize {
        self.max_body
    }

    /// The next piece, consuming its bytes from `buf`; `None` when more bytes are needed.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Option<Piece> {
        self.decode_watching(buf, |_| {})
    }

    /// [`LengthPrefixed::decode`], showing the bytes of oversize frames to `skipped` as they
    /// are dropped (in order, possibly in several calls).
    pub fn decode_watching(
        &mut self,
        buf: &mut BytesMut,
        mut skipped: impl FnMut(&[u8]),
    ) -> Option<Piece> {
        loop {
            match &mut self.state {
                State::Skip { remaining, frame } => {
                    let n = usize::try_from(*remaining)
                        .unwrap_or(usize::MAX)
                        .min(buf.len());
                    if frame.is_some() {
                        skipped(&buf[..n]);
                    }
                    buf.advance(n);
                    *remaining -= n as u64;
                    if *remaining > 0 {
                        return None;
                    }
                    let frame = *frame;
                    self.state = State::Prefix;
                    if let Some(declared) = frame {
                        return Some(Piece::Skipped { declared });
                    }
                }
                State::Raw { size } => {
                    let size = *size;
                    if buf.len() < size {
                        reserve_toward(buf, size);
                        return None;
                    }
                    self.state = State::Prefix;
                    return Some(Piece::Raw(buf.split_to(size)));
                }
                State::Prefix => {
                    if buf.len() < PREFIX_LEN {
                        return None;
                    }
                    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                    if len > self.max_body {
                        buf.advance(PREFIX_LEN);
                        self.state = State::Skip {
                            remaining: len as u64,
                            frame: Some(len as u64),
                        };
                        return Some(Piece::Oversize {
                            declared: len as u64,
                            limit: self.max_body as u64,
                        });
                    }
                    if buf.len() < PREFIX_LEN + len {
                        reserve_toward(buf, PREFIX_LEN + len);
                        return None;
                    }
                    buf.advance(PREFIX_LEN);
                    return Some(Piece::Frame(buf.split_to(len)));
                }
            }
        }
    }

    /// The next `size` bytes are an unframed run, delivered whole as [`Piece::Raw`] (the
    /// caller bounds `size`; an empty run is no piece at all). Call it right after the frame
    /// that announced the run.
    pub fn expect_raw(&mut self, size: usize) {
        self.state = if size == 0 {
            State::Prefix
        } else {
            State::Raw { size }
        };
    }

    /// The next `size` bytes are an unframed run to drop without storing or reporting it.
    pub fn skip_raw(&mut self, size: u64) {
        self.state = State::Skip {
            remaining: size,
            frame: None,
        };
    }

    /// Writes the prefix for a body of `len` bytes and reserves room for the body.
    pub fn write_prefix(len: usize, dst: &mut BytesMut) -> Result<(), TooLong> {
        let len32 = u32::try_from(len).map_err(|_| TooLong(len))?;
        dst.reserve(PREFIX_LEN + len);
        dst.put_u32(len32);
        Ok(())
    }
}

/// Reserves room for at most [`RESERVE_AHEAD`] more bytes toward `want` buffered bytes.
fn reserve_toward(buf: &mut BytesMut, want: usize) {
    let missing = want.saturating_sub(buf.len()).min(RESERVE_AHEAD);
    buf.reserve(missing);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framed(body: &[u8]) -> BytesMut {
        let mut b = BytesMut::new();
        LengthPrefixed::write_prefix(body.len(), &mut b).expect("fits");
        b.extend_from_slice(body);
        b
    }

    fn drain(s: &mut LengthPrefixed, buf: &mut BytesMut) -> Vec<Piece> {
        std::iter::from_fn(|| s.decode(buf)).collect()
    }

    #[test]
    fn frames_wait_for_their_bytes_and_reserve_little() {
        let mut s = LengthPrefixed::new(16 << 20);
        let mut buf = BytesMut::new();
        buf.put_u32(10 << 20);
        assert_eq!(s.decode(&mut buf), None);
        assert!(buf.capacity() <= PREFIX_LEN + RESERVE_AHEAD + 64);
        let whole = framed(b"hello");
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for b in whole.iter().chain(framed(b"").iter()) {
            buf.put_u8(*b);
            got.extend(drain(&mut s, &mut buf));
        }
        assert_eq!(
            got,
            [
                Piece::Frame(BytesMut::from(&b"hello"[..])),
                Piece::Frame(BytesMut::new())
            ]
        );
    }

    #[test]
    fn oversize_frames_are_reported_skipped_unstored_and_the_stream_continues() {
        let mut s = LengthPrefixed::new(8);
        let mut buf = framed(b"0123456789");
        buf.extend_from_slice(&framed(b"ok"));
        let mut seen = Vec::new();
        let mut pieces = Vec::new();
        // Arrives in 3-byte pieces: skipped bytes are dropped as they come.
        let all = buf.split();
        for chunk in all.chunks(3) {
            buf.extend_from_slice(chunk);
            while let Some(p) = s.decode_watching(&mut buf, |b| seen.extend_from_slice(b)) {
                pieces.push(p);
            }
            assert!(buf.len() < PREFIX_LEN + 8, "{} bytes held", buf.len());
        }
        assert_eq!(
            pieces,
            [
                Piece::Oversize {
                    declared: 10,
                    limit: 8
                },
                Piece::Skipped { declared: 10 },
                Piece::Frame(BytesMut::from(&b"ok"[..])),
            ]
        );
        assert_eq!(seen, b"0123456789");
    }

    #[test]
    fn raw_runs_are_delivered_or_skipped_unseen() {
        let mut s = LengthPrefixed::new(64);
        let mut buf = framed(b"header");
        assert_eq!(
            s.decode(&mut buf),
            Some(Piece::Frame(BytesMut::from(&b"header"[..])))
        );
        s.expect_raw(5);
        buf.extend_from_slice(b"hel");
        assert_eq!(s.decode(&mut buf), None);
        buf.extend_from_slice(b"lo");
        buf.extend_from_slice(&framed(b"next"));
        assert_eq!(
            s.decode(&mut buf),
            Some(Piece::Raw(BytesMut::from(&b"hello"[..])))
        );
        assert_eq!(
            s.decode(&mut buf),
            Some(Piece::Frame(BytesMut::from(&b"next"[..])))
        );
        s.skip_raw(4);
        buf.extend_from_slice(b"abcd");
        buf.extend_from_slice(&framed(b"after"));
        let mut seen = 0;
        assert_eq!(
            s.decode_watching(&mut buf, |b| seen += b.len()),
            Some(Piece::Frame(BytesMut::from(&b"after"[..])))
        );
        assert_eq!(seen, 0, "a skipped raw run is not shown");
    }
}
