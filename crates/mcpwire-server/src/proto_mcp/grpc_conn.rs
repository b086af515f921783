//! One accepted gRPC connection: its client address and its place under the connections
//! per IP limit, carried to every RPC as tonic connect info.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use mcpwire_model::McpError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

use crate::limits::{ConnectionLimits, ConnectionPermit};
use crate::observe::WireLabel;
use crate::tls::ServerStream;

/// How long a connection over the limit is kept to answer its RPCs `RESOURCE_EXHAUSTED`
/// before it is closed.
const REFUSED_LINGER: Duration = Duration::from_secs(5);

/// What every RPC of a connection knows about it.
#[derive(Debug, Clone)]
pub(crate) struct GrpcConnInfo {
    /// The client's address.
    pub(crate) remote: Option<SocketAddr>,
    /// Set when the connection is over the per-IP limit: every RPC answers this.
    pub(crate) refused: Option<McpError>,
    /// The caller the client's verified TLS certificate names (mTLS).
    pub(crate) certificate: Option<mcpwire_router::Identity>,
}

/// An accepted connection (TCP or TLS) holding its connection slot (given back when tonic drops it).
/// A refused connection holds none, answers its RPCs with the refusal and reads EOF after
/// [`REFUSED_LINGER`].
pub(crate) struct GrpcConn {
    stream: ServerStream,
    info: GrpcConnInfo,
    _permit: Option<ConnectionPermit>,
    /// Counts it among its listener's open connections.
    _counted: Option<crate::serve::Counted>,
    closes: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl GrpcConn {
    /// `stream` from `remote`, under `limits` if any, counted in `load` if admitted.
    pub(crate) fn admit(
        stream: ServerStream,
        remote: SocketAddr,
        limits: Option<&Arc<ConnectionLimits>>,
        load: Option<&Arc<crate::serve::ListenerLoad>>,
    ) -> GrpcConn {
        let (permit, refused) = match limits.map(|l| l.admit(remote.ip(), WireLabel::Grpc)) {
            Some(Ok(p)) => (Some(p), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, None),
        };
        let counted = load
            .filter(|_| refused.is_none())
            .map(crate::serve::ListenerLoad::connected);
        let closes = refused
            .is_some()
            .then(|| Box::pin(tokio::time::sleep(REFUSED_LINGER)));
        GrpcConn {
            info: GrpcConnInfo {
                remote: Some(remote),
                refused,
                certificate: stream.certificate_identity(),
            },
            stream,
            _counted: counted,
            _permit: permit,
            closes,
        }
    }
}

impl Connected for GrpcConn {
    type ConnectInfo = GrpcConnInfo;

    fn connect_info(&self) -> GrpcConnInfo {
        self.info.clone()
    }
}

impl AsyncRead for GrpcConn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if let Some(closes) = self.closes.as_mut()
            && closes.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for GrpcConn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
