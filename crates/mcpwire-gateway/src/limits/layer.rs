//! [`Limited`]: the rate limits as a layer over any backend.

use std::sync::Arc;

use arc_swap::ArcSwap;

use mcpwire_model::{McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, ToolRouting,
};
use tokio::sync::broadcast;

use super::RateLimits;

/// A backend whose every request first passes [`RateLimits`]: keyed by the caller's
/// identity (`CallCtx::identity`, anonymous when none), the client IP
/// (`CallCtx::client_ip`, none on stdio) and, for `tools/call`, the tool's exposed name.
/// A refused request never reaches the inner backend. The server's own calls (no client:
/// the proto-mcp tool schema listing) are not counted.
///
/// The layer keeps the inner backend's fast path: a forwarded `tools/call`
/// ([`Backend::forward_tool_call`]) is counted exactly as [`Backend::call`] counts it, then
/// forwarded (or, when the inner backend gives it back, run the general way — counted
/// once either way). A call the inner backend would relay as a raw frame
/// ([`Backend::relay_route`]) is counted here as it is decided, once: let through on its
/// route, or refused with the general path's error. Limits kept in the shared store need
/// a round trip, so with those every call takes the general path.
pub struct Limited {
    inner: Arc<dyn Backend>,
    limits: SharedRateLimits,
}

/// Rate limits that can be replaced while serving (a reload of `[limits]`): every
/// [`Limited`] sharing it applies the new limits to the calls that start after the swap.
pub type SharedRateLimits = Arc<ArcSwap<RateLimits>>;

impl Limited {
    /// `inner` behind `limits`.
    pub fn new(inner: Arc<dyn Backend>, limits: Arc<RateLimits>) -> Limited {
        Limited::shared(inner, Arc::new(ArcSwap::new(limits)))
    }

    /// `inner` behind the limits `limits` holds at each call.
    pub fn shared(inner: Arc<dyn Backend>, limits: SharedRateLimits) -> Limited {
        Limited { inner, limits }
    }
}

impl Limited {
    /// Runs `then` once the call in `ctx` (of `tool`, for `tools/call`) passes the limits;
    /// the refusal otherwise. Calls without a client are not counted.
    fn checked(
        &self,
        ctx: &CallCtx,
        tool: Option<&str>,
        then: impl FnOnce(CallCtx) -> BoxFuture<'static, Result<Reply, McpError>> + Send + 'static,
        owned: CallCtx,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        if !ctx.has_client() {
            return then(owned);
        }
        let limits = self.limits.load();
        if limits.is_stored() {
            // Shared across replicas: one round trip to the store before the call.
            let limits = arc_swap::Guard::into_inner(limits);
            let tool = tool.map(str::to_owned);
            return Box::pin(async move {
                let (identity, ip) = (owned.identity().cloned(), owned.client_ip());
                limits
                    .check_stored(identity.as_ref(), ip, tool.as_deref())
                    .await?;
                then(owned).await
            });
        }
        if let Err(refused) = limits.check(ctx.identity(), ctx.client_ip(), tool) {
            return Box::pin(std::future::ready(Err(refused)));
        }
        then(owned)
    }
}

impl Backend for Limited {
    fn info(&self) -> &BackendInfo {
        self.inner.info()
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let tool = match &req {
            BackendRequest::CallTool { name, .. } => Some(name.to_owned()),
            _ => None,
        };
        let inner = self.inner.clone();
        self.checked(
            &ctx,
            tool.as_deref(),
            move |ctx| inner.call(ctx, req),
            ctx.clone(),
        )
    }

    fn forwards_tool_calls(&self) -> bool {
        self.inner.forwards_tool_calls()
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        if !self.inner.forwards_tool_calls() || !call.ctx.has_client() {
            return self.inner.forward_tool_call(call);
        }
        let (ctx, tool) = (call.ctx.clone(), call.name().to_owned());
        let inner = self.inner.clone();
        Ok(self.checked(
            &ctx,
            Some(&tool),
            move |_| match inner.forward_tool_call(call) {
                Ok(answer) => answer,
                // Counted once already: the general way, without the router's parse.
                Err(call) => {
                    let (ctx, req) = call.into_request();
                    inner.call(ctx, req)
                }
            },
            ctx.clone(),
        ))
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        let route = match self.inner.relay_route(name, caller) {
            RelayDecision::Relay(route) => route,
            other => return other,
        };
        let limits = self.limits.load();
        if limits.is_stored() {
            return RelayDecision::General;
        }
        // A refused check uses up nothing, so deciding after the route leaves the counts as
        // the general path's (which checks before anything else).
        match limits.check(caller.identity, caller.client_ip, Some(name)) {
            Ok(()) => RelayDecision::Relay(route),
            Err(refused) => RelayDecision::Refuse(refused),
        }
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.inner.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<mcpwire_model::BackendEvent>> {
        self.inner.events()
    }
}
