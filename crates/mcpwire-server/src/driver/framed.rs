//! [`FramedDriver`]: one connection over a byte stream — frames in through a codec, bytes out
//! through a bounded write buffer — for whatever [`Endpoint`] runs on top. It knows nothing
//! of sessions or roles: stdio's and MCPB's server connections are endpoints, and so can a
//! client of a framed wire be.
//!
//! The loop: do the work that is ready without waiting (a bounded burst of frames and
//! finished work, so a flood of input cannot starve output), keep polling for a short while
//! before sleeping (`busy_poll`: on virtual machines waking an idle vCPU costs tens of
//! microseconds), then wait for whichever comes first: the socket taking bytes, a frame, or
//! the endpoint's own events. While the write buffer holds [`WRITE_HIGH_WATER`] bytes or
//! more, nothing is read and the endpoint only waits for its timers: a peer that does not
//! read its answers stops being read from, and memory stays bounded.

use std::future::Future;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use mcpwire_wire::FramingError;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::{Decoder, FramedRead};

/// Bytes of unwritten output at which a connection stops reading and taking finished work.
pub const WRITE_HIGH_WATER: usize = 256 * 1024;
/// Frames (and ready work items) handled between two writes.
const READ_BURST: usize = 64;
/// How long a closing connection may take to hand its last output to a peer.
const CLOSE_FLUSH: Duration = Duration::from_secs(10);
/// Initial capacity of the read and write buffers.
const BUFFER: usize = 64 * 1024;

/// Whether the write buffer is full (see [`WRITE_HIGH_WATER`]).
pub fn output_full(out: &BytesMut) -> bool {
    out.len() >= WRITE_HIGH_WATER
}

/// What an endpoint wants the connection to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Keep going.
    Open,
    /// Read nothing more; flush the output and close.
    Close,
}

/// What runs over a [`FramedDriver`]: it takes frames, writes output into the driver's
/// buffer, and may have events of its own to wait for.
pub trait Endpoint {
    /// Splits the input into frames.
    type Codec: Decoder<Error = FramingError>;
    /// What [`Endpoint::wait`] woke up for.
    type Wake;

    /// Takes one frame. `None`: the input ended; `Err`: it failed. Either way no further
    /// frames are read.
    fn on_frame(
        &mut self,
        frame: Option<Result<<Self::Codec as Decoder>::Item, FramingError>>,
        out: &mut BytesMut,
    );

    /// Does the work that is ready without waiting and writes what it produced to `out`,
    /// stopping once [`output_full`]; whether it did anything.
    fn poll_ready(&mut self, out: &mut BytesMut) -> bool;

    /// Waits for the endpoint's next event. `paused`: the output is full, so wait only for
    /// what produces little output (timers) until it drains.
    fn wait(&mut self, paused: bool) -> impl Future<Output = Self::Wake>;

    /// Acts on what [`Endpoint::wait`] woke up for.
    fn apply(&mut self, wake: Self::Wake, out: &mut BytesMut);

    /// Whether to go on.
    fn status(&mut self) -> Status;

    /// Whether to read the next frame now. An endpoint waiting for something before it can
    /// take more input (MCPB while a token's signing keys load) says no; what it waits for
    /// must then come through [`Endpoint::wait`].
    fn accepts_input(&self) -> bool {
        true
    }
}

/// One connection: a reader split into frames, a writer, and the endpoint between them.
pub struct FramedDriver<R, W, E: Endpoint> {
    reader: FramedRead<R, E::Codec>,
    writer: W,
    wbuf: BytesMut,
    endpoint: E,
    reader_open: bool,
    busy_poll: Duration,
}

