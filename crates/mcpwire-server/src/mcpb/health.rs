//! The dedicated MCPB health port: HealthCheck frames only, no negotiation, no session — for
//! load balancers and monitors (`{"check": "simple" | "detailed"}`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mcpwire_wire::Limits;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Encoder, FramedRead};

use super::{McpbListenerState, McpbServer};

/// Largest health request accepted.
const MAX_HEALTH_REQUEST: usize = 4096;
/// How long a health connection may stay open.
const HEALTH_CONN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves health checks for `server` on `addr` until `server` shuts down; returns the bound
/// address and the serving future.
pub async fn serve_health(
    server: &McpbServer,
    addr: SocketAddr,
) -> std::io::Result<(SocketAddr, impl Future<Output = ()> + use<>)> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let shared = server.shared.clone();
    let fut = async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                _ = shared.shutdown.cancelled() => return,
            };
            if let Ok((stream, _)) = accepted {
                let shared = shared.clone();
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(HEALTH_CONN_TIMEOUT, answer(shared, stream)).await;
                });
            }
        }
    };
    Ok((bound, fut))
}

/// Answers health checks on one connection until it closes or sends anything else.
async fn answer(shared: Arc<McpbListenerState>, stream: TcpStream) {
    let limits = Limits {
        max_message_bytes: MAX_HEALTH_REQUEST,
        ..Limits::default()
    };
    let (r, mut w) = stream.into_split();
    let mut reader = FramedRead::new(r, McpbCodec::server(&limits));
    let mut codec = McpbCodec::server(&limits);
    while let Some(frame) = reader.next().await {
        let mut out = bytes::BytesMut::new();
        let done = match frame {
            Ok(McpbFrame::Health(request)) => {
                let report = shared.health(request.as_ref());
                codec
                    .encode(McpbOut::Health(Some(&report)), &mut out)
                    .is_err()
            }
            Ok(_) => {
                let _ = codec.encode(
                    McpbOut::Error("this port answers health checks only"),
                    &mut out,
                );
                true
            }
            Err(e) => {
                let _ = codec.encode(McpbOut::Error(&e.to_string()), &mut out);
                true
            }
        };
        if w.write_all(&out).await.is_err() || done {
            break;
        }
    }
    let _ = w.shutdown().await;
}
