//! The I/O task of a connection: reads frames and dispatches them, writes the outbound
//! queue (batched), and keeps the Q1 write gate.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mcpwire_model::LogEntry;
use mcpwire_model::types::LoggingLevel;
use mcpwire_router::CallCtx;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite};
use tokio_util::sync::CancellationToken;

use crate::codec::{EnvelopeCodec, ProcFrame};
use crate::conn::{Answer, Conn, Hooks};
use crate::pb::{self, Envelope, envelope::Msg};
use crate::toollist::Batch;

/// How often an empty frame is written while a tool-list answer cannot be sent safely (Q1).
const EMPTY_FRAME_EVERY: Duration = Duration::from_millis(10);

/// Starts the I/O task of `conn`.
pub(crate) fn spawn_io(
    conn: &Arc<Conn>,
    stream: (
        FramedRead<OwnedReadHalf, EnvelopeCodec>,
        FramedWrite<OwnedWriteHalf, EnvelopeCodec>,
    ),
    rx: mpsc::UnboundedReceiver<Envelope>,
    hooks: Weak<dyn Hooks>,
) {
    let task = IoTask {
        conn: Arc::downgrade(conn),
        reader: stream.0,
        writer: stream.1,
        rx,
        hooks,
        gate_empty: false,
        done: conn.done.clone(),
        streams: HashMap::new(),
    };
    tokio::spawn(task.run());
}

struct IoTask {
    conn: Weak<Conn>,
    reader: FramedRead<OwnedReadHalf, EnvelopeCodec>,
    writer: FramedWrite<OwnedWriteHalf, EnvelopeCodec>,
    rx: mpsc::UnboundedReceiver<Envelope>,
    hooks: Weak<dyn Hooks>,
    /// Q1: only empty frames may be written until the process sends something else.
    gate_empty: bool,
    done: CancellationToken,
    /// Chunked transfers being reassembled, by request id (only for pending requests).
    streams: HashMap<String, Chunked>,
}

/// A `stream_header` and the chunks received so far.
struct Chunked {
    total: u64,
    chunk: u32,
    buf: Vec<u8>,
}

impl IoTask {
    async fn run(mut self) {
        let reason = self.serve().await;
        tracing::debug!(%reason, "tool process connection ended");
        if let Some(conn) = self.conn.upgrade() {
            conn.close(&reason);
        }
    }

