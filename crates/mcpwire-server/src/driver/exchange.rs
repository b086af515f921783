//! [`Exchange`]: one request on a session of its own, run until its response — the driver of
//! wires where every request stands alone (stateless 2026-07-28 HTTP, gRPC's unary RPCs).
//! Dropping an exchange drops its call, which is how such a client cancels.
//!
//! A finished exchange's core is kept on its thread ([`Exchange::finish`]; a few at most)
//! for the next request's ([`Exchange::core`]): its box, its calls' channel and call set,
//! its session's tables are made once per thread rather than once per request. What the
//! request held — router, caller, session state — is let go when it is kept
//! ([`ServerCore::release`]); the next request's core is made exactly as a fresh one
//! ([`ServerCore::renew`]), in that room.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::LazyLock;

use futures::Stream;
use mcpwire_model::types::{CallToolParams, RequestMeta};
use mcpwire_model::{BackendEvent, Message, Outbound, Request, RequestId};
use mcpwire_router::{Identity, Router};
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

/// Finished exchanges' cores kept per thread.
const KEPT_PER_THREAD: usize = 4;

thread_local! {
    static KEPT: RefCell<Vec<ExchangeCore>> = const { RefCell::new(Vec::new()) };
}

/// What a kept core's calls hold in place of a router: one that serves nothing, so that
/// a kept core keeps nothing of the service it served alive (a reloaded gateway's old
/// upstreams).
fn idle_router() -> &'static Router {
    static IDLE: LazyLock<Router> = LazyLock::new(|| {
        let info =
            mcpwire_model::types::Implementation::new("mcpwire-idle", env!("CARGO_PKG_VERSION"));
        Router::new(mcpwire_router::Server::builder(info).build())
    });
    &IDLE
}

/// A session and its calls ready for one request ([`Exchange::core`]), and the queue of
/// what they send.
pub(crate) struct ExchangeCore {
    /// Boxed: the exchange moves through the futures answering it (a session and its calls
    /// are over a kilobyte; each move of them was a copy).
    core: Box<ServerCore>,
    out: VecDeque<Outbound>,
}

/// The state of one request.
pub(crate) struct Exchange {
    core: Box<ServerCore>,
    out: VecDeque<Outbound>,
    answering: Answering,
}

/// The request being answered; says so when it is dropped unanswered.
struct Answering {
    id: RequestId,
    done: bool,
}

impl Drop for Answering {
    fn drop(&mut self) {
        if !self.done {
            tracing::debug!(id = %self.id, "request abandoned by the client; its call is dropped");
        }
    }
}

impl Exchange {
    /// A fresh session of `service` (`session`, made by the wire) with its calls on `wire`,
    /// for one request `from` a client, counted in the service's load: in a core this
    /// thread kept (renewed as new), else in one boxed now — set up in place either way
    /// (the exchange moves through the futures answering it).
    pub(crate) fn core(
        service: &Service,
        session: ServerSession,
        wire: WireLabel,
        hears: Hears<'_>,
        from: RequestFrom,
    ) -> ExchangeCore {
        let (listens, hub) = match hears {
            Hears::Nothing => (false, None),
            Hears::Changes(hub) => (true, hub),
        };
        let router = service.router.clone();
        let (mut core, out) = match KEPT.try_with(|kept| kept.borrow_mut().pop()) {
            Ok(Some(ExchangeCore { mut core, out })) => {
                core.renew(session, router, listens, wire);
                (core, out)
            }
            _ => {
                let calls = Calls::stateless(router, listens, wire);
                (Box::new(ServerCore::new(session, calls)), VecDeque::new())
            }
        };
        let calls = core.calls_mut();
        calls.hear(hub.map(broadcast::Sender::subscribe));
        calls.set_identity(from.identity);
        calls.set_client_ip(from.ip);
        calls.set_trace_parent(from.trace);
        core.count_request(service.load.as_ref());
        ExchangeCore { core, out }
    }

