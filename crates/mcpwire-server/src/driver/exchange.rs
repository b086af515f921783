//! [`Exchange`]: one request on a session of its own, run until its response — the driver of
//! wires where every request stands alone (stateless 2026-07-28 HTTP, gRPC's unary RPCs).
//! Dropping an exchange drops its call, which is how such a client cancels.

use std::collections::VecDeque;

use futures::Stream;
use mcpwire_model::types::RequestMeta;
use mcpwire_model::{Message, Outbound, Request, RequestId};

use super::ServerCore;

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
    /// Hands `req` to `core` (a fresh session and its calls).
    pub(crate) fn new(core: ServerCore, req: Request) -> Exchange {
        let mut core = Box::new(core);
        let id = req.id.clone();
        core.inbound(Ok(Message::Request(req)));
        Exchange::around(core, id)
    }

    /// [`Exchange::new`] for a request whose `_meta` the driver read already (`meta`:
    /// what `RequestMeta::from_params` made of its params; not parsed again).
    pub(crate) fn with_meta(
        mut core: Box<ServerCore>,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
    ) -> Exchange {
        let id = req.id.clone();
        core.inbound_request(req, meta);
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
