//! `UpstreamBackend` across eras, driven through the router as a listener would: a native
//! server served over Streamable HTTP in this process is the upstream.
//!
//! - A stateless (2026-07-28) downstream client in front of a handshake-era upstream: the
//!   upstream's two `roots/list` requests become two `input_required` answers; each retry
//!   resumes the *held* upstream request (the tool runs once).
//! - A 2025-11-25 downstream client in front of a 2026-07-28 upstream: the upstream's
//!   `input_required` rounds become real requests to the downstream client, and the call is
//!   retried upstream with the answers.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire_client::{EraChoice, Target};
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_model::types::{ClientCapabilities, Implementation};
use mcpwire_model::{CallEvent, ClientAsk, McpError, Method, Raw, Reply, Revision, to_raw};
use mcpwire_router::{BoxFuture, CallCtx, McpCall, NoArgs, Peer, Router, Server, ToolError, tool};
use mcpwire_server::Service;
use serde_json::{Value, json};

use mcpwire_testkit::serve::{self, serve};
use tokio_util::sync::CancellationToken;

/// A server whose tool `two_asks` lists the client's roots twice and counts its runs.
fn asking_server(runs: Arc<AtomicUsize>) -> Service {
    let server = Server::builder(Implementation::new("asker", "1"))
        .tool(tool("two_asks", move |ctx: CallCtx, _: NoArgs| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                let first = ctx.list_roots().await?;
                let second = ctx.list_roots().await?;
                Ok::<_, ToolError>(format!("{} then {}", first.roots.len(), second.roots.len()))
            }
        }))
        .build();
    let info = server.server_info().clone();
    Service::new(Router::new(server), info, None)
}

async fn upstream(url: &str, era: EraChoice) -> Router {
    let mut config = UpstreamConfig::new("up", Target::Url(url.to_owned()));
    config.era = era;
    let backend = UpstreamBackend::connect(config).await.expect("connect");
    Router::new(backend)
}

fn roots_caps() -> Arc<ClientCapabilities> {
    Arc::new(ClientCapabilities {
        roots: Some(json!({})),
        ..ClientCapabilities::default()
    })
}

fn call(params: Value, ctx: CallCtx) -> McpCall {
    McpCall::new(Method::ToolsCall, Some(to_raw(&params)), ctx)
}

fn json_of(raw: &Raw) -> Value {
    serde_json::from_str(raw.get()).expect("json")
}

#[tokio::test]
async fn a_stateless_client_resumes_the_held_upstream_request() {
    let runs = Arc::new(AtomicUsize::new(0));
    let url_served = serve(asking_server(runs.clone()), serve::http()).await;
    let url = url_served.url();
    let router = upstream(&url, EraChoice::Handshake).await;
    let stateless = || {
        CallCtx::new(
            Revision::STATELESS,
            roots_caps(),
            CancellationToken::new(),
            None,
        )
    };

    let mut params = json!({"name": "two_asks", "arguments": {}});
    let mut rounds = 0;
    let text = loop {
        rounds += 1;
        assert!(rounds <= 3, "two asks, three requests");
        let reply = router
            .call(call(params.clone(), stateless()))
            .await
            .expect("answered");
        let ir = match reply {
            Reply::Complete(raw) => break json_of(&raw)["content"][0]["text"].clone(),
            Reply::InputRequired(raw) => json_of(&raw),
        };
        let requests = ir["inputRequests"].as_object().expect("inputRequests");
        assert_eq!(requests.len(), 1, "{ir}");
        let (key, request) = requests.iter().next().expect("one");
        assert_eq!(request["method"], "roots/list");
        assert!(key.starts_with("mcpwire-upstream-"), "{key}");
        params["inputResponses"] = json!({ key.clone(): {"roots": [{"uri": "file:///a"}]} });
        params["requestState"] = ir["requestState"].clone();
    };
    assert_eq!(text, "1 then 1");
    assert_eq!(rounds, 3);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the upstream request was held, not rerun"
    );
}

/// A downstream (2025-11-25) connection answering every roots/list with one root.
struct RootsPeer {
    asked: AtomicUsize,
}

impl Peer for RootsPeer {
    fn event(&self, _: CallEvent) {}

    fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        assert_eq!(ask.method, "roots/list");
        self.asked.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Ok(to_raw(&json!({"roots": [{"uri": "file:///b"}]}))) })
    }
}

