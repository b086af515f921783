//! Errors, sorted by who is to blame, and their wire codes — mapped in one place.
//!
//! [`McpError`] is what routers, backends and sessions pass around. [`McpError::to_wire`]
//! is the single table turning it into a JSON-RPC [`ErrorObject`] for a [`Dialect`].

use serde::{Deserialize, Serialize};

use crate::{Dialect, Raw, Revision};

/// JSON-RPC and MCP error codes.
pub mod codes {
    /// Invalid JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Internal server error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP: resource not found (2025-11-25).
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
    /// MCP: the server asks for an interaction the client must complete (URL elicitation).
    pub const URL_ELICITATION_REQUIRED: i64 = -32042;
    /// SDK convention: request timed out.
    pub const REQUEST_TIMEOUT: i64 = -32001;
    /// 2026-07-28: the requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
    /// 2026-07-28: a client capability the request needs is missing.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// mcpwire: a request arrived before `initialize` (bb-1.0 defines this code; mcpwire
    /// uses it for every dialect, since the dialect is unknown before `initialize`).
    pub const NOT_INITIALIZED: i64 = -32003;
    /// bb-1.0: tool not found.
    pub const BB_TOOL_NOT_FOUND: i64 = -32000;
    /// bb-1.0: tool execution failed.
    pub const BB_TOOL_FAILED: i64 = -32001;
    /// bb-1.0: invalid tool params.
    pub const BB_INVALID_TOOL_PARAMS: i64 = -32002;
    /// bb-1.0: server not initialized.
    pub const BB_NOT_INITIALIZED: i64 = -32003;
    /// proto-mcp: a schema reference could not be resolved.
    pub const PROTO_SCHEMA_UNRESOLVED: i64 = -33000;
    /// proto-mcp: the tool's arguments failed its schema.
    pub const PROTO_SCHEMA_VALIDATION: i64 = -33001;
    /// proto-mcp: the requested protocol version is not supported.
    pub const PROTO_UNSUPPORTED_VERSION: i64 = -33002;
    /// proto-mcp: the request (a tool call) timed out.
    pub const PROTO_TIMEOUT: i64 = -33003;
}

/// A JSON-RPC error object as it appears on the wire.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra data, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Raw>,
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl ErrorObject {
    /// An error object without data.
    pub fn new(code: i64, message: impl Into<String>) -> ErrorObject {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: &serde_json::Value) -> ErrorObject {
        self.data = Some(crate::to_raw(data));
        self
    }
}

/// Every failure a request can end in, grouped by blame.
///
/// Each variant documents how it reaches the wire; [`McpError::to_wire`] is the table.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    // --- the peer misbehaved: answered, the connection stays open ---
    /// The request's params did not match the method (−32602).
    #[error("Invalid params: {0}")]
    InvalidParams(String),
    /// The method is unknown or not offered (−32601).
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    /// The request is not valid in the session's state (−32600).
    #[error("Invalid Request: {0}")]
    InvalidRequest(String),
    /// A request arrived before `initialize` (−32003 in every dialect: before `initialize`
    /// the dialect is unknown, and bb-1.0 requires this code).
    #[error("Server not initialized: send initialize first")]
    NotInitialized,
    /// No tool has this name (−32602; bb-1.0: −32000).
    #[error("Unknown tool: {0}")]
    ToolNotFound(String),
    /// The tool's arguments failed its input schema. Standard MCP returns this as a tool
    /// result with `isError: true`; bb-1.0 answers −32002.
    #[error("Invalid arguments for tool {tool}: {message}")]
    InvalidToolParams {
        /// The tool called.
        tool: String,
        /// What was wrong.
        message: String,
    },
    /// No resource has this URI (−32002).
    #[error("Resource not found: {0}")]
    ResourceNotFound(String),
    /// No prompt has this name (−32602).
    #[error("Unknown prompt: {0}")]
    PromptNotFound(String),
    /// A schema (a proto-mcp `Any` type URL, a registry reference) could not be resolved
    /// (proto-mcp −33000; −32602 elsewhere).
    #[error("Schema not resolved: {0}")]
    SchemaUnresolved(String),
    /// The client asked for a protocol version this server cannot speak (proto-mcp −33002,
    /// MCP −32022), with `data {requested, supported}`.
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        /// The version asked for.
        requested: String,
        /// The versions this server speaks.
        supported: Vec<String>,
    },

    // --- a limit was hit ---
    /// A configured limit was exceeded (−32600, message names the limit).
    #[error("Limit exceeded: {0}")]
    LimitExceeded(String),
    /// The request took longer than its deadline (−32001; proto-mcp −33003).
    #[error("Request timed out")]
    Timeout,

    // --- the backend failed ---
    /// The tool ran and failed. Standard MCP returns this as a tool result with
    /// `isError: true`; bb-1.0 answers −32001 with `data.tool` and `data.error`.
    #[error("Tool {tool} failed: {message}")]
    ToolFailed {
        /// The tool called.
        tool: String,
        /// The failure, as the tool reported it.
        message: String,
    },
    /// The request was cancelled (never sent on the wire; the response is suppressed).
    #[error("Request cancelled")]
    Cancelled,
    /// 2026-07-28: the call needs answers from the client first. The router turns this
    /// into an `input_required` result; it never reaches the wire as an error.
    #[error("Input required from the client")]
    InputRequired,
    /// A backend or peer answered with this exact JSON-RPC error; passed through as is.
    #[error("{}", .0.message)]
    Wire(ErrorObject),

    // --- our bug ---
    /// Something went wrong inside mcpwire (−32603).
    #[error("Internal error: {0}")]
    Internal(String),
}

