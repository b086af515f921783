//! The MCPB listener's metrics, under the names of the MCPB spec.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use metrics::{Counter, Gauge, Histogram};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::{
    TCP_BYTES_TOTAL, TCP_CONNECTIONS_ACTIVE, TCP_CONNECTIONS_TOTAL, TCP_MESSAGE_DURATION,
    TCP_MESSAGES_TOTAL, TCP_PROTOCOL_ERRORS_TOTAL,
};

/// Which way a frame or byte went: the `direction` label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Direction {
    Inbound,
    Outbound,
}

impl Direction {
    fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        }
    }
}

/// The `type` label of `mcp_gateway_tcp_protocol_errors_total`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ProtocolError {
    /// Bad magic or version, a frame the connection cannot go on after.
    Framing,
    /// A frame refused by the codec (bad type, bad JSON, too large); the connection goes on.
    Refused,
    /// A frame out of order (before version negotiation, before authentication).
    Sequence,
    /// The client reported an error to us.
    Peer,
}

impl ProtocolError {
    fn as_str(self) -> &'static str {
        match self {
            ProtocolError::Framing => "framing",
            ProtocolError::Refused => "refused",
            ProtocolError::Sequence => "sequence",
            ProtocolError::Peer => "peer",
        }
    }
}

/// The handles one MCPB listener records through (looked up once, not per frame).
#[derive(Clone)]
pub(crate) struct McpbMetrics {
    pub(crate) connections: Counter,
    pub(crate) active: Gauge,
    pub(crate) bytes_in: Counter,
    pub(crate) bytes_out: Counter,
    pub(crate) frame_duration: Histogram,
}

impl McpbMetrics {
    /// The handles (no-ops until the recorder is installed).
    pub(crate) fn new() -> McpbMetrics {
        McpbMetrics {
            connections: metrics::counter!(TCP_CONNECTIONS_TOTAL),
            active: metrics::gauge!(TCP_CONNECTIONS_ACTIVE),
            bytes_in: metrics::counter!(TCP_BYTES_TOTAL, "direction" => "inbound"),
            bytes_out: metrics::counter!(TCP_BYTES_TOTAL, "direction" => "outbound"),
            frame_duration: metrics::histogram!(TCP_MESSAGE_DURATION),
        }
    }

    /// Counts one frame of `kind` (`request`, `response`, `notification`, `health_check`,
    /// `version`, `control`, `error`).
    pub(crate) fn message(&self, kind: &'static str, direction: Direction) {
        metrics::counter!(TCP_MESSAGES_TOTAL, "type" => kind, "direction" => direction.as_str())
            .increment(1);
    }

    /// Counts one protocol error.
    pub(crate) fn protocol_error(&self, kind: ProtocolError) {
        metrics::counter!(TCP_PROTOCOL_ERRORS_TOTAL, "type" => kind.as_str()).increment(1);
    }
}

/// A byte stream half whose reads or writes add to a counter (`mcp_gateway_tcp_bytes_total`).
pub(crate) struct Counted<T> {
    inner: T,
    bytes: Counter,
}

impl<T> Counted<T> {
    /// `inner`, counting what passes into `bytes`.
    pub(crate) fn new(inner: T, bytes: Counter) -> Counted<T> {
        Counted { inner, bytes }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len().saturating_sub(before);
        if read > 0 {
            self.bytes.increment(read as u64);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &polled {
            self.bytes.increment(*n as u64);
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if let Poll::Ready(Ok(n)) = &polled {
            self.bytes.increment(*n as u64);
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
