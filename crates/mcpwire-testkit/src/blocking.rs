//! The [`crate::raw`] clients for tests without a runtime of their own: tests of the binary
//! (the smoke tier) and tests of a server on a [`crate::serve::Host`]. Each connection
//! carries a small current-thread runtime its calls block on; the client code is the raw
//! one, so a blocking test sends and reads exactly the same bytes.
//!
//! Not for use on a tokio runtime's thread (a runtime cannot block inside another).

use std::ops::{Deref, DerefMut};
use std::process::ExitStatus;
use std::sync::Arc;

use futures::future::BoxFuture;
use mcpwire_wire::proto_mcp::pb::McpMessage;
use serde_json::{Value, json};

use crate::raw;

/// A current-thread runtime for one connection.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// A JSON-RPC connection whose calls block: send a message, receive the next one.
pub trait Peer: Send {
    /// Sends one message.
    fn send(&mut self, msg: Value);
    /// The next message (panics after [`raw::RECV_WITHIN`]).
    fn recv(&mut self) -> Value;
}

/// A blocking [`Peer`] seen as a raw one (its calls complete at once when polled), so
/// [`Conversation`] is the raw conversation.
struct Adapted<'a, P>(&'a mut P);

impl<P: Peer> raw::Peer for Adapted<'_, P> {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        self.0.send(msg);
        Box::pin(std::future::ready(()))
    }
    fn recv(&mut self) -> BoxFuture<'_, Value> {
        Box::pin(std::future::ready(self.0.recv()))
    }
}

/// [`raw::Conversation`] over a blocking [`Peer`].
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

    /// Runs `f` on the raw conversation over this one's peer and messages.
    fn with<T>(&mut self, f: impl AsyncFnOnce(&mut raw::Conversation<Adapted<'_, P>>) -> T) -> T {
        let mut c = raw::Conversation {
            peer: Adapted(&mut self.peer),
            seen: std::mem::take(&mut self.seen),
        };
        let out = futures::executor::block_on(f(&mut c));
        self.seen = c.seen;
        out
    }

    /// See [`raw::Conversation::request`].
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.with(async |c| c.request(id, method, params).await)
    }

    /// See [`raw::Conversation::response`].
    pub fn response(&mut self, id: i64) -> Value {
        self.with(async |c| c.response(id).await)
    }

    /// See [`raw::Conversation::until`].
    pub fn until(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        self.with(async |c| c.until(want).await)
    }

    /// See [`raw::Conversation::notify`].
    pub fn notify(&mut self, method: &str, params: Value) {
        self.with(async |c| c.notify(method, params).await)
    }

    /// See [`raw::Conversation::initialize`].
    pub fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        self.with(async |c| c.initialize(version, capabilities).await)
    }
}

/// A raw client with the runtime its calls block on.
pub struct Blocking<C> {
    rt: tokio::runtime::Runtime,
    inner: C,
}

impl<C> Deref for Blocking<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.inner
    }
}

impl<C> DerefMut for Blocking<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.inner
    }
}

impl<C> Blocking<C> {
    /// Runs `f` with the raw client on this connection's runtime.
    pub fn run<'a, T>(&'a mut self, f: impl FnOnce(&'a mut C) -> BoxFuture<'a, T>) -> T {
        self.rt.block_on(f(&mut self.inner))
    }
}

impl<C: raw::Peer> Peer for Blocking<C> {
    fn send(&mut self, msg: Value) {
        self.rt.block_on(self.inner.send(msg));
    }
    fn recv(&mut self) -> Value {
        self.rt.block_on(self.inner.recv())
    }
}

/// A blocking stdio connection ([`raw::stdio::Stdio`]).
pub type Stdio = Blocking<raw::stdio::Stdio>;

impl Stdio {
    /// Over one end of an in-process server's pipe ([`crate::serve::Served::take_pipe`]).
    pub fn over(pipe: tokio::io::DuplexStream) -> Stdio {
        Blocking {
            rt: runtime(),
            inner: raw::stdio::Stdio::over(pipe),
        }
    }

    /// Spawns `command` with its stdin and stdout piped to this client; killed on drop.
    pub fn spawn(command: std::process::Command) -> Stdio {
        let rt = runtime();
        let inner = rt.block_on(async { raw::stdio::Stdio::spawn(command) });
        Blocking { rt, inner }
    }

