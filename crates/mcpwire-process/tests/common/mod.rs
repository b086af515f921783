//! Shared helpers of the process-host tests: start the scripted peer, call its `echo`.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::McpError;
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig, StartError};
use mcpwire_router::{CallCtx, Router};
use serde_json::{Value, json};

pub const PEER: &str = env!("CARGO_BIN_EXE_envelope-test-peer");

pub async fn start(
    mode: &str,
    tweak: impl FnOnce(&mut ProcessConfig),
) -> Result<Arc<ProcessBackend>, StartError> {
    let mut cfg = ProcessConfig::new(Launch {
        file: "peer-arg".into(),
        runtime: Some(format!("{PEER} {mode}")),
    });
    tweak(&mut cfg);
    ProcessBackend::start(cfg).await
}

/// Calls `echo` and returns the tool result as the client sees it (a tool failure is an
/// `isError` result; bounded: a hang fails the test).
pub async fn call(router: &Router, text: &str) -> Value {
    call_with(router, text, CallCtx::detached()).await
}

/// [`call`] under the caller's context.
pub async fn call_with(router: &Router, text: &str, ctx: CallCtx) -> Value {
    let params = json!({"name": "echo", "arguments": {"text": text}});
    let fut = mcpwire_testkit::router::call_with(router, "tools/call", params, ctx);
    match tokio::time::timeout(Duration::from_secs(30), fut).await {
        Ok(Ok(result)) => result,
        Ok(Err(McpError::ToolFailed { message, .. })) => {
            json!({"isError": true, "content": [{"type": "text", "text": message}]})
        }
        other => panic!("unexpected answer: {other:?}"),
    }
}

pub fn text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|c| c.iter().filter_map(|b| b["text"].as_str()).collect())
        .unwrap_or_default()
}

pub fn is_error(v: &Value) -> bool {
    v["isError"] == json!(true)
}
