//! MCPB, the gateway's binary TCP framing (`mcpb-binary-tcp.md`, decisions in
//! `docs/design/next-wires.md` §3).
//!
//! Every frame is a 12-byte big-endian header — magic `MCPB`, version, type, payload
//! length — and the payload. MCP messages travel as JSON-RPC in Request/Response frames,
//! plain or in one of three wrappers ([`McpbShape`]): `{"auth_token", "message"}` (the
//! reference gateway's code), `{"auth_token", "request"}` (the spec's prose), and the
//! reference router's envelope `{"id", "timestamp", "source", "target_namespace",
//! "auth_token", "mcp_payload"}`, whose answers are `{"mcp_payload": …}`. The codec enforces
//! the payload cap (10 MiB, or the [`Limits`] if lower) without allocating for a declared
//! length, and the spec's input rules (string ids and methods ≤ 255 characters from a small
//! alphabet, namespaces likewise, tokens ≤ 4096).
//!
//! Faults the stream cannot survive (bad magic, a header version outside the supported range)
//! are [`FramingError::Fatal`]: the connection answers with an Error frame and closes. A frame
//! that is only unusable (oversize, unknown type, bad JSON) is skipped and reported as an item,
//! and the stream goes on.

use bytes::{Buf, BufMut, BytesMut};
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{Malformed, McpError, Message, Outbound, RequestId};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::codec::{Decoder, Encoder};

use crate::{Decoded, FramingError, Limits};

/// `MCPB` in ASCII: the first four bytes of every frame.
pub const MAGIC: u32 = 0x4D43_5042;
/// Size of the fixed frame header.
pub const HEADER_LEN: usize = 12;
/// Largest payload the protocol allows (10 MiB).
pub const MAX_PAYLOAD: usize = 10 * 1024 * 1024;
/// Lowest protocol version spoken.
pub const MIN_VERSION: u16 = 1;
/// Highest protocol version spoken.
pub const MAX_VERSION: u16 = 1;
/// Longest string request id, method or namespace the spec accepts.
pub const MAX_NAME: usize = 255;
/// Longest authentication token the spec accepts.
pub const MAX_TOKEN: usize = 4096;

/// Frame types.
pub mod frame_type {
    /// An MCP message from the client (requests, notifications, responses to our asks).
    pub const REQUEST: u16 = 1;
    /// An MCP message from the server.
    pub const RESPONSE: u16 = 2;
    /// A control message (`{"command": "shutdown"}` and its acknowledgement).
    pub const CONTROL: u16 = 3;
    /// A health check ping or pong.
    pub const HEALTH_CHECK: u16 = 4;
    /// A protocol error: a UTF-8 message.
    pub const ERROR: u16 = 5;
    /// The client's version offer, the first frame of a connection.
    pub const VERSION_NEGOTIATION: u16 = 6;
    /// The server's answer to the version offer.
    pub const VERSION_ACK: u16 = 7;
}

/// The client's version offer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionOffer {
    /// Lowest version the client speaks.
    #[serde(default)]
    pub min_version: u16,
    /// Highest version the client speaks.
    #[serde(default)]
    pub max_version: u16,
    /// The version the client would rather use.
    #[serde(default)]
    pub preferred_version: u16,
    /// Every version the client speaks (wins over the range when not empty).
    #[serde(default)]
    pub supported_versions: Vec<u16>,
}

impl VersionOffer {
    /// An offer of exactly the versions this codec speaks.
    pub fn ours() -> VersionOffer {
        VersionOffer {
            min_version: MIN_VERSION,
            max_version: MAX_VERSION,
            preferred_version: MAX_VERSION,
            supported_versions: (MIN_VERSION..=MAX_VERSION).collect(),
        }
    }

    /// The highest version both sides speak, if any.
    pub fn negotiate(&self) -> Option<u16> {
        let theirs = |v: u16| {
            if self.supported_versions.is_empty() {
                self.min_version <= v && v <= self.max_version
            } else {
                self.supported_versions.contains(&v)
            }
        };
        (MIN_VERSION..=MAX_VERSION).rev().find(|&v| theirs(v))
    }
}

/// The server's answer to a [`VersionOffer`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionAck {
    /// The version both sides use from now on.
    pub agreed_version: u16,
}

