//! MCP types for the revisions mcpwire speaks, as serde structs.
//!
//! Optional fields are skipped when absent, so one type serves every revision; fields a
//! revision does not know are simply not set by code answering that revision. Loosely
//! specified parts (JSON Schemas, capability sub-objects, `_meta`) stay [`serde_json::Value`].

mod client;
mod completion;
mod content;
mod lifecycle;
mod meta;
mod notifications;
mod prompts;
mod resources;
mod tools;

pub use client::*;
pub use completion::*;
pub use content::*;
pub use lifecycle::*;
pub use meta::*;
pub use notifications::*;
pub use prompts::*;
pub use resources::*;
pub use tools::*;

/// A free-form JSON object (`_meta`, `arguments`, …).
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// A progress token: a string or an integer, like a request id.
pub type ProgressToken = crate::RequestId;

/// Params of the `*/list` requests: an optional pagination cursor.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct PaginatedParams {
    /// Opaque cursor from a previous page's `nextCursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// An icon a client may show for a tool, resource, prompt or server (2025-11-25).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    /// URL or `data:` URI of the image.
    pub src: String,
    /// The image's MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Sizes such as `"48x48"` or `"any"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizes: Option<Vec<String>>,
    /// `"light"` or `"dark"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theme: Option<String>,
}

/// Who a message or content item is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant (model).
    Assistant,
}
