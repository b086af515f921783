//! proto-mcp (`buf.mcp.v1`) for mcpwire, without I/O.
//!
//! **Is:** the per-connection [`Translator`] between `MCPMessage`s and the JSON-RPC messages
//! the session understands (so every session rule — limits, duplicate ids, timeouts,
//! validation — applies to proto-mcp unchanged), and the service-wide [`ProtoToolSchemas`] of
//! each tool's protobuf schema.
//!
//! **Is not:** a codec (`mcpwire-wire::proto_mcp`), a listener (the `mcpwire` shell) or the
//! JSON Schema ⇄ protobuf conversion itself, which is reached through [`SchemaConverter`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod json;
mod tool_schemas;
mod translate;

pub use json::{grpc_code, json_to_struct, struct_to_json};
pub use mcpwire_wire::proto_mcp::pb;
pub use tool_schemas::{ProtoToolSchemas, SchemaConverter, ToolEntry, ToolProto};
pub use translate::{Inbound, Translator};

/// The `_meta` key under which a tool names its schema-registry reference
/// (`buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}`).
pub const BSR_REF_META: &str = "io.mcpwire/bsrRef";
