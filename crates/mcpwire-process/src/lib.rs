//! mcpwire's tool-process host: tools written in any language with a protomcp SDK.
//!
//! **Is:** the protomcp `Envelope` protocol (`[u32 BE length][Envelope]` frames over a unix
//! socket, raw sideband with zstd) as [`EnvelopeCodec`]; [`ProcessBackend`], a router
//! `Backend` that spawns the tool file, completes the handshake, forwards calls, reads,
//! prompts and completions, carries progress, logs, cancellation, sampling and roots, keeps
//! the process's active tool list, restarts it when it crashes and reloads it on file
//! changes.
//!
//! **Is not:** an MCP wire. The process's tools are served over whatever wire mcpwire
//! serves; see `docs/design/tool-processes.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod backend;
pub mod codec;
mod conn;
mod convert;
mod forward;
mod io;
mod salvage;
pub mod sideband;
pub mod spawn;
mod supervise;
mod task;
pub mod toollist;
mod watch;

pub use backend::{ProcessBackend, ProcessConfig, StartError};
pub use codec::{EnvelopeCodec, FramingError, ProcFrame};
pub use spawn::Launch;

/// The protomcp messages, generated from `proto/protomcp.proto`.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/protomcp.rs"));
}
