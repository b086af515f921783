//! Where the Streamable HTTP listener's sessions live beyond this process: the
//! [`SessionDirectory`] a [`crate::Service`] may hold, and what it exchanges with the
//! listener.
//!
//! One process needs none: session ids are random keys of the listener's table and a session
//! exists only where it started. In a replica set (several processes behind a load balancer,
//! each with a table of its own) the directory is what they share: session ids any replica
//! can open (bound to the caller that opened the session), records saying which sessions are
//! live, the messages a client sends to one replica for a request another one runs, resource
//! subscriptions, copies of resumable SSE streams, and the list changes every client hears.
//!
//! The listener knows only this trait; the gateway's replica set implements it. Nothing here
//! depends on another module of the crate.
//!
//! - `ticket.rs`: [`SessionTicket`], a session id opened for its caller.
//! - `streams.rs`: [`StreamLog`], [`Followed`], [`FollowError`], [`CopiedEvent`]: the
//!   copies of resumable streams.

mod streams;
mod ticket;

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::stream::BoxStream;
use mcpwire_model::{BackendEvent, Message, RequestId};
use mcpwire_router::{BoxFuture, Identity, SharedSession};
use mcpwire_session::HandshakeState;
use tokio::sync::broadcast;

pub use streams::{CopiedEvent, FollowError, Followed, StreamLog};
pub use ticket::SessionTicket;

