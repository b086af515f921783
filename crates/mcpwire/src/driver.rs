//! The connection driver: feeds one [`ServerSession`] from a framed byte stream, runs its
//! dispatches on the router, and writes what it sends. It makes no protocol decisions.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::stream::FuturesUnordered;
use futures::{FutureExt, StreamExt};
use mcpwire_model::{BackendEvent, CallEvent, ClientAsk, McpError, Raw};
use mcpwire_router::{BoxFuture, CallCtx, McpCall, McpReply, Peer, Router};
use mcpwire_session::{AskId, Dispatch, DispatchId, ServerSession, SessionConfig, SessionEvent};
use mcpwire_wire::{Limits, NdjsonCodec};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::codec::{Encoder, FramedRead};
use tokio_util::sync::CancellationToken;

/// Events a running call can queue before further ones are dropped (progress, logs) or
/// refused (asks).
const PEER_QUEUE: usize = 1024;
/// Frames decoded between two writes, so a flood of input cannot starve output.
const READ_BURST: usize = 64;
/// How long calls may keep running after the client closed its input.
const DRAIN_GRACE: Duration = Duration::from_secs(10);

enum PeerMsg {
    Event(DispatchId, CallEvent),
    Ask(
        DispatchId,
        ClientAsk,
        oneshot::Sender<Result<Raw, McpError>>,
    ),
}

/// The session side of a call's [`Peer`]: queues events and asks for the driver.
struct DriverPeer {
    id: DispatchId,
    tx: mpsc::Sender<PeerMsg>,
}

impl Peer for DriverPeer {
    fn event(&self, event: CallEvent) {
        // Progress and logs are lossy under pressure rather than unbounded.
        let _ = self.tx.try_send(PeerMsg::Event(self.id, event));
    }

    fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        let (tx, rx) = oneshot::channel();
        if self.tx.try_send(PeerMsg::Ask(self.id, ask, tx)).is_err() {
            return Box::pin(std::future::ready(Err(McpError::LimitExceeded(
                "too many pending messages to the client".into(),
            ))));
        }
        Box::pin(async move { rx.await.unwrap_or(Err(McpError::Cancelled)) })
    }
}

type CallFuture = BoxFuture<'static, (DispatchId, Option<McpReply>)>;