impl McpError {
    /// The JSON-RPC error object for this error when answering in `revision`.
    pub fn to_wire(&self, revision: Revision) -> ErrorObject {
        use codes::*;
        let msg = self.to_string();
        let dialect = revision.dialect();
        match (self, dialect) {
            // SEP-2164 (2026-07-28): an unknown resource is invalid params.
            (McpError::ResourceNotFound(uri), _) if revision.is_stateless() => {
                ErrorObject::new(INVALID_PARAMS, msg).with_data(&serde_json::json!({ "uri": uri }))
            }
            (McpError::InvalidParams(_), _) => ErrorObject::new(INVALID_PARAMS, msg),
            (McpError::SchemaUnresolved(_), Dialect::Proto) => {
                ErrorObject::new(PROTO_SCHEMA_UNRESOLVED, msg)
            }
            (McpError::SchemaUnresolved(_), _) => ErrorObject::new(INVALID_PARAMS, msg),
            (McpError::UnsupportedVersion { .. }, d) => ErrorObject::new(
                if d == Dialect::Proto {
                    PROTO_UNSUPPORTED_VERSION
                } else {
                    UNSUPPORTED_PROTOCOL_VERSION
                },
                msg,
            )
            .with_data(&self.version_data()),
            (McpError::MethodNotFound(_), _) => ErrorObject::new(METHOD_NOT_FOUND, msg),
            (McpError::InvalidRequest(_), _) => ErrorObject::new(INVALID_REQUEST, msg),
            (McpError::NotInitialized, _) => ErrorObject::new(NOT_INITIALIZED, msg),
            (McpError::ToolNotFound(name), Dialect::Bb) => {
                ErrorObject::new(BB_TOOL_NOT_FOUND, "Tool not found")
                    .with_data(&serde_json::json!({ "tool": name }))
            }
            (McpError::ToolNotFound(_), Dialect::Mcp | Dialect::Proto) => {
                ErrorObject::new(INVALID_PARAMS, msg)
            }
            (McpError::InvalidToolParams { tool, message }, Dialect::Bb) => {
                ErrorObject::new(BB_INVALID_TOOL_PARAMS, "Invalid tool params")
                    .with_data(&serde_json::json!({ "tool": tool, "error": message }))
            }
            (McpError::InvalidToolParams { .. }, Dialect::Mcp) => {
                ErrorObject::new(INVALID_PARAMS, msg)
            }
            (McpError::InvalidToolParams { tool, message }, Dialect::Proto) => {
                ErrorObject::new(PROTO_SCHEMA_VALIDATION, msg)
                    .with_data(&serde_json::json!({ "tool": tool, "error": message }))
            }
            (McpError::ToolFailed { tool, message }, Dialect::Bb) => {
                ErrorObject::new(BB_TOOL_FAILED, "Tool execution failed")
                    .with_data(&serde_json::json!({ "tool": tool, "error": message }))
            }
            (McpError::ToolFailed { .. }, Dialect::Mcp | Dialect::Proto) => {
                ErrorObject::new(INTERNAL_ERROR, msg)
            }
            (McpError::ResourceNotFound(uri), _) => ErrorObject::new(RESOURCE_NOT_FOUND, msg)
                .with_data(&serde_json::json!({ "uri": uri })),
            (McpError::PromptNotFound(_), _) => ErrorObject::new(INVALID_PARAMS, msg),
            (McpError::LimitExceeded(_), _) => ErrorObject::new(INVALID_REQUEST, msg),
            (McpError::Timeout, Dialect::Proto) => ErrorObject::new(PROTO_TIMEOUT, msg),
            (McpError::Timeout, _) => ErrorObject::new(REQUEST_TIMEOUT, msg),
            (McpError::Cancelled, _) => ErrorObject::new(REQUEST_TIMEOUT, msg),
            (McpError::Wire(obj), _) => obj.clone(),
            (McpError::InputRequired, _) => ErrorObject::new(INTERNAL_ERROR, msg),
            (McpError::Internal(_), _) => ErrorObject::new(INTERNAL_ERROR, msg),
        }
    }

