//! The error table: what each [`McpError`] variant is on every wire — its JSON-RPC code,
//! message and data per revision, the HTTP status of an answer that is only this error, and
//! its gRPC status code. Written out in `docs/design/errors.md` (a test compares them).

use serde_json::json;

use super::{ErrorObject, McpError, codes::*};
use crate::{Dialect, Raw, Revision};

/// A gRPC status code (the numbers of `google.rpc.Code`), without depending on a gRPC
/// library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum GrpcCode {
    /// The operation was cancelled, typically by the caller.
    Cancelled = 1,
    /// Not enough information to say more (a peer's error passed through).
    Unknown = 2,
    /// The request is invalid regardless of the server's state.
    InvalidArgument = 3,
    /// The deadline passed before the operation completed.
    DeadlineExceeded = 4,
    /// Something the request names does not exist.
    NotFound = 5,
    /// The caller may not do this.
    PermissionDenied = 7,
    /// A limit was hit.
    ResourceExhausted = 8,
    /// The server is not in a state that allows this request.
    FailedPrecondition = 9,
    /// Not implemented or not offered.
    Unimplemented = 12,
    /// An invariant of the server broke.
    Internal = 13,
    /// The server cannot take this now; retrying later may work.
    Unavailable = 14,
    /// The caller did not authenticate.
    Unauthenticated = 16,
}

impl GrpcCode {
    /// The status code's number.
    pub const fn as_i32(self) -> i32 {
        self as i32
    }
}

impl McpError {
    /// The JSON-RPC error object for this error when answering in `revision`.
    pub fn to_wire(&self, revision: Revision) -> ErrorObject {
        if let McpError::Wire(obj) = self {
            return obj.clone();
        }
        let dialect = revision.dialect();
        let message = match (self, dialect) {
            (McpError::ToolNotFound(_), Dialect::Bb) => "Tool not found".to_owned(),
            (McpError::InvalidToolParams { .. }, Dialect::Bb) => "Invalid tool params".to_owned(),
            (McpError::ToolFailed { .. }, Dialect::Bb) => "Tool execution failed".to_owned(),
            _ => self.to_string(),
        };
        ErrorObject {
            code: self.code(revision),
            message,
            data: self.data(dialect).map(|v| crate::to_raw(&v)),
            status: Some((self.http_status(), self.grpc_code())),
        }
    }

    /// The HTTP and gRPC statuses of a peer's error by its code: those of the variant
    /// the code means in standard MCP, for the codes every revision agrees on (the
    /// JSON-RPC ones and the 2026-07-28 header and capability errors); `None` for others
    /// (tool- or server-specific codes, whose meaning the peer alone knows).
    pub fn status_of_peer_code(code: i64) -> Option<(u16, GrpcCode)> {
        let s = String::new;
        let like = match code {
            PARSE_ERROR => McpError::ParseError(s()),
            INVALID_REQUEST => McpError::InvalidRequest(s()),
            METHOD_NOT_FOUND => McpError::MethodNotFound(s()),
            INVALID_PARAMS => McpError::InvalidParams(s()),
            INTERNAL_ERROR => McpError::Internal(s()),
            HEADER_MISMATCH => McpError::HeaderMismatch(s()),
            UNSUPPORTED_PROTOCOL_VERSION => McpError::UnsupportedVersion {
                requested: s(),
                supported: Vec::new(),
            },
            MISSING_REQUIRED_CLIENT_CAPABILITY => McpError::MissingCapability {
                capability: s(),
                required: serde_json::Value::Null,
            },
            _ => return None,
        };
        Some((like.http_status(), like.grpc_code()))
    }

    /// The error object for an error raised before any revision is known (by a codec, or
    /// an HTTP handler before a session exists). Only for variants whose code every
    /// revision agrees on (the table test checks which do); others are answered as in the
    /// newest stateful revision.
    pub fn to_wire_unnegotiated(&self) -> ErrorObject {
        self.to_wire(Revision::LATEST_STATEFUL)
    }

