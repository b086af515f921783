//! [`Limited`]: the rate limits as a layer over any backend.

use std::sync::Arc;

use arc_swap::ArcSwap;

use mcpwire_model::{McpError, Reply};
use mcpwire_router::{Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ToolRouting};
use tokio::sync::broadcast;

use super::RateLimits;

/// A backend whose every request first passes [`RateLimits`]: keyed by the caller's
/// identity (`CallCtx::identity`, anonymous when none), the client IP
/// (`CallCtx::client_ip`, none on stdio) and, for `tools/call`, the tool's exposed name.
/// A refused request never reaches the inner backend. The server's own calls (no client:
/// the proto-mcp tool schema listing) are not counted.
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
            BackendRequest::CallTool { name, .. } => Some(name.as_str()),
            _ => None,
        };
        if !ctx.has_client() {
            return self.inner.call(ctx, req);
        }
        let limits = self.limits.load();
        if limits.is_stored() {
            // Shared across replicas: one round trip to the store before the call.
            let (limits, inner) = (arc_swap::Guard::into_inner(limits), self.inner.clone());
            let tool = tool.map(str::to_owned);
            return Box::pin(async move {
                let (identity, ip) = (ctx.identity().cloned(), ctx.client_ip());
                limits
                    .check_stored(identity.as_ref(), ip, tool.as_deref())
                    .await?;
                inner.call(ctx, req).await
            });
        }
        if let Err(refused) = limits.check(ctx.identity(), ctx.client_ip(), tool) {
            return Box::pin(std::future::ready(Err(refused)));
        }
        self.inner.call(ctx, req)
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.inner.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<mcpwire_model::BackendEvent>> {
        self.inner.events()
    }
}