/// How an MCP message was laid out in its frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpbShape {
    /// Plain JSON-RPC.
    Plain,
    /// `{"auth_token", "message" | "request"}`: answered plain, as the reference gateway does.
    AuthWrapper,
    /// The reference router's `{"id", "timestamp", "source", "target_namespace",
    /// "auth_token", "mcp_payload"}`: answered as `{"mcp_payload": …}` ([`McpbOut::Envelope`]).
    Envelope,
}

/// What the decoder yields.
#[derive(Debug)]
pub enum McpbFrame {
    /// An MCP message (or the JSON-RPC error a bad one deserves), with the per-message
    /// token when the message came wrapped.
    Mcp {
        /// The wrapper's `auth_token`, if any.
        auth_token: Option<String>,
        /// The message.
        msg: Decoded,
        /// How it was wrapped.
        shape: McpbShape,
    },
    /// A control message (a JSON object).
    Control(Value),
    /// A health check; its payload, when not empty (`{"check": "detailed"}`).
    Health(Option<Value>),
    /// The peer's version offer.
    Version(VersionOffer),
    /// The peer's version acknowledgement (what a client receives).
    VersionAck(VersionAck),
    /// The peer reported a protocol error.
    PeerError(String),
    /// A frame that was skipped: why (answer with an Error frame; the stream goes on).
    Refused(String),
    /// A Request or Response frame's payload as it came, from a codec made
    /// [`McpbCodec::with_raw_mcp`]: its reader may pass a plain call on as it is, and
    /// decodes anything else with [`McpbCodec::decode_mcp`].
    RawMcp(BytesMut),
}