    /// Whether `dialect` reports this `tools/call` error inside a successful result
    /// (`isError: true`) rather than as an error: MCP for failed tools and invalid
    /// arguments, proto-mcp for failed tools only (invalid arguments are −33001), bb-1.0
    /// never (it has codes for both).
    pub fn is_tool_result_error(&self, dialect: Dialect) -> bool {
        match dialect {
            Dialect::Mcp => matches!(
                self,
                McpError::InvalidToolParams { .. } | McpError::ToolFailed { .. }
            ),
            Dialect::Proto => matches!(self, McpError::ToolFailed { .. }),
            Dialect::Bb => false,
        }
    }

    fn version_data(&self) -> serde_json::Value {
        match self {
            McpError::UnsupportedVersion {
                requested,
                supported,
            } => serde_json::json!({ "supported": supported, "requested": requested }),
            _ => serde_json::Value::Null,
        }
    }

    /// A `tools/call` result with `isError: true` describing this error.
    pub fn to_tool_result(&self) -> Raw {
        let text = match self {
            McpError::ToolFailed { message, .. } => message.clone(),
            other => other.to_string(),
        };
        crate::to_raw(&serde_json::json!({
            "content": [{ "type": "text", "text": text }],
            "isError": true,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bb_codes() {
        let b = Revision::Bb1_0;
        assert_eq!(McpError::ToolNotFound("x".into()).to_wire(b).code, -32000);
        let failed = McpError::ToolFailed {
            tool: "t".into(),
            message: "boom".into(),
        }
        .to_wire(b);
        assert_eq!(failed.code, -32001);
        assert_eq!(failed.data.unwrap().get(), r#"{"error":"boom","tool":"t"}"#);
        let bad = McpError::InvalidToolParams {
            tool: "t".into(),
            message: "m".into(),
        };
        assert_eq!(bad.to_wire(b).code, -32002);
        assert_eq!(McpError::NotInitialized.to_wire(b).code, -32003);
    }

    #[test]
    fn standard_codes() {
        let m = Revision::V2025_11_25;
        assert_eq!(McpError::ToolNotFound("x".into()).to_wire(m).code, -32602);
        assert_eq!(McpError::MethodNotFound("x".into()).to_wire(m).code, -32601);
        assert_eq!(
            McpError::ResourceNotFound("u".into()).to_wire(m).code,
            -32002
        );
        let s = Revision::V2026_07_28;
        assert_eq!(
            McpError::ResourceNotFound("u".into()).to_wire(s).code,
            -32602
        );
    }

    #[test]
    fn proto_codes() {
        let p = Revision::ProtoMcp1;
        assert_eq!(
            McpError::SchemaUnresolved("x".into()).to_wire(p).code,
            -33000
        );
        let bad = McpError::InvalidToolParams {
            tool: "t".into(),
            message: "m".into(),
        };
        let wire = bad.to_wire(p);
        assert_eq!(wire.code, -33001);
        assert_eq!(wire.data.unwrap().get(), r#"{"error":"m","tool":"t"}"#);
        let v = McpError::UnsupportedVersion {
            requested: "2.0.0".into(),
            supported: vec!["1.0.0".into()],
        };
        assert_eq!(v.to_wire(p).code, -33002);
        assert_eq!(v.to_wire(Revision::V2026_07_28).code, -32022);
        assert_eq!(McpError::Timeout.to_wire(p).code, -33003);
        assert_eq!(
            McpError::Timeout.to_wire(Revision::V2025_11_25).code,
            -32001
        );
        assert_eq!(McpError::ToolNotFound("x".into()).to_wire(p).code, -32602);
        assert_eq!(
            McpError::SchemaUnresolved("x".into())
                .to_wire(Revision::V2025_11_25)
                .code,
            -32602
        );
    }

    #[test]
    fn tool_result_errors_by_dialect() {
        let bad = McpError::InvalidToolParams {
            tool: "t".into(),
            message: "m".into(),
        };
        let failed = McpError::ToolFailed {
            tool: "t".into(),
            message: "m".into(),
        };
        assert!(bad.is_tool_result_error(Dialect::Mcp));
        assert!(failed.is_tool_result_error(Dialect::Mcp));
        assert!(!bad.is_tool_result_error(Dialect::Proto));
        assert!(failed.is_tool_result_error(Dialect::Proto));
        assert!(!failed.is_tool_result_error(Dialect::Bb));
    }
}
