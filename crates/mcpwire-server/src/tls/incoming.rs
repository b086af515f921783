//! [`Incoming`]: the one accept loop of every network listener — TCP, or TCP then a TLS
//! handshake — yielding [`ServerStream`]s.
//!
//! Handshakes run on tasks of their own (at most [`MAX_HANDSHAKES`] at once and
//! [`MAX_HANDSHAKES_PER_IP`] from one address — a connection beyond that is closed at once —
//! each within [`HANDSHAKE_TIMEOUT`]), so slow or silent clients never hold up the others,
//! and one address cannot take every slot. A failed
//! handshake — a plaintext client, an untrusted or missing client certificate, a timeout —
//! closes that connection (rustls sends its alert), is logged at debug and counted
//! (`mcpwire_tls_handshake_failures_total{reason}`); nothing else notices. [`Incoming::accept`] is cancel-safe: handshakes in progress are kept.

#[cfg(feature = "tls")]
use std::collections::HashMap;
#[cfg(feature = "tls")]
use std::collections::hash_map::Entry;
use std::io;
#[cfg(feature = "tls")]
use std::net::IpAddr;
use std::net::SocketAddr;
use std::pin::Pin;
#[cfg(feature = "tls")]
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
#[cfg(feature = "tls")]
use tokio::task::JoinSet;
#[cfg(feature = "tls")]
use tokio_rustls::server::TlsStream;

#[cfg(feature = "tls")]
use super::reload::ServerTls;
use super::{TlsConfig, TlsError};

/// Counter: TLS handshakes that failed, by `reason` (`error`: refused or not TLS,
/// `timeout`, `per_ip`: too many in progress from the address). Exported by `observe`.
pub const HANDSHAKE_FAILURES_TOTAL: &str = "mcpwire_tls_handshake_failures_total";

/// Counts one failed TLS handshake.
#[cfg(feature = "tls")]
fn handshake_failure(reason: &'static str) {
    metrics::counter!(HANDSHAKE_FAILURES_TOTAL, "reason" => reason).increment(1);
}

/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// TLS handshakes in progress at once per listener; beyond, accepting waits.
pub const MAX_HANDSHAKES: usize = 256;

/// TLS handshakes in progress at once from one IP address; a connection beyond is closed.
pub const MAX_HANDSHAKES_PER_IP: usize = 16;

/// How long to wait after a failed `accept` (typically out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// ALPN protocol ids a listener offers.
pub mod alpn {
    /// HTTP/1.1 (Streamable HTTP, the WebSocket upgrade).
    pub const HTTP1: &[&[u8]] = &[b"http/1.1"];
    /// HTTP/2 (gRPC).
    pub(crate) const H2: &[&[u8]] = &[b"h2"];
    /// None (MCPB).
    pub const NONE: &[&[u8]] = &[];
}

/// A listening socket and, for a TLS listener, its TLS.
pub struct Incoming {
    tcp: TcpListener,
    #[cfg(feature = "tls")]
    tls: Option<Arc<ServerTls>>,
    #[cfg(feature = "tls")]
    handshakes: JoinSet<Handshake>,
    /// Handshakes in progress per address (an entry per address with at least one, so
    /// at most [`MAX_HANDSHAKES`] entries).
    #[cfg(feature = "tls")]
    per_ip: HashMap<IpAddr, usize>,
}

/// A finished handshake: the stream when it succeeded, and where it came from.
#[cfg(feature = "tls")]
type Handshake = (Option<TlsStream<TcpStream>>, SocketAddr);

impl Incoming {
    /// Accepts on `tcp`, terminating TLS with `tls` (offering `alpn`) when given. Fails if
    /// the TLS files cannot be used.
    pub(crate) fn new(
        tcp: TcpListener,
        tls: Option<&TlsConfig>,
        alpn: &[&'static [u8]],
    ) -> io::Result<Incoming> {
        #[cfg(feature = "tls")]
        {
            let tls = tls
                .map(|c| ServerTls::load(c, alpn))
                .transpose()
                .map_err(|e: TlsError| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            Ok(Incoming {
                tcp,
                tls,
                handshakes: JoinSet::new(),
                per_ip: HashMap::new(),
            })
        }
        #[cfg(not(feature = "tls"))]
        {
            let _ = alpn;
            match tls {
                Some(_) => Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    TlsError::Unavailable,
                )),
                None => Ok(Incoming { tcp }),
            }
        }
    }

    /// Accepts plain TCP on `tcp`.
    pub fn plain(tcp: TcpListener) -> Incoming {
        Incoming {
            tcp,
            #[cfg(feature = "tls")]
            tls: None,
            #[cfg(feature = "tls")]
            handshakes: JoinSet::new(),
            #[cfg(feature = "tls")]
            per_ip: HashMap::new(),
        }
    }

