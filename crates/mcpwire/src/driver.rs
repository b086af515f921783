//! The connection driver: feeds one [`ServerSession`] from a framed byte stream, runs its
//! dispatches on the router, and writes what it sends. It makes no protocol decisions.
//!
//! The stream is NDJSON JSON-RPC, or — when built [`NdjsonDriver::with_proto`] and the first
//! byte says so ([`AnyCodec`]) — proto-mcp frames, translated to and from the session's
//! JSON-RPC by a per-connection [`Translator`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use mcpwire_proto::{Inbound, ProtoCatalog, Translator};
use mcpwire_router::{McpReply, Router};
use mcpwire_session::{DispatchId, ServerSession, SessionConfig};
use mcpwire_wire::proto_mcp::{ProtoDecoded, ProtoMcpCodec, pb::McpMessage};
use mcpwire_wire::{AnyCodec, Limits, NdjsonCodec, WireItem};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Encoder, FramedRead};

use crate::calls::{Calls, recv_event, sleep_until};

/// Frames decoded between two writes, so a flood of input cannot starve output.
const READ_BURST: usize = 64;
/// How long calls may keep running after the client closed its input.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// Drives one connection of a line-delimited JSON-RPC wire (stdio, a socket), or of
/// proto-mcp frames when enabled and detected.
#[must_use = "a driver does nothing until run"]
pub struct NdjsonDriver<R, W> {
    session: ServerSession,
    calls: Calls,
    reader: FramedRead<R, AnyCodec>,
    writer: W,
    codec: NdjsonCodec,
    proto_codec: ProtoMcpCodec,
    limits: Limits,
    /// The tool schemas proto-mcp frames are read with (`None`: JSON-RPC only).
    catalog: Option<Arc<ProtoCatalog>>,
    /// Set once the first proto-mcp frame arrived.
    translator: Option<Translator>,
    wbuf: BytesMut,
    busy_poll: Duration,
}

