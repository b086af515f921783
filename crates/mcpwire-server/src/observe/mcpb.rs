//! The MCPB listener's metrics, under the names of the MCPB spec.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
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
    const COUNT: usize = 2;

    fn as_str(self) -> &'static str {
        match self {
            Direction::Inbound => "inbound",
            Direction::Outbound => "outbound",
        }
    }
}

/// The `type` label of `mcp_gateway_tcp_messages_total`: what a frame was.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FrameKind {
    /// An MCP request.
    Request,
    /// An MCP response (a result or an error).
    Response,
    /// An MCP notification.
    Notification,
    /// A health check or its answer.
    HealthCheck,
    /// Version negotiation.
    Version,
    /// A control frame.
    Control,
    /// An Error frame.
    Error,
    /// A frame the codec refused.
    Refused,
    /// An MCP frame whose JSON-RPC did not decode.
    Invalid,
}

impl FrameKind {
    const COUNT: usize = 9;

    fn as_str(self) -> &'static str {
        match self {
            FrameKind::Request => "request",
            FrameKind::Response => "response",
            FrameKind::Notification => "notification",
            FrameKind::HealthCheck => "health_check",
            FrameKind::Version => "version",
            FrameKind::Control => "control",
            FrameKind::Error => "error",
            FrameKind::Refused => "refused",
            FrameKind::Invalid => "invalid",
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
    const COUNT: usize = 4;

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
    /// Frame and error counters by label, registered on first use once the recorder is
    /// installed (a combination never seen never shows on `/metrics`).
    labelled: Arc<Labelled>,
}

#[derive(Default)]
struct Labelled {
    messages: [[OnceLock<Counter>; Direction::COUNT]; FrameKind::COUNT],
    protocol_errors: [OnceLock<Counter>; ProtocolError::COUNT],
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
            labelled: Arc::default(),
        }
    }

    /// Counts one frame.
    pub(crate) fn message(&self, kind: FrameKind, direction: Direction) {
        let register = || metrics::counter!(TCP_MESSAGES_TOTAL, "type" => kind.as_str(), "direction" => direction.as_str());
        if !super::calls::enabled() {
            // Not our recorder (yet): a handle taken now would stay a no-op.
            return register().increment(1);
        }
        self.labelled.messages[kind as usize][direction as usize]
            .get_or_init(register)
            .increment(1);
    }

    /// Counts one protocol error.
    pub(crate) fn protocol_error(&self, kind: ProtocolError) {
        let register = || metrics::counter!(TCP_PROTOCOL_ERRORS_TOTAL, "type" => kind.as_str());
        if !super::calls::enabled() {
            return register().increment(1);
        }
        self.labelled.protocol_errors[kind as usize]
            .get_or_init(register)
            .increment(1);
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
