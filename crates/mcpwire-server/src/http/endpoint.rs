//! The listener's hyper service for one connection: a `POST` to the endpoint — every MCP
//! message a client sends — goes to [`post::handle`] directly; everything else (`GET`,
//! `DELETE`, the RFC 9728 metadata, the service's extra routes, 404 and 405) to the axum
//! router.
//!
//! The direct path does what the router's stack did for it, in the same order: the
//! unread-body tracking of [`unread`] around the whole exchange, the [`Caller`] admission
//! (guard, then credential), then the handler. It skips what a `POST` did not need: route
//! matching, the per-request connection extension, the copy of the request's headers the
//! `HeaderMap` extractor makes, and the boxed layers between (issue 24: 12 k of a direct
//! stateful call's 69 k instructions; 6.7 k of a relayed call's through the gateway).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{Method, Request};
use axum::response::Response;
use futures::future::Either;
use hyper::body::Incoming;
use hyper_util::service::TowerToHyperService;

use super::auth::Caller;
use super::unread::{self, Watched};
use super::{App, ClientAddr, post};

/// One connection's service (cheap to clone: shared parts).
#[derive(Clone)]
pub(super) struct Endpoint {
    pub(super) app: Arc<App>,
    pub(super) client: Arc<ClientAddr>,
    /// Everything but a `POST` to the endpoint.
    pub(super) router: TowerToHyperService<axum::Router>,
}

impl Endpoint {
    /// Answers one request. The future is a concrete type (served through
    /// `hyper::service::service_fn`), not a boxed one: hyper keeps a connection's request
    /// future in one slot it allocates once, where a boxed future cost an allocation of a
    /// few kilobytes per request — past glibc's per-thread cache, so its slowest path.
    pub(super) fn call(
        &self,
        req: Request<Incoming>,
    ) -> impl Future<Output = Result<Response, Infallible>> + Send + use<> {
        if req.method() == Method::POST && req.uri().path() == self.app.config.path {
            let (app, client) = (self.app.clone(), self.client.clone());
            return Either::Left(async move { Ok(posted(app, client, req).await) });
        }
        let mut req = req.map(Body::new);
        req.extensions_mut().insert(ClientAddr::clone(&self.client));
        Either::Right(hyper::service::Service::call(&self.router, req))
    }
}

/// A `POST` to the endpoint: admitted, then handled; its answer says `close` when given
/// before the body was read to its end (as the router's middleware has it).
async fn posted(app: Arc<App>, client: Arc<ClientAddr>, req: Request<Incoming>) -> Response {
    let (parts, body) = req.into_parts();
    let mut body = Watched::new(body);
    let response = match Caller::admit(&app, &client, &parts.headers).await {
        Ok(caller) => post::handle(State(app), caller, parts.headers, &mut body).await,
        Err(refused) => refused,
    };
    unread::close_unless(body.read(), response)
}
