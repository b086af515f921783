//! The I/O task of a generation: one `select!` over frames in, socket writability, the
//! outbound queue and the Q1 empty-frame ticker, and the dispatch of what the process sends.
//!
//! It never waits for a write while a frame could be read: writes go into a write buffer
//! flushed as the socket accepts. The outbound queue is taken from only while that buffer
//! holds less than [`WRITE_AHEAD`] bytes, so a process that stops reading leaves requests in
//! the bounded queue (where new ones are refused, see `crate::channel`). Answers the task
//! itself owes the process (tool-list answers, acknowledgements, ask refusals, Q1 empty
//! frames) go straight into the buffer; once it holds [`MAX_OWED`] bytes the process has
//! stopped reading them, and further ones are dropped with a warning. So the task never
//! stops reading: a process that floods requests without reading cannot deadlock it.

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::{Buf, BytesMut};
use futures::StreamExt;
use mcpwire_model::LogEntry;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;
use tokio_util::codec::Encoder;
use tokio_util::sync::CancellationToken;

use crate::ask::{self, Ask};
use crate::channel::{Answer, ChildChannel, count_for_log};
use crate::chunks::{ChunkedResults, Outcome};
use crate::codec::{EnvelopeCodec, ProcFrame};
use crate::handshake::{Handshake, Reader, Writer, middleware_ack};
use crate::pb::{self, Envelope, envelope::Msg};
use crate::toollist::Batch;

/// How often an empty frame is written while a tool-list answer cannot be sent safely (Q1).
const EMPTY_FRAME_EVERY: Duration = Duration::from_millis(10);
/// The outbound queue is taken from while the write buffer holds less than this.
const WRITE_AHEAD: usize = 64 * 1024;
/// Bytes buffered for the process beyond which answers the task owes it are dropped.
const MAX_OWED: usize = 1024 * 1024;

/// What the host does with things a generation's connection cannot handle alone.
pub(crate) trait Hooks: Send + Sync + 'static {
    /// The active tool list of `channel` changed.
    fn tools_changed(&self, channel: &Arc<ChildChannel>);
    /// The process said a resource changed.
    fn resource_changed(&self, uri: String);
    /// A log message not attributable to a call.
    fn log(&self, entry: LogEntry);
}

/// Makes the channel of a generation whose handshake completed and starts its I/O task.
pub(crate) fn start(
    gen_id: u64,
    (reader, writer): (Reader, Writer),
    hs: Handshake,
    ids: Arc<AtomicU64>,
    max_pending: usize,
    hooks: Weak<dyn Hooks>,
) -> Arc<ChildChannel> {
    let (channel, rx) = ChildChannel::new(gen_id, hs, ids, max_pending);
    let task = IoTask {
        channel: Arc::downgrade(&channel),
        reader,
        writer: writer.into_inner(),
        wbuf: BytesMut::new(),
        rx,
        hooks,
        gate_empty: false,
        done: channel.done.clone(),
        chunks: ChunkedResults::default(),
        dropped: AtomicU64::new(0),
    };
    tokio::spawn(task.run());
    channel
}

struct IoTask {
    channel: Weak<ChildChannel>,
    reader: Reader,
    writer: OwnedWriteHalf,
    /// Encoded frames not yet accepted by the socket.
    wbuf: BytesMut,
    rx: mpsc::Receiver<Envelope>,
    hooks: Weak<dyn Hooks>,
    /// Q1: only empty frames may be written until the process sends something else.
    gate_empty: bool,
    done: CancellationToken,
    /// Chunked transfers being reassembled (only for pending requests).
    chunks: ChunkedResults,
    /// Answers dropped because the process is not reading (for logs).
    dropped: AtomicU64,
}

impl IoTask {
    async fn run(mut self) {
        let reason = self.serve().await;
        tracing::debug!(%reason, "tool process connection ended");
        if let Some(channel) = self.channel.upgrade() {
            channel.close(&reason);
        }
    }