/// Where sessions live beyond this process, as the HTTP listener uses it (see the
/// [module](self)). Object-safe; every method that reaches shared state returns a boxed
/// future. A listener names itself by its path (session ids are sealed per path, so a view
/// on a path of its own never opens another's) and, once
/// [attached](SessionDirectory::attach), by the endpoint name the directory gave it.
pub trait SessionDirectory: Send + Sync + std::fmt::Debug + 'static {
    // Session ids and records.

    /// The id the client of the new session `sid` presents from now on at the listener on
    /// `path`: its handshake `state` sealed and bound to `owner`, once the session is
    /// recorded as live for `ttl` (its idle time).
    fn start<'a>(
        &'a self,
        path: &'a str,
        sid: &'a str,
        state: &'a HandshakeState,
        owner: Option<&'a Identity>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<String, DirectoryUnavailable>>;

    /// Opens the session id `id` presented by `caller` to the listener on `path`. `None` when
    /// it does not open (forged, another path's, an unknown key) or is bound to another
    /// caller: to this caller the session does not exist.
    fn open(&self, path: &str, id: &str, caller: Option<&Identity>) -> Option<SessionTicket>;

    /// How often a replica holding a session checks that it is still live (zero: on every
    /// request).
    fn recheck(&self) -> Duration;

    /// Whether session `sid`, held here, is still live (not ended or expired through
    /// another replica), extending it by `ttl`.
    fn refresh<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, DirectoryUnavailable>>;

    /// The handshake to continue the session `ticket` names on this replica, extending it by
    /// `ttl`. `None` when it ended or expired, or was sealed with a revision this build does
    /// not know.
    fn revive<'a>(
        &'a self,
        ticket: &'a SessionTicket,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<HandshakeState>, DirectoryUnavailable>>;

    /// The resource subscriptions session `sid` made, on whichever replica.
    fn subscriptions<'a>(
        &'a self,
        sid: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, DirectoryUnavailable>>;

    /// Ends session `sid` for every replica (`DELETE` at the endpoint named `endpoint`);
    /// whether it was live.
    fn end<'a>(
        &'a self,
        endpoint: &'a str,
        sid: &'a str,
    ) -> BoxFuture<'a, Result<bool, DirectoryUnavailable>>;

    /// Session `sid` as backends see it (its id on every replica and its records there);
    /// `ttl`: its idle time.
    fn backend_session(&self, sid: &str, ttl: Duration) -> SharedSession;

    // Endpoints, and what passes between them.

    /// Registers the sessions of a listener serving `path` under a fresh endpoint name, so
    /// messages and changes from other replicas reach them; dropping `sessions` unregisters
    /// them.
    fn attach<'a>(
        &'a self,
        sessions: Weak<dyn HeldSessions>,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Arc<str>, DirectoryUnavailable>>;

    /// Passes the router's `events` to `hub` (what the sessions of endpoint `endpoint`,
    /// serving `path`, hear) and spreads them to the endpoints serving `path` on other
    /// replicas, until `events` closes or `alive` is gone.
    fn spread_events(
        self: Arc<Self>,
        endpoint: Arc<str>,
        path: String,
        events: broadcast::Receiver<BackendEvent>,
        hub: broadcast::Sender<BackendEvent>,
        alive: Weak<dyn HeldSessions>,
    );

    /// What the ids of the asks of endpoint `endpoint`'s sessions start with.
    fn ask_prefix(&self, endpoint: &str) -> Arc<str>;

    /// The endpoint that sent the ask `id` answers, when it is another than `endpoint`.
    fn asked_elsewhere<'a>(&self, endpoint: &str, id: &'a RequestId) -> Option<&'a str>;

    /// Relays the client's message `msg` (its JSON as received) for session `sid`, received
    /// at endpoint `from`, to endpoint `to` or (`None`) to every other endpoint holding the
    /// session.
    fn relay<'a>(
        &'a self,
        from: &'a str,
        to: Option<&'a str>,
        sid: &'a str,
        msg: &'a [u8],
    ) -> BoxFuture<'a, Result<(), DirectoryUnavailable>>;

    /// Shares a resource subscription (`on`) or its end that session `sid` made at endpoint
    /// `from`: kept for replicas continuing the session later (as long as the session,
    /// `ttl`) and told to those holding it now. Past the directory's bounds it is not shared.
    fn share_subscription<'a>(
        &'a self,
        from: &'a str,
        sid: &'a str,
        uri: &'a str,
        on: bool,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), DirectoryUnavailable>>;

    // Resumable streams.

    /// Copies event `seq` (JSON `data`) of the stream `log` for other replicas, never
    /// waiting (a copy that cannot be kept is dropped). `keep_from`: the first event the
    /// session still keeps; `end`: the event is the request's response.
    fn log_event(&self, log: &StreamLog, seq: u64, data: &str, keep_from: u64, end: bool);

    /// What was copied of request stream `stream` (`p{n}`) of session `sid` after event
    /// `after`, then what is copied next, until its response — or a [`Followed::Lost`]
    /// when the replica running the request stopped first.
    fn follow<'a>(
        &'a self,
        sid: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Followed>, FollowError>>;

    /// The events of the standalone stream `stream` (`g{n}`) of session `sid` copied after
    /// `after`: what the client missed.
    fn replay<'a>(
        &'a self,
        sid: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<CopiedEvent>, FollowError>>;
}

/// One endpoint's sessions as a [`SessionDirectory`] reaches them: what other replicas send
/// to the sessions a listener holds (the HTTP session table).
pub trait HeldSessions: Send + Sync + 'static {
    /// Feeds `msg` to session `sid` if this endpoint holds it (never rebuilding it);
    /// whether it did.
    fn deliver(&self, sid: &str, msg: Message) -> BoxFuture<'static, bool>;

    /// Ends session `sid` here if this endpoint holds it (`DELETE` on another replica).
    fn end(&self, sid: &str);

    /// Passes a list change or resource update from another replica to every session
    /// this endpoint holds (each sends what it is interested in, as for its own events).
    fn event(&self, event: &BackendEvent);

    /// Records (`on`) or ends a resource subscription session `sid` made through another
    /// replica, if this endpoint holds the session.
    fn subscription(&self, sid: &str, uri: &str, on: bool);
}

/// The directory's shared state cannot be used now (unreachable, or past a bound): the
/// request may be retried.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DirectoryUnavailable(Box<dyn std::error::Error + Send + Sync>);

impl DirectoryUnavailable {
    /// Unavailable because of `cause`.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        DirectoryUnavailable(cause.into())
    }
}