    /// Hands `req` to `core` (a fresh session and its calls: [`Exchange::core`]).
    pub(crate) fn new(core: ExchangeCore, req: Request) -> Exchange {
        let ExchangeCore { mut core, out } = core;
        let id = req.id.clone();
        core.inbound(Ok(Message::Request(req)));
        Exchange::around(core, out, id)
    }

    /// [`Exchange::new`] for a request whose `_meta` the driver read already (`meta`:
    /// what `RequestMeta::from_params` made of its params; not parsed again), and its
    /// `tools/call` params with it (`tool_call`: the router takes them as they are).
    pub(crate) fn with_meta(
        core: ExchangeCore,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
        tool_call: Option<Box<CallToolParams>>,
    ) -> Exchange {
        let ExchangeCore { mut core, out } = core;
        let id = req.id.clone();
        core.inbound_request(req, meta, tool_call);
        Exchange::around(core, out, id)
    }

    fn around(core: Box<ServerCore>, out: VecDeque<Outbound>, id: RequestId) -> Exchange {
        Exchange {
            core,
            out,
            answering: Answering { id, done: false },
        }
    }

    /// The id of the request being answered.
    pub(crate) fn id(&self) -> &RequestId {
        &self.answering.id
    }

    /// Ends an answered exchange, keeping its core on this thread for the next request's
    /// (when nothing of it is running any more and fewer than [`KEPT_PER_THREAD`] are
    /// kept); otherwise it is dropped as it is.
    pub(crate) fn finish(self) {
        let Exchange {
            mut core,
            mut out,
            answering,
        } = self;
        if !answering.done || !out.is_empty() || !core.release(idle_router()) {
            return;
        }
        if out.capacity() > 16 {
            out = VecDeque::new();
        }
        let _ = KEPT.try_with(|kept| {
            let mut kept = kept.borrow_mut();
            if kept.len() < KEPT_PER_THREAD {
                kept.push(ExchangeCore { core, out });
            }
        });
    }

