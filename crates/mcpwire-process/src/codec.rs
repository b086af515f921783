//! `EnvelopeCodec`: `[u32 BE length][Envelope]` frames plus the raw sideband, bounded.
//!
//! The framing is `mcpwire_wire::length_prefixed` (the splitter proto-mcp uses too), so the
//! oversize policy is its one: a frame over the limit is skipped as it streams in, never
//! stored, and the stream stays in sync. While it passes, its top-level fields are read for
//! the `request_id` (field 14, see `salvage`), and once it has passed it is a
//! [`ProcFrame::Oversize`] item naming that id, so the host fails exactly that request and
//! keeps serving the others. Bytes that are not a valid `Envelope` are a
//! [`ProcFrame::Garbage`] item; the stream stays in sync because the length prefix was valid.
//!
//! A `raw_header` envelope announces `size` unframed payload bytes: delivered whole within
//! `max_raw`, refused at the header and skipped unstored over it. A declared raw size over
//! 4 GiB is [`FramingError::RawTooLong`], the one fault that ends the connection (no length
//! prefix could frame it, and skipping it would swallow the stream for good).

use bytes::{Bytes, BytesMut};
use mcpwire_wire::length_prefixed::{LengthPrefixed, Piece};
use prost::Message;
use tokio_util::codec::{Decoder, Encoder};

use crate::pb::{Envelope, RawHeader, envelope::Msg};
use crate::salvage::RequestIdSalvage;

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
    /// An envelope over the size limit went by, skipped without storing it.
    Oversize {
        /// Its `request_id`, when it had a readable one.
        request_id: Option<String>,
        /// Its declared length.
        declared: u64,
        /// The limit.
        limit: u64,
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
    /// A `raw_header` declared a payload over 4 GiB.
    #[error("raw transfer of {declared} bytes is over 4 GiB")]
    RawTooLong {
        /// The declared size.
        declared: u64,
    },
}

/// Encoder and decoder of Envelope frames. See the module docs for the limits.
#[derive(Debug)]
pub struct EnvelopeCodec {
    frames: LengthPrefixed,
    max_raw: u64,
    /// The header of the raw payload being read.
    raw: Option<RawHeader>,
    /// Reading the request id of the oversize frame being skipped.
    salvage: Option<RequestIdSalvage>,
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
            frames: LengthPrefixed::new(max_envelope),
            max_raw,
            raw: None,
            salvage: None,
        }
    }

    /// The largest raw payload accepted.
    pub fn max_raw(&self) -> u64 {
        self.max_raw
    }
}

impl Decoder for EnvelopeCodec {
    type Item = ProcFrame;
    type Error = FramingError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<ProcFrame>, FramingError> {
        loop {
            let salvage = &mut self.salvage;
            let piece = self.frames.decode_watching(src, |bytes| {
                if let Some(s) = salvage.as_mut() {
                    s.feed(bytes);
                }
            });
            match piece {
                None => return Ok(None),
                Some(Piece::Frame(body)) => {
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
                Some(Piece::Raw(payload)) => {
                    if let Some(header) = self.raw.take() {
                        let payload = payload.freeze();
                        return Ok(Some(ProcFrame::Raw { header, payload }));
                    }
                }
                Some(Piece::Oversize { .. }) => self.salvage = Some(RequestIdSalvage::new()),
                Some(Piece::Skipped { declared }) => {
                    let request_id = self.salvage.take().and_then(RequestIdSalvage::finish);
                    let limit = self.frames.max_body() as u64;
                    return Ok(Some(ProcFrame::Oversize {
                        request_id,
                        declared,
                        limit,
                    }));
                }
            }
        }
    }
}

impl EnvelopeCodec {
    /// Handles a `raw_header`: an item at once (refused, or empty), or `None` when the
    /// payload follows (the splitter then delivers it as one raw run).
    fn start_raw(&mut self, header: RawHeader) -> Result<Option<ProcFrame>, FramingError> {
        if header.size > u64::from(u32::MAX) {
            return Err(FramingError::RawTooLong {
                declared: header.size,
            });
        }
        if header.size > self.max_raw {
            let reason = format!(
                "raw transfer of {} bytes is over the {}-byte limit",
                header.size, self.max_raw
            );
            self.frames.skip_raw(header.size);
            return Ok(Some(ProcFrame::RawRefused { header, reason }));
        }
        if header.size == 0 {
            return Ok(Some(ProcFrame::Raw {
                header,
                payload: Bytes::new(),
            }));
        }
        self.frames.expect_raw(header.size as usize);
        self.raw = Some(header);
        Ok(None)
    }
}

impl Encoder<&Envelope> for EnvelopeCodec {
    type Error = std::io::Error;

    fn encode(&mut self, env: &Envelope, dst: &mut BytesMut) -> Result<(), std::io::Error> {
        LengthPrefixed::write_prefix(env.encoded_len(), dst).map_err(std::io::Error::other)?;
        env.encode(dst)
            .map_err(|e| std::io::Error::other(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use mcpwire_wire::length_prefixed::RESERVE_AHEAD;

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
        assert!(
            src.capacity() <= 4 + RESERVE_AHEAD + 64,
            "{}",
            src.capacity()
        );
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
    fn oversize_is_skipped_with_its_request_id_and_garbage_keeps_sync() {
        let mut c = EnvelopeCodec::new(1024, 1024);
        let mut big = log_env(2000);
        big.request_id = "h9".into();
        let whole = frame(&big);
        let mut src = BytesMut::new();
        let mut got = Vec::new();
        for chunk in whole.chunks(100).chain([&frame(&log_env(1))[..]]) {
            src.extend_from_slice(chunk);
            while let Some(item) = c.decode(&mut src).expect("no fault") {
                got.push(item);
            }
            assert!(src.len() < 1024, "skipped bytes are not stored");
        }
        assert!(
            matches!(
                &got[..],
                [
                    ProcFrame::Oversize { request_id: Some(id), declared, limit: 1024 },
                    ProcFrame::Env(e),
                ] if id == "h9" && *declared == whole.len() as u64 - 4 && *e == log_env(1)
            ),
            "{got:?}"
        );
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
            Err(FramingError::RawTooLong { .. })
        ));
    }
}