    fn code(&self, revision: Revision) -> i64 {
        let dialect = revision.dialect();
        let stateless = revision.is_stateless();
        match self {
            McpError::ParseError(_) => PARSE_ERROR,
            McpError::InvalidRequest(_)
            | McpError::DuplicateRequestId
            | McpError::AlreadyInitialized
            | McpError::BadHeader(_)
            | McpError::SessionRequired
            | McpError::SessionNotFound
            | McpError::Forbidden(_)
            | McpError::UnsupportedMediaType(_)
            | McpError::NotAcceptable(_)
            | McpError::MethodNotAllowed(_)
            | McpError::MessageTooLarge { .. }
            | McpError::BodyTimeout { .. }
            | McpError::Unauthenticated(_)
            | McpError::InsufficientScope(_)
            | McpError::LimitExceeded(_)
            | McpError::RateLimited { .. } => INVALID_REQUEST,
            McpError::InvalidParams(_) | McpError::PromptNotFound(_) => INVALID_PARAMS,
            McpError::MethodNotFound(_) => METHOD_NOT_FOUND,
            McpError::NotInitialized => NOT_INITIALIZED,
            McpError::ToolNotFound(_) => match dialect {
                Dialect::Bb => BB_TOOL_NOT_FOUND,
                Dialect::Mcp | Dialect::Proto => INVALID_PARAMS,
            },
            McpError::InvalidToolParams { .. } => match dialect {
                Dialect::Bb => BB_INVALID_TOOL_PARAMS,
                Dialect::Proto => PROTO_SCHEMA_VALIDATION,
                Dialect::Mcp => INVALID_PARAMS,
            },
            // SEP-2164 (2026-07-28): an unknown resource is invalid params. bb-1.0 has no
            // resources, and its −32002 means invalid tool params.
            McpError::ResourceNotFound(_) if stateless || dialect == Dialect::Bb => INVALID_PARAMS,
            McpError::ResourceNotFound(_) => RESOURCE_NOT_FOUND,
            McpError::SchemaUnresolved(_) => match dialect {
                Dialect::Proto => PROTO_SCHEMA_UNRESOLVED,
                Dialect::Mcp | Dialect::Bb => INVALID_PARAMS,
            },
            McpError::UnsupportedVersion { .. } if dialect == Dialect::Proto => {
                PROTO_UNSUPPORTED_VERSION
            }
            McpError::UnsupportedVersion { .. } if stateless => UNSUPPORTED_PROTOCOL_VERSION,
            McpError::UnsupportedVersion { .. } => INVALID_PARAMS,
            McpError::MissingCapability { .. } if stateless => MISSING_REQUIRED_CLIENT_CAPABILITY,
            McpError::MissingCapability { .. } => INVALID_REQUEST,
            McpError::HeaderMismatch(_) if stateless => HEADER_MISMATCH,
            McpError::HeaderMismatch(_) => INVALID_REQUEST,
            McpError::Timeout => match dialect {
                Dialect::Proto => PROTO_TIMEOUT,
                Dialect::Bb => INTERNAL_ERROR,
                Dialect::Mcp => REQUEST_TIMEOUT,
            },
            McpError::Cancelled => match dialect {
                Dialect::Bb => INTERNAL_ERROR,
                Dialect::Mcp | Dialect::Proto => REQUEST_TIMEOUT,
            },
            McpError::ToolFailed { .. } => match dialect {
                Dialect::Bb => BB_TOOL_FAILED,
                Dialect::Mcp | Dialect::Proto => INTERNAL_ERROR,
            },
            // The request was valid; the server (or the upstream behind a gateway) cannot
            // serve it now.
            McpError::InputRequired
            | McpError::Unavailable(_)
            | McpError::Internal(_)
            | McpError::ConnectionClosed(_)
            | McpError::BadPeerMessage(_) => INTERNAL_ERROR,
            McpError::UrlElicitationRequired { .. } => URL_ELICITATION_REQUIRED,
            McpError::Wire(obj) => obj.code,
        }
    }

    fn data(&self, dialect: Dialect) -> Option<serde_json::Value> {
        match (self, dialect) {
            (McpError::ResourceNotFound(uri), _) => Some(json!({ "uri": uri })),
            (McpError::ToolNotFound(tool), Dialect::Bb) => Some(json!({ "tool": tool })),
            (McpError::InvalidToolParams { tool, message }, Dialect::Bb | Dialect::Proto)
            | (McpError::ToolFailed { tool, message }, Dialect::Bb) => {
                Some(json!({ "tool": tool, "error": message }))
            }
            (
                McpError::UnsupportedVersion {
                    requested,
                    supported,
                },
                _,
            ) => Some(json!({ "supported": supported, "requested": requested })),
            (McpError::MissingCapability { required, .. }, _) => {
                Some(json!({ "requiredCapabilities": required }))
            }
            (
                McpError::RateLimited {
                    limit,
                    retry_after_secs,
                },
                _,
            ) => Some(json!({ "limit": limit, "retryAfter": retry_after_secs })),
            (McpError::UrlElicitationRequired { elicitations, .. }, _) => {
                Some(json!({ "elicitations": elicitations }))
            }
            _ => None,
        }
    }