    /// The next message related to the request; `None` after its response.
    pub(crate) async fn next(&mut self) -> Option<Outbound> {
        loop {
            let out = &mut self.out;
            self.core
                .poll_ready(out, |_| false, |out, t| out.push_back(t.msg));
            if let Some(m) = self.out.pop_front() {
                if m.response_id() == Some(&self.answering.id) {
                    self.answering.done = true;
                }
                return Some(m);
            }
            if self.answering.done {
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
            if self.answering.done {
                self.finish();
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

#[cfg(test)]
impl Exchange {
    /// Cores kept on this thread now.
    fn kept_here() -> usize {
        KEPT.with(|kept| kept.borrow().len())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use mcpwire_model::types::Implementation;
    use mcpwire_model::{Revision, to_raw};
    use mcpwire_router::{CallCtx, NoArgs, ToolError, tool};
    use serde_json::json;
    use tokio::sync::Notify;

    /// A service whose tool `who` answers with what its call knows of its caller, and whose
    /// tool `leave` leaves a task behind that logs once `go` is notified.
    fn service(go: Arc<Notify>) -> Service {
        let server = mcpwire_router::Server::builder(Implementation::new("t", "1"))
            .tool(tool("who", |ctx: CallCtx, _: NoArgs| async move {
                Ok::<_, ToolError>(format!(
                    "identity={:?} ip={:?} listener={:?}",
                    ctx.identity().map(|i| i.subject().to_owned()),
                    ctx.client_ip(),
                    ctx.listener()
                ))
            }))
            .tool(tool("leave", move |ctx: CallCtx, _: NoArgs| {
                let go = go.clone();
                async move {
                    tokio::spawn(async move {
                        go.notified().await;
                        ctx.log(mcpwire_model::types::LoggingLevel::Info, json!("late"));
                    });
                    Ok::<_, ToolError>("left")
                }
            }))
            .build();
        Service::from_server(server)
    }

    fn from(identity: Option<Identity>, ip: Option<IpAddr>) -> RequestFrom {
        RequestFrom {
            identity,
            ip,
            trace: None,
        }
    }

    /// A stateless `tools/call` of `name` (request id `id`) on `service`.
    fn start(service: &Service, name: &str, id: i64, from: RequestFrom) -> Exchange {
        let session = ServerSession::preinitialized(service.config.clone(), Revision::V2025_11_25);
        let core = Exchange::core(service, session, WireLabel::Http, Hears::Nothing, from);
        let req = Request {
            id: RequestId::Int(id),
            method: mcpwire_model::Method::ToolsCall,
            params: Some(to_raw(&json!({"name": name, "arguments": {}}))),
        };
        Exchange::new(core, req)
    }

    /// Every message `exchange` sends up to its response, as JSON.
    async fn drive(exchange: &mut Exchange) -> Vec<String> {
        let mut sent = Vec::new();
        while let Some(m) = exchange.next().await {
            let mut line = Vec::new();
            m.write_json(&mut line).expect("json");
            sent.push(String::from_utf8(line).expect("utf-8"));
            if exchange.answering.done {
                break;
            }
        }
        sent
    }

    /// Runs `tools/call` of `name` as a stateless request, finished as the listener finishes
    /// it; every message it sent.
    async fn run(service: &Service, name: &str, from: RequestFrom) -> Vec<String> {
        let mut exchange = start(service, name, 7, from);
        let sent = drive(&mut exchange).await;
        exchange.finish();
        sent
    }

    #[tokio::test]
    async fn a_kept_core_carries_nothing_of_its_request_to_the_next() {
        let go = Arc::new(Notify::new());
        let mut counted = service(go);
        counted.load = Some(Arc::new(crate::serve::ListenerLoad::new("http://l1")));
        let alice = Identity::api_key("alice", vec![]);
        let ip: IpAddr = "127.0.0.2".parse().expect("address");
        let first = run(&counted, "who", from(Some(alice), Some(ip))).await;
        assert!(
            first[0].contains(
                r#"identity=Some(\"key:alice\") ip=Some(127.0.0.2) listener=Some(\"http://l1\")"#
            ),
            "{first:?}"
        );
        assert_eq!(Exchange::kept_here(), 1, "the finished core is kept");

        let plain = service(Arc::new(Notify::new()));
        let second = run(&plain, "who", from(None, None)).await;
        assert_eq!(second.len(), 1);
        assert!(
            second[0].contains("identity=None ip=None listener=None"),
            "{second:?}"
        );
        assert_eq!(Exchange::kept_here(), 1, "taken, then kept again");
    }

    #[tokio::test]
    async fn a_core_whose_tool_left_a_task_behind_is_not_kept() {
        let go = Arc::new(Notify::new());
        let svc = service(go.clone());
        let first = run(&svc, "leave", from(None, None)).await;
        assert!(first[0].contains("left"), "{first:?}");
        assert_eq!(
            Exchange::kept_here(),
            0,
            "a task still holds the call's channel"
        );

        // The next request gets a core of its own; the late log never reaches it.
        let mut second = start(&svc, "who", 8, from(None, None));
        go.notify_one();
        tokio::task::yield_now().await;
        let sent = drive(&mut second).await;
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert!(sent[0].contains("identity=None"), "{sent:?}");
    }

    #[tokio::test]
    async fn at_most_a_few_cores_are_kept_per_thread() {
        let svc = service(Arc::new(Notify::new()));
        let mut exchanges: Vec<Exchange> = (0..3 * KEPT_PER_THREAD as i64)
            .map(|id| start(&svc, "who", id, from(None, None)))
            .collect();
        for exchange in &mut exchanges {
            let sent = drive(exchange).await;
            assert_eq!(sent.len(), 1, "{sent:?}");
        }
        for exchange in exchanges {
            exchange.finish();
        }
        assert_eq!(Exchange::kept_here(), KEPT_PER_THREAD);
    }

    #[tokio::test]
    async fn an_exchange_dropped_before_its_answer_keeps_nothing() {
        let svc = service(Arc::new(Notify::new()));
        drop(start(&svc, "who", 1, from(None, None)));
        assert_eq!(Exchange::kept_here(), 0);
    }
}
