//! The WebSocket wire's client (tungstenite): JSON-RPC in text messages, proto-mcp
//! `MCPMessage`s in binary ones, or any frame a test wants to send; over TLS (`wss://`) too.
//! A refused upgrade is its HTTP status and `WWW-Authenticate` challenge.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{SinkExt, StreamExt};
use mcpwire_wire::proto_mcp::pb::McpMessage;
use prost::Message as _;
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};

use super::{Io, Peer, RECV_WITHIN, connect, split_url};

/// A WebSocket connection.
pub struct Ws(WebSocketStream<Box<dyn Io>>);

impl std::fmt::Debug for Ws {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ws").finish_non_exhaustive()
    }
}

/// Why an upgrade was refused: the HTTP status and the `WWW-Authenticate` challenge.
pub type Refused = (u16, Option<String>);

impl Ws {
    /// Connects to `url` (`ws://host:port/path` or `host:port/path`); panics if the
    /// upgrade is refused.
    pub async fn connect(url: &str) -> Ws {
        Ws::connect_with(url, &[])
            .await
            .unwrap_or_else(|r| panic!("the upgrade was refused: {r:?}"))
    }

    /// Connects with extra upgrade-request headers.
    pub async fn connect_with(url: &str, headers: &[(&str, &str)]) -> Result<Ws, Refused> {
        Ws::connect_over(url, headers, None).await
    }

    /// Connects over TLS with `config` (the server name is `localhost`).
    pub async fn connect_tls(
        url: &str,
        headers: &[(&str, &str)],
        config: Arc<rustls::ClientConfig>,
    ) -> Result<Ws, Refused> {
        Ws::connect_over(url, headers, Some(config)).await
    }

    async fn connect_over(
        url: &str,
        headers: &[(&str, &str)],
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<Ws, Refused> {
        let (addr, path) = split_url(url);
        let uri = match &tls {
            None => format!("ws://{addr}{path}"),
            Some(_) => {
                let port = addr.rsplit_once(':').map_or("443", |(_, p)| p);
                format!("wss://localhost:{port}{path}")
            }
        };
        let mut request = uri.into_client_request().expect("a request");
        for (k, v) in headers {
            request.headers_mut().insert(
                tungstenite::http::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
                v.parse().expect("a header value"),
            );
        }
        let io = connect(&addr, tls).await;
        let upgrade = tokio_tungstenite::client_async(request, io);
        match tokio::time::timeout(RECV_WITHIN, upgrade).await {
            Err(_) => panic!("no upgrade answer within {RECV_WITHIN:?}"),
            Ok(Ok((socket, _))) => Ok(Ws(socket)),
            Ok(Err(tungstenite::Error::Http(r))) => {
                let challenge = r
                    .headers()
                    .get("www-authenticate")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                Err((r.status().as_u16(), challenge))
            }
            Ok(Err(e)) => panic!("ws connect: {e}"),
        }
    }

    /// Sends one frame as it is.
    pub async fn send_frame(&mut self, msg: Message) {
        self.0.send(msg).await.expect("ws send");
    }

    /// Sends a text message.
    pub async fn send_text(&mut self, text: &str) {
        self.send_frame(Message::Text(text.into())).await;
    }

    /// Sends a binary message.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.send_frame(Message::Binary(bytes.into())).await;
    }

    /// Sends a proto-mcp message (binary).
    pub async fn send_proto(&mut self, msg: &McpMessage) {
        self.send_binary(msg.encode_to_vec()).await;
    }

    /// The next frame of any kind; `None` once the connection ended (an error included).
    pub async fn next_frame(&mut self) -> Option<Message> {
        match tokio::time::timeout(RECV_WITHIN, self.0.next()).await {
            Err(_) => panic!("no WebSocket message within {RECV_WITHIN:?}"),
            Ok(Some(Ok(m))) => Some(m),
            Ok(_) => None,
        }
    }

    /// The next text or binary message (pings and pongs skipped); panics if the
    /// connection closes first.
    pub async fn next_data(&mut self) -> Message {
        loop {
            match self.next_frame().await {
                Some(m @ (Message::Text(_) | Message::Binary(_))) => return m,
                Some(Message::Close(f)) => panic!("the server closed the WebSocket: {f:?}"),
                Some(_) => continue,
                None => panic!("the WebSocket ended"),
            }
        }
    }

    /// The next proto-mcp message.
    pub async fn recv_proto(&mut self) -> McpMessage {
        match self.next_data().await {
            Message::Binary(b) => McpMessage::decode(&b[..]).expect("an MCPMessage"),
            other => panic!("expected a binary message, got {other:?}"),
        }
    }

    /// Reads until the server's Close frame; its code (`None`: closed without one).
    pub async fn close_code(&mut self) -> Option<u16> {
        loop {
            match self.next_frame().await {
                Some(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Some(_) => continue,
                None => return None,
            }
        }
    }

    /// Closes the connection (a Close frame, then the end).
    pub async fn close(mut self) {
        let _ = self.0.close(None).await;
    }
}

impl Peer for Ws {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.send_text(&msg.to_string()).await })
    }
    fn recv(&mut self) -> BoxFuture<'_, Value> {
        Box::pin(async move {
            match self.next_data().await {
                Message::Text(t) => serde_json::from_str(&t)
                    .unwrap_or_else(|e| panic!("a text message is not JSON ({e}): {t}")),
                other => panic!("expected a text message, got {other:?}"),
            }
        })
    }
}