    /// The HTTP status of an answer that is only this error: a stateless (2026-07-28)
    /// exchange, or a request refused before it reached a session. (Inside a stateful
    /// session a JSON-RPC error is an answer like any other: 200.)
    pub fn http_status(&self) -> u16 {
        match self {
            McpError::ParseError(_)
            | McpError::InvalidRequest(_)
            | McpError::DuplicateRequestId
            | McpError::AlreadyInitialized
            | McpError::InvalidParams(_)
            | McpError::NotInitialized
            | McpError::ToolNotFound(_)
            | McpError::InvalidToolParams { .. }
            | McpError::ResourceNotFound(_)
            | McpError::PromptNotFound(_)
            | McpError::SchemaUnresolved(_)
            | McpError::UnsupportedVersion { .. }
            | McpError::MissingCapability { .. }
            | McpError::HeaderMismatch(_)
            | McpError::BadHeader(_)
            | McpError::SessionRequired
            | McpError::LimitExceeded(_) => 400,
            McpError::Unauthenticated(_) => 401,
            McpError::Forbidden(_) | McpError::InsufficientScope(_) => 403,
            McpError::MethodNotFound(_) | McpError::SessionNotFound => 404,
            McpError::RateLimited { .. } => 429,
            McpError::MethodNotAllowed(_) => 405,
            McpError::NotAcceptable(_) => 406,
            McpError::BodyTimeout { .. } => 408,
            McpError::MessageTooLarge { .. } => 413,
            McpError::UnsupportedMediaType(_) => 415,
            McpError::Timeout
            | McpError::ToolFailed { .. }
            | McpError::Cancelled
            | McpError::UrlElicitationRequired { .. } => 200,
            McpError::InputRequired | McpError::Internal(_) => 500,
            McpError::ConnectionClosed(_) | McpError::BadPeerMessage(_) => 502,
            McpError::Unavailable(_) => 503,
            McpError::Wire(obj) => obj.http_status(),
        }
    }

    /// The gRPC status code of this error.
    pub fn grpc_code(&self) -> GrpcCode {
        match self {
            McpError::ParseError(_)
            | McpError::InvalidRequest(_)
            | McpError::DuplicateRequestId
            | McpError::InvalidParams(_)
            | McpError::InvalidToolParams { .. }
            | McpError::HeaderMismatch(_)
            | McpError::BadHeader(_)
            | McpError::SessionRequired
            | McpError::UnsupportedMediaType(_)
            | McpError::NotAcceptable(_) => GrpcCode::InvalidArgument,
            McpError::AlreadyInitialized
            | McpError::NotInitialized
            | McpError::SchemaUnresolved(_)
            | McpError::UnsupportedVersion { .. }
            | McpError::MissingCapability { .. }
            | McpError::UrlElicitationRequired { .. } => GrpcCode::FailedPrecondition,
            McpError::MethodNotFound(_) | McpError::MethodNotAllowed(_) => GrpcCode::Unimplemented,
            McpError::ToolNotFound(_)
            | McpError::ResourceNotFound(_)
            | McpError::PromptNotFound(_)
            | McpError::SessionNotFound => GrpcCode::NotFound,
            McpError::Forbidden(_) | McpError::InsufficientScope(_) => GrpcCode::PermissionDenied,
            McpError::MessageTooLarge { .. }
            | McpError::LimitExceeded(_)
            | McpError::RateLimited { .. } => GrpcCode::ResourceExhausted,
            McpError::BodyTimeout { .. } | McpError::Timeout => GrpcCode::DeadlineExceeded,
            McpError::Unauthenticated(_) => GrpcCode::Unauthenticated,
            McpError::Unavailable(_) | McpError::ConnectionClosed(_) => GrpcCode::Unavailable,
            McpError::Cancelled => GrpcCode::Cancelled,
            McpError::ToolFailed { .. } => GrpcCode::Unknown,
            McpError::InputRequired | McpError::Internal(_) | McpError::BadPeerMessage(_) => {
                GrpcCode::Internal
            }
            McpError::Wire(obj) => obj.grpc_code(),
        }
    }

    /// Whether `revision` reports this `tools/call` error inside a successful result
    /// (`isError: true`) rather than as an error: MCP for failed tools, and for invalid
    /// arguments from 2025-11-25 on (SEP-1303; before it they are −32602), proto-mcp for
    /// failed tools only (invalid arguments are −33001), bb-1.0 never (it has codes for
    /// both).
    pub fn is_tool_result_error(&self, revision: Revision) -> bool {
        match (revision.dialect(), self) {
            (Dialect::Mcp | Dialect::Proto, McpError::ToolFailed { .. }) => true,
            (Dialect::Mcp, McpError::InvalidToolParams { .. }) => revision >= Revision::V2025_11_25,
            _ => false,
        }
    }

    /// A `tools/call` result with `isError: true` describing this error.
    pub fn to_tool_result(&self) -> Raw {
        let text = match self {
            McpError::ToolFailed { message, .. } => message.clone(),
            other => other.to_string(),
        };
        crate::to_raw(&json!({
            "content": [{ "type": "text", "text": text }],
            "isError": true,
        }))
    }
}
