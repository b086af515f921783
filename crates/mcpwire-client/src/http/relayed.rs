//! The relay's HTTP end (`mcpwire_relay`): a relayed call's frame is POSTed by a
//! task of its own, started as the downstream session relays it (no hop through the
//! connection's task) — or, for a call a listener's request handler relays itself (the
//! seam), by that handler's own task ([`RelayPost::exchange`]) — and its answer — a JSON body, or the answering event of its stream —
//! handed back as bytes with the client's id restored when it is plain
//! ([`Relay::answer_raw`]), or decoded and shaped as the general path shapes it otherwise.
//! Logs on the call's stream go with its answer, in order ([`Relay::log_of`]); the
//! server's requests and other notifications go to the connection's task, as any others.
//! Cancellations are queued on the relay and sent by the connection's task as
//! `notifications/cancelled`; the POST itself is abandoned ([`RelayPost::abandon`]).

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use hyper::StatusCode;
use hyper::header::CONTENT_TYPE;
use mcpwire_model::jsonrpc::decode_with_depth;
use mcpwire_model::{LogEntry, McpError, Message, Method, Reply, Response};
use mcpwire_relay::{Relay, RelayExchange, RelayPost};
use mcpwire_session::{ClientRequestId, IdMap};
use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use super::conn::{Headers, HttpConn, VersionHeader};
use super::exchange::{EventSink, Inbound, MAX_DEPTH, answer_in, collect, read_stream};
use crate::ClientError;
use crate::handle::WireSession;

/// The HTTP end of a connection's relay: starts each relayed call's POST.
pub(super) struct HttpRelayPost {
    conn: Arc<HttpConn>,
    /// The connection's task: what a relayed call's stream brings besides its answer and
    /// logs, and a failure that ends the session.
    inbound: mpsc::Sender<Inbound>,
    /// Relayed POSTs running, to abandon on cancellation; finished ones are swept once the
    /// map holds the connection's in-flight bound.
    posts: Mutex<IdMap<u64, AbortHandle>>,
    max_in_flight: usize,
    /// Marked gone as soon as a relayed call finds the server no longer holds the
    /// session, before the call runs again (so it does not run on this connection).
    wire_session: Arc<WireSession>,
}

impl HttpRelayPost {
    /// The end for `conn`, telling `inbound` what is not a relayed call's answer.
    pub(super) fn new(
        conn: Arc<HttpConn>,
        inbound: mpsc::Sender<Inbound>,
        max_in_flight: usize,
        wire_session: Arc<WireSession>,
    ) -> HttpRelayPost {
        HttpRelayPost {
            conn,
            inbound,
            posts: Mutex::default(),
            max_in_flight,
            wire_session,
        }
    }
}

impl RelayPost for HttpRelayPost {
    fn post(&self, relay: &Arc<Relay>, id: u64, frame: Bytes, trace: Vec<(String, String)>) {
        // Boxed: the exchange's future is kilobytes (see `HttpTask::send`).
        let task = tokio::spawn(Box::pin(run(
            self.conn.clone(),
            relay.clone(),
            (id, frame, trace),
            self.inbound.clone(),
            self.wire_session.clone(),
        )));
        let Ok(mut posts) = self.posts.lock() else {
            return;
        };
        if posts.len() >= self.max_in_flight {
            posts.retain(|_, p| !p.is_finished());
        }
        posts.insert(id, task.abort_handle());
    }

    fn exchange(
        &self,
        relay: &Arc<Relay>,
        id: u64,
        frame: Bytes,
        trace: Vec<(String, String)>,
    ) -> RelayExchange {
        // Not recorded in `posts`: whoever runs it abandons it by dropping it.
        Box::pin(run(
            self.conn.clone(),
            relay.clone(),
            (id, frame, trace),
            self.inbound.clone(),
            self.wire_session.clone(),
        ))
    }

    fn close(&self) {
        let posts = self.posts.lock().map(|mut p| std::mem::take(&mut *p));
        for (_, p) in posts.into_iter().flatten() {
            p.abort();
        }
    }

    fn abandon(&self, id: u64) {
        let post = self.posts.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(p) = post {
            p.abort();
        }
    }
}

/// POSTs relayed call `id`'s `frame` and hands its answer to `relay`; a failure answers
/// the call with the error the general path gives it — except when the server no longer
/// holds the session: then the call was not run, goes back to its downstream session to
/// run on the general path, and the connection's task is told (it ends the connection).
async fn run(
    conn: Arc<HttpConn>,
    relay: Arc<Relay>,
    (id, frame, trace): (u64, Bytes, Headers),
    inbound: mpsc::Sender<Inbound>,
    wire_session: Arc<WireSession>,
) {
    let Err(e) = exchange(&conn, &relay, (id, frame.clone(), trace), &inbound).await else {
        return;
    };
    if e.is_session_gone() && conn.has_session() {
        // Not run: the downstream session runs it on the general path, which finds this
        // connection gone and opens a new upstream session (as for its own calls).
        wire_session.set_gone();
        relay.not_run(id, frame);
        let _ = inbound
            .send(Inbound::Failed(ClientRequestId::new(id), e))
            .await;
        return;
    }
    if let Some(call) = relay.claim(id) {
        call.answer(Err(e.to_mcp()));
    }
}

