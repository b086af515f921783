//! HTTP/1.1 connections driven by their users: a connection to the endpoint is polled by
//! the task that sends a request on it and reads its answer — not by a task of its own —
//! so a request costs no hop to a connection task and back (issue 24: the relay's request
//! runs in the listener's handler, and with this the whole exchange does).
//!
//! A [`Wire`] is taken from the [`Pool`] (or opened), sends one request while polling the
//! connection, and travels with the response's [`UpstreamBody`]: reading the body polls
//! the connection too, and a body read to its end puts the wire back in the pool. A body
//! dropped before its end drops its connection (an HTTP/1.1 connection cannot be reused in
//! the middle of a response). An idle wire is polled once, without waiting, before it is
//! taken again: one whose server closed it meanwhile is seen ended and dropped.
//!
//! An event stream is done with once its answer went by, but its end — the last chunk —
//! may come after: [`UpstreamBody::finish`] reads it, at once when it is there, else by a
//! task of its own within [`FINISH_TIMEOUT`] and [`FINISH_LIMIT`] bytes, so the connection
//! goes back to the pool (rmcp's and the SDKs' servers answer on event streams: dropping
//! the stream at its answer opened a TCP connection for every call).
//!
//! The pool keeps as many idle connections as the client may have requests in flight (a
//! steady load never closes and reopens connections: with a smaller bound, every request
//! over it paid a TCP connect and close on both ends), each for at most [`IDLE_TIMEOUT`].

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use axum::body::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::time::Instant;

/// How long an idle connection is kept for reuse (pruned when the pool is next used):
/// shorter than common servers' own keep-alive timeouts (uvicorn's and Node's 5 s), so a
/// connection is not reused just as its server closes it (a call sent into that close
/// fails). A load that keeps its connections busy never waits this long.
pub(super) const IDLE_TIMEOUT: Duration = Duration::from_secs(4);

/// How long the end of an answered event stream is waited for before its connection is
/// dropped instead of kept.
pub(super) const FINISH_TIMEOUT: Duration = Duration::from_secs(2);

/// How many bytes of an answered event stream are read past its answer, at most, waiting
/// for its end.
pub(super) const FINISH_LIMIT: usize = 64 * 1024;

/// A connection's own future: its reads and writes, until it closes.
type Driving = Pin<Box<dyn Future<Output = hyper::Result<()>> + Send>>;

/// One HTTP/1.1 connection: where requests are sent, and the connection to poll.
pub(super) struct Wire {
    sender: SendRequest<Full<Bytes>>,
    conn: Driving,
    /// The runtime whose I/O driver the connection is registered with (see [`home`]).
    home: Home,
}

/// Where a connection can be used without waking another thread: a single-threaded
/// runtime's thread (an HTTP listener's own, `HttpConfig::threads`), or any worker of a
/// multi-thread runtime (`None`).
type Home = Option<std::thread::ThreadId>;

/// The current task's [`Home`].
fn home() -> Home {
    use tokio::runtime::{Handle, RuntimeFlavor};
    Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::CurrentThread)
        .then(|| std::thread::current().id())
}

impl Wire {
    /// The HTTP/1.1 handshake over `io`.
    pub(super) async fn handshake<IO>(io: IO) -> Result<Wire, String>
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
            .await
            .map_err(|e| e.to_string())?;
        Ok(Wire {
            sender,
            conn: Box::pin(conn),
            home: home(),
        })
    }

    /// Polls the connection once without waiting; whether it takes a request now (not
    /// closed by its server, and done with its last response).
    fn ready_now(&mut self) -> bool {
        let mut cx = Context::from_waker(Waker::noop());
        if self.conn.as_mut().poll(&mut cx).is_ready() {
            return false;
        }
        self.sender.is_ready()
    }

    /// Sends `req`, polling the connection until its response's head arrives; the
    /// response's body carries the wire on (back to `pool` once read).
    pub(super) async fn send(
        mut self,
        req: Request<Full<Bytes>>,
        pool: &Pool,
    ) -> Result<Response<UpstreamBody>, SendFailed> {
        let answer = self.sender.try_send_request(req);
        tokio::pin!(answer);
        let mut ended = false;
        let response = loop {
            tokio::select! {
                biased;
                r = &mut answer => break r.map_err(|mut e| SendFailed {
                    unsent: e.take_message(),
                    error: e.into_error(),
                })?,
                // The connection ended: the answer fails on its own.
                _ = &mut self.conn, if !ended => ended = true,
            }
        };
        let (parts, body) = response.into_parts();
        let body = UpstreamBody {
            body,
            wire: (!ended).then_some(self),
            pool: pool.clone(),
        };
        Ok(Response::from_parts(parts, body))
    }
}

