//! Errors, sorted by who is to blame, and everything they become on a wire — mapped in one
//! place.
//!
//! [`McpError`] is what routers, backends, sessions and drivers pass around. Its table
//! (`table.rs`) is the only place that knows what an error looks like on a wire:
//! [`McpError::to_wire`] gives the JSON-RPC [`ErrorObject`] for a [`Revision`] (code,
//! message, data), [`McpError::http_status`] the HTTP status of an answer that is only this
//! error, and [`McpError::grpc_code`] the gRPC status code. The error object carries the two
//! statuses along, so a driver that only sees the session's output still answers by the
//! variant, never by the integer (which dialects overload: −32002 is "resource not found" in
//! MCP and "invalid tool params" in bb-1.0). The table is written out, and justified, in
//! `docs/design/errors.md`; a test keeps the two identical.

use serde::{Deserialize, Serialize};

use crate::Raw;

mod table;
#[cfg(test)]
mod tests;

pub use table::GrpcCode;

/// JSON-RPC and MCP error codes, for **reading** a peer's answers. Errors mcpwire raises get
/// their code from [`McpError::to_wire`]; a tidy test refuses these constants (and code
/// literals) in any code that builds an error outside this crate.
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
    /// 2026-07-28 (SEP-2243): an HTTP routing header is missing or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
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
///
/// mcpwire builds these only through [`McpError::to_wire`] (there is no public
/// constructor); a peer's come from deserializing its answer. One made by `to_wire` also
/// knows the HTTP and gRPC statuses of its variant ([`ErrorObject::http_status`],
/// [`ErrorObject::grpc_code`]); a peer's does not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra data, raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Raw>,
    /// The statuses of the variant this object was made from (`None`: a peer's error).
    #[serde(skip)]
    status: Option<(u16, GrpcCode)>,
}

impl PartialEq for ErrorObject {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl ErrorObject {
    /// The HTTP status of an answer that is only this error: the variant's
    /// ([`McpError::http_status`]). A peer's error passed through (a gateway forwarding an
    /// upstream's answer) gets the status of the standard error its code names
    /// ([`McpError::status_of_peer_code`]), or 200 for any other code (a JSON-RPC error is
    /// an answer like any other).
    pub fn http_status(&self) -> u16 {
        self.statuses().map_or(200, |(http, _)| http)
    }

    /// The gRPC status code of this error: the variant's ([`McpError::grpc_code`]); for a
    /// peer's error, that of the standard error its code names, or `UNKNOWN`.
    pub fn grpc_code(&self) -> GrpcCode {
        self.statuses().map_or(GrpcCode::Unknown, |(_, grpc)| grpc)
    }

