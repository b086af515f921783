//! proto-mcp (`buf.mcp.v1`): the generated message types and the `[u32 BE len][MCPMessage]`
//! frame codec used on stdio and TCP (WebSocket and gRPC carry one message per frame and use
//! [`decode_message`]/[`encode_message`]).
//!
//! Limits: a frame longer than `Limits::max_message_bytes` is skipped as it streams in (never
//! buffered) and answered with `ErrorResponse{id 0, −32600}`; bytes prost cannot decode are
//! answered with `ErrorResponse{−32700}` carrying the frame's id when field 1 is still
//! readable. Either way the stream stays in sync and usable.

mod codec;

pub use codec::{ProtoDecoded, ProtoMcpCodec, decode_message, encode_message};
/// The Rust type of `Tool.inline_schema`: an encoded `FileDescriptorSet`, options kept.
pub use mcpwire_schema::RawFileSet;

/// The generated `buf.mcp.v1` types (prost), including the `MCPService` file's messages.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/buf.mcp.v1.rs"));
}

use mcpwire_model::{McpError, Revision};
use pb::mcp_message::Payload;

/// The proto-mcp source file, for peers that generate their own stubs (and tests).
pub const PROTO_SOURCE: &str = include_str!("../../proto/buf/mcp/v1/mcp.proto");

/// The proto-mcp version mcpwire speaks.
pub const PROTOCOL_VERSION: &str = "1.0.0";

impl pb::McpMessage {
    /// A message with `id` and `payload`.
    pub fn new(id: u64, payload: Payload) -> pb::McpMessage {
        pb::McpMessage {
            id,
            payload: Some(payload),
        }
    }

    /// An `ErrorResponse` answering `id` with `error` as proto-mcp spells it. For the
    /// framing errors raised before translation (parse errors, invalid or oversize
    /// messages), which carry no `data`; the translator answers everything else.
    pub fn error(id: u64, error: &McpError) -> pb::McpMessage {
        let wire = error.to_wire(Revision::ProtoMcp1);
        pb::McpMessage::new(
            id,
            Payload::ErrorResponse(pb::ErrorResponse {
                code: clamp_code(wire.code),
                message: wire.message,
                data: None,
            }),
        )
    }
}

/// A JSON-RPC code as the `int32` proto-mcp carries (every defined code fits).
pub fn clamp_code(code: i64) -> i32 {
    i32::try_from(code).unwrap_or(if code < 0 { i32::MIN } else { i32::MAX })
}