/// A request that got no response: why, and the request itself when the connection ended
/// before taking it (nothing of it was written: it may be sent again on another connection).
#[derive(Debug)]
pub(super) struct SendFailed {
    pub(super) error: hyper::Error,
    pub(super) unsent: Option<Request<Full<Bytes>>>,
}

/// The endpoint's idle connections: at most its bound, each kept at most [`IDLE_TIMEOUT`].
#[derive(Clone)]
pub(super) struct Pool(Arc<Idle>);

struct Idle {
    /// Oldest first; each with when it became idle.
    wires: Mutex<Vec<(Wire, Instant)>>,
    /// Idle connections kept at most.
    max: usize,
    /// Answered event streams whose end is being waited for ([`UpstreamBody::finish`]):
    /// at most `max` at once (past that, the connection is dropped).
    finishing: AtomicUsize,
}

impl Pool {
    /// A pool keeping at most `max` idle connections (at least one).
    pub(super) fn new(max: usize) -> Pool {
        Pool(Arc::new(Idle {
            wires: Mutex::new(Vec::new()),
            max: max.max(1),
            finishing: AtomicUsize::new(0),
        }))
    }

    /// An idle connection of the current runtime's (its thread's, for a single-threaded
    /// one) that takes a request now, if any (the most recent first).
    pub(super) fn take(&self) -> Option<Wire> {
        let here = home();
        let mut idle = self.lock();
        prune(&mut idle, Instant::now());
        while let Some(i) = idle.iter().rposition(|(w, _)| w.home == here) {
            let (mut wire, _) = idle.remove(i);
            if wire.ready_now() {
                return Some(wire);
            }
        }
        None
    }

    /// Keeps `wire` for reuse, unless the pool is full.
    fn put(&self, wire: Wire) {
        let mut idle = self.lock();
        // One clock read for both (every call puts its connection back).
        let now = Instant::now();
        prune(&mut idle, now);
        if idle.len() < self.0.max {
            idle.push((wire, now));
        }
    }