/// What the encoder writes.
#[derive(Debug, Clone, Copy)]
pub enum McpbOut<'a> {
    /// An MCP message: a Response frame from a server (`client: false`), a Request frame
    /// from a client.
    Mcp(&'a Outbound),
    /// An MCP message as `{"mcp_payload": …}`: a server's answer to a client that wrote the
    /// router's envelope ([`McpbShape::Envelope`]).
    Envelope(&'a Outbound),
    /// An MCP message a client sends with a per-message token.
    AuthMcp(&'a Outbound, &'a str),
    /// A control message.
    Control(&'a Value),
    /// A health check, empty or with a JSON payload.
    Health(Option<&'a Value>),
    /// A version offer (client).
    Version(&'a VersionOffer),
    /// A version acknowledgement (server).
    VersionAck(VersionAck),
    /// A protocol error.
    Error(&'a str),
}

/// The MCPB codec, for either side of a connection.
#[derive(Debug, Clone)]
pub struct McpbCodec {
    max_payload: usize,
    max_depth: usize,
    /// True on the client side: MCP messages are written as Request frames.
    client: bool,
    /// MCP payloads are yielded undecoded ([`McpbFrame::RawMcp`]).
    raw: bool,
    /// Payload bytes of a refused frame still to skip.
    skip: usize,
}

impl McpbCodec {
    /// A server-side codec enforcing `limits` (and the protocol's 10 MiB cap).
    pub fn server(limits: &Limits) -> McpbCodec {
        McpbCodec {
            max_payload: limits.max_message_bytes.min(MAX_PAYLOAD),
            max_depth: limits.max_depth,
            client: false,
            raw: false,
            skip: 0,
        }
    }

    /// This codec, yielding Request and Response payloads undecoded
    /// ([`McpbFrame::RawMcp`]; a server's relay reads plain calls as they came).
    pub fn with_raw_mcp(mut self) -> McpbCodec {
        self.raw = true;
        self
    }

    /// The MCP message of a Request or Response frame's `payload`, as a codec without
    /// [`McpbCodec::with_raw_mcp`] yields it.
    pub fn decode_mcp(&self, payload: &[u8]) -> McpbFrame {
        self.mcp(payload)
    }

    /// Writes `payload` (one JSON-RPC message, written by someone else) as this side's MCP
    /// frame; `false` (nothing written) when it is over the payload limit.
    pub fn encode_raw_mcp(&self, payload: &[u8], dst: &mut BytesMut) -> Result<bool, FramingError> {
        let kind = if self.client {
            frame_type::REQUEST
        } else {
            frame_type::RESPONSE
        };
        write_frame(dst, kind, self.max_payload, |d| {
            d.put_slice(payload);
            Ok(())
        })
    }

    /// A client-side codec (MCP messages go out as Request frames).
    pub fn client(limits: &Limits) -> McpbCodec {
        McpbCodec {
            client: true,
            ..McpbCodec::server(limits)
        }
    }

    /// The largest payload accepted.
    pub fn max_payload(&self) -> usize {
        self.max_payload
    }

    fn mcp(&self, payload: &[u8]) -> McpbFrame {
        let direct = decode_with_depth(payload, self.max_depth);
        if direct.is_ok() {
            return McpbFrame::Mcp {
                auth_token: None,
                msg: direct.and_then(checked),
                shape: McpbShape::Plain,
            };
        }
        self.unwrapped(payload).unwrap_or(McpbFrame::Mcp {
            auth_token: None,
            msg: direct,
            shape: McpbShape::Plain,
        })
    }

    /// A wrapped payload's message, token and shape; `None` if it is not a wrapper.
    fn unwrapped(&self, payload: &[u8]) -> Option<McpbFrame> {
        let w: Wrapper<'_> = serde_json::from_slice(payload).ok()?;
        let (inner, shape) = match (w.mcp_payload, w.message.or(w.request)) {
            (Some(inner), _) => (inner, McpbShape::Envelope),
            (None, Some(inner)) => (inner, McpbShape::AuthWrapper),
            (None, None) => return None,
        };
        let refused = |why: String| McpbFrame::Mcp {
            auth_token: None,
            msg: Err(Malformed::invalid_request(None, why)),
            shape,
        };
        if w.auth_token.as_ref().is_some_and(|t| t.len() > MAX_TOKEN) {
            return Some(refused(format!("auth_token longer than {MAX_TOKEN} bytes")));
        }
        if let Some(ns) = &w.target_namespace
            && !ns.is_empty()
            && !valid_name(ns, |b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-')
            })
        {
            return Some(refused(
                "MCPB namespaces are at most 255 letters, digits, '.', '-' or '_'".into(),
            ));
        }
        Some(McpbFrame::Mcp {
            auth_token: w.auth_token,
            msg: decode_with_depth(inner.get().as_bytes(), self.max_depth).and_then(checked),
            shape,
        })
    }

    fn frame(&self, kind: u16, payload: &[u8]) -> McpbFrame {
        use frame_type::*;
        match kind {
            REQUEST | RESPONSE => self.mcp(payload),
            CONTROL => match serde_json::from_slice::<Value>(payload) {
                Ok(v @ Value::Object(_)) => McpbFrame::Control(v),
                _ => McpbFrame::Refused("control payload is not a JSON object".into()),
            },
            HEALTH_CHECK if payload.iter().all(u8::is_ascii_whitespace) => McpbFrame::Health(None),
            HEALTH_CHECK => match serde_json::from_slice::<Value>(payload) {
                Ok(v) => McpbFrame::Health(Some(v)),
                Err(_) => McpbFrame::Refused("health check payload is not JSON".into()),
            },
            ERROR => McpbFrame::PeerError(String::from_utf8_lossy(payload).into_owned()),
            VERSION_NEGOTIATION => match serde_json::from_slice::<VersionOffer>(payload) {
                Ok(o) => McpbFrame::Version(o),
                Err(e) => McpbFrame::Refused(format!("version negotiation payload: {e}")),
            },
            VERSION_ACK => match serde_json::from_slice::<VersionAck>(payload) {
                Ok(a) => McpbFrame::VersionAck(a),
                Err(e) => McpbFrame::Refused(format!("version acknowledgement payload: {e}")),
            },
            other => McpbFrame::Refused(format!("unknown frame type {other:#06x}")),
        }
    }
}

/// The spec's input rules for a decoded message: string ids `[A-Za-z0-9_-]{1,255}`,
/// methods `[A-Za-z0-9./_-]{1,255}`.
fn checked(msg: Message) -> Decoded {
    let (id, method) = match &msg {
        Message::Request(r) => (Some(&r.id), Some(r.method.as_str())),
        Message::Notification(n) => (None, Some(n.method.as_str())),
        Message::Response(r) => (Some(&r.id), None),
    };
    let bad_id = id.is_some_and(|id| !valid_request_id(id));
    let bad_method = method.is_some_and(|m| {
        !valid_name(m, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'_' | b'-')
        })
    });
    let why = match (bad_id, bad_method) {
        (true, _) => "MCPB request ids are at most 255 letters, digits, '-' or '_'",
        (_, true) => "MCPB methods are at most 255 letters, digits, '.', '/', '-' or '_'",
        _ => return Ok(msg),
    };
    // Answered only for a request (never for a notification or a response).
    Err(Malformed {
        reply: matches!(msg, Message::Request(_)),
        ..Malformed::invalid_request(id.cloned(), why)
    })
}

/// Whether `id` keeps MCPB's rule for request ids (a string is `[A-Za-z0-9_-]{1,255}`; any
/// integer): what the decoder checks of a decoded request, for a reader of raw payloads.
pub fn valid_request_id(id: &RequestId) -> bool {
    match id {
        RequestId::Str(s) => valid_name(s, |b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
        _ => true,
    }
}

fn valid_name(s: &str, allowed: impl Fn(u8) -> bool) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME && s.bytes().all(allowed)
}

/// A wrapped MCP message: the auth wrapper `{"auth_token", "message" | "request"}` or the
/// router's envelope (`mcp_payload`, with `target_namespace` and fields read by nobody).
#[derive(Deserialize)]
struct Wrapper<'a> {
    #[serde(default)]
    auth_token: Option<String>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(borrow, default)]
    mcp_payload: Option<&'a RawValue>,
    #[serde(default)]
    target_namespace: Option<String>,
}

