//! Helpers shared by the router's task tests: a 2026-07-28 caller with or without the
//! tasks extension (the call itself is testkit's).

use std::sync::Arc;

use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{McpError, Revision};
use mcpwire_router::{CallCtx, Router, TASKS_EXTENSION};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A client offering elicitation, and the tasks extension when `tasks`.
pub fn caps(tasks: bool) -> Arc<ClientCapabilities> {
    let mut c = ClientCapabilities {
        elicitation: Some(json!({})),
        ..Default::default()
    };
    if tasks {
        c.extensions = Some(json!({ TASKS_EXTENSION: {} }));
    }
    Arc::new(c)
}

/// Calls `method` on `r` as a 2026-07-28 request; the result (complete or
/// `input_required`) as JSON.
pub async fn call(r: &Router, tasks: bool, method: &str, params: Value) -> Result<Value, McpError> {
    let ctx = CallCtx::new(
        Revision::V2026_07_28,
        caps(tasks),
        CancellationToken::new(),
        None,
    );
    mcpwire_testkit::router::call_with(r, method, params, ctx).await
}

/// The wire code of `e` in 2026-07-28.
pub fn code(e: McpError) -> i64 {
    e.to_wire(Revision::V2026_07_28).code
}
