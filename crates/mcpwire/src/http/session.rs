//! One stateful HTTP session: a task owning a [`ServerSession`] and its [`Calls`], fed by
//! the HTTP handlers through [`SessionHandle`].
//!
//! Routing: every message the session transmits names the client request it relates to.
//! While that request's `POST` is still waiting, the message goes there (its response
//! last, which ends that stream); otherwise — and for messages related to no request
//! (list changes, resource updates, unrelated logs) — it goes to the standalone `GET`
//! stream, or waits in a small backlog until one opens. A response whose `POST` is gone is
//! dropped: responses never travel on the standalone stream.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mcpwire_model::types::CancelledParams;
use mcpwire_model::{ErrorObject, Message, Method, Outbound, Request, RequestId, codes};
use mcpwire_session::{ServerSession, Transmit};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::sessions::Sessions;
use crate::Service;
use crate::calls::{Calls, recv_event, sleep_until};

/// Commands queued from handlers to one session before they wait.
const COMMAND_QUEUE: usize = 64;
/// Messages a request's `POST` stream may fall behind by before notifications are dropped.
const STREAM_QUEUE: usize = 256;
/// Messages kept for a standalone stream that is not open (oldest dropped first).
const BACKLOG: usize = 256;
/// Work items taken between two waits, so one busy session cannot hog its thread.
const BURST: usize = 64;

/// Where one request's messages go: notifications and asks, then its response.
struct Sink {
    events: mpsc::Sender<Outbound>,
    last: oneshot::Sender<Outbound>,
}

enum Command {
    /// A client request; its related messages go to the sink.
    Request(Request, Sink),
    /// A notification or a response to one of our asks.
    Message(Message),
    /// A (new) standalone stream; replaces the previous one.
    Standalone(mpsc::Sender<Outbound>),
}

/// A handler's way into a running session.
#[derive(Clone)]
pub(crate) struct SessionHandle {
    /// Boxed so an idle session's channel block stays small (one pointer per slot).
    tx: mpsc::Sender<Box<Command>>,
    close: CancellationToken,
}

/// The messages related to one request, ending with its response.
pub(crate) struct RequestStream {
    events: mpsc::Receiver<Outbound>,
    last: Option<oneshot::Receiver<Outbound>>,
}

impl Stream for RequestStream {
    type Item = Outbound;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Outbound>> {
        // The session drops the events sender when it sends the response, so the events
        // channel closes only after everything before the response was queued.
        if let Some(m) = std::task::ready!(self.events.poll_recv(cx)) {
            return Poll::Ready(Some(m));
        }
        let Some(last) = self.last.as_mut() else {
            return Poll::Ready(None);
        };
        let r = std::task::ready!(Pin::new(last).poll(cx));
        self.last = None;
        Poll::Ready(r.ok())
    }
}

/// The session ended (deleted, timed out); nothing was sent.
#[derive(Debug)]
pub(crate) struct Gone;

impl SessionHandle {
    /// Sends a request; its related messages and response arrive on the returned stream.
    pub(crate) async fn request(&self, req: Request) -> Result<RequestStream, Gone> {
        let (events_tx, events) = mpsc::channel(STREAM_QUEUE);
        let (last_tx, last) = oneshot::channel();
        let sink = Sink {
            events: events_tx,
            last: last_tx,
        };
        self.send(Command::Request(req, sink)).await?;
        Ok(RequestStream {
            events,
            last: Some(last),
        })
    }

    /// Sends a notification or a response.
    pub(crate) async fn message(&self, msg: Message) -> Result<(), Gone> {
        self.send(Command::Message(msg)).await
    }

    /// Opens the standalone stream (closing any previous one).
    pub(crate) async fn standalone(&self) -> Result<mpsc::Receiver<Outbound>, Gone> {
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        self.send(Command::Standalone(tx)).await?;
        Ok(rx)
    }

    /// Ends the session: running calls are dropped, open streams end.
    pub(crate) fn close(&self) {
        self.close.cancel();
    }

    async fn send(&self, cmd: Command) -> Result<(), Gone> {
        if self.close.is_cancelled() {
            return Err(Gone);
        }
        self.tx.send(Box::new(cmd)).await.map_err(|_| Gone)
    }
}

/// Starts the task of session `id`; it removes itself from `sessions` when it ends.
pub(crate) fn spawn(
    service: &Service,
    idle: Duration,
    id: String,
    sessions: Arc<Sessions>,
) -> SessionHandle {
    let (tx, cmds) = mpsc::channel(COMMAND_QUEUE);
    let close = CancellationToken::new();
    let task = SessionTask {
        session: ServerSession::new(service.config.clone()),
        calls: Calls::new(service.router.clone()),
        cmds,
        close: close.clone(),
        routes: HashMap::new(),
        standalone: None,
        backlog: VecDeque::new(),
        idle,
        last_active: Instant::now(),
    };
    tokio::spawn(async move {
        task.run().await;
        sessions.forget(&id);
        tracing::debug!(session = %id, "session ended");
    });
    SessionHandle { tx, close }
}

struct SessionTask {
    session: ServerSession,
    calls: Calls,
    cmds: mpsc::Receiver<Box<Command>>,
    close: CancellationToken,
    /// Requests whose `POST` is waiting, by client request id.
    routes: HashMap<RequestId, Sink>,
    standalone: Option<mpsc::Sender<Outbound>>,
    backlog: VecDeque<Outbound>,
    idle: Duration,
    last_active: Instant,
}