/// Drives one connection of a line-delimited JSON-RPC wire (stdio, a socket).
#[must_use = "a driver does nothing until run"]
pub struct NdjsonDriver<R, W> {
    session: ServerSession,
    router: Router,
    reader: FramedRead<R, NdjsonCodec>,
    writer: W,
    codec: NdjsonCodec,
    wbuf: BytesMut,
    calls: FuturesUnordered<CallFuture>,
    cancels: HashMap<DispatchId, CancellationToken>,
    asks: HashMap<AskId, oneshot::Sender<Result<Raw, McpError>>>,
    peer_tx: mpsc::Sender<PeerMsg>,
    peer_rx: mpsc::Receiver<PeerMsg>,
    events: Option<broadcast::Receiver<BackendEvent>>,
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
        let (peer_tx, peer_rx) = mpsc::channel(PEER_QUEUE);
        let events = router.events();
        NdjsonDriver {
            session: ServerSession::new(config),
            router,
            reader: FramedRead::with_capacity(reader, NdjsonCodec::new(limits), 64 * 1024),
            writer,
            codec: NdjsonCodec::new(limits),
            wbuf: BytesMut::with_capacity(64 * 1024),
            calls: FuturesUnordered::new(),
            cancels: HashMap::new(),
            asks: HashMap::new(),
            peer_tx,
            peer_rx,
            events,
            busy_poll: Duration::ZERO,
        }
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
            if let Some(frame) = self.reader.next().now_or_never() {
                self.on_frame(frame, reader_open);
                return;
            }
            if !self.calls.is_empty()
                && let Some(Some((id, reply))) = self.calls.next().now_or_never()
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
                Some((id, reply)) = self.calls.next(), if !self.calls.is_empty() => self.on_done(id, reply),
                Some(msg) = self.peer_rx.recv() => self.on_peer(msg),
                ev = recv_event(&mut self.events) => self.on_backend(ev),
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
            while let Some(Some((id, reply))) = self.calls.next().now_or_never() {
                self.on_done(id, reply);
                progressed = true;
            }
            while let Ok(msg) = self.peer_rx.try_recv() {
                self.on_peer(msg);
                progressed = true;
            }
            self.drain();
            if !progressed {
                break;
            }
        }
    }

    fn on_frame(
        &mut self,
        frame: Option<Result<mcpwire_wire::Decoded, mcpwire_wire::FramingError>>,
        reader_open: &mut bool,
    ) {
        match frame {
            Some(Ok(decoded)) => self.session.handle_inbound(Instant::now(), decoded),
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

    fn on_done(&mut self, id: DispatchId, reply: Option<McpReply>) {
        // Events a call emitted before it finished must reach the client before its answer.
        while let Ok(msg) = self.peer_rx.try_recv() {
            self.on_peer(msg);
        }
        self.cancels.remove(&id);
        if let Some(reply) = reply {
            self.session.handle_reply(Instant::now(), id, reply);
        }
    }

    fn on_peer(&mut self, msg: PeerMsg) {
        match msg {
            PeerMsg::Event(id, ev) => self.session.handle_call_event(id, ev),
            PeerMsg::Ask(id, ask, tx) => {
                let ask_id = self.session.handle_ask(Instant::now(), id, ask);
                self.asks.insert(ask_id, tx);
            }
        }
    }

    fn on_backend(&mut self, ev: Option<BackendEvent>) {
        match ev {
            Some(ev) => self.session.handle_backend_event(&ev),
            None => self.events = None,
        }
    }

    /// Moves session outputs to their destinations, in the session's drain order.
    fn drain(&mut self) {
        loop {
            let mut any = false;
            while let Some(ev) = self.session.poll_event() {
                any = true;
                match ev {
                    SessionEvent::Cancel(id) => {
                        if let Some(t) = self.cancels.remove(&id) {
                            t.cancel();
                        }
                    }
                    SessionEvent::AskDone(ask, result) => {
                        if let Some(tx) = self.asks.remove(&ask) {
                            let _ = tx.send(result);
                        }
                    }
                }
            }
            while let Some(d) = self.session.poll_dispatch() {
                any = true;
                self.start(d);
            }
            while let Some(t) = self.session.poll_transmit() {
                any = true;
                if let Err(e) = self.codec.encode(&t.msg, &mut self.wbuf) {
                    tracing::error!(error = %e, "could not encode a message");
                }
            }
            if !any {
                break;
            }
        }
    }

    fn start(&mut self, d: Dispatch) {
        let token = CancellationToken::new();
        let peer: Arc<dyn Peer> = Arc::new(DriverPeer {
            id: d.id,
            tx: self.peer_tx.clone(),
        });
        let ctx = CallCtx::new(
            d.ctx.revision,
            d.ctx.client_capabilities,
            token.clone(),
            Some(peer),
        )
        .with_progress_token(d.ctx.progress_token);
        let call = McpCall {
            method: d.method,
            params: d.params,
            ctx,
        };
        // A panicking tool answers its own request with an internal error; the connection
        // and every other call go on.
        let router = &self.router;
        let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| router.call(call))) {
            Ok(fut) => AssertUnwindSafe(fut).catch_unwind(),
            Err(_) => AssertUnwindSafe(panicked()).catch_unwind(),
        };
        let id = d.id;
        let cancelled = token.clone();
        self.cancels.insert(id, token);
        self.calls.push(Box::pin(async move {
            tokio::select! {
                biased;
                r = fut => (id, Some(r.unwrap_or_else(|_| {
                    tracing::error!("a call panicked");
                    Err(McpError::Internal("the tool panicked".into()))
                }))),
                _ = cancelled.cancelled() => (id, None),
            }
        }));
    }
}

fn panicked() -> BoxFuture<'static, McpReply> {
    tracing::error!("a call panicked before it started");
    Box::pin(std::future::ready(Err(McpError::Internal(
        "the tool panicked".into(),
    ))))
}

async fn recv_event(rx: &mut Option<broadcast::Receiver<BackendEvent>>) -> Option<BackendEvent> {
    let Some(r) = rx else {
        return std::future::pending().await;
    };
    loop {
        match r.recv().await {
            Ok(ev) => return Some(ev),
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(skipped = n, "session fell behind on backend events");
            }
            Err(broadcast::error::RecvError::Closed) => return None,
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
