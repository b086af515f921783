//! A method called through a [`Router`] as a listener would call it — the request's
//! params as JSON in, the reply (complete or `input_required`) as JSON out — for tests of
//! the router, the federation and backends that need no wire.
//!
//! Unbounded on purpose: a test on the paused clock must not have a deadline fire while a
//! backend waits on real I/O; bound the call in the test when it may hang.

use mcpwire_model::{McpError, Method, Reply, to_raw};
use mcpwire_router::{CallCtx, McpCall, Router};
use serde_json::{Value, json};

/// Calls `method` with `params` through `router` under a detached context.
pub async fn call(router: &Router, method: &str, params: Value) -> Result<Value, McpError> {
    call_with(router, method, params, CallCtx::detached()).await
}

/// Calls `method` with `params` through `router` under `ctx` (its revision, client
/// capabilities, cancellation and identity).
pub async fn call_with(
    router: &Router,
    method: &str,
    params: Value,
    ctx: CallCtx,
) -> Result<Value, McpError> {
    let reply = router
        .call(McpCall::new(
            Method::parse(method),
            Some(to_raw(&params)),
            ctx,
        ))
        .await?;
    match reply {
        Reply::Complete(raw) | Reply::InputRequired(raw) => {
            Ok(serde_json::from_str(raw.get()).expect("a reply is JSON"))
        }
    }
}

/// Calls tool `name` with `arguments` under a detached context.
pub async fn call_tool(router: &Router, name: &str, arguments: Value) -> Result<Value, McpError> {
    let params = json!({ "name": name, "arguments": arguments });
    call(router, "tools/call", params).await
}

/// Every item's `key` (a name, a URI) of the list `method` answers in `field`, following
/// cursors (at most 100 pages).
pub async fn list_all(router: &Router, method: &str, field: &str, key: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut params = json!({});
    for _ in 0..100 {
        let page = call(router, method, params).await.expect("list");
        names.extend(
            page[field]
                .as_array()
                .unwrap_or_else(|| panic!("{method}: no {field} in {page}"))
                .iter()
                .map(|t| t[key].as_str().expect("key").to_owned()),
        );
        match page.get("nextCursor") {
            Some(c) => params = json!({ "cursor": c }),
            None => return names,
        }
    }
    panic!("{method}: more than 100 pages");
}

/// The exposed tool names, in order.
pub async fn tool_names(router: &Router) -> Vec<String> {
    list_all(router, "tools/list", "tools", "name").await
}

/// The text of a tool result's first content block (empty when it has none).
pub fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}
