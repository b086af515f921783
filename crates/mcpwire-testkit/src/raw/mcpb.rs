//! The MCPB wire's client: 12-byte-header frames (`MCPB`, version, type, length) written
//! from the spec with only the wire constants shared — version negotiation, then JSON-RPC
//! in Request frames and out of Response frames — or any bytes a test wants to send.

use std::sync::Arc;

use futures::future::BoxFuture;
use mcpwire_wire::mcpb::{HEADER_LEN, MAGIC, MAX_VERSION, frame_type};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Io, Peer, RECV_WITHIN, connect};

/// An MCPB connection.
pub struct Mcpb {
    stream: Box<dyn Io>,
    buf: Vec<u8>,
}

impl std::fmt::Debug for Mcpb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcpb")
            .field("buffered", &self.buf.len())
            .finish_non_exhaustive()
    }
}

/// A frame: the 12-byte header (protocol version 1) and `body`.
pub fn encode_frame(kind: u16, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(HEADER_LEN + body.len());
    f.extend_from_slice(&MAGIC.to_be_bytes());
    f.extend_from_slice(&MAX_VERSION.to_be_bytes());
    f.extend_from_slice(&kind.to_be_bytes());
    f.extend_from_slice(
        &u32::try_from(body.len())
            .expect("a frame under 4 GiB")
            .to_be_bytes(),
    );
    f.extend_from_slice(body);
    f
}

impl Mcpb {
    /// Connects to `addr` (`host:port`, or `mcpb://host:port`) and negotiates version 1
    /// (authentication off: JSON-RPC may follow at once).
    pub async fn connect(addr: &str) -> Mcpb {
        let mut c = Mcpb::connect_raw(addr, None).await;
        c.negotiate().await;
        c
    }

    /// Connects without sending anything (over TLS with `tls`).
    pub async fn connect_raw(addr: &str, tls: Option<Arc<rustls::ClientConfig>>) -> Mcpb {
        let addr = addr.split_once("://").map_or(addr, |(_, a)| a);
        Mcpb {
            stream: connect(addr, tls).await,
            buf: Vec::new(),
        }
    }

    /// Offers version 1 and expects the server's acknowledgement, which it returns.
    pub async fn negotiate(&mut self) -> Value {
        let offer = json!({"min_version": 1, "max_version": 1, "preferred_version": 1,
                           "supported_versions": [1]});
        self.frame(frame_type::VERSION_NEGOTIATION, &offer).await;
        let (kind, ack) = self.next_frame().await;
        assert_eq!(kind, frame_type::VERSION_ACK, "{ack}");
        ack
    }

    /// Writes `bytes` as they are.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.expect("write");
        self.stream.flush().await.expect("flush");
    }

    /// Sends a frame of type `kind` carrying `body`.
    pub async fn frame_bytes(&mut self, kind: u16, body: &[u8]) {
        self.write_raw(&encode_frame(kind, body)).await;
    }

    /// Sends a frame of type `kind` carrying `payload` as JSON.
    pub async fn frame(&mut self, kind: u16, payload: &Value) {
        self.frame_bytes(kind, payload.to_string().as_bytes()).await;
    }

    /// The next frame, its type and body as they came; `None` once the server closed the
    /// connection (a reset included).
    pub async fn next_raw_frame(&mut self) -> Option<(u16, Vec<u8>)> {
        loop {
            if self.buf.len() >= HEADER_LEN {
                let len = u32::from_be_bytes([self.buf[8], self.buf[9], self.buf[10], self.buf[11]])
                    as usize;
                if self.buf.len() >= HEADER_LEN + len {
                    let kind = u16::from_be_bytes([self.buf[6], self.buf[7]]);
                    let frame: Vec<u8> = self.buf.drain(..HEADER_LEN + len).collect();
                    return Some((kind, frame[HEADER_LEN..].to_vec()));
                }
            }
            let mut chunk = [0u8; 65536];
            let read = tokio::time::timeout(RECV_WITHIN, self.stream.read(&mut chunk)).await;
            match read {
                Err(_) => panic!("no MCPB frame within {RECV_WITHIN:?}"),
                Ok(Ok(0)) => return None,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => return None,
                Ok(Err(e)) => panic!("read: {e}"),
            }
        }
    }

    /// The next frame, its body as JSON (`null` when it is not JSON); panics once the
    /// connection closed.
    pub async fn next_frame(&mut self) -> (u16, Value) {
        let (kind, body) = self.next_raw_frame().await.expect("the connection closed");
        (kind, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    /// Whether the server closed the connection (reading and dropping what still came).
    pub async fn closed(&mut self) -> bool {
        while self.next_raw_frame().await.is_some() {}
        true
    }
}

impl Peer for Mcpb {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        Box::pin(async move { self.frame(frame_type::REQUEST, &msg).await })
    }
    fn recv(&mut self) -> BoxFuture<'_, Value> {
        Box::pin(async move {
            loop {
                match self.next_frame().await {
                    (frame_type::RESPONSE, v) => return v,
                    (frame_type::HEALTH_CHECK, _) => continue,
                    (kind, v) => panic!("unexpected MCPB frame {kind}: {v}"),
                }
            }
        })
    }
}