async fn exchange(
    conn: &HttpConn,
    relay: &Arc<Relay>,
    (id, frame, headers): (u64, Bytes, Headers),
    inbound: &mpsc::Sender<Inbound>,
) -> Result<(), ClientError> {
    let response = conn.post(frame, VersionHeader::Kept, &headers).await?;
    let status = response.status();
    if status == StatusCode::ACCEPTED {
        return Err(ClientError::Invalid(format!(
            "{} answered `tools/call` with 202 Accepted, which carries no answer",
            conn.url()
        )));
    }
    let sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let mut sink = RelaySink { relay, id, inbound };
    if sse {
        // Boxed: an event stream's reader is kilobytes of future (a JSON answer needs none).
        return Box::pin(read_stream(
            conn,
            "tools/call",
            response.into_body(),
            &mut sink,
        ))
        .await;
    }
    let bytes = collect(conn, response.into_body()).await?;
    if status == StatusCode::NOT_FOUND && conn.has_session() {
        // The server no longer holds the session: the call was not run.
        return Err(conn.status_error(status, &bytes));
    }
    if relay.answer_raw(&bytes, MAX_DEPTH) {
        return Ok(());
    }
    if let Some(Message::Response(r)) = answer_in(&bytes, ClientRequestId::new(id)) {
        sink.answer(r);
        return Ok(());
    }
    if !status.is_success() {
        return Err(conn.status_error(status, &bytes));
    }
    Err(ClientError::Invalid(format!(
        "{} answered `tools/call` with something that is not its JSON-RPC response: {}",
        conn.url(),
        crate::excerpt(&String::from_utf8_lossy(&bytes))
    )))
}

/// A relayed call's answer stream.
struct RelaySink<'a> {
    relay: &'a Arc<Relay>,
    id: u64,
    inbound: &'a mpsc::Sender<Inbound>,
}

impl RelaySink<'_> {
    /// Answers the call with a response that could not be handed back as bytes, shaped
    /// as the general path shapes it.
    fn answer(&self, r: Response) {
        if let Some(call) = self.relay.claim(self.id) {
            call.answer(match r.outcome {
                Ok(raw) => Ok(Reply::Complete(raw)),
                Err(obj) => Err(McpError::Wire(obj)),
            });
        }
    }
}

impl EventSink for RelaySink<'_> {
    async fn message(&mut self, data: &str) -> bool {
        if self.relay.answer_raw(data.as_bytes(), MAX_DEPTH) {
            return true;
        }
        let wire_id = ClientRequestId::new(self.id).wire_id();
        let msg = match decode_with_depth(data.as_bytes(), MAX_DEPTH) {
            Ok(Message::Response(r)) if r.id == wire_id => {
                self.answer(r);
                return true;
            }
            Ok(Message::Notification(n)) if matches!(n.method, Method::NotificationsMessage) => {
                let entry = n
                    .params
                    .as_deref()
                    .and_then(|p| serde_json::from_str::<LogEntry>(p.get()).ok());
                match entry.map(|e| self.relay.log_of(self.id, e)) {
                    Some(Ok(())) => return false,
                    // The call is no longer waiting: the log goes as any other.
                    _ => Ok(Message::Notification(n)),
                }
            }
            Err(e) => match answer_in(data.as_bytes(), ClientRequestId::new(self.id)) {
                Some(Message::Response(r)) => {
                    self.answer(r);
                    return true;
                }
                _ => Err(e),
            },
            other => other,
        };
        // The server's requests and other notifications: as the session's others.
        self.inbound
            .send(Inbound::Message(msg, None))
            .await
            .is_err()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A flood of relayed calls leaves the table of running POSTs within the connection's
    /// in-flight bound: finished ones are swept as new ones come (memory stays flat however
    /// many calls were relayed).
    #[tokio::test]
    async fn finished_posts_are_swept_so_their_table_stays_within_the_bound() {
        const BOUND: usize = 4;
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", closed.local_addr().unwrap());
        drop(closed);
        let conn = HttpConn::new(&url, 64, Duration::from_secs(1), Default::default(), None);
        let (tx, _rx) = mpsc::channel(8);
        let post = HttpRelayPost::new(Arc::new(conn.unwrap()), tx, BOUND, Arc::default());
        let relay = Arc::new(Relay::new(Box::new(|| 0), BOUND));
        let running = |id: u64| {
            let posts = post.posts.lock().unwrap();
            posts.get(&id).is_some_and(|p| !p.is_finished())
        };
        for id in 0..500u64 {
            post.post(&relay, id, Bytes::from_static(b"{}\n"), Vec::new());
            // Nothing listens: the POST fails at once (its call is no longer waiting).
            while running(id) {
                tokio::task::yield_now().await;
            }
            assert!(post.posts.lock().unwrap().len() <= BOUND);
        }
    }
}
