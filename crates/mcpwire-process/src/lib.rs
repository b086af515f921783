//! mcpwire's tool-process host: tools written in any language with a protomcp SDK, spoken
//! to over the Envelope protocol (the tool-process protocol).
//!
//! **Is:** the Envelope protocol (`[u32 BE length][Envelope]` frames over a unix socket,
//! raw sideband with zstd) as [`EnvelopeCodec`]; [`ProcessBackend`], a router `Backend` that
//! spawns the tool file, completes the handshake, forwards calls, reads, prompts and
//! completions, carries progress, logs, cancellation, sampling and roots, keeps the process's
//! active tool list, restarts it when it crashes and reloads it on file changes.
//!
//! **Is not:** an MCP wire. The process's tools are served over whatever wire mcpwire
//! serves; see `docs/design/tool-processes.md`.
//!
//! Modules, leaves first: `pending` (the pure pending-request table and its attribution
//! rule), `salvage`, `chunks`, `codec`, `handshake`, `watch`, `spawn`, `convert`; then
//! `channel` (one generation's socket handle), `ask`, `io` (its I/O task), `task`,
//! `current`, `forward`, `host` (`ProcessHost`), `supervise`, `backend`. No module cycles.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod ask;
mod backend;
mod channel;
mod chunks;
pub mod codec;
mod config;
mod convert;
mod current;
mod forward;
mod handshake;
mod host;
mod io;
mod pending;
mod salvage;
pub mod sideband;
pub mod spawn;
mod supervise;
mod task;
pub mod toollist;
pub mod watch;

pub use backend::{ProcessBackend, StartError};
pub use channel::ProcessLoad;
pub use codec::{EnvelopeCodec, FramingError, ProcFrame};
pub use config::{DEFAULT_MAX_PENDING, ProcessConfig};
pub use spawn::Launch;

/// The Envelope messages, generated from `proto/envelope.proto`.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/protomcp.rs"));
}