    /// Binds `addr` (see [`Incoming::new`]).
    pub(crate) async fn bind(
        addr: SocketAddr,
        tls: Option<&TlsConfig>,
        alpn: &[&'static [u8]],
    ) -> io::Result<Incoming> {
        Incoming::new(TcpListener::bind(addr).await?, tls, alpn)
    }

    /// The bound address.
    pub(crate) fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// Whether connections are TLS.
    pub fn is_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The next connection ready to serve (TLS: handshake done), with `TCP_NODELAY` set.
    /// An error is the listening socket's; handshake failures are not reported.
    pub(crate) async fn accept(&mut self) -> io::Result<(ServerStream, SocketAddr)> {
        #[cfg(not(feature = "tls"))]
        return self.accept_plain().await;
        #[cfg(feature = "tls")]
        let Some(tls) = &self.tls else {
            return self.accept_plain().await;
        };
        #[cfg(feature = "tls")]
        loop {
            tokio::select! {
                accepted = self.tcp.accept(), if self.handshakes.len() < MAX_HANDSHAKES => {
                    let (tcp, peer) = accepted?;
                    let from_ip = self.per_ip.entry(peer.ip()).or_default();
                    if *from_ip >= MAX_HANDSHAKES_PER_IP {
                        tracing::debug!(%peer, "too many TLS handshakes from this address; closed");
                        handshake_failure("per_ip");
                        continue;
                    }
                    *from_ip += 1;
                    let _ = tcp.set_nodelay(true);
                    self.handshakes.spawn(handshake(tls.acceptor(), tcp, peer));
                }
                Some(done) = self.handshakes.join_next() => {
                    // A handshake task cannot panic (rustls returns errors), so every entry
                    // is given back here.
                    let Ok((stream, peer)) = done else { continue };
                    if let Entry::Occupied(mut n) = self.per_ip.entry(peer.ip()) {
                        *n.get_mut() -= 1;
                        if *n.get() == 0 {
                            n.remove();
                        }
                    }
                    if let Some(stream) = stream {
                        return Ok((ServerStream::Tls(Box::new(stream)), peer));
                    }
                }
            }
        }
    }

    /// A plain TCP connection.
    async fn accept_plain(&mut self) -> io::Result<(ServerStream, SocketAddr)> {
        let (tcp, peer) = self.tcp.accept().await?;
        let _ = tcp.set_nodelay(true);
        Ok((ServerStream::Plain(tcp), peer))
    }

    /// This listener as `n` copies to accept on other runtimes (each registers its copy
    /// of the socket with the runtime it is attached on): the listening socket duplicated,
    /// the TLS shared. Each copy keeps its own bounds on handshakes in progress.
    pub(crate) fn detach(self, n: usize) -> io::Result<Vec<Detached>> {
        let tcp = self.tcp.into_std()?;
        let mut copies = Vec::with_capacity(n);
        for _ in 1..n.max(1) {
            copies.push(Detached {
                tcp: tcp.try_clone()?,
                #[cfg(feature = "tls")]
                tls: self.tls.clone(),
            });
        }
        copies.push(Detached {
            tcp,
            #[cfg(feature = "tls")]
            tls: self.tls,
        });
        Ok(copies)
    }

    /// [`Incoming::accept`], retrying (after a pause) when the listening socket fails.
    pub(crate) async fn next(&mut self) -> (ServerStream, SocketAddr) {
        loop {
            match self.accept().await {
                Ok(c) => return c,
                Err(e) => {
                    tracing::warn!(error = %e, "could not accept a connection; retrying");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
            }
        }
    }
}

/// A copy of a listener not yet attached to a runtime ([`Incoming::detach`]).
pub(crate) struct Detached {
    tcp: std::net::TcpListener,
    #[cfg(feature = "tls")]
    tls: Option<Arc<ServerTls>>,
}

impl Detached {
    /// The listener, accepting on the runtime this is called in.
    pub(crate) fn attach(self) -> io::Result<Incoming> {
        Ok(Incoming {
            tcp: TcpListener::from_std(self.tcp)?,
            #[cfg(feature = "tls")]
            tls: self.tls,
            #[cfg(feature = "tls")]
            handshakes: JoinSet::new(),
            #[cfg(feature = "tls")]
            per_ip: HashMap::new(),
        })
    }
}

/// One TLS handshake, bounded in time; no stream when it failed.
#[cfg(feature = "tls")]
async fn handshake(
    acceptor: tokio_rustls::TlsAcceptor,
    tcp: TcpStream,
    peer: SocketAddr,
) -> Handshake {
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
        Ok(Ok(stream)) => (Some(stream), peer),
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            handshake_failure("error");
            (None, peer)
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake not finished in time");
            handshake_failure("timeout");
            (None, peer)
        }
    }
}

/// Where a connection came from, as axum's connect info (WebSocket): the address, and the
/// caller its client certificate names (mTLS).
#[derive(Debug, Clone)]
pub struct PeerAddr {
    /// The client's address.
    pub(crate) addr: SocketAddr,
    /// The caller its verified client certificate names, if it presented one.
    pub(crate) certificate: Option<mcpwire_router::Identity>,
}

#[cfg(feature = "http")]
impl axum::serve::Listener for Incoming {
    type Io = ServerStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (ServerStream, SocketAddr) {
        self.next().await
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

#[cfg(feature = "http")]
impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Incoming>>
    for PeerAddr
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, Incoming>) -> PeerAddr {
        PeerAddr {
            addr: *stream.remote_addr(),
            certificate: stream.io().certificate_identity(),
        }
    }
}

/// An accepted connection: plain TCP, or TLS over TCP.
pub enum ServerStream {
    /// No TLS.
    Plain(TcpStream),
    /// TLS, handshake done.
    #[cfg(feature = "tls")]
    Tls(Box<TlsStream<TcpStream>>),
}

impl ServerStream {
    /// The caller the client's verified certificate names (mTLS), if it presented one.
    pub(crate) fn certificate_identity(&self) -> Option<mcpwire_router::Identity> {
        match self {
            ServerStream::Plain(_) => None,
            #[cfg(feature = "tls")]
            ServerStream::Tls(tls) => {
                let leaf = tls.get_ref().1.peer_certificates()?.first()?;
                Some(super::identity::certificate_identity(leaf))
            }
        }
    }
}

impl AsyncRead for ServerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            ServerStream::Plain(s) => s.is_write_vectored(),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_flush(cx),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            ServerStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
