//! What a client session gives its owner (answers, server requests, notifications) and the
//! transport (messages to send).

use std::sync::Arc;

use mcpwire_model::{LogEntry, McpError, Method, Outbound, ProgressUpdate, Raw, Revision};

use super::{ClientRequestId, InputRequired, Negotiated, ServerRequestId};

/// A successful answer to a request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// The result (raw JSON).
    Complete(Raw),
    /// 2026-07-28: the server needs input first; answer its requests and call again.
    InputRequired(InputRequired),
}

/// A request from the server for the owner to answer with [`ClientSession::answer`].
#[derive(Debug)]
pub struct ServerRequest {
    /// The id to answer.
    pub id: ServerRequestId,
    /// `sampling/createMessage`, `elicitation/create` or `roots/list`.
    pub method: Method,
    /// Raw params.
    pub params: Option<Raw>,
    /// The client request it arrived with, when the transport knows (an HTTP POST's stream).
    pub related: Option<ClientRequestId>,
}

/// Which list changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListKind {
    /// `notifications/tools/list_changed`.
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
}

/// What the owner must act on.
#[derive(Debug)]
pub enum ClientEvent {
    /// Negotiation ended: requests can flow.
    Ready(Arc<Negotiated>),
    /// Negotiation failed while waiting for `method`; the session is finished.
    NegotiationFailed {
        /// The negotiation request that was waiting (a transport that failed it with
        /// [`ClientSession::handle_failed`] can say more about why).
        id: ClientRequestId,
        /// Its method (`server/discover` or `initialize`).
        method: Method,
        /// Why.
        error: McpError,
    },
    /// The end of a request.
    Response {
        /// Which request.
        id: ClientRequestId,
        /// Its result, or why there is none.
        outcome: Result<Answer, McpError>,
    },
    /// The server asks something of the client.
    ServerRequest(ServerRequest),
    /// A server request is no longer wanted (the server cancelled it, it timed out, or the
    /// connection closed): stop working on it; an answer would be ignored.
    ServerRequestCancelled(ServerRequestId),
    /// Progress of a request that asked for it.
    Progress {
        /// Which request.
        request: ClientRequestId,
        /// The update.
        update: ProgressUpdate,
    },
    /// A log message (`notifications/message`).
    Log {
        /// The entry.
        entry: LogEntry,
        /// The request it arrived with, when the transport knows.
        related: Option<ClientRequestId>,
    },
    /// A list changed.
    ListChanged(ListKind),
    /// A subscribed resource changed.
    ResourceUpdated {
        /// Its URI.
        uri: String,
    },
    /// Any other notification (task status, elicitation complete, subscription
    /// acknowledgements, extensions), raw.
    Notification {
        /// Its method.
        method: Method,
        /// Raw params.
        params: Option<Raw>,
        /// The request it arrived with, when the transport knows.
        related: Option<ClientRequestId>,
    },
}

impl ClientEvent {
    /// Whether this event counts against [`ClientLimits::max_events`] (notifications and
    /// server requests do; answers and negotiation results, bounded by the in-flight table,
    /// do not).
    pub(super) fn is_notice(&self) -> bool {
        !matches!(
            self,
            ClientEvent::Ready(_)
                | ClientEvent::NegotiationFailed { .. }
                | ClientEvent::Response { .. }
                | ClientEvent::ServerRequestCancelled(_)
        )
    }
}

/// What a transmit is, for transports that treat kinds differently (HTTP: a request's POST
/// carries its answer; a 2026-07-28 cancellation closes that POST instead of being sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransmitKind {
    /// A request expecting an answer.
    Request(ClientRequestId),
    /// `notifications/cancelled` for this request.
    Cancel(ClientRequestId),
    /// Another notification (`notifications/initialized`, …).
    Notification,
    /// An answer to a server request.
    Answer,
}

/// A message to send.
#[derive(Debug)]
pub struct ClientTransmit {
    /// The message.
    pub msg: Outbound,
    /// What it is.
    pub kind: TransmitKind,
    /// The revision it is spoken in, for transports that say so (HTTP's
    /// `MCP-Protocol-Version`); `None` before negotiation (`initialize`).
    pub version: Option<Revision>,
}
