//! [`Exchange`]: one request on a session of its own, run until its response — the driver of
//! wires where every request stands alone (stateless 2026-07-28 HTTP, gRPC's unary RPCs).
//! Dropping an exchange drops its call, which is how such a client cancels.

use std::collections::VecDeque;
use std::net::IpAddr;

use futures::Stream;
use mcpwire_model::types::{CallToolParams, RequestMeta};
use mcpwire_model::{BackendEvent, Message, Outbound, Request, RequestId};
use mcpwire_router::Identity;
use mcpwire_session::ServerSession;
use tokio::sync::broadcast;

use super::{Calls, ServerCore};
use crate::Service;
use crate::observe::{TraceParent, WireLabel};

/// Who made a request that stands alone: the identity its credential proved, the
/// client's address (read by the rate limits) and its trace context.
pub(crate) struct RequestFrom {
    /// The identity its credential proved (`None`: the listener does not authenticate).
    pub(crate) identity: Option<Identity>,
    /// The client's address.
    pub(crate) ip: Option<IpAddr>,
    /// Its trace context: the request's span is a child of it.
    pub(crate) trace: Option<TraceParent>,
}

/// What an exchange's session hears of the catalog's changes.
pub(crate) enum Hears<'a> {
    /// Nothing: the request does not stream them.
    Nothing,
    /// The router's changes, or `hub`'s when given (in a replica set: every replica's).
    Changes(Option<&'a broadcast::Sender<BackendEvent>>),
}

/// The state of one request.
pub(crate) struct Exchange {
    /// Boxed: the exchange moves through the futures answering it (a session and its calls
    /// are over a kilobyte; each move of them was a copy).
    core: Box<ServerCore>,
    out: VecDeque<Outbound>,
    id: RequestId,
    done: bool,
}

impl Exchange {
    /// A fresh session of `service` (`session`, made by the wire) with its calls on `wire`,
    /// for one request `from` a client, counted in the service's load. Set up in place and
    /// boxed once: the exchange moves through the futures answering it.
    pub(crate) fn core(
        service: &Service,
        session: ServerSession,
        wire: WireLabel,
        hears: Hears<'_>,
        from: RequestFrom,
    ) -> Box<ServerCore> {
        let (listens, hub) = match hears {
            Hears::Nothing => (false, None),
            Hears::Changes(hub) => (true, hub),
        };
        let mut calls = Calls::stateless(service.router.clone(), listens, wire);
        calls.hear(hub.map(broadcast::Sender::subscribe));
        calls.set_identity(from.identity);
        calls.set_client_ip(from.ip);
        calls.set_trace_parent(from.trace);
        let mut core = Box::new(ServerCore::new(session, calls));
        core.count_request(service.load.as_ref());
        core
    }

    /// Hands `req` to `core` (a fresh session and its calls: [`Exchange::core`]).
    pub(crate) fn new(mut core: Box<ServerCore>, req: Request) -> Exchange {
        let id = req.id.clone();
        core.inbound(Ok(Message::Request(req)));
        Exchange::around(core, id)
    }

    /// [`Exchange::new`] for a request whose `_meta` the driver read already (`meta`:
    /// what `RequestMeta::from_params` made of its params; not parsed again), and its
    /// `tools/call` params with it (`tool_call`: the router takes them as they are).
    pub(crate) fn with_meta(
        mut core: Box<ServerCore>,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
        tool_call: Option<Box<CallToolParams>>,
    ) -> Exchange {
        let id = req.id.clone();
        core.inbound_request(req, meta, tool_call);
        Exchange::around(core, id)
    }

    fn around(core: Box<ServerCore>, id: RequestId) -> Exchange {
        Exchange {
            core,
            out: VecDeque::new(),
            id,
            done: false,
        }
    }

    /// The id of the request being answered.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The next message related to the request; `None` after its response.
    pub(crate) async fn next(&mut self) -> Option<Outbound> {
        loop {
            let out = &mut self.out;
            self.core
                .poll_ready(out, |_| false, |out, t| out.push_back(t.msg));
            if let Some(m) = self.out.pop_front() {
                if m.response_id() == Some(&self.id) {
                    self.done = true;
                }
                return Some(m);
            }
            if self.done {
                return None;
            }
            let wake = self.core.wait(false).await;
            self.core.apply(wake);
        }
    }

    /// The response itself, skipping what came before it; `None` if the exchange ended
    /// without one.
    pub(crate) async fn response(mut self) -> Option<Outbound> {
        while let Some(m) = self.next().await {
            if self.done {
                return Some(m);
            }
        }
        None
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
            tracing::debug!(id = %self.id, "request abandoned by the client; its call is dropped");
        }
    }
}
