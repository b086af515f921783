//! The MCP message model shared by every mcpwire wire and backend.
//!
//! **Is:** the JSON-RPC 2.0 envelope ([`jsonrpc`]), request ids ([`RequestId`]), protocol
//! revisions and dialects ([`Revision`], [`Dialect`]), method names ([`Method`]), the error
//! taxonomy and its wire codes ([`McpError`], [`ErrorObject`]) and the MCP types
//! ([`types`]) for revisions 2025-06-18, 2025-11-25, the stateless 2026-07-28 and the
//! bb-1.0 dialect.
//!
//! **Is not:** a transport, a session or a runtime. Nothing here does I/O, spawns tasks or
//! reads a clock. This is the only crate that derives serde for protocol types; every other
//! crate converts at its edge.
//!
//! Tool arguments and results travel as [`serde_json::value::RawValue`]: the model never
//! parses what it does not need to look at.
#![deny(unsafe_code)] // one measured exception: `captured::decode_capturing`
#![warn(missing_docs)]

pub mod captured;
pub mod error;
pub mod events;
mod id;
pub mod jsonrpc;
mod method;
mod revision;
pub mod types;

pub use error::{ErrorObject, GrpcCode, McpError, codes};
pub use events::{BackendEvent, CallEvent, ClientAsk, LogEntry, ProgressUpdate, Reply};
pub use id::RequestId;
pub use jsonrpc::{Malformed, Message, Notification, Outbound, Request, Response};
pub use method::Method;
pub use revision::{Dialect, PROTO_MCP_PREFIX, PROTO_MCP_VERSION, Revision, UnsupportedRevision};

/// A raw JSON value carried without being parsed.
pub type Raw = Box<serde_json::value::RawValue>;

/// Serializes `value` into an owned [`Raw`]; used for results the core builds itself.
pub fn to_raw<T: serde::Serialize + ?Sized>(value: &T) -> Raw {
    // Serializing plain model types into JSON cannot fail: they have string keys and no
    // non-finite floats. Fall back to `null` rather than panic if a caller breaks that.
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| raw_null())
}

/// The JSON `null` as a [`Raw`].
pub fn raw_null() -> Raw {
    serde_json::value::RawValue::from_string("null".to_owned()).expect("null is valid JSON")
}

/// The JSON `{}` as a [`Raw`].
pub fn raw_empty_object() -> Raw {
    serde_json::value::RawValue::from_string("{}".to_owned()).expect("{} is valid JSON")
}