impl SessionTask {
    async fn run(mut self) {
        loop {
            for _ in 0..BURST {
                let progressed = self.calls.poll_ready(&mut self.session);
                self.drain();
                if !progressed {
                    break;
                }
            }
            let timeout = self.session.poll_timeout();
            let idle_at = self.idle_deadline();
            tokio::select! {
                biased;
                _ = self.close.cancelled() => break,
                cmd = self.cmds.recv() => match cmd {
                    Some(cmd) => self.on_command(*cmd),
                    None => break,
                },
                Some((id, reply)) = self.calls.calls.next(), if !self.calls.is_empty() => {
                    self.calls.on_done(&mut self.session, id, reply);
                }
                Some(msg) = self.calls.peer_rx.recv() => self.calls.on_peer(&mut self.session, *msg),
                ev = recv_event(&mut self.calls.events) => self.calls.on_backend(&mut self.session, ev),
                _ = sleep_until(timeout) => self.session.handle_timeout(Instant::now()),
                _ = standalone_closed(&self.standalone) => {
                    self.standalone = None;
                    self.last_active = Instant::now();
                }
                _ = sleep_until(idle_at) => {
                    if self.idle_deadline().is_some_and(|at| at <= Instant::now()) {
                        tracing::debug!("session idle; ending it");
                        break;
                    }
                }
            }
            self.drain();
        }
        self.session.handle_peer_closed();
    }

    /// When the session expires if nothing happens: only while nothing is in flight and no
    /// standalone stream is open.
    fn idle_deadline(&self) -> Option<Instant> {
        let busy = !self.calls.is_empty() || !self.routes.is_empty() || self.standalone.is_some();
        (!busy).then(|| self.last_active + self.idle)
    }

    fn on_command(&mut self, cmd: Command) {
        self.last_active = Instant::now();
        let now = Instant::now();
        match cmd {
            Command::Request(req, sink) => {
                if self.routes.contains_key(&req.id) {
                    let error = ErrorObject::new(
                        codes::INVALID_REQUEST,
                        "a request with this id is already in flight",
                    );
                    let _ = sink.last.send(Outbound::Error {
                        id: Some(req.id),
                        error,
                    });
                    return;
                }
                self.routes.insert(req.id.clone(), sink);
                self.session.handle_inbound(now, Ok(Message::Request(req)));
            }
            Command::Message(msg) => {
                let cancelled = cancelled_request(&msg).filter(|id| self.routes.contains_key(id));
                let before = self.session.in_flight();
                self.session.handle_inbound(now, Ok(msg));
                // A cancelled request is never answered: end its stream now rather than
                // when the session ends.
                if let Some(id) = cancelled
                    && self.session.in_flight() < before
                {
                    self.routes.remove(&id);
                }
            }
            Command::Standalone(tx) => {
                while let Some(m) = self.backlog.pop_front() {
                    if tx.try_send(m).is_err() {
                        break;
                    }
                }
                self.standalone = Some(tx);
            }
        }
    }

    fn drain(&mut self) {
        let mut out = Vec::new();
        self.calls.drain(&mut self.session, |t| out.push(t));
        for t in out {
            self.route(t);
        }
    }

    fn route(&mut self, t: Transmit) {
        let Transmit { mut msg, related } = t;
        let is_response = related.is_some() && msg.response_id() == related.as_ref();
        if let Some(id) = &related
            && let Some(sink) = self.routes.get(id)
        {
            if is_response {
                if let Some(sink) = self.routes.remove(id) {
                    let _ = sink.last.send(msg);
                }
                return;
            }
            match sink.events.try_send(msg) {
                Ok(()) => return,
                Err(TrySendError::Full(_)) => {
                    tracing::warn!(request = %id, "client is not reading its stream; message dropped");
                    return;
                }
                // The client left that stream; try the standalone one.
                Err(TrySendError::Closed(m)) => msg = m,
            }
        }
        if is_response {
            tracing::debug!("response to a request whose stream is gone; dropped");
            return;
        }
        self.send_standalone(msg);
    }

    fn send_standalone(&mut self, msg: Outbound) {
        let msg = match &self.standalone {
            Some(tx) => match tx.try_send(msg) {
                Ok(()) => return,
                Err(TrySendError::Full(_)) => {
                    tracing::warn!("client is not reading its standalone stream; message dropped");
                    return;
                }
                Err(TrySendError::Closed(msg)) => {
                    self.standalone = None;
                    msg
                }
            },
            None => msg,
        };
        if self.backlog.len() >= BACKLOG {
            self.backlog.pop_front();
        }
        self.backlog.push_back(msg);
    }
}

/// The request a `notifications/cancelled` names.
fn cancelled_request(msg: &Message) -> Option<RequestId> {
    let Message::Notification(n) = msg else {
        return None;
    };
    if n.method != Method::NotificationsCancelled {
        return None;
    }
    let p: CancelledParams = serde_json::from_str(n.params.as_deref()?.get()).ok()?;
    p.request_id
}

async fn standalone_closed(tx: &Option<mpsc::Sender<Outbound>>) {
    match tx {
        Some(tx) => tx.closed().await,
        None => std::future::pending().await,
    }
}