#[tokio::test]
async fn a_handshake_client_answers_a_stateless_upstream_in_real_requests() {
    let runs = Arc::new(AtomicUsize::new(0));
    let url_served = serve(asking_server(runs.clone()), serve::http()).await;
    let url = url_served.url();
    let router = upstream(&url, EraChoice::Stateless).await;
    let peer = Arc::new(RootsPeer {
        asked: AtomicUsize::new(0),
    });
    let ctx = CallCtx::new(
        Revision::LATEST_STATEFUL,
        roots_caps(),
        CancellationToken::new(),
        Some(peer.clone()),
    );
    let reply = router
        .call(call(json!({"name": "two_asks", "arguments": {}}), ctx))
        .await
        .expect("answered");
    let Reply::Complete(raw) = reply else {
        panic!("a complete result")
    };
    let v = json_of(&raw);
    assert_eq!(v["content"][0]["text"], "1 then 1");
    assert!(
        v.get("resultType").is_none(),
        "no 2026-07-28 decoration: {v}"
    );
    assert_eq!(
        peer.asked.load(Ordering::SeqCst),
        2,
        "each input request asked once"
    );
}

/// A server whose tool `report` logs, reports progress and lists the client's roots
/// before answering, and whose tool `wait` waits to be cancelled (counting it).
fn reporting_server(started: Arc<tokio::sync::Notify>, cancelled: Arc<AtomicUsize>) -> Service {
    let server = Server::builder(Implementation::new("reporter", "1"))
        .tool(tool("report", |ctx: CallCtx, _: NoArgs| async move {
            ctx.info("working");
            ctx.progress(1.0, Some(2.0), None);
            let roots = ctx.list_roots().await?;
            Ok::<_, ToolError>(format!("{} roots", roots.roots.len()))
        }))
        .tool(tool("wait", move |ctx: CallCtx, _: NoArgs| {
            let (started, cancelled) = (started.clone(), cancelled.clone());
            async move {
                started.notify_one();
                ctx.cancelled().await;
                cancelled.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("cancelled".to_owned())
            }
        }))
        .build();
    let info = server.server_info().clone();
    Service::new(Router::new(server), info, None)
}

/// A downstream connection recording what a call sends it, answering `roots/list`.
#[derive(Default)]
struct RecordingPeer {
    events: std::sync::Mutex<Vec<String>>,
}

impl Peer for RecordingPeer {
    fn event(&self, event: CallEvent) {
        let e = match event {
            CallEvent::Progress(p) => format!("progress {}/{:?}", p.progress, p.total),
            CallEvent::Log(l) => format!("log {}", l.data.get()),
        };
        self.events.lock().unwrap().push(e);
    }

    fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        self.events
            .lock()
            .unwrap()
            .push(format!("ask {}", ask.method));
        Box::pin(async { Ok(to_raw(&json!({"roots": [{"uri": "file:///c"}]}))) })
    }
}

/// Calls on an upstream session that is up take the fast path (`upstream/fast.rs`): the
/// shared session is up from `connect`, so every call here does. Progress, logs and the
/// upstream's asks reach the call, before its answer; cancellation reaches the upstream.
#[tokio::test]
async fn calls_on_a_session_that_is_up_keep_progress_logs_asks_and_cancellation() {
    let started = Arc::new(tokio::sync::Notify::new());
    let cancelled = Arc::new(AtomicUsize::new(0));
    let url_served = serve(
        reporting_server(started.clone(), cancelled.clone()),
        serve::http(),
    )
    .await;
    let url = url_served.url();
    let router = upstream(&url, EraChoice::Handshake).await;
    for _ in 0..3 {
        let peer = Arc::new(RecordingPeer::default());
        let ctx = CallCtx::new(
            Revision::LATEST_STATEFUL,
            roots_caps(),
            CancellationToken::new(),
            Some(peer.clone()),
        )
        .with_progress_token(Some("p".into()));
        let answered = router.call(call(json!({"name": "report", "arguments": {}}), ctx));
        let reply = tokio::time::timeout(std::time::Duration::from_secs(30), answered)
            .await
            .expect("answered in time (an ask lost on the way would hang it)")
            .expect("answered");
        let Reply::Complete(raw) = reply else {
            panic!("a complete result")
        };
        assert_eq!(json_of(&raw)["content"][0]["text"], "1 roots");
        let events = peer.events.lock().unwrap().clone();
        assert_eq!(
            events,
            ["log \"working\"", "progress 1/Some(2.0)", "ask roots/list"],
            "everything the upstream sent for the call, in order, before its answer"
        );
    }

    let token = CancellationToken::new();
    let ctx = CallCtx::new(
        Revision::LATEST_STATEFUL,
        roots_caps(),
        token.clone(),
        Some(Arc::new(RecordingPeer::default())),
    );
    let waiting = tokio::spawn(router.call(call(json!({"name": "wait", "arguments": {}}), ctx)));
    started.notified().await;
    token.cancel();
    let reply = waiting.await.expect("joined");
    assert!(matches!(reply, Err(McpError::Cancelled)), "{reply:?}");
    let told = async {
        while cancelled.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), told)
        .await
        .expect("the upstream's tool saw the cancellation");
}
