//! `EnvelopeCodec`: `[u32 BE length][Envelope]` frames plus the raw sideband, bounded.
//!
//! Decoding never reserves more than [`READ_AHEAD`] bytes beyond what has been read, so a
//! declared length costs nothing until its bytes really arrive. A frame whose declared length
//! is over the limit cannot be skipped safely (its request id is inside it, and skipping up to
//! 4 GiB would swallow later frames): it is a [`FramingError::Oversize`] and the connection
//! is torn down. Bytes that are not a valid `Envelope` are a [`ProcFrame::Garbage`] item; the
//! stream stays in sync because the length prefix was valid.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use tokio_util::codec::{Decoder, Encoder};

use crate::pb::{Envelope, RawHeader, envelope::Msg};

/// Most bytes reserved ahead of what has been read.
pub const READ_AHEAD: usize = 64 * 1024;
/// Default largest `Envelope` accepted (16 MiB).
pub const DEFAULT_MAX_ENVELOPE: usize = 16 * 1024 * 1024;
/// Default largest raw sideband payload (and decompressed result) accepted (64 MiB).
pub const DEFAULT_MAX_RAW: u64 = 64 * 1024 * 1024;

/// One item read from a tool process.
#[derive(Debug)]
pub enum ProcFrame {
    /// An ordinary envelope (never a `raw_header`; those come back as `Raw`/`RawRefused`).
    Env(Envelope),
    /// A raw sideband transfer: its header and exactly `header.size` payload bytes.
    Raw {
        /// The header sent before the payload.
        header: RawHeader,
        /// The payload, still compressed if `header.compression` says so.
        payload: Bytes,
    },
    /// A raw transfer over the size limit: its payload is being skipped without storing it.
    RawRefused {
        /// The header sent before the payload.
        header: RawHeader,
        /// Why it was refused.
        reason: String,
    },
    /// A frame with a valid length whose bytes are not an `Envelope`.
    Garbage(String),
}

/// A fault that ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum FramingError {
    /// The socket failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// A frame declared a length over the limit.
    #[error("frame of {declared} bytes is over the {limit}-byte limit")]
    Oversize {
        /// The declared length.
        declared: u64,
        /// The limit.
        limit: u64,
    },
}

#[derive(Debug)]
enum State {
    Head,
    Raw { header: RawHeader, size: usize },
    Skip { remaining: u64 },
}

/// Encoder and decoder of protomcp frames. See the module docs for the limits.
#[derive(Debug)]
pub struct EnvelopeCodec {
    max_envelope: usize,
    max_raw: u64,
    state: State,
}

impl Default for EnvelopeCodec {
    fn default() -> Self {
        EnvelopeCodec::new(DEFAULT_MAX_ENVELOPE, DEFAULT_MAX_RAW)
    }
}

impl EnvelopeCodec {
    /// A codec accepting envelopes up to `max_envelope` bytes and raw payloads up to `max_raw`.
    pub fn new(max_envelope: usize, max_raw: u64) -> EnvelopeCodec {
        EnvelopeCodec {
            max_envelope,
            max_raw,
            state: State::Head,
        }
    }

    /// The largest raw payload accepted.
    pub fn max_raw(&self) -> u64 {
        self.max_raw
    }
}

/// Reserves room for at most [`READ_AHEAD`] more bytes toward `want` buffered bytes.
fn reserve_toward(src: &mut BytesMut, want: usize) {
    let missing = want.saturating_sub(src.len()).min(READ_AHEAD);
    src.reserve(missing);
}

impl Decoder for EnvelopeCodec {
    type Item = ProcFrame;
    type Error = FramingError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ProcFrame>, FramingError> {
        loop {
            match &mut self.state {
                State::Skip { remaining } => {
                    let n = (*remaining).min(src.len() as u64) as usize;
                    src.advance(n);
                    *remaining -= n as u64;
                    if *remaining > 0 {
                        return Ok(None);
                    }
                    self.state = State::Head;
                }
                State::Raw { size, .. } => {
                    let size = *size;
                    if src.len() < size {
                        reserve_toward(src, size);
                        return Ok(None);
                    }
                    let payload = src.split_to(size).freeze();
                    let State::Raw { header, .. } = std::mem::replace(&mut self.state, State::Head)
                    else {
                        unreachable!("state checked above")
                    };
                    return Ok(Some(ProcFrame::Raw { header, payload }));
                }
                State::Head => {
                    if src.len() < 4 {
                        src.reserve(4);
                        return Ok(None);
                    }
                    let len = u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize;
                    if len > self.max_envelope {
                        return Err(FramingError::Oversize {
                            declared: len as u64,
                            limit: self.max_envelope as u64,
                        });
                    }
                    if src.len() < 4 + len {
                        reserve_toward(src, 4 + len);
                        return Ok(None);
                    }
                    src.advance(4);
                    let body = src.split_to(len);
                    let env = match Envelope::decode(&body[..]) {
                        Ok(env) => env,
                        Err(e) => return Ok(Some(ProcFrame::Garbage(e.to_string()))),
                    };
                    let Some(Msg::RawHeader(header)) = env.msg else {
                        return Ok(Some(ProcFrame::Env(env)));
                    };
                    if let Some(item) = self.start_raw(header)? {
                        return Ok(Some(item));
                    }
                }
            }
        }
    }
}

