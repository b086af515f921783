//! The request `_meta` fields the core reads: the progress token and the 2026-07-28
//! per-request envelope.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{ClientCapabilities, LoggingLevel, ProgressToken};

/// `_meta` key of the protocol version (2026-07-28).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities (2026-07-28).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client info (2026-07-28).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the log level (2026-07-28).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key carrying the server's info (2026-07-28).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// Notification `_meta` key naming the `subscriptions/listen` request (2026-07-28).
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The parts of a request's `params._meta` the core looks at. A 2026-07-28 request's
/// `clientInfo` is not among them: nothing on the server reads it, and parsing it was a
/// fiftieth of a stateless request's cost (left in the raw `_meta` backends see).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RequestMeta {
    /// Where to send progress notifications.
    #[serde(
        rename = "progressToken",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub progress_token: Option<ProgressToken>,
    /// 2026-07-28: the revision of this request (must be a string).
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", default)]
    pub protocol_version: Option<Value>,
    /// 2026-07-28: the client's capabilities for this request.
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities", default)]
    pub client_capabilities: Option<ClientCapabilities>,
    /// 2026-07-28: the least severe log level the client wants for this request.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    pub log_level: Option<LoggingLevel>,
}

#[derive(Deserialize)]
struct ParamsMeta {
    #[serde(rename = "_meta", default)]
    meta: Option<RequestMeta>,
}

impl RequestMeta {
    /// Reads `_meta` out of raw request params (other fields are skipped, not parsed).
    pub fn from_params(params: Option<&RawValue>) -> Result<Option<RequestMeta>, String> {
        let Some(p) = params else { return Ok(None) };
        if !p.get().starts_with('{') {
            return Ok(None);
        }
        // Cheap pre-check: most requests carry no `_meta` at all.
        if !p.get().contains("\"_meta\"") {
            return Ok(None);
        }
        serde_json::from_str::<ParamsMeta>(p.get())
            .map(|pm| pm.meta)
            .map_err(|e| format!("invalid _meta: {e}"))
    }
}
