//! Upstream MCP servers as backends: [`UpstreamBackend`] fronts a server reached through
//! the library's [`Client`](mcpwire_client::Client) — a stdio command, a Streamable HTTP
//! URL or an MCPB address — so a federation (and so `mcpwire serve`) can serve its tools,
//! resources and prompts next to others.
//!
//! **Is:** forwarding every request with its params as received (names and URIs as the
//! federation mapped them, arguments and `_meta` untouched), results and errors as the
//! upstream sent them; progress, cancellation, logs, list changes and resource updates;
//! the upstream's asks (sampling, elicitation, roots) put to the downstream call that
//! caused them; `input_required` rounds across eras.
//!
//! **Is not:** catalog merging or renaming (the federation), a client (the `client`
//! module), a listener.
//!
//! Modules, leaves first: `forward.rs` (what a request becomes upstream), `routes.rs`
//! (task support and header parameters of the upstream's tools, learnt from its lists),
//! `link.rs` (one
//! upstream session and the calls on it), `call.rs` (one call on a link), `fast.rs` (a
//! `tools/call` on a link that is up, without rounds: the forwarding fast path), `hold.rs`
//! (upstream requests waiting for a stateless client's retry), `restart.rs` (the shared
//! session opened again with backoff when it ends), `sessions.rs`
//! (an upstream session per downstream session, bounded), `reattach.rs` (in a replica set,
//! a downstream session's HTTP upstream session continued on another replica),
//! `consent.rs` (a user's authorization of the upstream's OAuth put to them), `watched.rs` (resources session-less listeners
//! watch, counted), `listen.rs` (a 2026-07-28 upstream's list changes and resource
//! updates, on a `subscriptions/listen` stream), `health.rs`
//! (the shared session of an HTTP upstream pinged: nothing else says the server went
//! away), `backend.rs`.

mod backend;
mod call;
mod consent;
mod fast;
mod forward;
mod health;
mod hold;
mod link;
mod listen;
mod offered;
mod reattach;
mod restart;
mod routes;
mod sessions;
mod watched;

pub use backend::{DEFAULT_SESSION_IDLE, UpstreamBackend, UpstreamConfig};
