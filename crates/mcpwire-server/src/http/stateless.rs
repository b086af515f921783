//! One stateless (2026-07-28) request: a fresh [`ServerSession`] and its calls that live as
//! long as the request's response (an [`Exchange`]). The session decides everything
//! (envelope, version, `resultType`, input rounds); the exchange only runs its dispatches and
//! yields what it sends. Dropping the exchange — the client closed the response stream —
//! drops the call, which is how a 2026-07-28 client over HTTP cancels.

use mcpwire_model::{BackendEvent, Method, Request};
use mcpwire_router::Identity;
use mcpwire_session::ServerSession;
use tokio::sync::broadcast;

use super::route_headers::ReadMeta;
use crate::Service;
pub(crate) use crate::driver::Exchange;
use crate::driver::{Calls, ServerCore};
use crate::observe::{TraceParent, WireLabel};

impl Exchange {
    /// Hands `req` (with its `_meta` as the listener read it), made by `identity`, to a
    /// fresh session of `service`; a `subscriptions/listen` hears `hub` (in a replica set:
    /// every replica's changes) rather than the router alone; its span is a child of the
    /// caller's `trace` context.
    pub(crate) fn start(
        service: &Service,
        req: Request,
        meta: ReadMeta,
        identity: Option<Identity>,
        ip: Option<std::net::IpAddr>,
        hub: Option<&broadcast::Sender<BackendEvent>>,
        trace: Option<TraceParent>,
    ) -> Exchange {
        // Only `subscriptions/listen` streams catalog changes (subscribing costs a lock on
        // the shared event channel).
        let listens = matches!(&req.method, Method::Other(m) if &**m == "subscriptions/listen");
        let mut calls = Calls::stateless(service.router.clone(), listens, WireLabel::Http);
        calls.hear(hub.filter(|_| listens).map(broadcast::Sender::subscribe));
        calls.set_identity(identity);
        calls.set_client_ip(ip);
        calls.set_trace_parent(trace);
        // Made in place and boxed once: the exchange moves through the futures answering it.
        let mut core = Box::new(ServerCore::new(
            ServerSession::new(service.config.clone()),
            calls,
        ));
        core.count_request(service.load.as_ref());
        Exchange::with_meta(core, req, meta.map(|m| m.map(|m| *m)))
    }
}