impl<R, W> NdjsonDriver<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    /// A driver for one connection reading `reader` and writing `writer`.
    pub fn new(
        router: Router,
        config: Arc<SessionConfig>,
        limits: &Limits,
        reader: R,
        writer: W,
    ) -> Self {
        NdjsonDriver {
            session: ServerSession::new(config),
            calls: Calls::new(router),
            reader: FramedRead::with_capacity(reader, AnyCodec::new(limits, false), 64 * 1024),
            writer,
            codec: NdjsonCodec::new(limits),
            proto_codec: ProtoMcpCodec::new(limits),
            limits: limits.clone(),
            catalog: None,
            translator: None,
            wbuf: BytesMut::with_capacity(64 * 1024),
            busy_poll: Duration::ZERO,
        }
    }

    /// Also serve proto-mcp on this stream, decided by its first byte; tool arguments are
    /// read with the schemas in `catalog`.
    pub fn with_proto(mut self, catalog: Arc<ProtoCatalog>) -> Self {
        *self.reader.decoder_mut() = AnyCodec::new(&self.limits, true);
        self.catalog = Some(catalog);
        self
    }

    /// Before sleeping, keep polling for input for up to `d` (trading CPU for latency: on
    /// virtual machines, waking an idle vCPU costs tens of microseconds).
    pub fn with_busy_poll(mut self, d: Duration) -> Self {
        self.busy_poll = d;
        self
    }

    /// Polls input and finished calls without parking the thread, for up to `busy_poll`.
    async fn spin(&mut self, reader_open: &mut bool) {
        let until = Instant::now() + self.busy_poll;
        loop {
            // In a current-thread runtime a yield polls the I/O driver without blocking.
            tokio::task::yield_now().await;
            // Let a peer sharing this CPU (a client on the same core) run: spinning must not
            // starve the very process it waits for.
            std::thread::yield_now();
            if let Some(frame) = self.reader.next().now_or_never() {
                self.on_frame(frame, reader_open);
                return;
            }
            if !self.calls.is_empty()
                && let Some(Some((id, reply))) = self.calls.calls.next().now_or_never()
            {
                self.on_done(id, reply);
                return;
            }
            if Instant::now() >= until {
                return;
            }
        }
    }

    /// Runs until the peer closes its input and every accepted call has been answered
    /// (or [`DRAIN_GRACE`] has passed), then flushes and returns.
    pub async fn run(mut self) -> std::io::Result<()> {
        let mut reader_open = true;
        let mut drain_deadline: Option<tokio::time::Instant> = None;
        let mut just_spun = false;
        loop {
            self.pump(&mut reader_open);
            if !reader_open {
                if self.calls.is_empty() && self.wbuf.is_empty() {
                    break;
                }
                let deadline = *drain_deadline
                    .get_or_insert_with(|| tokio::time::Instant::now() + DRAIN_GRACE);
                if tokio::time::Instant::now() >= deadline {
                    tracing::warn!(
                        in_flight = self.calls.len(),
                        "input closed; abandoning calls after grace period"
                    );
                    self.writer.write_all(&self.wbuf).await?;
                    break;
                }
            }
            if !just_spun && !self.busy_poll.is_zero() && reader_open && self.wbuf.is_empty() {
                // Poll a little before sleeping, then re-check everything from the top.
                just_spun = true;
                self.spin(&mut reader_open).await;
                continue;
            }
            just_spun = false;
            let timeout = self.session.poll_timeout();
            tokio::select! {
                biased;
                r = self.writer.write_buf(&mut self.wbuf), if !self.wbuf.is_empty() => {
                    if r? == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                }
                frame = self.reader.next(), if reader_open => self.on_frame(frame, &mut reader_open),
                Some((id, reply)) = self.calls.calls.next(), if !self.calls.is_empty() => self.on_done(id, reply),
                Some(msg) = self.calls.peer_rx.recv() => self.calls.on_peer(&mut self.session, *msg),
                ev = recv_event(&mut self.calls.events) => self.calls.on_backend(&mut self.session, ev),
                _ = sleep_until(timeout) => self.session.handle_timeout(Instant::now()),
                _ = sleep_until(drain_deadline.map(|d| d.into_std())), if !reader_open => {}
            }
        }
        self.writer.flush().await?;
        Ok(())
    }

    /// Does all work that is ready without waiting, then moves session output to `wbuf`.
    fn pump(&mut self, reader_open: &mut bool) {
        for _ in 0..READ_BURST {
            let mut progressed = false;
            if *reader_open && let Some(frame) = self.reader.next().now_or_never() {
                self.on_frame(frame, reader_open);
                progressed = true;
            }
            progressed |= self.calls.poll_ready(&mut self.session);
            self.drain();
            if !progressed {
                break;
            }
        }
    }

    fn on_frame(
        &mut self,
        frame: Option<Result<WireItem, mcpwire_wire::FramingError>>,
        reader_open: &mut bool,
    ) {
        match frame {
            Some(Ok(WireItem::Json(decoded))) => {
                self.session.handle_inbound(Instant::now(), decoded)
            }
            Some(Ok(WireItem::Proto(item))) => self.on_proto(item),
            Some(Err(e)) => {
                tracing::debug!(error = %e, "input failed");
                *reader_open = false;
                self.session.handle_peer_closed();
            }
            None => {
                *reader_open = false;
                self.session.handle_peer_closed();
            }
        }
        self.drain();
    }

    fn on_proto(&mut self, item: ProtoDecoded) {
        let msg = match item {
            Ok(msg) => msg,
            Err(reply) => return self.write_proto(&reply),
        };
        let Some(catalog) = &self.catalog else {
            return; // unreachable: the codec only yields frames when proto is enabled
        };
        let translator = self
            .translator
            .get_or_insert_with(|| Translator::new(catalog.clone()));
        match translator.inbound(msg) {
            Inbound::Forward(m) => self.session.handle_inbound(Instant::now(), Ok(m)),
            Inbound::Reply(reply, _) => self.write_proto(&reply),
        }
    }

    fn write_proto(&mut self, msg: &McpMessage) {
        if let Err(e) = self.proto_codec.encode(msg, &mut self.wbuf) {
            tracing::error!(error = %e, "could not encode a message");
        }
    }

    fn on_done(&mut self, id: DispatchId, reply: Option<McpReply>) {
        self.calls.on_done(&mut self.session, id, reply);
    }

    /// Moves session outputs to their destinations, in the session's drain order.
    fn drain(&mut self) {
        let (codec, wbuf) = (&mut self.codec, &mut self.wbuf);
        let (proto_codec, translator) = (&mut self.proto_codec, &mut self.translator);
        self.calls.drain(&mut self.session, |t| {
            let r = match translator {
                None => codec.encode(&t.msg, wbuf),
                Some(tr) => match tr.outbound(&t.msg) {
                    Some(m) => proto_codec.encode(&m, wbuf),
                    None => Ok(()),
                },
            };
            if let Err(e) = r {
                tracing::error!(error = %e, "could not encode a message");
            }
        });
    }
}
