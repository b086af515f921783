//! Clients for the network wires of `mcpwire demo --transport ws|grpc|mcpb`, written from
//! the specs with no mcpwire code on the client side but the wire constants: JSON-RPC as
//! WebSocket text, proto-mcp as WebSocket binary, MCPB frames (authentication off), and
//! unary gRPC over HTTP/2 (hyper's client; status and `grpc-status-details-bin` read from
//! the response).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcpwire_wire::mcpb::{HEADER_LEN, MAGIC, MAX_VERSION, frame_type};
use mcpwire_wire::proto_mcp::pb::{self, McpMessage};
use prost::Message as _;
use serde_json::{Value, json};

/// A JSON-RPC connection: send a message, receive the next one.
pub trait Peer {
    /// Sends one message.
    fn send(&mut self, msg: Value);
    /// The next message (panics after 10 s).
    fn recv(&mut self) -> Value;
}

impl Peer for super::Proc {
    fn send(&mut self, msg: Value) {
        super::Proc::send(self, msg)
    }
    fn recv(&mut self) -> Value {
        super::Proc::recv(self)
    }
}

/// A JSON-RPC conversation over any [`Peer`]: requests with their responses, and the other
/// messages that arrived meanwhile, in order.
pub struct Conversation<P> {
    pub peer: P,
    /// Messages received that were not the awaited response (notifications, asks).
    pub seen: Vec<Value>,
}

impl<P: Peer> Conversation<P> {
    pub fn new(peer: P) -> Self {
        Conversation {
            peer,
            seen: Vec::new(),
        }
    }

    /// Sends a request and returns its response.
    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.peer
            .send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.response(id)
    }

    /// Receives until the response to `id`.
    pub fn response(&mut self, id: i64) -> Value {
        loop {
            let m = self.peer.recv();
            if m.get("id") == Some(&json!(id)) && m.get("method").is_none() {
                return m;
            }
            self.seen.push(m);
        }
    }

    /// Receives until a message satisfying `want`, which it returns (earlier ones are kept
    /// in `seen`).
    pub fn until(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&want) {
            return self.seen.remove(i);
        }
        loop {
            let m = self.peer.recv();
            if want(&m) {
                return m;
            }
            self.seen.push(m);
        }
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.peer
            .send(json!({"jsonrpc":"2.0","method":method,"params":params}));
    }
}

type Socket = tungstenite::WebSocket<tungstenite::stream::MaybeTlsStream<TcpStream>>;

/// A WebSocket connection to `ws://{addr}`.
pub struct Ws(Socket);

impl Ws {
    pub fn connect(addr: &str) -> Ws {
        Ws::connect_with(addr, &[]).expect("ws connect")
    }