impl Decoder for McpbCodec {
    type Item = McpbFrame;
    type Error = FramingError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<McpbFrame>, FramingError> {
        if self.skip > 0 {
            let n = self.skip.min(buf.len());
            buf.advance(n);
            self.skip -= n;
            if self.skip > 0 {
                return Ok(None);
            }
        }
        if buf.len() < HEADER_LEN {
            return Ok(None);
        }
        let mut h = &buf[..HEADER_LEN];
        let magic = h.get_u32();
        let version = h.get_u16();
        let kind = h.get_u16();
        let len = h.get_u32() as usize;
        if magic != MAGIC {
            return Err(FramingError::Fatal(format!(
                "not an MCPB frame (magic {magic:#010x})"
            )));
        }
        if !(MIN_VERSION..=MAX_VERSION).contains(&version) {
            return Err(FramingError::Fatal(format!(
                "frame version {version} is not supported ({MIN_VERSION}..={MAX_VERSION})"
            )));
        }
        if len > self.max_payload {
            buf.advance(HEADER_LEN);
            self.skip = len;
            let n = self.skip.min(buf.len());
            buf.advance(n);
            self.skip -= n;
            let why = format!(
                "frame payload of {len} bytes is over the {}-byte limit",
                self.max_payload
            );
            return Ok(Some(match kind {
                frame_type::REQUEST | frame_type::RESPONSE => McpbFrame::Mcp {
                    auth_token: None,
                    msg: Err(Malformed::invalid_request(None, why.clone())),
                    shape: McpbShape::Plain,
                },
                _ => McpbFrame::Refused(why),
            }));
        }
        if buf.len() < HEADER_LEN + len {
            buf.reserve(HEADER_LEN + len - buf.len());
            return Ok(None);
        }
        buf.advance(HEADER_LEN);
        let payload = buf.split_to(len);
        if self.raw && matches!(kind, frame_type::REQUEST | frame_type::RESPONSE) {
            return Ok(Some(McpbFrame::RawMcp(payload)));
        }
        Ok(Some(self.frame(kind, &payload)))
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<McpbFrame>, FramingError> {
        match self.decode(buf)? {
            Some(f) => Ok(Some(f)),
            None if buf.is_empty() => Ok(None),
            None => {
                let n = buf.len();
                buf.clear();
                Err(FramingError::Fatal(format!(
                    "connection closed inside a frame ({n} bytes pending)"
                )))
            }
        }
    }
}

/// Writes the header for `kind` and a payload produced by `body`, back-filling its length;
/// `false` (nothing written) if the payload exceeds `max`.
fn write_frame(
    dst: &mut BytesMut,
    kind: u16,
    max: usize,
    body: impl FnOnce(&mut BytesMut) -> std::io::Result<()>,
) -> Result<bool, FramingError> {
    let start = dst.len();
    dst.put_u32(MAGIC);
    dst.put_u16(MAX_VERSION);
    dst.put_u16(kind);
    dst.put_u32(0);
    body(dst)?;
    let len = dst.len() - start - HEADER_LEN;
    if len > max {
        dst.truncate(start);
        return Ok(false);
    }
    let len = u32::try_from(len).map_err(|_| FramingError::Fatal("frame too large".into()))?;
    dst[start + 8..start + HEADER_LEN].copy_from_slice(&len.to_be_bytes());
    Ok(true)
}

fn json(v: &impl Serialize) -> impl FnOnce(&mut BytesMut) -> std::io::Result<()> + '_ {
    move |dst| serde_json::to_writer(dst.writer(), v).map_err(std::io::Error::other)
}