impl EnvelopeCodec {
    /// Handles a `raw_header`: an item at once (refused, or empty), or `None` when the
    /// payload follows (the decoder switches to the payload state).
    fn start_raw(&mut self, header: RawHeader) -> Result<Option<ProcFrame>, FramingError> {
        if header.size > u64::from(u32::MAX) {
            return Err(FramingError::Oversize {
                declared: header.size,
                limit: u64::from(u32::MAX),
            });
        }
        if header.size > self.max_raw {
            let reason = format!(
                "raw transfer of {} bytes is over the {}-byte limit",
                header.size, self.max_raw
            );
            self.state = State::Skip {
                remaining: header.size,
            };
            return Ok(Some(ProcFrame::RawRefused { header, reason }));
        }
        if header.size == 0 {
            return Ok(Some(ProcFrame::Raw {
                header,
                payload: Bytes::new(),
            }));
        }
        let size = header.size as usize;
        self.state = State::Raw { header, size };
        Ok(None)
    }
}

impl Encoder<&Envelope> for EnvelopeCodec {
    type Error = std::io::Error;

    fn encode(&mut self, env: &Envelope, dst: &mut BytesMut) -> Result<(), std::io::Error> {
        let len = env.encoded_len();
        let len32 =
            u32::try_from(len).map_err(|_| std::io::Error::other("envelope larger than 4 GiB"))?;
        dst.reserve(4 + len);
        dst.put_u32(len32);
        env.encode(dst)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pb;

    fn frame(env: &Envelope) -> BytesMut {
        let mut b = BytesMut::new();
        EnvelopeCodec::default()
            .encode(env, &mut b)
            .expect("encodes");
        b
    }

    fn log_env(n: usize) -> Envelope {
        Envelope {
            msg: Some(Msg::Log(pb::LogMessage {
                level: "info".into(),
                logger: String::new(),
                data_json: "x".repeat(n),
            })),
            ..Envelope::default()
        }
    }

    #[test]
    fn partial_frames_wait_and_reserve_is_bounded() {
        let mut c = EnvelopeCodec::default();
        let mut src = BytesMut::new();
        src.extend_from_slice(&(10u32 << 20).to_be_bytes());
        assert!(c.decode(&mut src).expect("ok").is_none());
        assert!(src.capacity() <= 4 + READ_AHEAD + 64, "{}", src.capacity());
        // Byte-by-byte delivery of a real frame.
        let whole = frame(&log_env(100));
        let mut c = EnvelopeCodec::default();
        let mut src = BytesMut::new();
        let mut got = None;
        for b in whole.iter() {
            src.extend_from_slice(&[*b]);
            if let Some(f) = c.decode(&mut src).expect("ok") {
                got = Some(f);
            }
        }
        assert!(matches!(got, Some(ProcFrame::Env(e)) if e == log_env(100)));
    }

    #[test]
    fn oversize_is_a_fault_and_garbage_keeps_sync() {
        let mut c = EnvelopeCodec::new(1024, 1024);
        let mut src = frame(&log_env(2000));
        assert!(matches!(
            c.decode(&mut src),
            Err(FramingError::Oversize { .. })
        ));
        let mut c = EnvelopeCodec::default();
        let mut src = BytesMut::from(&[0u8, 0, 0, 2, 0xff, 0xff][..]);
        src.extend_from_slice(&[0, 0, 0, 0]);
        src.extend_from_slice(&frame(&log_env(3)));
        assert!(matches!(
            c.decode(&mut src),
            Ok(Some(ProcFrame::Garbage(_)))
        ));
        // A zero-length frame is an empty Envelope.
        assert!(matches!(c.decode(&mut src), Ok(Some(ProcFrame::Env(e))) if e.msg.is_none()));
        assert!(matches!(c.decode(&mut src), Ok(Some(ProcFrame::Env(e))) if e == log_env(3)));
    }

    #[test]
    fn raw_payloads_are_delivered_or_skipped() {
        let raw = |size: u64| Envelope {
            msg: Some(Msg::RawHeader(pb::RawHeader {
                request_id: "h1".into(),
                field_name: "result_json".into(),
                size,
                ..Default::default()
            })),
            ..Envelope::default()
        };
        let mut c = EnvelopeCodec::new(1024, 10);
        let mut src = frame(&raw(5));
        src.extend_from_slice(b"hel");
        assert!(c.decode(&mut src).expect("ok").is_none());
        src.extend_from_slice(b"lo");
        match c.decode(&mut src).expect("ok") {
            Some(ProcFrame::Raw { header, payload }) => {
                assert_eq!(header.request_id, "h1");
                assert_eq!(&payload[..], b"hello");
            }
            other => panic!("{other:?}"),
        }
        // Over the limit: refused at once, its bytes skipped, the next frame decodes.
        src.extend_from_slice(&frame(&raw(20)));
        src.extend_from_slice(&[b'x'; 20]);
        src.extend_from_slice(&frame(&log_env(1)));
        assert!(matches!(
            c.decode(&mut src),
            Ok(Some(ProcFrame::RawRefused { .. }))
        ));
        assert!(matches!(c.decode(&mut src), Ok(Some(ProcFrame::Env(e))) if e == log_env(1)));
        // A declared raw size over 4 GiB is a fault.
        let mut src = frame(&raw(u64::from(u32::MAX) + 1));
        assert!(matches!(
            c.decode(&mut src),
            Err(FramingError::Oversize { .. })
        ));
    }
}
