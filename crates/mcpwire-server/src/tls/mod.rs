//! TLS (rustls, ring provider) on both sides, behind the `tls` feature:
//!
//! - listeners: [`TlsConfig`] (certificate, key, optional client CA for mTLS) is what a
//!   wire's configuration carries; `incoming.rs` is the one accept loop every network
//!   listener (HTTP, WebSocket, gRPC, MCPB) is built on — TCP, then (with `tls`) a bounded,
//!   concurrent handshake — and `reload.rs` swaps in a new certificate when its files change;
//! - the client: [`ClientTls`] (custom CA, client certificate) for `https://` and
//!   `mcpbs://` targets and JWKS URLs (`client.rs`).
//!
//! The settings (`config.rs`) and the accept loop are always compiled; without the feature
//! a listener configured for TLS refuses to start ([`TlsError::Unavailable`]) and no rustls
//! crate is built. Decisions: `docs/design/tls.md`. Depends on nothing else in the crate
//! but `observe` (a leaf) for its one counter.

#[cfg(feature = "tls")]
mod client;
mod config;
#[cfg(feature = "tls")]
mod identity;
mod incoming;
#[cfg(feature = "tls")]
mod pem;
#[cfg(feature = "tls")]
mod reload;
#[cfg(feature = "tls")]
mod server;

#[cfg(feature = "tls")]
pub use client::connect_with;
pub use config::{ClientAuth, ClientTls, DEFAULT_RELOAD_EVERY, TlsConfig, TlsError};
pub use incoming::{
    HANDSHAKE_FAILURES_TOTAL, HANDSHAKE_TIMEOUT, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_IP,
};
pub use incoming::{Incoming, PeerAddr, ServerStream, alpn};
#[cfg(feature = "tls")]
pub use pem::provider as pem_provider;
