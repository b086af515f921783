//! One raw client per wire, written from the specs with no mcpwire code on the client side
//! but the wire constants and the generated proto-mcp types: what a test sends is exactly
//! what goes out (malformed input included), what comes back is read as it arrived.
//!
//! - [`http`]: Streamable HTTP/1.1 — any method, headers and body bytes on a connection of
//!   its own; the answer's status and headers, its body read whole (JSON) or event by event
//!   (SSE); sessions and the stateless 2026-07-28 envelope as helpers.
//! - [`stdio`]: JSON-RPC lines (or any bytes) over a pipe: an in-process server's
//!   ([`crate::serve::Served::stdio`]) or a child process's stdin/stdout.
//! - [`ws`]: WebSocket text and binary frames (JSON-RPC text, proto-mcp binary), over TLS
//!   too.
//! - [`mcpb`]: MCPB frames (version negotiation, then JSON-RPC in Request and Response
//!   frames), or any bytes.
//! - [`grpc`]: unary gRPC calls of `buf.mcp.v1.MCPService` over HTTP/2 (TLS too), the
//!   status and the `ErrorResponse` details read from the answer; tool arguments built from
//!   the tool's inline schema.
//!
//! The message wires (stdio, WebSocket, MCPB) are [`Peer`]s: a [`Conversation`] runs
//! JSON-RPC over any of them. Every read is bounded ([`RECV_WITHIN`]): a server that does
//! not answer fails the test instead of hanging it.

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};

pub mod grpc;
pub mod http;
pub mod mcpb;
pub mod stdio;
pub mod ws;

/// How long any one read waits before the test fails.
pub const RECV_WITHIN: Duration = Duration::from_secs(20);

/// A JSON-RPC connection: send a message, receive the next one.
pub trait Peer: Send {
    /// Sends one message.
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()>;
    /// The next message (panics after [`RECV_WITHIN`], or if the connection closed).
    fn recv(&mut self) -> BoxFuture<'_, Value>;
}

impl<P: Peer + ?Sized> Peer for Box<P> {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        (**self).send(msg)
    }
    fn recv(&mut self) -> BoxFuture<'_, Value> {
        (**self).recv()
    }
}

/// A JSON-RPC conversation over any [`Peer`]: requests with their responses, and the other
/// messages that arrived meanwhile (notifications, the server's requests), in order.
pub struct Conversation<P> {
    /// The connection.
    pub peer: P,
    /// Messages received that were not the awaited one, in order.
    pub seen: Vec<Value>,
}

impl<P: Peer> Conversation<P> {
    /// A conversation over `peer`.
    pub fn new(peer: P) -> Self {
        Conversation {
            peer,
            seen: Vec::new(),
        }
    }

    /// Sends a request and returns its response.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.peer
            .send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        self.response(id).await
    }

    /// Receives until the response to `id` (a message with that id and no method), which
    /// it returns; the others are kept in [`Conversation::seen`].
    pub async fn response(&mut self, id: i64) -> Value {
        let id = json!(id);
        self.until(|m| m.get("id") == Some(&id) && m.get("method").is_none())
            .await
    }

    /// Receives until a message satisfying `want`, which it returns (one already in
    /// [`Conversation::seen`] first); the others are kept in `seen`.
    pub async fn until(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&want) {
            return self.seen.remove(i);
        }
        loop {
            let m = self.peer.recv().await;
            if want(&m) {
                return m;
            }
            self.seen.push(m);
        }
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.peer
            .send(json!({"jsonrpc":"2.0","method":method,"params":params}))
            .await;
    }

    /// The handshake: `initialize` (id 0) at `version` with `capabilities`, then
    /// `notifications/initialized`; the `initialize` response.
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let r = self
            .request(0, "initialize", initialize_params(version, capabilities))
            .await;
        self.notify("notifications/initialized", json!({})).await;
        r
    }
}

/// The params of an `initialize` at `version` with `capabilities`, from client `test`.
pub fn initialize_params(version: &str, capabilities: Value) -> Value {
    json!({"protocolVersion": version, "capabilities": capabilities,
           "clientInfo": {"name": "test", "version": "1"}})
}

/// A byte stream a client may run over: TCP, or TLS over TCP.
pub trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> Io for T {}

/// Connects to `addr` (`host:port`), over TLS with `tls` when given (the server name is
/// `localhost`, what the test PKI's certificates name).
pub async fn connect(addr: &str, tls: Option<std::sync::Arc<rustls::ClientConfig>>) -> Box<dyn Io> {
    let tcp = tokio::time::timeout(RECV_WITHIN, tokio::net::TcpStream::connect(addr))
        .await
        .unwrap_or_else(|_| panic!("connect {addr}: not within {RECV_WITHIN:?}"))
        .unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let _ = tcp.set_nodelay(true);
    match tls {
        None => Box::new(tcp),
        Some(config) => {
            let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
            let tls = tokio_rustls::TlsConnector::from(config)
                .connect(name, tcp)
                .await
                .expect("TLS handshake");
            Box::new(tls)
        }
    }
}

/// `host:port[/path]` of a URL with or without its scheme (`ws://127.0.0.1:9/mcp` and
/// `127.0.0.1:9/mcp` alike): the address, and the path (`/` when there is none).
pub fn split_url(url: &str) -> (String, String) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.find('/') {
        Some(i) => (rest[..i].to_owned(), rest[i..].to_owned()),
        None => (rest.to_owned(), "/".to_owned()),
    }
}