    /// Writes `bytes` as they are.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.rt.block_on(self.inner.write_raw(bytes));
    }

    /// The next output line; `None` once the output ended.
    pub fn recv_line(&mut self) -> Option<String> {
        self.rt.block_on(self.inner.recv_line())
    }

    /// The next `n` output bytes.
    pub fn read_exact(&mut self, n: usize) -> Vec<u8> {
        self.rt.block_on(self.inner.read_exact(n))
    }

    /// Every remaining output line, to its end.
    pub fn rest(&mut self) -> Vec<String> {
        self.rt.block_on(self.inner.rest())
    }

    /// Closes the server's input.
    pub fn close_input(&mut self) {
        self.rt.block_on(self.inner.close_input());
    }

    /// Receives until the response with `id`, returning it and the messages before it.
    pub fn recv_response(&mut self, id: Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let m = Peer::recv(self);
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    /// Sends a request and returns its response (the messages before it dropped).
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        Peer::send(
            self,
            json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}),
        );
        self.recv_response(json!(id)).0
    }

    /// `initialize` (id 0) at `version`, then `notifications/initialized`; the response.
    pub fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(0, "initialize", raw::initialize_params(version, json!({})));
        Peer::send(
            self,
            json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        r
    }

    /// Closes the input and waits (bounded) for the child to exit; its status.
    pub fn finish(self) -> ExitStatus {
        let Blocking { rt, inner } = self;
        rt.block_on(inner.finish())
    }
}

/// A blocking WebSocket connection ([`raw::ws::Ws`]).
pub type Ws = Blocking<raw::ws::Ws>;

impl Ws {
    /// See [`raw::ws::Ws::connect`].
    pub fn connect(url: &str) -> Ws {
        let rt = runtime();
        let inner = rt.block_on(raw::ws::Ws::connect(url));
        Blocking { rt, inner }
    }

    /// See [`raw::ws::Ws::connect_with`].
    pub fn connect_with(url: &str, headers: &[(&str, &str)]) -> Result<Ws, raw::ws::Refused> {
        let rt = runtime();
        let inner = rt.block_on(raw::ws::Ws::connect_with(url, headers))?;
        Ok(Blocking { rt, inner })
    }

    /// See [`raw::ws::Ws::connect_tls`].
    pub fn connect_tls(
        url: &str,
        headers: &[(&str, &str)],
        config: Arc<rustls::ClientConfig>,
    ) -> Result<Ws, raw::ws::Refused> {
        let rt = runtime();
        let inner = rt.block_on(raw::ws::Ws::connect_tls(url, headers, config))?;
        Ok(Blocking { rt, inner })
    }

    /// Sends a text message.
    pub fn send_text(&mut self, text: &str) {
        self.rt.block_on(self.inner.send_text(text));
    }

    /// Sends a binary message.
    pub fn send_binary(&mut self, bytes: Vec<u8>) {
        self.rt.block_on(self.inner.send_binary(bytes));
    }

    /// Sends a proto-mcp message (binary).
    pub fn send_proto(&mut self, msg: &McpMessage) {
        self.rt.block_on(self.inner.send_proto(msg));
    }

    /// The next proto-mcp message.
    pub fn recv_proto(&mut self) -> McpMessage {
        self.rt.block_on(self.inner.recv_proto())
    }

    /// Reads until the server's Close frame; its code.
    pub fn close_code(&mut self) -> Option<u16> {
        self.rt.block_on(self.inner.close_code())
    }
}

/// A blocking MCPB connection ([`raw::mcpb::Mcpb`]).
pub type Mcpb = Blocking<raw::mcpb::Mcpb>;

impl Mcpb {
    /// See [`raw::mcpb::Mcpb::connect`].
    pub fn connect(addr: &str) -> Mcpb {
        let rt = runtime();
        let inner = rt.block_on(raw::mcpb::Mcpb::connect(addr));
        Blocking { rt, inner }
    }

    /// See [`raw::mcpb::Mcpb::connect_raw`].
    pub fn connect_raw(addr: &str, tls: Option<Arc<rustls::ClientConfig>>) -> Mcpb {
        let rt = runtime();
        let inner = rt.block_on(raw::mcpb::Mcpb::connect_raw(addr, tls));
        Blocking { rt, inner }
    }

    /// Sends a frame of type `kind` carrying `payload` as JSON.
    pub fn frame(&mut self, kind: u16, payload: &Value) {
        self.rt.block_on(self.inner.frame(kind, payload));
    }