    async fn serve(&mut self) -> String {
        let mut tick = tokio::time::interval(EMPTY_FRAME_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = self.done.cancelled() => return "connection closed by the host".into(),
                frame = self.reader.next() => match frame {
                    Some(Ok(f)) => {
                        if let Err(e) = self.on_frame(f).await {
                            return e;
                        }
                    }
                    Some(Err(e)) => return format!("tool process connection failed: {e}"),
                    None => return "the tool process exited or closed its connection during the call".into(),
                },
                env = self.rx.recv(), if !self.gate_empty => {
                    let Some(env) = env else { return "host dropped the connection".into() };
                    if let Err(e) = self.write_batch(env).await {
                        return format!("writing to the tool process: {e}");
                    }
                }
                _ = tick.tick(), if self.gate_empty => {
                    if let Err(e) = self.writer.send(&Envelope::default()).await {
                        return format!("writing to the tool process: {e}");
                    }
                }
            }
        }
    }

    async fn write_batch(&mut self, first: Envelope) -> std::io::Result<()> {
        self.writer.feed(&first).await?;
        let mut n = 1;
        while n < 64 {
            match self.rx.try_recv() {
                Ok(env) => self.writer.feed(&env).await?,
                Err(_) => break,
            }
            n += 1;
        }
        self.writer.flush().await
    }

    async fn on_frame(&mut self, frame: ProcFrame) -> Result<(), String> {
        let Some(conn) = self.conn.upgrade() else {
            return Err("host dropped the connection".into());
        };
        let env = match frame {
            ProcFrame::Env(env) => env,
            ProcFrame::Raw { header, payload } => {
                self.gate_empty = false;
                let id = header.request_id.clone();
                conn.deliver(&id, Answer::Raw { header, payload });
                return Ok(());
            }
            ProcFrame::RawRefused { header, reason } => {
                self.gate_empty = false;
                tracing::warn!(%reason, "tool process result refused");
                conn.deliver(&header.request_id, Answer::Failed(reason));
                return Ok(());
            }
            ProcFrame::Oversize {
                request_id,
                declared,
                limit,
            } => {
                let reason = format!(
                    "the tool process sent a {declared}-byte message, over the {limit}-byte limit"
                );
                match request_id.filter(|id| !id.is_empty()) {
                    Some(id) => conn.deliver(&id, Answer::Failed(reason)),
                    None => tracing::warn!("{reason}; skipped"),
                }
                return Ok(());
            }
            ProcFrame::Garbage(e) => {
                tracing::warn!(error = %e, "tool process sent a frame that is not an Envelope; skipped");
                return Ok(());
            }
        };
        let Some(msg) = env.msg else {
            return Ok(());
        };
        let batch = match msg {
            Msg::EnableTools(r) => Batch {
                enable: r.tool_names,
                ..Batch::default()
            },
            Msg::DisableTools(r) => Batch {
                disable: r.tool_names,
                ..Batch::default()
            },
            Msg::SetAllowed(r) => Batch {
                allow: Some(r.tool_names),
                ..Batch::default()
            },
            Msg::SetBlocked(r) => Batch {
                block: Some(r.tool_names),
                ..Batch::default()
            },
            Msg::Batch(r) => Batch {
                enable: r.enable,
                disable: r.disable,
                allow: (!r.allow.is_empty()).then_some(r.allow),
                block: (!r.block.is_empty()).then_some(r.block),
            },
            Msg::GetActiveTools(_) => Batch::default(),
            other => {
                self.gate_empty = false;
                return self.on_message(&conn, env.request_id, other).await;
            }
        };
        self.on_tool_list(&conn, batch).await
    }

    /// A tool-list request: apply it, then answer with the active list, or, while a tool call
    /// is outstanding (the asker may be the worker racing the main thread, Q1), with empty
    /// frames until the process sends something else.
    async fn on_tool_list(&mut self, conn: &Arc<Conn>, batch: Batch) -> Result<(), String> {
        let (changed, active) = {
            let mut t = conn.tools.lock().unwrap_or_else(|p| p.into_inner());
            let before = t.active();
            if let Err(e) = t.batch(batch) {
                tracing::warn!("tool process sent an invalid tool-list batch: {e}");
            }
            let after = t.active();
            (before != after, after)
        };
        if changed && let Some(h) = self.hooks.upgrade() {
            h.tools_changed(conn);
        }
        let reply = if conn.tool_call_outstanding() {
            self.gate_empty = true;
            Envelope::default()
        } else {
            Envelope {
                msg: Some(Msg::ActiveTools(pb::ActiveToolsResponse {
                    tool_names: active,
                })),
                ..Envelope::default()
            }
        };
        self.writer
            .send(&reply)
            .await
            .map_err(|e| format!("writing to the tool process: {e}"))
    }

    /// Starts reassembling a chunked field: only `result_json`, only for a pending request,
    /// at most the raw-result limit.
    fn on_stream_header(&mut self, conn: &Arc<Conn>, id: String, h: pb::StreamHeader) {
        if !conn.is_pending(&id) {
            tracing::debug!(id, "stream for an unknown request ignored");
            return;
        }
        let max = self.reader.decoder().max_raw();
        let refuse = if h.field_name != "result_json" {
            Some(format!(
                "chunked transfer of unsupported field {:?}",
                h.field_name
            ))
        } else if h.total_size > max {
            Some(format!(
                "chunked transfer of {} bytes is over the {max}-byte limit",
                h.total_size
            ))
        } else {
            None
        };
        if let Some(reason) = refuse {
            conn.deliver(&id, Answer::Failed(reason));
            return;
        }
        if h.total_size == 0 {
            let done = pb::CallToolResponse::default();
            conn.deliver(&id, Answer::Env(Msg::CallResult(done)));
            return;
        }
        let cap = h
            .total_size
            .min(mcpwire_wire::length_prefixed::RESERVE_AHEAD as u64) as usize;
        let state = Chunked {
            total: h.total_size,
            chunk: h.chunk_size,
            buf: Vec::with_capacity(cap),
        };
        self.streams.insert(id, state);
    }

    /// Adds a chunk; the final one delivers the field as the call's `result_json`.
    fn on_stream_chunk(&mut self, conn: &Arc<Conn>, id: String, c: pb::StreamChunk) {
        let Some(s) = self.streams.get_mut(&id) else {
            tracing::debug!(id, "chunk without a stream header ignored");
            return;
        };
        let fail = if s.chunk > 0 && c.data.len() > s.chunk as usize {
            Some(format!(
                "chunk of {} bytes is over the declared {}",
                c.data.len(),
                s.chunk
            ))
        } else if (s.buf.len() + c.data.len()) as u64 > s.total {
            Some(format!("chunks exceed the declared {} bytes", s.total))
        } else {
            None
        };
        if let Some(reason) = fail {
            self.streams.remove(&id);
            conn.deliver(&id, Answer::Failed(reason));
            return;
        }
        s.buf.extend_from_slice(&c.data);
        if !c.r#final {
            return;
        }
        let Some(s) = self.streams.remove(&id) else {
            return;
        };
        let answer = match String::from_utf8(s.buf) {
            Ok(result_json) => Answer::Env(Msg::CallResult(pb::CallToolResponse {
                result_json,
                ..Default::default()
            })),
            Err(_) => Answer::Failed("chunked result is not UTF-8".into()),
        };
        conn.deliver(&id, answer);
    }

    async fn on_message(&mut self, conn: &Arc<Conn>, id: String, msg: Msg) -> Result<(), String> {
        match msg {
            Msg::CallResult(r) => {
                if !r.enable_tools.is_empty() || !r.disable_tools.is_empty() {
                    let changed = {
                        let mut t = conn.tools.lock().unwrap_or_else(|p| p.into_inner());
                        let before = t.active();
                        t.enable(r.enable_tools.iter().cloned());
                        t.disable(r.disable_tools.iter().cloned());
                        before != t.active()
                    };
                    if changed && let Some(h) = self.hooks.upgrade() {
                        h.tools_changed(conn);
                    }
                }
                conn.deliver(&id, Answer::Env(Msg::CallResult(r)));
            }
            Msg::Progress(p) => {
                if let Some(ctx) = conn.ctx_of(&p.progress_token) {
                    let total = (p.total > 0).then_some(p.total as f64);
                    let message = (!p.message.is_empty()).then_some(p.message);
                    ctx.progress(p.progress as f64, total, message);
                }
            }
            Msg::Log(l) => {
                let entry = log_entry(l);
                match conn.running_ctx() {
                    Some(ctx) => ctx.log(entry.level, &*entry.data),
                    None => {
                        if let Some(h) = self.hooks.upgrade() {
                            h.log(entry);
                        }
                    }
                }
            }
            Msg::ResourceChanged(r) => {
                if let Some(h) = self.hooks.upgrade() {
                    h.resource_changed(r.uri);
                }
            }
            Msg::SamplingRequest(s) => spawn_ask(conn, id, |ctx| async move {
                let (reply, input_required) = crate::convert::sample(ctx, s).await;
                (Msg::SamplingResponse(reply), input_required)
            }),
            Msg::ListRootsRequest(_) => spawn_ask(conn, id, |ctx| async move {
                let (reply, input_required) = crate::convert::roots(ctx).await;
                (Msg::ListRootsResponse(reply), input_required)
            }),
            Msg::CreateTask(t) if !id.is_empty() => conn.task_created(&id, t.task_id),
            Msg::TaskStatusResponse(s) if id.is_empty() || !conn.is_pending(&id) => {
                let task = s.task_id.clone();
                if !conn.push_task_status(s) {
                    tracing::debug!(task, "status of a task nobody follows ignored");
                }
            }
            Msg::StreamHeader(h) => self.on_stream_header(conn, id, h),
            Msg::StreamChunk(c) => self.on_stream_chunk(conn, id, c),
            Msg::RegisterMiddleware(_) => {
                let ack = Envelope {
                    msg: Some(Msg::RegisterMiddlewareResponse(
                        pb::RegisterMiddlewareResponse { success: true },
                    )),
                    ..Envelope::default()
                };
                self.writer
                    .send(&ack)
                    .await
                    .map_err(|e| format!("writing to the tool process: {e}"))?;
            }
            other if !id.is_empty() => conn.deliver(&id, Answer::Env(other)),
            other => tracing::debug!(?other, "ignored message from the tool process"),
        }
        Ok(())
    }
}

