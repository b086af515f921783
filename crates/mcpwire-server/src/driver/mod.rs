//! The driver core: the pieces every wire's connection loop is built from, so that a fix to
//! how connections wait, read, write or wind down lands once.
//!
//! - [`calls`]: [`Calls`] runs a session's dispatches on the router (inline futures,
//!   cancellation, asks, the bounded queue of call events); [`Calls::wait`] is the one wait on
//!   all of it plus the session timer, naming what happened as a [`Wake`], and
//!   [`Calls::apply`] hands that to the session.
//! - [`server_core`]: [`ServerCore`], a [`ServerSession`] and its [`Calls`] — taking input,
//!   producing output into a bounded buffer, and winding down when the peer's input ends
//!   (accepted calls get a grace period). Every server-side wire holds one per session.
//! - [`framed`]: [`FramedDriver`], one task per connection over a byte stream: reads frames
//!   through a codec, writes bytes in batches, busy-polls briefly before sleeping, and stops
//!   reading while its write buffer is full (backpressure). Role-neutral: what runs on top
//!   is an [`Endpoint`] (stdio's and MCPB's server connections today).
//! - [`relayed`]: the calls of a session relayed to an upstream as raw frames
//!   (`mcpwire_relay`), counted by [`Calls`] with the calls it runs.
//! - [`alarm`]: [`Alarm`], a timer for a deadline that moves with every request, armed
//!   once rather than registered anew on every wait ([`Calls::wait`], the HTTP session's
//!   idle expiry).
//! - [`cancel_watch`]: [`CancelWatch`], waiting for a token's cancellation beside something
//!   that wakes the task often (an HTTP connection), at the cost of an atomic load per
//!   wake-up.
//! - [`exchange`]: [`Exchange`], one request on a session of its own, run until its response
//!   (stateless HTTP and gRPC).
//!
//! Who uses what: stdio (`crate::stdio`) and MCPB (`crate::mcpb`) are endpoints of the
//! framed driver; the WebSocket connection and the HTTP session task hold a [`ServerCore`]
//! in loops of their own (their I/O is messages, not bytes); stateless HTTP and gRPC run an
//! [`Exchange`].
//!
//! [`ServerSession`]: mcpwire_session::ServerSession

pub(crate) mod alarm;
pub(crate) mod calls;
pub(crate) mod cancel_watch;
pub(crate) mod exchange;
pub mod framed;
pub(crate) mod relayed;
pub(crate) mod server_core;

pub(crate) use alarm::Alarm;
pub(crate) use calls::{Calls, Wake};
pub(crate) use cancel_watch::CancelWatch;
#[cfg(feature = "http")]
pub(crate) use exchange::Exchange;
pub use framed::{Endpoint, FramedDriver, Status};
pub(crate) use server_core::{RelayedOutput, ServerCore};

/// The shell's clock for protocol time (deadlines, idle expiry, grace periods): tokio's, so
/// tests can pause and advance it (`tokio::time::pause`), as the `std` instant the sans-IO
/// session takes. (Busy polling measures real time and keeps `std::time::Instant::now`.)
pub fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}