    async fn serve(&mut self) -> String {
        let mut tick = tokio::time::interval(EMPTY_FRAME_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let taking = !self.gate_empty && self.wbuf.len() < WRITE_AHEAD;
            tokio::select! {
                biased;
                _ = self.done.cancelled() => return "connection closed by the host".into(),
                ready = self.writer.writable(), if !self.wbuf.is_empty() => {
                    if let Err(e) = ready {
                        return format!("writing to the tool process: {e}");
                    }
                }
                frame = self.reader.next() => match frame {
                    Some(Ok(f)) => {
                        if let Err(e) = self.on_frame(f) {
                            return e;
                        }
                    }
                    Some(Err(e)) => return format!("tool process connection failed: {e}"),
                    None => return "the tool process exited or closed its connection during the call".into(),
                },
                env = self.rx.recv(), if taking => {
                    let Some(env) = env else { return "host dropped the connection".into() };
                    self.take_queue(env);
                }
                _ = tick.tick(), if self.gate_empty => self.owe(&Envelope::default()),
            }
            if let Err(e) = self.write_some() {
                return format!("writing to the tool process: {e}");
            }
        }
    }

    /// Writes what the socket accepts now, without waiting.
    fn write_some(&mut self) -> std::io::Result<()> {
        while !self.wbuf.is_empty() {
            match self.writer.try_write(&self.wbuf) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => self.wbuf.advance(n),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Moves `first` and whatever else is queued (up to [`WRITE_AHEAD`]) into the buffer.
    fn take_queue(&mut self, first: Envelope) {
        self.encode(&first);
        while self.wbuf.len() < WRITE_AHEAD {
            match self.rx.try_recv() {
                Ok(env) => self.encode(&env),
                Err(_) => break,
            }
        }
    }

    /// Buffers an answer the task owes the process, unless [`MAX_OWED`] bytes are waiting.
    fn owe(&mut self, env: &Envelope) {
        if self.wbuf.len() >= MAX_OWED {
            if let Some(n) = count_for_log(&self.dropped) {
                tracing::warn!(msg = ?env.msg, "the tool process is not reading; answer dropped ({n} so far)");
            }
            return;
        }
        self.encode(env);
    }

    /// Appends a frame to the write buffer.
    fn encode(&mut self, env: &Envelope) {
        if let Err(e) = EnvelopeCodec::default().encode(env, &mut self.wbuf) {
            tracing::error!("cannot encode a message for the tool process: {e}");
        }
    }

    fn on_frame(&mut self, frame: ProcFrame) -> Result<(), String> {
        let Some(channel) = self.channel.upgrade() else {
            return Err("host dropped the connection".into());
        };
        let env = match frame {
            ProcFrame::Env(env) => env,
            ProcFrame::Raw { header, payload } => {
                self.gate_empty = false;
                let id = header.request_id.clone();
                channel.deliver(&id, Answer::Raw { header, payload });
                return Ok(());
            }
            ProcFrame::RawRefused { header, reason } => {
                self.gate_empty = false;
                tracing::warn!(%reason, "tool process result refused");
                channel.deliver(&header.request_id, Answer::Failed(reason));
                return Ok(());
            }
            ProcFrame::Oversize {
                request_id,
                declared,
                limit,
            } => {
                self.gate_empty = false;
                let reason = format!(
                    "the tool process sent a {declared}-byte message, over the {limit}-byte limit"
                );
                match request_id.filter(|id| !id.is_empty()) {
                    Some(id) => channel.deliver(&id, Answer::Failed(reason)),
                    None => tracing::warn!("{reason}; skipped"),
                }
                return Ok(());
            }
            ProcFrame::Garbage(e) => {
                tracing::warn!(error = %e, "tool process sent a frame that is not an Envelope; skipped");
                return Ok(());
            }
        };
        let Some(mut msg) = env.msg else {
            return Ok(());
        };
        match tool_list_batch(&mut msg) {
            Some(batch) => self.on_tool_list(&channel, batch),
            None => {
                self.gate_empty = false;
                self.on_message(&channel, env.request_id, msg);
            }
        }
        Ok(())
    }

    /// A tool-list request: apply it, then answer with the active list, or, while a tool call
    /// is outstanding (the asker may be the worker racing the main thread, Q1), with empty
    /// frames until the process sends something else.
    fn on_tool_list(&mut self, channel: &Arc<ChildChannel>, batch: Batch) {
        let (changed, active) = {
            let mut t = channel.tools.lock().unwrap_or_else(|p| p.into_inner());
            let before = t.active();
            if let Err(e) = t.batch(batch) {
                tracing::warn!("tool process sent an invalid tool-list batch: {e}");
            }
            let after = t.active();
            (before != after, after)
        };
        if changed && let Some(h) = self.hooks.upgrade() {
            h.tools_changed(channel);
        }
        let reply = if channel.tool_call_queued() {
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
        self.owe(&reply);
    }

    fn on_message(&mut self, channel: &Arc<ChildChannel>, id: String, msg: Msg) {
        match msg {
            Msg::CallResult(r) => {
                if !r.enable_tools.is_empty() || !r.disable_tools.is_empty() {
                    let changed = {
                        let mut t = channel.tools.lock().unwrap_or_else(|p| p.into_inner());
                        let before = t.active();
                        t.enable(r.enable_tools.iter().cloned());
                        t.disable(r.disable_tools.iter().cloned());
                        before != t.active()
                    };
                    if changed && let Some(h) = self.hooks.upgrade() {
                        h.tools_changed(channel);
                    }
                }
                channel.deliver(&id, Answer::Env(Msg::CallResult(r)));
            }
            Msg::Progress(p) => {
                if let Some(ctx) = channel.ctx_of(&p.progress_token) {
                    let total = (p.total > 0).then_some(p.total as f64);
                    let message = (!p.message.is_empty()).then_some(p.message);
                    ctx.progress(p.progress as f64, total, message);
                }
            }
            Msg::Log(l) => {
                let entry = crate::convert::log_entry(l);
                match channel.attributed() {
                    Some((_, ctx)) => ctx.log(entry.level, &*entry.data),
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
            Msg::SamplingRequest(s) => self.ask(channel, id, Ask::Sampling(s)),
            Msg::ListRootsRequest(_) => self.ask(channel, id, Ask::Roots),
            Msg::CreateTask(t) if !id.is_empty() => channel.task_created(&id, t.task_id),
            Msg::TaskStatusResponse(s) if id.is_empty() || !channel.is_pending(&id) => {
                let task = s.task_id.clone();
                if !channel.push_task_status(s) {
                    tracing::debug!(task, "status of a task nobody follows ignored");
                }
            }
            Msg::StreamHeader(h) => {
                if !channel.is_pending(&id) {
                    tracing::debug!(id, "stream for an unknown request ignored");
                    return;
                }
                self.chunks.retain(|id| channel.is_pending(id));
                let max = self.reader.decoder().max_raw();
                let outcome = self.chunks.start(id.clone(), h, max);
                settle(channel, &id, outcome);
            }
            Msg::StreamChunk(c) => match self.chunks.chunk(&id, c) {
                Some(outcome) => settle(channel, &id, outcome),
                None => tracing::debug!(id, "chunk without a stream header ignored"),
            },
            Msg::RegisterMiddleware(_) => self.owe(&middleware_ack()),
            other if !id.is_empty() => channel.deliver(&id, Answer::Env(other)),
            other => tracing::debug!(?other, "ignored message from the tool process"),
        }
    }

    /// Starts answering an ask; a refusal (too many in flight) is written at once.
    fn ask(&mut self, channel: &Arc<ChildChannel>, id: String, ask: Ask) {
        if let Some(refusal) = ask::start(channel, id, ask) {
            self.owe(&refusal);
        }
    }
}

/// A tool-list request as a batch (its names taken out of `msg`); `None` for anything else.
fn tool_list_batch(msg: &mut Msg) -> Option<Batch> {
    use std::mem::take;
    Some(match msg {
        Msg::EnableTools(r) => Batch {
            enable: take(&mut r.tool_names),
            ..Batch::default()
        },
        Msg::DisableTools(r) => Batch {
            disable: take(&mut r.tool_names),
            ..Batch::default()
        },
        Msg::SetAllowed(r) => Batch {
            allow: Some(take(&mut r.tool_names)),
            ..Batch::default()
        },
        Msg::SetBlocked(r) => Batch {
            block: Some(take(&mut r.tool_names)),
            ..Batch::default()
        },
        Msg::Batch(r) => Batch {
            enable: take(&mut r.enable),
            disable: take(&mut r.disable),
            allow: (!r.allow.is_empty()).then(|| take(&mut r.allow)),
            block: (!r.block.is_empty()).then(|| take(&mut r.block)),
        },
        Msg::GetActiveTools(_) => Batch::default(),
        _ => return None,
    })
}

/// Delivers what a chunked-transfer step settled for request `id`.
fn settle(channel: &ChildChannel, id: &str, outcome: Outcome) {
    let answer = match outcome {
        Outcome::Pending => return,
        Outcome::Done(result_json) => Answer::Env(Msg::CallResult(pb::CallToolResponse {
            result_json,
            ..Default::default()
        })),
        Outcome::Failed(reason) => Answer::Failed(reason),
    };
    channel.deliver(id, answer);
}
