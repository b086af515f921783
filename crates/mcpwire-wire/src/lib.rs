//! mcpwire's codecs: bytes to MCP messages and back.
//!
//! **Is:** framing and (de)serialization for each wire, as plain `tokio_util::codec`
//! `Decoder`/`Encoder` impls that never await and so are safe to cancel. Every codec is
//! built from [`Limits`]; violations become a [`Malformed`] message (answered with the
//! protocol's error, the stream stays usable) — only unrecoverable faults are `Err`.
//!
//! **Is not:** a session or a listener. Codecs know byte layouts and nothing else; the
//! session never sees bytes.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod any;
pub mod json_frame;
pub mod length_prefixed;
mod limits;
pub mod mcpb;
mod ndjson;
#[cfg(feature = "proto-mcp")]
pub mod proto_mcp;
mod text_lines;

pub use any::{AnyCodec, WireItem};
pub use limits::Limits;
pub use mcpb::{McpbCodec, McpbFrame, McpbOut};
pub use mcpwire_model::Malformed;
pub use ndjson::{
    LineSplitter, NdjsonCodec, NdjsonLine, RawLine, encode_line, encode_request_line,
};
pub use text_lines::{DEFAULT_MAX_TEXT_LINE, TextLine, TextLines};

/// What a decoder yields: a message, or the error reply a bad one deserves.
pub type Decoded = Result<mcpwire_model::Message, Malformed>;

/// A fault after which a stream cannot continue.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FramingError {
    /// The underlying I/O failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The peer broke the framing in a way the stream cannot recover from (for example a
    /// frame header with the wrong magic): answer if the wire allows it, then close.
    #[error("{0}")]
    Fatal(String),
}