    /// Writes `bytes` as they are.
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.rt.block_on(self.inner.write_raw(bytes));
    }

    /// The next frame, its body as JSON.
    pub fn next_frame(&mut self) -> (u16, Value) {
        self.rt.block_on(self.inner.next_frame())
    }

    /// The next frame as it came; `None` once the server closed the connection.
    pub fn next_raw_frame(&mut self) -> Option<(u16, Vec<u8>)> {
        self.rt.block_on(self.inner.next_raw_frame())
    }
}

/// Blocking unary gRPC calls ([`raw::grpc`]).
pub mod grpc {
    use std::sync::Arc;

    pub use crate::raw::grpc::{GrpcError, arguments, structured};

    /// See [`crate::raw::grpc::call`].
    pub fn call<R: prost::Message + Default>(
        addr: &str,
        rpc: &str,
        request: &impl prost::Message,
    ) -> Result<R, GrpcError> {
        call_over(addr, rpc, request, &[], None)
    }

    /// See [`crate::raw::grpc::call_with`].
    pub fn call_with<R: prost::Message + Default>(
        addr: &str,
        rpc: &str,
        request: &impl prost::Message,
        metadata: &[(&str, &str)],
    ) -> Result<R, GrpcError> {
        call_over(addr, rpc, request, metadata, None)
    }

    /// See [`crate::raw::grpc::call_over`].
    pub fn call_over<R: prost::Message + Default>(
        addr: &str,
        rpc: &str,
        request: &impl prost::Message,
        metadata: &[(&str, &str)],
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<R, GrpcError> {
        let call = crate::raw::grpc::call_over(addr, rpc, request, metadata, tls);
        super::runtime().block_on(call)
    }
}

/// Blocking Streamable HTTP ([`raw::http`]).
pub mod http {
    use std::ops::Deref;

    use serde_json::Value;

    use crate::raw;
    pub use crate::raw::http::{ACCEPT_BOTH, Answer, REVISION, STATELESS, stateless_request};

    /// A Streamable HTTP endpoint ([`raw::http::HttpClient`]) whose requests block.
    #[derive(Clone, Debug)]
    pub struct HttpClient(raw::http::HttpClient);

    impl Deref for HttpClient {
        type Target = raw::http::HttpClient;
        fn deref(&self) -> &raw::http::HttpClient {
            &self.0
        }
    }

    impl From<raw::http::HttpClient> for HttpClient {
        fn from(c: raw::http::HttpClient) -> HttpClient {
            HttpClient(c)
        }
    }

    /// An answer ([`raw::http::Exchange`]) whose body reads block.
    pub struct Exchange {
        rt: tokio::runtime::Runtime,
        inner: raw::http::Exchange,
    }

    impl std::fmt::Debug for Exchange {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            self.inner.fmt(f)
        }
    }

    impl Deref for Exchange {
        type Target = raw::http::Exchange;
        fn deref(&self) -> &raw::http::Exchange {
            &self.inner
        }
    }

    /// Runs `f` (a request) on a new runtime the answer keeps.
    fn exchange<F: Future<Output = raw::http::Exchange>>(f: impl FnOnce() -> F) -> Exchange {
        let rt = super::runtime();
        let inner = rt.block_on(f());
        Exchange { rt, inner }
    }

    impl HttpClient {
        /// See [`raw::http::HttpClient::new`].
        pub fn new(url: &str) -> HttpClient {
            HttpClient(raw::http::HttpClient::new(url))
        }

        /// See [`raw::http::HttpClient::with_revision`].
        pub fn with_revision(self, revision: &str) -> HttpClient {
            HttpClient(self.0.with_revision(revision))
        }

