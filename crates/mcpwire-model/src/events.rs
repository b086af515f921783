//! What flows between the core and backends besides requests: replies, call events,
//! backend events and asks of the client.

use std::borrow::Cow;

use crate::Raw;
use crate::types::LoggingLevel;

/// A backend's successful answer to a request.
#[derive(Debug)]
pub enum Reply {
    /// The final result (raw JSON object).
    Complete(Raw),
    /// A 2026-07-28 `input_required` result (raw JSON object, `resultType` included): the
    /// client must answer its `inputRequests` and call again.
    InputRequired(Raw),
}

/// A progress update from a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far.
    pub progress: f64,
    /// Total, when known.
    pub total: Option<f64>,
    /// Status message.
    pub message: Option<String>,
}

/// A log message for the client (`notifications/message`; deserialized from its params).
#[derive(Debug, Clone, serde::Deserialize)]
pub struct LogEntry {
    /// Severity.
    pub level: LoggingLevel,
    /// Logger name.
    #[serde(default)]
    pub logger: Option<String>,
    /// The payload, any JSON.
    pub data: Raw,
}

/// Something a running call tells its client.
#[derive(Debug, Clone)]
pub enum CallEvent {
    /// Progress (sent only if the request carried a progress token).
    Progress(ProgressUpdate),
    /// A log message (sent only at or above the client's level).
    Log(LogEntry),
}

/// Something a backend tells every session, unrelated to one call.
#[derive(Debug, Clone)]
pub enum BackendEvent {
    /// The tool list changed.
    ToolsListChanged,
    /// The resource list changed.
    ResourcesListChanged,
    /// The prompt list changed.
    PromptsListChanged,
    /// A resource's contents changed (sent to sessions subscribed to it).
    ResourceUpdated {
        /// The resource URI.
        uri: String,
    },
    /// A log message not tied to a call.
    Log(LogEntry),
}

/// A request the server sends to the client on behalf of a running call.
#[derive(Debug, Clone)]
pub struct ClientAsk {
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub method: Cow<'static, str>,
    /// Raw params.
    pub params: Option<Raw>,
}

impl ClientAsk {
    /// The client capability this ask needs (`sampling`, `elicitation`, `roots`).
    pub fn required_capability(&self) -> Option<&'static str> {
        match self.method.as_ref() {
            "sampling/createMessage" => Some("sampling"),
            "elicitation/create" => Some("elicitation"),
            "roots/list" => Some("roots"),
            _ => None,
        }
    }
}