    /// Drops every idle connection (the endpoint moved).
    pub(super) fn clear(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(Wire, Instant)>> {
        self.0
            .wires
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Drops the connections idle for longer than [`IDLE_TIMEOUT`] at `now` (the oldest come
/// first).
fn prune(idle: &mut Vec<(Wire, Instant)>, now: Instant) {
    let stale = idle
        .iter()
        .take_while(|(_, since)| now.duration_since(*since) >= IDLE_TIMEOUT)
        .count();
    if stale > 0 {
        idle.drain(..stale);
    }
}

/// A response's body; reading it drives its connection.
pub(super) struct UpstreamBody {
    body: Incoming,
    /// The connection, while it is open.
    wire: Option<Wire>,
    pool: Pool,
}

impl UpstreamBody {
    /// Done with this body before its end (an event stream whose answer went by): reads
    /// the rest so the connection can be used again — what is there now at once, the rest
    /// by a task of its own within [`FINISH_TIMEOUT`] and [`FINISH_LIMIT`] bytes (and with
    /// at most the pool's bound of such tasks); otherwise the connection is dropped.
    pub(super) fn finish(mut self) {
        if self.wire.is_none() {
            return; // Nothing to keep.
        }
        let mut read = 0;
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            match Pin::new(&mut self).poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    if past_limit(&mut read, &frame) {
                        return;
                    }
                }
                // Ended: the connection went back to the pool (or it closed).
                Poll::Ready(_) => return,
                Poll::Pending => break,
            }
        }
        let idle = &self.pool.0;
        let finishing = idle.finishing.fetch_add(1, Ordering::Relaxed);
        if finishing >= idle.max || tokio::runtime::Handle::try_current().is_err() {
            idle.finishing.fetch_sub(1, Ordering::Relaxed);
            return;
        }
        tokio::spawn(async move {
            let pool = self.pool.clone();
            let rest = async {
                while let Some(Ok(frame)) = self.frame().await {
                    if past_limit(&mut read, &frame) {
                        return;
                    }
                }
            };
            let _ = tokio::time::timeout(FINISH_TIMEOUT, rest).await;
            pool.0.finishing.fetch_sub(1, Ordering::Relaxed);
        });
    }
}

/// Adds `frame`'s data to the `read` bytes of a stream being finished; whether that is
/// past [`FINISH_LIMIT`] (the connection is then dropped).
fn past_limit(read: &mut usize, frame: &Frame<Bytes>) -> bool {
    *read += frame.data_ref().map_or(0, Bytes::len);
    *read > FINISH_LIMIT
}

impl Body for UpstreamBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        if let Some(wire) = &mut this.wire
            && wire.conn.as_mut().poll(cx).is_ready()
        {
            // Closed (by its server, or after this response): the body ends on its own.
            this.wire = None;
        }
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(None) = frame
            && let Some(wire) = this.wire.take()
        {
            this.pool.put(wire);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

impl Drop for UpstreamBody {
    fn drop(&mut self) {
        // An empty body nobody read (a 202, a DELETE's answer) leaves the connection reusable.
        if self.body.is_end_stream()
            && let Some(wire) = self.wire.take()
        {
            self.pool.put(wire);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::BodyExt;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A loopback server handing each connection it accepts to `conn`: its address and
    /// how many connections it accepted.
    async fn accepting<F, Fut>(conn: F) -> (std::net::SocketAddr, Arc<AtomicUsize>)
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let a = accepted.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(conn(tcp));
            }
        });
        (addr, accepted)
    }

    /// Reads one request's head off `tcp`; false once the connection ended.
    async fn request_head(tcp: &mut TcpStream) -> bool {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        true
    }