        /// See [`raw::http::HttpClient::send`].
        pub fn send(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Exchange {
            exchange(|| self.0.send(method, headers, body))
        }

        /// See [`raw::http::HttpClient::send_to`].
        pub fn send_to(
            &self,
            method: &str,
            path: &str,
            headers: &[(&str, &str)],
            body: &[u8],
        ) -> Exchange {
            exchange(|| self.0.send_to(method, path, headers, body))
        }

        /// See [`raw::http::HttpClient::send_raw`].
        pub fn send_raw(&self, bytes: &[u8]) -> Exchange {
            exchange(|| self.0.send_raw(bytes))
        }

        /// See [`raw::http::HttpClient::post`].
        pub fn post(&self, session: Option<&str>, msg: &Value) -> Exchange {
            exchange(|| self.0.post(session, msg))
        }

        /// See [`raw::http::HttpClient::post_as`].
        pub fn post_as(&self, key: Option<&str>, session: Option<&str>, msg: &Value) -> Exchange {
            exchange(|| self.0.post_as(key, session, msg))
        }

        /// See [`raw::http::HttpClient::post_with`].
        pub fn post_with(
            &self,
            session: Option<&str>,
            msg: &Value,
            extra: &[(&str, &str)],
        ) -> Exchange {
            exchange(|| self.0.post_with(session, msg, extra))
        }

        /// See [`raw::http::HttpClient::get`].
        pub fn get(&self, session: &str, last_event_id: Option<&str>) -> Exchange {
            exchange(|| self.0.get(session, last_event_id))
        }

        /// See [`raw::http::HttpClient::delete`].
        pub fn delete(&self, session: &str) -> Exchange {
            exchange(|| self.0.delete(session))
        }

        /// See [`raw::http::HttpClient::initialize_with`].
        pub fn initialize_with(&self, capabilities: Value) -> String {
            super::runtime().block_on(self.0.initialize_with(capabilities))
        }

        /// See [`raw::http::HttpClient::initialize`].
        pub fn initialize(&self) -> String {
            super::runtime().block_on(self.0.initialize())
        }

        /// See [`raw::http::HttpClient::post_stateless`].
        pub fn post_stateless(&self, id: i64, method: &str, params: Value) -> Exchange {
            exchange(|| self.0.post_stateless(id, method, params))
        }

        /// See [`raw::http::HttpClient::post_stateless_with`].
        pub fn post_stateless_with(
            &self,
            id: i64,
            method: &str,
            params: Value,
            capabilities: Value,
        ) -> Exchange {
            exchange(|| self.0.post_stateless_with(id, method, params, capabilities))
        }

        /// See [`raw::http::HttpClient::post_stateless_extra`].
        pub fn post_stateless_extra(
            &self,
            id: i64,
            method: &str,
            params: Value,
            capabilities: Value,
            extra: &[(&str, &str)],
        ) -> Exchange {
            exchange(|| {
                self.0
                    .post_stateless_extra(id, method, params, capabilities, extra)
            })
        }
    }

    impl Exchange {
        /// A plain `GET` of `path` at `addr` (`host:port`): a metrics or health endpoint.
        pub fn get(addr: &str, path: &str) -> Exchange {
            HttpClient::new(&format!("{addr}{path}")).send("GET", &[], b"")
        }

        /// POSTs `msg` in session `sid` of the endpoint `path` at `addr`.
        pub fn post_to(addr: &str, path: &str, sid: &str, msg: &Value) -> Exchange {
            HttpClient::new(&format!("{addr}{path}")).post(Some(sid), msg)
        }

        /// See [`raw::http::Exchange::bytes`].
        pub fn bytes(self) -> Vec<u8> {
            self.rt.block_on(self.inner.bytes())
        }

        /// See [`raw::http::Exchange::text`].
        pub fn text(self) -> String {
            self.rt.block_on(self.inner.text())
        }

        /// See [`raw::http::Exchange::whole`].
        pub fn whole(self) -> Answer {
            self.rt.block_on(self.inner.whole())
        }

        /// See [`raw::http::Exchange::next_message`].
        pub fn next_message(&mut self) -> Value {
            self.rt.block_on(self.inner.next_message())
        }

        /// See [`raw::http::Exchange::json`].
        pub fn json(self) -> Value {
            self.rt.block_on(self.inner.json())
        }

        /// See [`raw::http::Exchange::message`].
        pub fn message(self) -> Value {
            self.rt.block_on(self.inner.message())
        }

        /// See [`raw::http::Exchange::next_raw_event`].
        pub fn next_raw_event(&mut self) -> Option<String> {
            self.rt.block_on(self.inner.next_raw_event())
        }

        /// See [`raw::http::Exchange::event`].
        pub fn event(&mut self) -> Option<(Option<String>, Option<Value>)> {
            self.rt.block_on(self.inner.event())
        }

        /// See [`raw::http::Exchange::next_event`].
        pub fn next_event(&mut self) -> Option<(Option<String>, Value)> {
            self.rt.block_on(self.inner.next_event())
        }

        /// See [`raw::http::Exchange::events`].
        pub fn events(self) -> Vec<Value> {
            self.rt.block_on(self.inner.events())
        }
    }
}
