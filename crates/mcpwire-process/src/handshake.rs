//! The start of a generation's connection: framing a fresh socket and the handshake (list
//! tools, acknowledge middleware registrations, wait for the completion signal). Nothing
//! else is written before it completes (Q7).

use std::sync::atomic::{AtomicU64, Ordering};

use futures::{SinkExt, StreamExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::codec::{FramedRead, FramedWrite};

use crate::codec::{EnvelopeCodec, ProcFrame};
use crate::pb::{self, Envelope, envelope::Msg};

/// Middleware registrations accepted from one process.
const MAX_MIDDLEWARE: usize = 64;

/// Frames read from a tool process.
pub(crate) type Reader = FramedRead<OwnedReadHalf, EnvelopeCodec>;
/// Frames written to a tool process during the handshake.
pub(crate) type Writer = FramedWrite<OwnedWriteHalf, EnvelopeCodec>;

/// The result of a successful handshake.
pub(crate) struct Handshake {
    /// Every tool the process registered.
    pub tools: Vec<pb::ToolDefinition>,
    /// Middleware registrations (name, priority).
    pub middleware: Vec<(String, i32)>,
}

/// Splits a fresh stream into a framed reader and writer.
pub(crate) fn framed(stream: UnixStream, max_envelope: usize, max_raw: u64) -> (Reader, Writer) {
    let (r, w) = stream.into_split();
    (
        FramedRead::new(r, EnvelopeCodec::new(max_envelope, max_raw)),
        FramedWrite::new(w, EnvelopeCodec::new(max_envelope, max_raw)),
    )
}

async fn next_frame(reader: &mut Reader) -> Result<ProcFrame, String> {
    match reader.next().await {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) => Err(e.to_string()),
        None => Err("the tool process closed the connection".into()),
    }
}

/// Runs the handshake on a fresh stream; `ids` numbers the tool-list request.
pub(crate) async fn handshake(
    reader: &mut Reader,
    writer: &mut Writer,
    ids: &AtomicU64,
) -> Result<Handshake, String> {
    let id = format!("h{}", ids.fetch_add(1, Ordering::Relaxed));
    let req = Envelope {
        msg: Some(Msg::ListTools(pb::ListToolsRequest {})),
        request_id: id.clone(),
        namespace: String::new(),
    };
    writer.send(&req).await.map_err(|e| e.to_string())?;
    let mut tools = None;
    let mut middleware = Vec::new();
    loop {
        let ProcFrame::Env(env) = next_frame(reader).await? else {
            tracing::warn!(
                "tool process sent a raw, oversize or garbled frame during the handshake"
            );
            continue;
        };
        match env.msg {
            Some(Msg::ToolList(l)) if env.request_id == id || tools.is_none() => {
                tools = Some(l.tools)
            }
            Some(Msg::RegisterMiddleware(m)) => {
                if middleware.len() == MAX_MIDDLEWARE {
                    return Err(format!(
                        "tool process registered more than {MAX_MIDDLEWARE} middleware"
                    ));
                }
                middleware.push((m.name, m.priority));
                writer
                    .send(&middleware_ack())
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Some(Msg::ReloadResponse(r)) => {
                if !r.success {
                    return Err(format!("tool process failed to start: {}", r.error));
                }
                let tools =
                    tools.ok_or("tool process completed its handshake without a tool list")?;
                return Ok(Handshake { tools, middleware });
            }
            other => tracing::debug!(?other, "ignored during the handshake"),
        }
    }
}

/// The answer to a middleware registration (always accepted, within [`MAX_MIDDLEWARE`]).
pub(crate) fn middleware_ack() -> Envelope {
    Envelope {
        msg: Some(Msg::RegisterMiddlewareResponse(
            pb::RegisterMiddlewareResponse { success: true },
        )),
        ..Envelope::default()
    }
}
