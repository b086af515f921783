//! One stateless (2026-07-28) request: a fresh [`ServerSession`] and its calls that live as
//! long as the request's response (an [`Exchange`]). The session decides everything
//! (envelope, version, `resultType`, input rounds); the exchange only runs its dispatches and
//! yields what it sends. Dropping the exchange — the client closed the response stream —
//! drops the call, which is how a 2026-07-28 client over HTTP cancels.

use mcpwire_model::{BackendEvent, Method, Request};
use mcpwire_session::ServerSession;
use tokio::sync::broadcast;

use super::route_headers::ParamsRead;
use crate::Service;
pub(crate) use crate::driver::Exchange;
use crate::driver::exchange::{Hears, RequestFrom};
use crate::observe::WireLabel;

impl Exchange {
    /// Hands `req` (with its params as the listener read them), sent `from` a client, to a
    /// fresh session of `service`; a `subscriptions/listen` hears `hub` (in a replica set:
    /// every replica's changes) rather than the router alone.
    pub(crate) fn start(
        service: &Service,
        req: Request,
        read: ParamsRead,
        from: RequestFrom,
        hub: Option<&broadcast::Sender<BackendEvent>>,
    ) -> Exchange {
        // Only `subscriptions/listen` streams catalog changes (subscribing costs a lock on
        // the shared event channel).
        let listens = matches!(&req.method, Method::Other(m) if &**m == "subscriptions/listen");
        let hears = if listens {
            Hears::Changes(hub)
        } else {
            Hears::Nothing
        };
        let session = ServerSession::new(service.config.clone());
        let core = Exchange::core(service, session, WireLabel::Http, hears, from);
        let meta = read.meta.map(|m| m.map(|m| *m));
        Exchange::with_meta(core, req, meta, read.tool_call)
    }
}
