//! Interop: the official Rust SDK's client (rmcp) drives the real `mcpwire demo` stdio server.
//!
//! Each test spawns its own child, so the notification counters and the shutdown check only
//! see that test's traffic. Every wait is bounded by [`WAIT`].
#![allow(deprecated)] // rmcp marks sampling, roots and logging as deprecated (SEP-2577)

use std::future::Future;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcpwire_testkit::wait::wait_until_async;
use rmcp::{
    ClientHandler, ErrorData, RoleClient, ServiceExt,
    model::*,
    object,
    service::{NotificationContext, PeerRequestOptions, RequestContext, RunningService},
    transport::TokioChildProcess,
};
use serde_json::json;

/// Upper bound for any single wait in these tests.
const WAIT: Duration = Duration::from_secs(5);

/// Awaits `fut`, failing the test if it takes longer than [`WAIT`].
async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?}: {what}"))
}

/// What the client saw from the server, for assertions.
#[derive(Default)]
struct Seen {
    progress: Vec<ProgressNotificationParam>,
    logs: Vec<LoggingMessageNotificationParam>,
    sampling: Vec<CreateMessageRequestParams>,
    elicitations: Vec<String>,
    roots_requests: usize,
}

#[derive(Clone, Default)]
struct TestClient {
    seen: Arc<Mutex<Seen>>,
}

impl TestClient {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap()
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        // No explicit protocol version: rmcp offers its latest (2026-07-28) and the
        // server picks the version it answers with.
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_sampling()
                .enable_elicitation()
                .enable_roots()
                .build(),
            Implementation::new("mcpwire-rmcp-interop", "0.1.0"),
        )
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.seen().sampling.push(params);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("from rmcp"),
            "rmcp-model".into(),
        )
        .with_stop_reason(CreateMessageResult::STOP_REASON_END_TURN))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => {
                self.seen().elicitations.push(message);
                Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(json!({ "response": "ok" })))
            }
            _ => Ok(ElicitResult::new(ElicitationAction::Decline)),
        }
    }

    async fn list_roots(
        &self,
        _cx: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        self.seen().roots_requests += 1;
        Ok(ListRootsResult::new(vec![
            Root::new("file:///tmp/one").with_name("one"),
            Root::new("file:///tmp/two").with_name("two"),
        ]))
    }

    async fn on_progress(
        &self,
        p: ProgressNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.seen().progress.push(p);
    }

    async fn on_logging_message(
        &self,
        p: LoggingMessageNotificationParam,
        _cx: NotificationContext<RoleClient>,
    ) {
        self.seen().logs.push(p);
    }
}

type Client = RunningService<RoleClient, TestClient>;

/// Spawns `mcpwire demo` and runs the rmcp handshake. Returns the client, its handler state
/// and the child's pid.
async fn connect() -> (Client, TestClient, u32) {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcpwire"));
    cmd.arg("demo").env("MCPWIRE_LOG", "warn");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn mcpwire demo");
    let pid = transport.id().expect("child pid");
    let handler = TestClient::default();
    let client = within("initialize handshake", handler.clone().serve(transport))
        .await
        .expect("initialize handshake");
    (client, handler, pid)
}

/// True while `pid` is a live (non-zombie) process.
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
            .unwrap_or(true),
        Err(_) => false,
    }
}

#[cfg(not(target_os = "linux"))]
fn alive(_pid: u32) -> bool {
    false
}