/// Answers the process's ask `id` (sampling, roots) through the client of the call it is
/// attributed to, off the I/O task; an ask that must ride an `input_required` result (the
/// `bool`) ends that call.
fn spawn_ask<Fut>(conn: &Arc<Conn>, id: String, ask: impl FnOnce(Option<CallCtx>) -> Fut)
where
    Fut: Future<Output = (Msg, bool)> + Send + 'static,
{
    let (origin, ctx) = conn.running().unzip();
    let answer = ask(ctx);
    let conn = conn.clone();
    tokio::spawn(async move {
        let (reply, input_required) = answer.await;
        conn.send(Envelope {
            msg: Some(reply),
            request_id: id,
            namespace: String::new(),
        });
        if let (true, Some(origin)) = (input_required, origin.as_deref()) {
            conn.input_required(origin);
        }
    });
}

/// A process log message as an MCP log entry (`warn` → warning, unknown → info; data kept
/// raw, or as a string when it is not JSON).
fn log_entry(l: pb::LogMessage) -> LogEntry {
    let level = match l.level.to_ascii_lowercase().as_str() {
        "debug" => LoggingLevel::Debug,
        "notice" => LoggingLevel::Notice,
        "warn" | "warning" => LoggingLevel::Warning,
        "error" => LoggingLevel::Error,
        "critical" => LoggingLevel::Critical,
        "alert" => LoggingLevel::Alert,
        "emergency" => LoggingLevel::Emergency,
        _ => LoggingLevel::Info,
    };
    let data = serde_json::value::RawValue::from_string(l.data_json.clone())
        .unwrap_or_else(|_| mcpwire_model::to_raw(&l.data_json));
    LogEntry {
        level,
        logger: (!l.logger.is_empty()).then_some(l.logger),
        data,
    }
}
