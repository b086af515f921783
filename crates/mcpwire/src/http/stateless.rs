//! One stateless (2026-07-28) request: a fresh [`ServerSession`] and [`Calls`] that live as
//! long as the request's response. The session decides everything (envelope, version,
//! `resultType`, input rounds); this only runs its dispatches and yields what it sends.
//! Dropping the exchange — the client closed the response stream — drops the call, which
//! is how a 2026-07-28 client over HTTP cancels.

use std::collections::VecDeque;
use std::time::Instant;

use futures::{Stream, StreamExt};
use mcpwire_model::{Message, Method, Outbound, Request, RequestId};
use mcpwire_session::ServerSession;

use crate::Service;
use crate::calls::{Calls, recv_event, sleep_until};

/// The state of one stateless request.
pub(crate) struct Exchange {
    session: ServerSession,
    calls: Calls,
    out: VecDeque<Outbound>,
    id: RequestId,
    done: bool,
}

impl Exchange {
    /// Hands `req` to a fresh session.
    pub(crate) fn start(service: &Service, req: Request) -> Exchange {
        // Only `subscriptions/listen` streams catalog changes.
        let listens = matches!(&req.method, Method::Other(m) if &**m == "subscriptions/listen");
        let calls = if listens {
            Calls::new(service.router.clone())
        } else {
            Calls::without_events(service.router.clone())
        };
        let mut ex = Exchange {
            session: ServerSession::new(service.config.clone()),
            calls,
            out: VecDeque::new(),
            id: req.id.clone(),
            done: false,
        };
        ex.session
            .handle_inbound(Instant::now(), Ok(Message::Request(req)));
        ex.drain();
        ex
    }

    /// The id of the request being answered.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next message related to the request; `None` after its response.
    async fn next(&mut self) -> Option<Outbound> {
        loop {
            if let Some(m) = self.out.pop_front() {
                if m.response_id() == Some(&self.id) {
                    self.done = true;
                }
                return Some(m);
            }
            if self.done {
                return None;
            }
            let timeout = self.session.poll_timeout();
            tokio::select! {
                biased;
                Some((id, reply)) = self.calls.calls.next(), if !self.calls.is_empty() => {
                    self.calls.on_done(&mut self.session, id, reply);
                }
                Some(msg) = self.calls.peer_rx.recv() => self.calls.on_peer(&mut self.session, *msg),
                ev = recv_event(&mut self.calls.events) => self.calls.on_backend(&mut self.session, ev),
                _ = sleep_until(timeout) => self.session.handle_timeout(Instant::now()),
            }
            self.calls.poll_ready(&mut self.session);
            self.drain();
        }
    }

    fn drain(&mut self) {
        let out = &mut self.out;
        self.calls
            .drain(&mut self.session, |t| out.push_back(t.msg));
    }

    /// The exchange as a stream of messages ending with the response.
    pub(crate) fn into_stream(self) -> impl Stream<Item = Outbound> + Send + Unpin + 'static {
        Box::pin(futures::stream::unfold(self, |mut ex| async move {
            let m = ex.next().await?;
            Some((m, ex))
        }))
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        if !self.done {
            tracing::debug!(id = %self.id, "stateless request abandoned by the client; its call is dropped");
        }
    }
}