/// Closes the client (which closes the child's stdin) and checks the child exits.
async fn shutdown(client: Client, pid: u32) {
    within("client shutdown", client.cancel())
        .await
        .expect("client task joined");
    wait_until_async(WAIT, "child exit", async || !alive(pid)).await;
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn call(client: &Client, name: &'static str, args: serde_json::Value) -> CallToolResult {
    let serde_json::Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    within(
        name,
        client.call_tool(CallToolRequestParams::new(name).with_arguments(args)),
    )
    .await
    .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

/// Polls the handler state until `done` holds (bounded by [`WAIT`]).
async fn wait_until(handler: &TestClient, what: &str, done: impl Fn(&Seen) -> bool) {
    wait_until_async(WAIT, what, async || done(&handler.seen())).await;
}

#[tokio::test]
async fn handshake_tools_resources_prompts_completion() {
    let (client, _handler, pid) = connect().await;

    // Handshake: rmcp offered 2026-07-28; mcpwire answers the newest initialize-era version.
    let info = client.peer_info().expect("server info after initialize");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert_eq!(info.protocol_version.to_string(), "2025-11-25");
    let server = info
        .server_info
        .as_ref()
        .expect("serverInfo in the initialize result");
    assert_eq!(server.name, "mcpwire-everything");
    assert!(
        info.capabilities.tools.is_some(),
        "tools capability: {info:?}"
    );
    assert!(
        info.capabilities.resources.is_some(),
        "resources capability"
    );
    assert!(info.capabilities.prompts.is_some(), "prompts capability");

    // tools/list
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for want in ["echo", "add", "test_sampling"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }

    // echo
    let r = call(&client, "echo", json!({ "text": "hello from rmcp" })).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(text_of(&r.content), "hello from rmcp");

    // add: structured content
    let r = call(&client, "add", json!({ "a": 2, "b": 3 })).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert_eq!(r.structured_content, Some(json!({ "sum": 5.0 })));

    // a tool error is a result with isError, not a JSON-RPC error
    let r = call(&client, "test_error_handling", json!({})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(
        text_of(&r.content).contains("intentionally"),
        "error text: {r:?}"
    );

    // resources
    let resources = within("resources/list", client.list_all_resources())
        .await
        .expect("resources/list");
    assert!(
        resources.iter().any(|r| r.uri == "test://static-text"),
        "static-text missing: {resources:?}"
    );
    let templates = within(
        "resources/templates/list",
        client.list_all_resource_templates(),
    )
    .await
    .expect("resources/templates/list");
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "test://template/{id}/data"),
        "template missing: {templates:?}"
    );

    let read = within(
        "resources/read static-text",
        client.read_resource(ReadResourceRequestParams::new("test://static-text")),
    )
    .await
    .expect("resources/read static-text");
    match read.contents.as_slice() {
        [ResourceContents::TextResourceContents { uri, text, .. }] => {
            assert_eq!(uri, "test://static-text");
            assert_eq!(text, "This is the content of the static text resource.");
        }
        other => panic!("unexpected static-text contents: {other:?}"),
    }

    let read = within(
        "resources/read template",
        client.read_resource(ReadResourceRequestParams::new("test://template/42/data")),
    )
    .await
    .expect("resources/read template");
    match read.contents.as_slice() {
        [ResourceContents::TextResourceContents { uri, text, .. }] => {
            assert_eq!(uri, "test://template/42/data");
            assert!(text.contains("42"), "template text: {text}");
        }
        other => panic!("unexpected template contents: {other:?}"),
    }

    // prompts
    let prompts = within("prompts/list", client.list_all_prompts())
        .await
        .expect("prompts/list");
    let prompt = prompts
        .iter()
        .find(|p| p.name == "test_prompt_with_arguments")
        .unwrap_or_else(|| panic!("test_prompt_with_arguments missing: {prompts:?}"));
    let args: Vec<&str> = prompt
        .arguments
        .iter()
        .flatten()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(args, ["arg1", "arg2"]);

    let got = within(
        "prompts/get",
        client.get_prompt(
            GetPromptRequestParams::new("test_prompt_with_arguments")
                .with_arguments(object!({ "arg1": "alpha", "arg2": "beta" })),
        ),
    )
    .await
    .expect("prompts/get");
    assert_eq!(got.messages.len(), 1, "{got:?}");
    assert_eq!(got.messages[0].role, Role::User);
    let text = got.messages[0]
        .content
        .as_text()
        .map(|t| t.text.clone())
        .unwrap_or_else(|| panic!("prompt message is not text: {got:?}"));
    assert!(
        text.contains("alpha") && text.contains("beta"),
        "prompt text: {text}"
    );

    // completion/complete
    let done = within(
        "completion/complete",
        client.complete(CompleteRequestParams::new(
            Reference::for_prompt("test_prompt_with_arguments"),
            ArgumentInfo::new("arg1", "test"),
        )),
    )
    .await
    .expect("completion/complete");
    let values = &done.completion.values;
    assert!(!values.is_empty(), "no completions: {done:?}");
    assert!(
        values.iter().all(|v| v.starts_with("test")),
        "completions must start with the prefix: {values:?}"
    );
    for v in values {
        assert!(
            ["test1", "test2", "testing"].contains(&v.as_str()),
            "unexpected completion {v}"
        );
    }

    shutdown(client, pid).await;
}

#[tokio::test]
async fn progress_and_logging_notifications() {
    let (client, handler, pid) = connect().await;

    within(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(LoggingLevel::Debug)),
    )
    .await
    .expect("logging/setLevel debug");

    let r = call(&client, "test_tool_with_progress", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    wait_until(&handler, "3 progress notifications", |s| {
        s.progress.len() >= 3
    })
    .await;
    {
        let seen = handler.seen();
        let token = &seen.progress[0].progress_token;
        assert!(
            seen.progress.iter().all(|p| &p.progress_token == token),
            "progress must use one token: {:?}",
            seen.progress
        );
        let values: Vec<f64> = seen.progress.iter().map(|p| p.progress).collect();
        assert!(
            values.windows(2).all(|w| w[0] < w[1]),
            "progress must increase: {values:?}"
        );
        assert!(seen.progress.iter().all(|p| p.total == Some(100.0)));
    }

    let r = call(&client, "test_tool_with_logging", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    wait_until(&handler, "3 log notifications", |s| s.logs.len() >= 3).await;
    {
        let seen = handler.seen();
        assert!(
            seen.logs.iter().all(|l| l.level == LoggingLevel::Info),
            "{:?}",
            seen.logs
        );
        let all = seen
            .logs
            .iter()
            .map(|l| l.data.to_string())
            .collect::<Vec<_>>()
            .join(" | ");
        assert!(
            all.contains("started") && all.contains("completed"),
            "{all}"
        );
    }

    shutdown(client, pid).await;
}

#[tokio::test]
async fn sampling_elicitation_and_roots_round_trip() {
    let (client, handler, pid) = connect().await;

    let r = call(&client, "test_sampling", json!({ "prompt": "hi" })).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = text_of(&r.content);
    assert!(text.contains("from rmcp"), "sampling result: {text}");
    {
        let seen = handler.seen();
        assert_eq!(seen.sampling.len(), 1, "one sampling/createMessage");
        let asked = format!("{:?}", seen.sampling[0].messages);
        assert!(asked.contains("hi"), "sampling request: {asked}");
    }

    let r = call(&client, "test_elicitation", json!({ "message": "m" })).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = text_of(&r.content);
    assert!(text.contains("accept"), "elicitation result: {text}");
    assert!(text.contains("ok"), "elicitation content: {text}");
    assert_eq!(handler.seen().elicitations, ["m"]);

    let r = call(&client, "test_input_required_result_list_roots", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let text = text_of(&r.content);
    assert!(text.contains("2 root"), "roots result: {text}");
    assert_eq!(handler.seen().roots_requests, 1, "one roots/list");

    shutdown(client, pid).await;
}

#[tokio::test]
async fn cancellation_then_clean_shutdown() {
    let (client, _handler, pid) = connect().await;

    // Explicit notifications/cancelled through a RequestHandle.
    let handle = within(
        "send test_slow",
        client.send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(
                CallToolRequestParams::new("test_slow").with_arguments(object!({ "seconds": 30 })),
            )),
            PeerRequestOptions::no_options(),
        ),
    )
    .await
    .expect("send test_slow");
    // The request went out first on the same pipe, so the cancel follows it.
    within(
        "cancel test_slow",
        handle.cancel(Some("test cancels".into())),
    )
    .await
    .expect("notifications/cancelled sent");

    let r = call(&client, "echo", json!({ "text": "after cancel" })).await;
    assert_eq!(text_of(&r.content), "after cancel");

    // Dropping an in-flight call (timeout) also sends notifications/cancelled.
    let dropped = tokio::time::timeout(
        Duration::from_millis(200),
        client.call_tool(
            CallToolRequestParams::new("test_slow").with_arguments(object!({ "seconds": 30 })),
        ),
    )
    .await;
    assert!(
        dropped.is_err(),
        "test_slow 30 s answered early: {dropped:?}"
    );

    let r = call(&client, "echo", json!({ "text": "after drop" })).await;
    assert_eq!(text_of(&r.content), "after drop");

    // The server is still healthy: a normal request/response round trip works.
    let r = call(&client, "add", json!({ "a": 1.5, "b": 1 })).await;
    assert_eq!(r.structured_content, Some(json!({ "sum": 2.5 })));

    shutdown(client, pid).await;
}