    /// Connects with extra upgrade-request headers; a refused upgrade is its HTTP status
    /// and `WWW-Authenticate` header.
    pub fn connect_with(addr: &str, headers: &[(&str, &str)]) -> Result<Ws, (u16, Option<String>)> {
        use tungstenite::client::IntoClientRequest;
        let mut request = format!("ws://{addr}")
            .into_client_request()
            .expect("request");
        for (k, v) in headers {
            request.headers_mut().insert(
                tungstenite::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        let socket = match tungstenite::connect(request) {
            Ok((socket, _)) => socket,
            Err(tungstenite::Error::Http(r)) => {
                let challenge = r
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                return Err((r.status().as_u16(), challenge));
            }
            Err(e) => panic!("ws connect: {e}"),
        };
        if let tungstenite::stream::MaybeTlsStream::Plain(s) = socket.get_ref() {
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
        }
        Ok(Ws(socket))
    }

    fn next_data(&mut self) -> tungstenite::Message {
        loop {
            match self.0.read().expect("a WebSocket message within 10 s") {
                m @ (tungstenite::Message::Text(_) | tungstenite::Message::Binary(_)) => return m,
                _ => continue,
            }
        }
    }

    /// Reads until the server's Close frame; its code (`None`: closed without one).
    pub fn close_code(&mut self) -> Option<u16> {
        loop {
            match self.0.read() {
                Ok(tungstenite::Message::Close(frame)) => {
                    return frame.map(|f| u16::from(f.code));
                }
                Ok(_) => continue,
                Err(_) => return None,
            }
        }
    }

    /// Sends a proto-mcp message (binary).
    pub fn send_proto(&mut self, msg: &McpMessage) {
        let bytes = msg.encode_to_vec();
        self.0
            .send(tungstenite::Message::Binary(bytes.into()))
            .expect("ws send");
    }

    /// The next proto-mcp message.
    pub fn recv_proto(&mut self) -> McpMessage {
        match self.next_data() {
            tungstenite::Message::Binary(b) => McpMessage::decode(&b[..]).expect("MCPMessage"),
            other => panic!("expected a binary message, got {other:?}"),
        }
    }
}

impl Peer for Ws {
    fn send(&mut self, msg: Value) {
        self.0
            .send(tungstenite::Message::Text(msg.to_string().into()))
            .expect("ws send");
    }
    fn recv(&mut self) -> Value {
        match self.next_data() {
            tungstenite::Message::Text(t) => serde_json::from_str(&t).expect("JSON text"),
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

/// An MCPB connection with authentication off: version negotiation, then JSON-RPC in
/// Request frames and out of Response frames (health pings are skipped).
pub struct Mcpb {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Mcpb {
    pub fn connect(addr: &str) -> Mcpb {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        let mut c = Mcpb {
            stream,
            buf: Vec::new(),
        };
        let offer = json!({"min_version": 1, "max_version": 1, "preferred_version": 1,
                           "supported_versions": [1]});
        c.frame(frame_type::VERSION_NEGOTIATION, &offer);
        let (kind, ack) = c.next_frame();
        assert_eq!(kind, frame_type::VERSION_ACK, "{ack}");
        c
    }

    pub fn frame(&mut self, kind: u16, payload: &Value) {
        let body = payload.to_string().into_bytes();
        let mut f = Vec::with_capacity(HEADER_LEN + body.len());
        f.extend_from_slice(&MAGIC.to_be_bytes());
        f.extend_from_slice(&MAX_VERSION.to_be_bytes());
        f.extend_from_slice(&kind.to_be_bytes());
        f.extend_from_slice(&(body.len() as u32).to_be_bytes());
        f.extend_from_slice(&body);
        self.stream.write_all(&f).expect("write");
    }

    pub fn next_frame(&mut self) -> (u16, Value) {
        loop {
            if self.buf.len() >= HEADER_LEN {
                let len = u32::from_be_bytes([self.buf[8], self.buf[9], self.buf[10], self.buf[11]])
                    as usize;
                if self.buf.len() >= HEADER_LEN + len {
                    let kind = u16::from_be_bytes([self.buf[6], self.buf[7]]);
                    let frame: Vec<u8> = self.buf.drain(..HEADER_LEN + len).collect();
                    let v = serde_json::from_slice(&frame[HEADER_LEN..]).unwrap_or(Value::Null);
                    return (kind, v);
                }
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).expect("read");
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

impl Peer for Mcpb {
    fn send(&mut self, msg: Value) {
        self.frame(frame_type::REQUEST, &msg);
    }
    fn recv(&mut self) -> Value {
        loop {
            match self.next_frame() {
                (frame_type::RESPONSE, v) => return v,
                (frame_type::HEALTH_CHECK, _) => continue,
                (kind, v) => panic!("unexpected MCPB frame {kind}: {v}"),
            }
        }
    }
}

/// A unary gRPC call's failure: the status code and the `ErrorResponse` in its details.
#[derive(Debug)]
pub struct GrpcError {
    pub status: i32,
    pub details: Option<pb::ErrorResponse>,
}

/// Calls `buf.mcp.v1.MCPService/{rpc}` at `addr` with `request`; the decoded answer or the
/// gRPC error.
pub fn grpc_call<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
) -> Result<R, GrpcError> {
    grpc_call_with(addr, rpc, request, &[])
}

/// [`grpc_call`] with extra request metadata (e.g. `authorization`).
pub fn grpc_call_with<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
) -> Result<R, GrpcError> {
    grpc_call_over(addr, rpc, request, metadata, None)
}

/// What a gRPC call may run over: TCP, or TLS over TCP.
trait GrpcIo: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> GrpcIo for T {}

/// [`grpc_call_with`], over TLS (ALPN `h2`) with `tls` when given, connecting to
/// `localhost` at `addr`'s port.
pub fn grpc_call_over<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
    tls: Option<std::sync::Arc<rustls::ClientConfig>>,
) -> Result<R, GrpcError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let scheme = if tls.is_some() { "https" } else { "http" };
        let stream: Box<dyn GrpcIo> = match tls {
            None => Box::new(tcp),
            Some(config) => {
                let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await
                    .expect("TLS handshake");
                assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]), "ALPN h2");
                Box::new(tls)
            }
        };
        let io = hyper_util::rt::TokioIo::new(stream);
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                .await
                .expect("h2 handshake");
        tokio::spawn(conn);
        let msg = request.encode_to_vec();
        let mut body = Vec::with_capacity(5 + msg.len());
        body.push(0);
        body.extend_from_slice(&(msg.len() as u32).to_be_bytes());
        body.extend_from_slice(&msg);
        let mut req =
            hyper::Request::post(format!("{scheme}://{addr}/buf.mcp.v1.MCPService/{rpc}"))
                .header("content-type", "application/grpc")
                .header("te", "trailers");
        for (k, v) in metadata {
            req = req.header(*k, *v);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        let call = async {
            let resp = send.send_request(req).await.expect("response");
            let headers = resp.headers().clone();
            let collected = resp.into_body().collect().await.expect("body");
            let trailers = collected.trailers().cloned().unwrap_or_default();
            (headers, trailers, collected.to_bytes())
        };
        let (headers, trailers, data) = tokio::time::timeout(Duration::from_secs(10), call)
            .await
            .expect("a gRPC answer within 10 s");
        let field = |name: &str| {
            trailers
                .get(name)
                .or_else(|| headers.get(name))
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let status: i32 = field("grpc-status")
            .and_then(|s| s.parse().ok())
            .expect("grpc-status");
        if status != 0 {
            let details = field("grpc-status-details-bin").map(|b64| {
                let raw = base64::engine::general_purpose::STANDARD_NO_PAD
                    .decode(b64.trim_end_matches('='))
                    .expect("base64 details");
                pb::ErrorResponse::decode(&raw[..]).expect("ErrorResponse details")
            });
            return Err(GrpcError { status, details });
        }
        assert!(data.len() >= 5, "a length-prefixed message");
        Ok(R::decode(&data[5..]).expect("the answer message"))
    })
}