    fn statuses(&self) -> Option<(u16, GrpcCode)> {
        self.status
            .or_else(|| McpError::status_of_peer_code(self.code))
    }
}

/// Every failure a request can end in, grouped by blame.
///
/// Each variant says how it reaches the wire; the table (`to_wire`, `http_status`,
/// `grpc_code`) is in `table.rs` and `docs/design/errors.md`. Codes below are those of
/// standard MCP (2024-11-05 … 2025-11-25) unless a dialect is named.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    // --- the peer misbehaved: answered, the connection stays open ---
    /// The bytes are not JSON (or not a decodable protobuf message) (−32700).
    #[error("Parse error: {0}")]
    ParseError(String),
    /// The message is not a valid request, or not one this connection can take now
    /// (−32600).
    #[error("Invalid Request: {0}")]
    InvalidRequest(String),
    /// A request reused the id of one still in flight (−32600).
    #[error("Invalid Request: a request with this id is already in flight")]
    DuplicateRequestId,
    /// `initialize` on a connection that already completed it (−32600).
    #[error("Invalid Request: already initialized")]
    AlreadyInitialized,
    /// The request's params did not match the method (−32602).
    #[error("Invalid params: {0}")]
    InvalidParams(String),
    /// The method is unknown or not offered (−32601; HTTP 404 on its own).
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    /// A request arrived before `initialize` (−32003 in every dialect: before `initialize`
    /// the dialect is unknown, and bb-1.0 requires this code).
    #[error("Server not initialized: send initialize first")]
    NotInitialized,
    /// No tool has this name (−32602; bb-1.0: −32000 with `data.tool`).
    #[error("Unknown tool: {0}")]
    ToolNotFound(String),
    /// The tool's arguments failed its input schema. Standard MCP returns this as a tool
    /// result with `isError: true`; bb-1.0 answers −32002, proto-mcp −33001.
    #[error("Invalid arguments for tool {tool}: {message}")]
    InvalidToolParams {
        /// The tool called.
        tool: String,
        /// What was wrong.
        message: String,
    },
    /// No resource has this URI (−32002 with `data.uri`; 2026-07-28: −32602, SEP-2164).
    #[error("Resource not found: {0}")]
    ResourceNotFound(String),
    /// No prompt has this name (−32602).
    #[error("Unknown prompt: {0}")]
    PromptNotFound(String),
    /// A tool's schema (a registry reference, its protobuf form) could not be resolved
    /// (proto-mcp −33000; −32602 elsewhere).
    #[error("Schema not resolved: {0}")]
    SchemaUnresolved(String),
    /// The client asked for a protocol version this server cannot speak, with
    /// `data {supported, requested}` (−32602 as the 2025-11-25 lifecycle shows; 2026-07-28
    /// −32022; proto-mcp −33002).
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        /// The version asked for.
        requested: String,
        /// The versions this server speaks.
        supported: Vec<String>,
    },
    /// The request needs a client capability the client did not declare, with
    /// `data.requiredCapabilities` shaped like the client's capabilities (2026-07-28:
    /// −32021; earlier revisions, which have no code for it, −32600 as the Python SDK's
    /// clients answer an ask they cannot serve).
    #[error("Missing required client capability: {capability}")]
    MissingCapability {
        /// The capability, as people write it (`sampling`, `extensions["…"]`).
        capability: String,
        /// `data.requiredCapabilities`: a capabilities object naming what is needed.
        required: serde_json::Value,
    },
    /// 2026-07-28 over HTTP (SEP-2243): a routing header (`MCP-Protocol-Version`,
    /// `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`) is missing or disagrees with the body
    /// (−32020, HTTP 400).
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),

    // --- refused by the transport before any session saw it ---
    /// A header is malformed or names something this server does not know (an
    /// unsupported `MCP-Protocol-Version`, an unrecognized `Last-Event-ID`) (HTTP 400).
    #[error("Bad Request: {0}")]
    BadHeader(String),
    /// A stateful request came without `Mcp-Session-Id` (HTTP 400).
    #[error("Bad Request: Mcp-Session-Id header is required")]
    SessionRequired,
    /// No live session has this id: it never existed, was deleted, expired or was evicted
    /// (HTTP 404, so the client starts a new one).
    #[error("Session not found")]
    SessionNotFound,
    /// The origin/host guard refused the named header (HTTP 403).
    #[error("Forbidden: {0} not allowed")]
    Forbidden(String),
    /// The body's content type is not acceptable (HTTP 415).
    #[error("Unsupported Media Type: {0}")]
    UnsupportedMediaType(String),
    /// The client does not accept the media types the answer needs (HTTP 406).
    #[error("Not Acceptable: {0}")]
    NotAcceptable(String),
    /// The HTTP method is not served here (HTTP 405).
    #[error("Method Not Allowed: {0}")]
    MethodNotAllowed(String),
    /// A message exceeded the size limit (−32600; HTTP 413).
    #[error("Invalid Request: message longer than {max} bytes")]
    MessageTooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// A request's body did not arrive in time (HTTP 408).
    #[error("Request Timeout: the body did not arrive within {secs} s")]
    BodyTimeout {
        /// The time allowed.
        secs: f64,
    },
    /// Authentication failed: a missing, malformed, unknown, expired or otherwise invalid
    /// credential (HTTP 401, gRPC `UNAUTHENTICATED`; over HTTP with a `WWW-Authenticate`
    /// challenge).
    #[error("authentication failed: {0}")]
    Unauthenticated(String),
    /// The credential is valid but lacks a scope this server requires (HTTP 403 with
    /// `error="insufficient_scope"`, gRPC `PERMISSION_DENIED`); the text names the scopes.
    #[error("insufficient scope: {0}")]
    InsufficientScope(String),
    /// The server cannot take this now: too many sessions, shutting down (HTTP 503).
    #[error("{0}")]
    Unavailable(String),

    // --- a limit was hit ---
    /// A configured limit was exceeded (−32600, message names the limit).
    #[error("Limit exceeded: {0}")]
    LimitExceeded(String),
    /// A rate or connection limit refused the request: try again after `retry_after_secs`
    /// (−32600 with `data.retryAfter`; HTTP 429 with `Retry-After`, gRPC
    /// `RESOURCE_EXHAUSTED`). `limit` names the limit (`identity`, `ip`, `tool`,
    /// `connections`).
    #[error("Rate limited ({limit}): retry after {retry_after_secs} s")]
    RateLimited {
        /// Which limit refused the request.
        limit: String,
        /// Whole seconds until a retry can succeed (at least 1).
        retry_after_secs: u64,
    },
    /// The request took longer than its deadline (−32001; proto-mcp −33003; bb-1.0 −32603,
    /// since its −32001 means a tool threw).
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
    /// The request was cancelled. Its answer is normally suppressed; one that still goes
    /// out (the client's input ended under a running ask) is −32001 (bb-1.0: −32603).
    #[error("Request cancelled")]
    Cancelled,
    /// 2026-07-28: the call needs answers from the client first. The router turns this
    /// into an `input_required` result; it never reaches the wire as an error.
    #[error("Input required from the client")]
    InputRequired,
    /// The request cannot go on until the user completes these URL-mode elicitations out of
    /// band (an authorization in their browser, say); retry it afterwards (2025-11-25
    /// `URLElicitationRequiredError`: −32042 with `data.elicitations`, each a URL-mode
    /// `elicitation/create` params object with its `elicitationId`).
    #[error("{message}")]
    UrlElicitationRequired {
        /// What the user is asked to do.
        message: String,
        /// The elicitations (`mode: "url"`, `url`, `elicitationId`, `message`).
        elicitations: Vec<crate::types::ElicitParams>,
    },
    /// A peer's JSON-RPC error (a client's answer to an ask), passed through as received.
    /// Never built from a code by mcpwire: its own failures are the other variants.
    #[error("{}", .0.message)]
    Wire(ErrorObject),

    // --- the peer we are a client of failed ---
    /// The connection to the server closed (or could not carry the request) before the
    /// answer came; says how (−32603; HTTP 502, as a gateway answers for a failed upstream).
    #[error("Connection closed: {0}")]
    ConnectionClosed(String),
    /// The server sent something this client cannot use: an unreadable result, a revision it
    /// does not speak (−32603; HTTP 502).
    #[error("Invalid message from the server: {0}")]
    BadPeerMessage(String),

    // --- our bug ---
    /// Something went wrong inside mcpwire (−32603; HTTP 500).
    #[error("Internal error: {0}")]
    Internal(String),
}

impl From<crate::revision::UnsupportedRevision> for McpError {
    fn from(e: crate::revision::UnsupportedRevision) -> McpError {
        McpError::UnsupportedVersion {
            requested: e.requested,
            supported: e.supported,
        }
    }
}