impl Encoder<McpbOut<'_>> for McpbCodec {
    type Error = FramingError;

    fn encode(&mut self, out: McpbOut<'_>, dst: &mut BytesMut) -> Result<(), FramingError> {
        use frame_type::*;
        let max = self.max_payload;
        let mcp_kind = if self.client { REQUEST } else { RESPONSE };
        let written = match out {
            McpbOut::Mcp(msg) => write_frame(dst, mcp_kind, max, |d| msg.write_json(d.writer()))?,
            McpbOut::Envelope(msg) => write_frame(dst, mcp_kind, max, |d| envelope(msg, d))?,
            McpbOut::AuthMcp(msg, token) => write_frame(dst, mcp_kind, max, |d| {
                d.put_slice(b"{\"auth_token\":");
                serde_json::to_writer(d.writer(), token).map_err(std::io::Error::other)?;
                d.put_slice(b",\"message\":");
                msg.write_json(d.writer())?;
                d.put_u8(b'}');
                Ok(())
            })?,
            McpbOut::Control(v) => write_frame(dst, CONTROL, max, json(v))?,
            McpbOut::Health(None) => write_frame(dst, HEALTH_CHECK, max, |_| Ok(()))?,
            McpbOut::Health(Some(v)) => write_frame(dst, HEALTH_CHECK, max, json(v))?,
            McpbOut::Version(o) => write_frame(dst, VERSION_NEGOTIATION, max, json(o))?,
            McpbOut::VersionAck(a) => write_frame(dst, VERSION_ACK, max, json(&a))?,
            McpbOut::Error(text) => {
                let text = &text[..floor_char_boundary(text, max)];
                write_frame(dst, ERROR, max, |d| {
                    d.put_slice(text.as_bytes());
                    Ok(())
                })?
            }
        };
        if written {
            return Ok(());
        }
        // Only an MCP message can outgrow the frame: answer its request with an error, in
        // the same shape.
        let refusal = match out {
            McpbOut::Mcp(Outbound::Response { id, .. } | Outbound::Error { id: Some(id), .. })
            | McpbOut::Envelope(
                Outbound::Response { id, .. } | Outbound::Error { id: Some(id), .. },
            ) => Outbound::Error {
                id: Some(id.clone()),
                error: McpError::Internal(format!("the answer exceeds the {max}-byte MCPB frame"))
                    .to_wire_unnegotiated(),
            },
            _ => {
                let text = format!("a message exceeded the {max}-byte MCPB frame and was dropped");
                write_frame(dst, ERROR, max, |d| {
                    d.put_slice(text.as_bytes());
                    Ok(())
                })?;
                return Ok(());
            }
        };
        if matches!(out, McpbOut::Envelope(_)) {
            write_frame(dst, mcp_kind, max, |d| envelope(&refusal, d))?;
        } else {
            write_frame(dst, mcp_kind, max, |d| refusal.write_json(d.writer()))?;
        }
        Ok(())
    }
}

/// Writes `{"mcp_payload": msg}`.
fn envelope(msg: &Outbound, d: &mut BytesMut) -> std::io::Result<()> {
    d.put_slice(b"{\"mcp_payload\":");
    msg.write_json(d.writer())?;
    d.put_u8(b'}');
    Ok(())
}

/// The largest index ≤ `max` that is a char boundary of `s`.
fn floor_char_boundary(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests;
