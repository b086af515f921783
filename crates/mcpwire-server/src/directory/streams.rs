//! Resumable SSE streams as a [`super::SessionDirectory`] keeps their copies: which log an
//! event belongs to, and what following another replica's stream yields.

use std::sync::Arc;

use mcpwire_model::RequestId;

use super::DirectoryUnavailable;

/// The copy of one resumable stream: stream `stream` (its event-id prefix, `p{n}` or `g{n}`)
/// of session `sid`, answering `request` (`None`: the standalone stream).
#[derive(Debug, Clone)]
pub struct StreamLog {
    /// The session's name (a [`super::SessionTicket`]'s `sid`).
    pub sid: Arc<str>,
    /// The stream's name: `p{n}` (a request's) or `g{n}` (the standalone one).
    pub stream: String,
    /// The request the stream answers.
    pub request: Option<RequestId>,
}

/// An event copied for other replicas: its sequence number and JSON.
pub type CopiedEvent = (u64, Arc<str>);

/// An event of a followed stream.
#[derive(Debug)]
pub enum Followed {
    /// A copied event: its sequence number and JSON.
    Event(u64, Arc<str>),
    /// The replica running the request stopped before answering it: the error to end the
    /// stream with (as event `seq`).
    Lost(u64, Arc<str>),
}

/// Why a stream cannot be followed or replayed from the directory.
#[derive(Debug, thiserror::Error)]
pub enum FollowError {
    /// No replica copied it (or its copy expired).
    #[error("no replica kept that stream")]
    Unknown,
    /// The directory cannot be reached, or this replica follows too many streams.
    #[error(transparent)]
    Unavailable(#[from] DirectoryUnavailable),
}