impl<R, W, E> FramedDriver<R, W, E>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
    E: Endpoint,
{
    /// A driver reading `reader` with `codec` and writing `writer`, for `endpoint`; it keeps
    /// polling for up to `busy_poll` after activity before it sleeps (zero: never).
    pub fn new(reader: R, codec: E::Codec, writer: W, endpoint: E, busy_poll: Duration) -> Self {
        FramedDriver {
            reader: FramedRead::with_capacity(reader, codec, BUFFER),
            writer,
            wbuf: BytesMut::with_capacity(BUFFER),
            endpoint,
            reader_open: true,
            busy_poll,
        }
    }

    /// The endpoint, to act on before running (an initial refusal, say).
    pub fn endpoint_mut(&mut self) -> (&mut E, &mut BytesMut) {
        (&mut self.endpoint, &mut self.wbuf)
    }

    /// Runs until the endpoint says [`Status::Close`], then hands the peer what is left to
    /// write (for at most [`CLOSE_FLUSH`]) and closes the writing side.
    pub async fn run(mut self) -> std::io::Result<()> {
        self.drive().await
    }

    /// [`FramedDriver::run`], keeping the driver: its endpoint can be taken afterwards
    /// ([`FramedDriver::into_endpoint`]) to wind down (a client's session learns why the
    /// connection ended).
    pub async fn drive(&mut self) -> std::io::Result<()> {
        let mut just_spun = false;
        loop {
            self.pump();
            if self.endpoint.status() == Status::Close {
                break;
            }
            let paused = output_full(&self.wbuf);
            let reading = self.reader_open && !paused && self.endpoint.accepts_input();
            if !just_spun && !self.busy_poll.is_zero() && reading && self.wbuf.is_empty() {
                // Poll a little before sleeping, then re-check everything from the top.
                just_spun = true;
                self.spin().await;
                continue;
            }
            just_spun = false;
            tokio::select! {
                biased;
                r = self.writer.write_buf(&mut self.wbuf), if !self.wbuf.is_empty() => {
                    if r? == 0 {
                        return Err(std::io::ErrorKind::WriteZero.into());
                    }
                }
                frame = self.reader.next(), if reading => self.on_frame(frame),
                wake = self.endpoint.wait(paused) => self.endpoint.apply(wake, &mut self.wbuf),
            }
        }
        let (writer, wbuf) = (&mut self.writer, &mut self.wbuf);
        let flush = async {
            writer.write_all_buf(wbuf).await?;
            writer.flush().await?;
            writer.shutdown().await
        };
        match tokio::time::timeout(CLOSE_FLUSH, flush).await {
            Ok(r) => r,
            Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
        }
    }

    /// The endpoint, once the connection is over.
    pub fn into_endpoint(self) -> E {
        self.endpoint
    }

    /// Does the work that is ready without waiting: up to [`READ_BURST`] rounds of one frame
    /// and the endpoint's ready work, while the output has room.
    fn pump(&mut self) {
        for _ in 0..READ_BURST {
            if output_full(&self.wbuf) {
                return;
            }
            let mut progressed = false;
            if self.reader_open
                && self.endpoint.status() == Status::Open
                && self.endpoint.accepts_input()
                && let Some(frame) = self.reader.next().now_or_never()
            {
                self.on_frame(frame);
                progressed = true;
            }
            progressed |= self.endpoint.poll_ready(&mut self.wbuf);
            if !progressed {
                return;
            }
        }
    }

    /// Polls input and ready work without parking the thread, for up to `busy_poll`.
    async fn spin(&mut self) {
        let until = Instant::now() + self.busy_poll;
        loop {
            // In a current-thread runtime a yield polls the I/O driver without blocking.
            tokio::task::yield_now().await;
            // Let a peer sharing this CPU (a client on the same core) run: spinning must not
            // starve the very process it waits for.
            std::thread::yield_now();
            if self.endpoint.accepts_input()
                && let Some(frame) = self.reader.next().now_or_never()
            {
                self.on_frame(frame);
                return;
            }
            if self.endpoint.poll_ready(&mut self.wbuf) || Instant::now() >= until {
                return;
            }
        }
    }

    fn on_frame(&mut self, frame: Option<Result<<E::Codec as Decoder>::Item, FramingError>>) {
        if !matches!(frame, Some(Ok(_))) {
            self.reader_open = false;
        }
        self.endpoint.on_frame(frame, &mut self.wbuf);
    }
}
