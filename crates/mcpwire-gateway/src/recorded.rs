//! The console's live calls (`[admin] console_keys`): a layer over the catalog that
//! records every tool call — caller, listener, tool, backend, outcome, duration — while a
//! console page watches (`mcpwire_server::admin::console::calls`), and a layer over each
//! listener's authenticator that records the credentials it refuses. Unwatched, calls pass
//! through (the forwarding and relay fast paths included) after one clock read, and
//! accepted credentials pass without any; watched, tool calls go the general way so each
//! is seen to its end.

use std::sync::{Arc, Weak};
use std::time::Instant;

use mcpwire_federation::Federation;
use mcpwire_server::identify::{AuthFailure, Authenticate, Check, ResourceServer};

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
    /// The listeners this catalog serves (or `console`): shown for a call whose wire
    /// named no listener.
    via: Arc<str>,
    /// Where a tool's backend is looked up; dangling when one backend is served alone.
    federation: Weak<Federation>,
    /// That one backend's name.
    alone: Arc<str>,
}

impl Recorded {
    /// `inner` recorded in `log` as reached through `via`; tools' backends are found in
    /// `federation`, or are all `alone` without one.
    pub(crate) fn new(
        inner: Arc<dyn Backend>,
        log: Arc<CallLog>,
        via: Arc<str>,
        federation: Weak<Federation>,
        alone: Arc<str>,
    ) -> Recorded {
        Recorded {
            inner,
            log,
            via,
            federation,
            alone,
        }
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
        let backend = match self.federation.upgrade() {
            Some(fed) => fed.tool_member(&tool).map(|m| m.to_string()),
            None => Some(self.alone.to_string()),
        };
        // The listener the call came through, as its session (or stateless request)
        // carries it; the catalog's own listeners when the wire did not name one.
        let listener = ctx.listener().unwrap_or(&self.via).to_owned();
        let (log, started) = (self.log.clone(), Instant::now());
        let answer = self.inner.call(ctx, req);
        Box::pin(async move {
            let answer = answer.await;
            let (outcome, failed) = outcome(&answer);
            log.record(CallRecord {
                at_ms: now_ms(),
                identity,
                listener,
                tool,
                backend: backend.unwrap_or_default(),
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

/// A listener's authenticator whose refusals are recorded in the live calls while a page
/// watches; accepted credentials pass through untouched.
#[derive(Debug)]
pub(crate) struct RecordedAuth {
    inner: Arc<dyn Authenticate>,
    log: Arc<CallLog>,
    /// The listener's URL.
    listener: Arc<str>,
}

impl RecordedAuth {
    /// `inner` as listener `listener` uses it, its refusals recorded in `log`.
    pub(crate) fn new(
        inner: Arc<dyn Authenticate>,
        log: Arc<CallLog>,
        listener: Arc<str>,
    ) -> RecordedAuth {
        RecordedAuth {
            inner,
            log,
            listener,
        }
    }
}

/// Records `failure` on `listener` when a page watches.
fn refused(log: &CallLog, listener: &str, failure: &AuthFailure) {
    if !log.watched() {
        return;
    }
    log.record(CallRecord {
        at_ms: now_ms(),
        identity: "(refused credential)".into(),
        listener: listener.to_owned(),
        tool: String::new(),
        backend: String::new(),
        outcome: format!("auth: {failure}"),
        failed: true,
        duration_ms: 0.0,
    });
}

impl Authenticate for RecordedAuth {
    fn check(&self, credential: Option<&str>) -> Check {
        match self.inner.check(credential) {
            Check::Done(Err(f)) => {
                refused(&self.log, &self.listener, &f);
                Check::Done(Err(f))
            }
            Check::Wait(waiting) => {
                let (log, listener) = (self.log.clone(), self.listener.clone());
                Check::Wait(Box::pin(async move {
                    let got = waiting.await;
                    if let Err(f) = &got {
                        refused(&log, &listener, f);
                    }
                    got
                }))
            }
            done => done,
        }
    }

    fn for_connection(self: Arc<Self>) -> Arc<dyn Authenticate> {
        Arc::new(RecordedAuth {
            inner: self.inner.clone().for_connection(),
            log: self.log.clone(),
            listener: self.listener.clone(),
        })
    }

    fn resource_server(&self, listener_url: &str) -> ResourceServer {
        self.inner.resource_server(listener_url)
    }

    fn challenge(&self, failure: &AuthFailure) -> String {
        self.inner.challenge(failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn recorded_auth(log: &Arc<CallLog>) -> Arc<dyn Authenticate> {
        let text = "[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n[auth]\n\
            [[auth.api_keys]]\nname = \"ci\"\nkey = \"ci-key\"\n[backends.d]\nnative = \"demo\"\n";
        let path = std::path::Path::new("g.toml");
        let config = crate::config::GatewayConfig::from_toml(path, text).expect("valid");
        let auth = crate::access::authenticator(&config)
            .await
            .expect("built")
            .expect("an authenticator");
        Arc::new(RecordedAuth::new(
            auth,
            log.clone(),
            Arc::from("http://l/mcp"),
        ))
    }

    /// A backend answering every call `ok`.
    struct Answers(BackendInfo);

    impl Backend for Answers {
        fn info(&self) -> &BackendInfo {
            &self.0
        }

        fn call(
            &self,
            _ctx: CallCtx,
            _req: BackendRequest,
        ) -> BoxFuture<'static, Result<Reply, McpError>> {
            let raw = mcpwire_model::to_raw(&serde_json::json!({ "content": [] }));
            Box::pin(async move { Ok(Reply::Complete(raw)) })
        }
    }

    #[tokio::test]
    async fn a_call_names_the_listener_it_came_through() {
        let log = Arc::new(CallLog::default());
        let inner = Arc::new(Answers(BackendInfo {
            name: "b".into(),
            capabilities: Default::default(),
        }));
        let recorded = Recorded::new(
            inner,
            log.clone(),
            Arc::from("http://a/mcp, ws://b/"),
            Weak::new(),
            Arc::from("b"),
        );
        let call = || BackendRequest::CallTool {
            name: "t".into(),
            arguments: None,
        };
        log.read();
        let session = mcpwire_router::SessionScope::new();
        session.set_listener(Arc::from("ws://b/"));
        let ctx = CallCtx::detached().with_session(Some(session));
        recorded.call(ctx, call()).await.expect("answered");
        let stateless = CallCtx::detached().with_listener(Some(Arc::from("http://a/mcp")));
        recorded.call(stateless, call()).await.expect("answered");
        recorded
            .call(CallCtx::detached(), call())
            .await
            .expect("answered");
        let listeners: Vec<String> = log.read().into_iter().map(|c| c.listener).collect();
        assert_eq!(
            listeners,
            ["http://a/mcp, ws://b/", "http://a/mcp", "ws://b/"],
            "newest first; unnamed: the catalog's listeners"
        );
    }

    #[tokio::test]
    async fn refused_credentials_are_recorded_only_while_watched() {
        let log = Arc::new(CallLog::default());
        let auth = recorded_auth(&log).await.for_connection();
        assert!(auth.verify(Some("wrong")).await.is_err());
        assert!(log.read().is_empty(), "nobody watched");
        assert!(auth.verify(Some("wrong")).await.is_err());
        assert!(auth.verify(Some("ci-key")).await.is_ok());
        let calls = log.read();
        assert_eq!(calls.len(), 1, "the refusal only: {calls:?}");
        assert_eq!(calls[0].listener, "http://l/mcp");
        assert!(calls[0].outcome.starts_with("auth: ") && calls[0].failed);
    }
}
