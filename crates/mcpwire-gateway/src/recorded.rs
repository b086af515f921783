//! The console's live calls (`[admin] console_keys`): a layer over the catalog that
//! records every tool call — caller, tool, outcome, duration — while a console page
//! watches (`mcpwire_server::admin::console::calls`). Unwatched, it passes everything
//! through (the forwarding and relay fast paths included) after one clock read; watched,
//! it sends tool calls the general way so each is seen to its end.

use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::{McpError, Reply};
use mcpwire_router::{
    Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx, ForwardedCall, RelayCaller,
    RelayDecision, ToolRouting,
};
use mcpwire_server::admin::console::calls::{CallLog, CallRecord, now_ms};
use tokio::sync::broadcast;

/// `inner`, its tool calls recorded in `log` while watched.
pub(crate) struct Recorded {
    inner: Arc<dyn Backend>,
    log: Arc<CallLog>,
}

impl Recorded {
    pub(crate) fn new(inner: Arc<dyn Backend>, log: Arc<CallLog>) -> Recorded {
        Recorded { inner, log }
    }
}

/// How a call ended, as the live list shows it.
fn outcome(answer: &Result<Reply, McpError>) -> (String, bool) {
    match answer {
        Ok(Reply::Complete(raw)) if raw.get().contains("\"isError\":true") => {
            ("tool error".into(), true)
        }
        Ok(_) => ("ok".into(), false),
        Err(e) => (e.to_string(), true),
    }
}

impl Backend for Recorded {
    fn info(&self) -> &BackendInfo {
        self.inner.info()
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        let tool = match &req {
            BackendRequest::CallTool { name, .. } if self.log.watched() => name.clone(),
            _ => return self.inner.call(ctx, req),
        };
        let identity = ctx
            .identity()
            .map_or_else(|| "anonymous".to_owned(), |i| i.subject().to_owned());
        let (log, started) = (self.log.clone(), Instant::now());
        let answer = self.inner.call(ctx, req);
        Box::pin(async move {
            let answer = answer.await;
            let (outcome, failed) = outcome(&answer);
            log.record(CallRecord {
                at_ms: now_ms(),
                identity,
                tool,
                outcome,
                failed,
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
            });
            answer
        })
    }

    fn forwards_tool_calls(&self) -> bool {
        self.inner.forwards_tool_calls()
    }

    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        if self.log.watched() {
            // Given back: the router parses it and calls the general way, recorded.
            return Err(call);
        }
        self.inner.forward_tool_call(call)
    }

    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        if self.log.watched() {
            return RelayDecision::General;
        }
        self.inner.relay_route(name, caller)
    }

    fn open_sessions(&self) -> Option<usize> {
        self.inner.open_sessions()
    }

    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        self.inner.tool_routing(name)
    }

    fn events(&self) -> Option<broadcast::Receiver<mcpwire_model::BackendEvent>> {
        self.inner.events()
    }
}
