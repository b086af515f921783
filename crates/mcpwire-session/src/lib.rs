//! The sans-IO MCP sessions: [`ServerSession`] (a server's side of one connection) and
//! [`ClientSession`] (a client's side, `client/`).
//!
//! **Is:** the protocol state of one client connection (or one stateless request stream):
//! revision negotiation (`initialize`, or per-request `_meta` for 2026-07-28), the
//! lifecycle, the in-flight table, cancellation, progress and log routing, resource
//! subscriptions, `subscriptions/listen`, and requests the server asks of the client.
//!
//! **Is not:** I/O. [`ServerSession`] never sees bytes, never spawns, never reads a clock:
//! time is an argument (`now`), deadlines come out of [`ServerSession::poll_timeout`].
//! Decoded messages go in; messages to send and work to dispatch come out. One session type
//! serves stdio, HTTP, WebSocket, gRPC and MCPB alike.
//!
//! # Driving a session
//! Feed inputs with the `handle_*` methods, then drain outputs in this order until all are
//! empty: [`ServerSession::poll_event`] (cancellations and ask results for the shell),
//! [`ServerSession::poll_dispatch`] (requests to run on the router),
//! [`ServerSession::poll_transmit`] (messages to encode and send), and finally
//! [`ServerSession::poll_timeout`] (when to call [`ServerSession::handle_timeout`]).
//!
//! A [`ClientSession`] is driven the same way: `handle_*` inputs and commands with `now`,
//! then [`ClientSession::poll_event`], [`ClientSession::poll_transmit`] and
//! [`ClientSession::poll_timeout`] (see its module docs).
#![deny(unsafe_code)] // one measured exception: `splice::into_raw`
#![warn(missing_docs)]

mod client;
mod config;
mod decorate;
mod server;
mod splice;
mod timers;

/// The hash map of the sessions' tables keyed by request ids: foldhash, seeded per
/// process (a fraction of SipHash's cost on the hot path, still randomized against
/// peer-chosen keys).
pub type IdMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use client::{
    Answer, ClientConfig, ClientEra, ClientEvent, ClientLimits, ClientRequestId, ClientSession,
    ClientTransmit, EraChoice, InputRequest, InputRequired, ListKind, Negotiated, RequestOptions,
    ServerRequest, ServerRequestId, TIMED_OUT_REASON, TransmitKind,
};
pub use config::{Derived, SessionConfig, SessionLimits};
pub use server::{
    AskId, Dispatch, DispatchCtx, DispatchId, Era, HandshakeState, ServerSession, SessionEvent,
    Transmit,
};