    /// A server answering each request `ok`; it closes a connection after `per_conn`
    /// answers. Its address and how many connections it accepted.
    async fn server(per_conn: usize) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
        accepting(move |mut tcp| async move {
            for _ in 0..per_conn {
                let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                if !request_head(&mut tcp).await || tcp.write_all(answer).await.is_err() {
                    return;
                }
            }
        })
        .await
    }

    fn get(addr: std::net::SocketAddr) -> Request<Full<Bytes>> {
        Request::get("/")
            .header("host", addr.to_string())
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    /// One request on an idle connection of `pool`, or a new one; its body.
    async fn fetch(pool: &Pool, addr: std::net::SocketAddr) -> Bytes {
        let wire = match pool.take() {
            Some(w) => w,
            None => Wire::handshake(TcpStream::connect(addr).await.unwrap())
                .await
                .unwrap(),
        };
        let response = wire.send(get(addr), pool).await.unwrap();
        response.into_body().collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn a_connection_read_to_the_end_of_its_answer_is_used_again() {
        let (addr, accepted) = server(usize::MAX).await;
        let pool = Pool::new(8);
        for _ in 0..5 {
            assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1, "one connection for all");
    }

    #[tokio::test]
    async fn an_idle_connection_its_server_closed_is_not_taken() {
        let (addr, accepted) = server(1).await;
        let pool = Pool::new(8);
        assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        // The server closed it after answering: once that is seen, the pool gives none.
        let mut seen_closed = false;
        for _ in 0..200 {
            match pool.take() {
                None => {
                    seen_closed = true;
                    break;
                }
                Some(w) => pool.put(w),
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            seen_closed,
            "the closed connection was dropped from the pool"
        );
        assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_pool_keeps_at_most_its_bound() {
        const BOUND: usize = 6;
        let (addr, _) = server(usize::MAX).await;
        let pool = Pool::new(BOUND);
        // Twice the bound of connections, each answered and read, returned at once.
        let mut bodies = Vec::new();
        for _ in 0..BOUND * 2 {
            let wire = Wire::handshake(TcpStream::connect(addr).await.unwrap())
                .await
                .unwrap();
            bodies.push(wire.send(get(addr), &pool).await.unwrap().into_body());
        }
        for body in bodies {
            let _ = body.collect().await.unwrap();
        }
        assert_eq!(pool.lock().len(), BOUND);
    }

    /// Rounds of 40 requests at once over a pool bounded above that: the connections of
    /// the first round carry every later one (a pool bounded below the load closed the
    /// surplus after each round and opened it again: 40 + 4 × 24 connections at a bound
    /// of 16).
    #[tokio::test]
    async fn a_steady_load_keeps_its_connections() {
        const AT_ONCE: usize = 40;
        let (addr, accepted) = server(usize::MAX).await;
        let pool = Pool::new(64);
        for _ in 0..5 {
            let answers = futures::future::join_all((0..AT_ONCE).map(|_| fetch(&pool, addr))).await;
            assert!(answers.iter().all(|a| &a[..] == b"ok"));
        }
        let opened = accepted.load(Ordering::SeqCst);
        assert!(
            opened <= AT_ONCE,
            "{opened} connections for {AT_ONCE} at once"
        );
    }

    /// A connection opened on a single-threaded runtime is registered with that
    /// runtime's I/O driver: another thread's runtime opens its own rather than take it.
    #[test]
    fn a_connection_is_taken_only_on_the_thread_of_its_runtime() {
        let single = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
        };
        let pool = Pool::new(8);
        // The server, on a runtime of its own thread for the rest of the test.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            single().block_on(async {
                let (addr, accepted) = server(usize::MAX).await;
                tx.send((addr, accepted)).unwrap();
                std::future::pending::<()>().await;
            })
        });
        let (addr, accepted) = rx.recv().unwrap();
        let first = single();
        assert_eq!(&first.block_on(fetch(&pool, addr))[..], b"ok");
        let other = pool.clone();
        std::thread::spawn(move || {
            single().block_on(async {
                assert!(
                    other.take().is_none(),
                    "another thread's connection was taken"
                );
                assert_eq!(&fetch(&other, addr).await[..], b"ok");
            })
        })
        .join()
        .unwrap();
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            2,
            "one connection per thread"
        );
        first.block_on(async {
            let wire = pool.take();
            assert!(wire.is_some(), "this thread's connection is kept for it");
        });
    }

    /// A connection idle for the idle timeout is dropped, not used again.
    #[tokio::test(start_paused = true)]
    async fn a_connection_idle_past_the_timeout_is_not_used_again() {
        let (addr, accepted) = server(usize::MAX).await;
        let pool = Pool::new(8);
        assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        tokio::time::advance(IDLE_TIMEOUT - Duration::from_secs(1)).await;
        assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "reused within the timeout"
        );
        tokio::time::advance(IDLE_TIMEOUT).await;
        assert_eq!(&fetch(&pool, addr).await[..], b"ok");
        assert_eq!(accepted.load(Ordering::SeqCst), 2, "a new one after it");
        assert_eq!(pool.lock().len(), 1, "the stale one dropped");
    }

    /// A server answering each request with an event stream: one event, then its end
    /// after `tail` (at once with `Some(ZERO)`, never with `None`). Its address and how many
    /// connections it accepted.
    async fn sse_server(tail: Option<Duration>) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
        accepting(move |mut tcp| async move {
            while request_head(&mut tcp).await {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                            transfer-encoding: chunked\r\n\r\n";
                let event = "data: ok\n\n";
                let first = format!("{head}{:x}\r\n{event}\r\n", event.len());
                let Some(tail) = tail else {
                    let _ = tcp.write_all(first.as_bytes()).await;
                    std::future::pending::<()>().await;
                    return;
                };
                let sent = if tail.is_zero() {
                    tcp.write_all(format!("{first}0\r\n\r\n").as_bytes()).await
                } else {
                    let first = tcp.write_all(first.as_bytes()).await;
                    tokio::time::sleep(tail).await;
                    first.and(tcp.write_all(b"0\r\n\r\n").await)
                };
                if sent.is_err() {
                    return;
                }
            }
        })
        .await
    }

    /// One request on `pool`'s connection (or a new one): its first frame's data, and the
    /// body, not read to its end.
    async fn first_event(pool: &Pool, addr: std::net::SocketAddr) -> (Bytes, UpstreamBody) {
        let wire = match pool.take() {
            Some(w) => w,
            None => Wire::handshake(TcpStream::connect(addr).await.unwrap())
                .await
                .unwrap(),
        };
        let mut body = wire.send(get(addr), pool).await.unwrap().into_body();
        let frame = body.frame().await.unwrap().unwrap();
        (frame.into_data().unwrap(), body)
    }

    /// Waits (a bounded while) until `pool` holds `n` idle connections.
    async fn idle_reaches(pool: &Pool, n: usize) -> bool {
        for _ in 0..500 {
            if pool.lock().len() == n {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        false
    }

    /// An event stream finished after its answer — its end there at once, or a little
    /// later — gives its connection back: three answers, one connection (dropped at its
    /// answer, each took a connection of its own).
    #[tokio::test]
    async fn an_answered_event_stream_is_finished_and_its_connection_kept() {
        for tail in [Duration::ZERO, Duration::from_millis(30)] {
            let (addr, accepted) = sse_server(Some(tail)).await;
            let pool = Pool::new(8);
            for _ in 0..3 {
                let (data, body) = first_event(&pool, addr).await;
                assert_eq!(&data[..], b"data: ok\n\n");
                body.finish();
                assert!(
                    idle_reaches(&pool, 1).await,
                    "tail {tail:?}: connection kept"
                );
            }
            assert_eq!(accepted.load(Ordering::SeqCst), 1, "tail {tail:?}");
            assert_eq!(pool.0.finishing.load(Ordering::Relaxed), 0);
        }
    }

    /// A stream that never ends after its answer is given up after [`FINISH_TIMEOUT`]: its
    /// connection is not kept and nothing is left waiting for it.
    #[tokio::test(start_paused = true)]
    async fn an_event_stream_that_never_ends_is_given_up() {
        let (addr, accepted) = sse_server(None).await;
        let pool = Pool::new(8);
        let (_, body) = first_event(&pool, addr).await;
        body.finish();
        assert_eq!(pool.0.finishing.load(Ordering::Relaxed), 1);
        tokio::time::sleep(FINISH_TIMEOUT + Duration::from_millis(10)).await;
        assert_eq!(pool.0.finishing.load(Ordering::Relaxed), 0);
        assert_eq!(pool.lock().len(), 0, "not kept");
        let (_, body) = first_event(&pool, addr).await;
        drop(body);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    /// At most the pool's bound of streams are waited for at once; past it, a stream's
    /// connection is dropped at once.
    #[tokio::test(start_paused = true)]
    async fn streams_waited_for_stay_within_the_bound() {
        const BOUND: usize = 3;
        let (addr, _) = sse_server(None).await;
        let pool = Pool::new(BOUND);
        for _ in 0..BOUND * 4 {
            let (_, body) = first_event(&pool, addr).await;
            body.finish();
            assert!(pool.0.finishing.load(Ordering::Relaxed) <= BOUND);
        }
        assert_eq!(pool.0.finishing.load(Ordering::Relaxed), BOUND);
    }

    /// A connection its server closed before the request was taken gives the request back
    /// unsent (the client sends it again on a new connection).
    #[tokio::test]
    async fn a_request_a_closed_connection_never_took_comes_back() {
        let (addr, _) = accepting(|tcp| async move { drop(tcp) }).await;
        let wire = Wire::handshake(TcpStream::connect(addr).await.unwrap())
            .await
            .unwrap();
        // The server's close arrives before the request is sent.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let Err(failed) = wire.send(get(addr), &Pool::new(1)).await else {
            panic!("a closed connection answered");
        };
        assert!(failed.unsent.is_some(), "{failed:?}");
    }
}
