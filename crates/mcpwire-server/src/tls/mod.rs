//! TLS (rustls, ring provider) on both sides:
//!
//! - listeners: [`TlsConfig`] (certificate, key, optional client CA for mTLS) is what a
//!   wire's configuration carries; `incoming.rs` is the one accept loop every network
//!   listener (HTTP, WebSocket, gRPC, MCPB) is built on — TCP, then a bounded, concurrent
//!   handshake — and `reload.rs` swaps in a new certificate when its files change;
//! - the client: [`ClientTls`] (custom CA, client certificate) for `https://` and
//!   `mcpbs://` targets and JWKS URLs (`client.rs`).
//!
//! Decisions: `docs/design/tls.md`. Depends on nothing else in the crate but `observe` (a
//! leaf) for its one counter.

mod client;
mod identity;
mod incoming;
mod pem;
mod reload;
mod server;

pub use client::ClientTls;
pub use client::connect_with;
pub use incoming::{
    HANDSHAKE_FAILURES_TOTAL, HANDSHAKE_TIMEOUT, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_IP,
};
pub use incoming::{Incoming, PeerAddr, ServerStream, alpn};
pub use pem::TlsError;
pub use pem::provider as pem_provider;
pub use server::{ClientAuth, DEFAULT_RELOAD_EVERY, TlsConfig};
