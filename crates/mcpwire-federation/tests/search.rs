//! The `search` catalog mode and `tools/list` with a `query` through the router: the
//! meta-tools listed, searches answering exposed tools the caller may see (views and
//! policy), `call_tool` reaching the tool with its errors, disclosure per session (bounded,
//! announced), and the index following the catalog.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpwire_federation::{
    CALL_TOOL, Federation, FederationConfig, MAX_DISCLOSED_PER_SESSION, Member, Policy,
    SEARCH_TOOLS, ViewSpec,
};
use mcpwire_model::types::Implementation;
use mcpwire_model::{BackendEvent, McpError};
use mcpwire_router::{CallCtx, Identity, Router, SessionNotice, SessionScope};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// fs (files), gh (issues and repositories) and calc; nobody but alice sees `*delete*`.
async fn federation(policy: Policy) -> Arc<Federation> {
    let cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new(
            "fs",
            server("fs", &["read_file", "write_file", "delete_file"]),
        ))
        .member(Member::new(
            "gh",
            server("gh", &["create_issue", "list_commits", "delete_repo"]),
        ))
        .member(Member::new("calc", server("calc", &["add"])))
        .policy(policy);
    Federation::new(cfg).await.unwrap()
}

fn searching(fed: &Arc<Federation>) -> Router {
    Router::new(fed.search_catalog(fed.clone()))
}

/// A session whose notices (its own `list_changed`) arrive on the receiver.
fn session() -> (SessionScope, mpsc::Receiver<SessionNotice>) {
    let (tx, rx) = mpsc::channel(16);
    (SessionScope::with_notices(None, Some(tx)), rx)
}

fn in_session(s: &SessionScope) -> CallCtx {
    CallCtx::detached().with_session(Some(s.clone()))
}

async fn search(r: &Router, ctx: CallCtx, query: &str, limit: Option<u64>) -> Value {
    let mut args = json!({ "query": query });
    if let Some(l) = limit {
        args["limit"] = json!(l);
    }
    call_with(
        r,
        "tools/call",
        json!({"name": SEARCH_TOOLS, "arguments": args}),
        ctx,
    )
    .await
    .expect("search_tools answers")
}

fn found(result: &Value) -> Vec<String> {
    result["structuredContent"]["tools"]
        .as_array()
        .expect("structured tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

async fn listed(r: &Router, ctx: CallCtx) -> Vec<String> {
    let page = call_with(r, "tools/list", json!({}), ctx).await.unwrap();
    page["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn search_mode_lists_the_meta_tools_and_finds_exposed_tools() {
    let fed = federation(Policy::default()).await;
    let r = searching(&fed);
    assert_eq!(tool_names(&r).await, [SEARCH_TOOLS, CALL_TOOL]);
    let page = call(&r, "tools/list", json!({})).await.unwrap();
    assert_eq!(
        page["tools"][0]["inputSchema"]["required"],
        json!(["query"])
    );
    let result = search(&r, CallCtx::detached(), "open a new issue", None).await;
    let names = found(&result);
    assert_eq!(names.first().map(String::as_str), Some("gh_create_issue"));
    // Exactly the catalog's tool objects.
    let full = call(&Router::new(fed.clone()), "tools/list", json!({}))
        .await
        .unwrap();
    let catalog_tool = full["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "gh_create_issue")
        .unwrap()
        .clone();
    assert_eq!(result["structuredContent"]["tools"][0], catalog_tool);
    let text = text(&result);
    assert!(
        text.starts_with("gh_create_issue: create_issue of gh"),
        "{text}"
    );
    assert!(text.contains("inputSchema: {"), "{text}");
    // Limits: at most what was asked, and a refused `limit` is a tool error.
    let one = search(&r, CallCtx::detached(), "file", Some(1)).await;
    assert_eq!(found(&one).len(), 1);
    let bad = call(
        &r,
        "tools/call",
        json!({"name": SEARCH_TOOLS, "arguments": {"query": "x", "limit": 0}}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&bad, McpError::InvalidToolParams { tool, .. } if tool == SEARCH_TOOLS),
        "an isError result on the wire: {bad:?}"
    );
    // Calls by exact name still work; prompts are unchanged.
    let direct = call(
        &r,
        "tools/call",
        json!({"name": "calc_add", "arguments": {"text": "1"}}),
    )
    .await
    .unwrap();
    assert_eq!(common::text(&direct), "calc:add:1");
    assert_eq!(
        list_all(&r, "prompts/list", "prompts", "name").await,
        ["fs_summarize", "gh_summarize", "calc_summarize"]
    );
}

#[tokio::test]
async fn searches_never_show_what_the_view_or_the_policy_hides() {
    let fed = federation(no_deletes_but_for_alice()).await;
    let r = searching(&fed);
    let alice = || CallCtx::detached().with_identity(Some(bearer("alice")));
    let bob = || CallCtx::detached().with_identity(Some(bearer("bob")));
    for query in ["delete a file", "fs_delete_file", "delete_repo", "delete"] {
        let seen = found(&search(&r, bob(), query, Some(50)).await);
        assert!(
            seen.iter().all(|n| !n.contains("delete")),
            "{query}: {seen:?}"
        );
    }
    let seen = found(&search(&r, alice(), "fs_delete_file", None).await);
    assert_eq!(seen.first().map(String::as_str), Some("fs_delete_file"));
    // `tools/list` with a query, in the full catalog: the same filter.
    let full = Router::new(fed.clone());
    let page = call_with(&full, "tools/list", json!({"query": "delete"}), bob())
        .await
        .unwrap();
    assert_eq!(page["tools"], json!([]));
    // A view: only its tools, even for an exact name.
    let view = fed.view(&ViewSpec::new("files").member("fs"));
    let rv = Router::new(view.search_catalog(view.clone()));
    let seen = found(&search(&rv, alice(), "gh_create_issue", Some(50)).await);
    assert!(seen.is_empty(), "{seen:?}");
    let seen = found(&search(&rv, alice(), "read a file", Some(50)).await);
    assert_eq!(seen.first().map(String::as_str), Some("fs_read_file"));
    assert!(seen.iter().all(|n| n.starts_with("fs_")), "{seen:?}");
    // call_tool answers a hidden tool as an unknown one.
    let e = call_with(
        &r,
        "tools/call",
        json!({"name": CALL_TOOL, "arguments": {"name": "fs_delete_file", "arguments": {"text": "x"}}}),
        bob(),
    )
    .await
    .unwrap_err();
    assert_eq!(e, McpError::ToolNotFound("fs_delete_file".into()));
}

fn bearer(sub: &str) -> Identity {
    Identity::bearer(sub, None, vec![], Default::default())
}

#[tokio::test]
async fn call_tool_reaches_the_tool_and_carries_its_errors() {
    let fed = federation(Policy::default()).await;
    let r = searching(&fed);
    let via = |name: &str, arguments: Value| json!({"name": CALL_TOOL, "arguments": {"name": name, "arguments": arguments}});
    let ok = call(&r, "tools/call", via("fs_read_file", json!({"text": "a"})))
        .await
        .unwrap();
    assert_eq!(text(&ok), "fs:read_file:a");
    // Arguments the tool refuses: its own error (an `isError` result on the wire).
    let refused = call(&r, "tools/call", via("fs_read_file", json!({})))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, McpError::InvalidToolParams { tool, .. } if tool == "fs_read_file"),
        "{refused:?}"
    );
    let unknown = call(&r, "tools/call", via("nope", json!({})))
        .await
        .unwrap_err();
    assert_eq!(unknown, McpError::ToolNotFound("nope".into()));
    // call_tool never calls itself.
    let meta = call(&r, "tools/call", via(CALL_TOOL, json!({})))
        .await
        .unwrap_err();
    assert_eq!(meta, McpError::ToolNotFound(CALL_TOOL.into()));
    let not_object = call(
        &r,
        "tools/call",
        json!({"name": CALL_TOOL, "arguments": {"name": "calc_add", "arguments": [1]}}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(&not_object, McpError::InvalidToolParams { tool, .. } if tool == CALL_TOOL),
        "{not_object:?}"
    );
}

#[tokio::test]
async fn found_tools_join_that_sessions_list_and_it_is_told() {
    let fed = federation(Policy::default()).await;
    let r = searching(&fed);
    let (s1, mut notices) = session();
    let (s2, _other) = session();
    let hits = found(&search(&r, in_session(&s1), "create an issue", Some(2)).await);
    assert_eq!(hits.len(), 2);
    let notice = tokio::time::timeout(Duration::from_secs(5), notices.recv())
        .await
        .expect("a notice in time")
        .expect("a notice");
    assert!(matches!(
        notice,
        SessionNotice::Event(BackendEvent::ToolsListChanged)
    ));
    let mut want = vec![SEARCH_TOOLS.to_owned(), CALL_TOOL.to_owned()];
    want.extend(hits.iter().cloned());
    assert_eq!(listed(&r, in_session(&s1)).await, want);
    assert_eq!(listed(&r, in_session(&s2)).await, [SEARCH_TOOLS, CALL_TOOL]);
    // The same tools again: nothing new, nothing announced.
    search(&r, in_session(&s1), "create an issue", Some(2)).await;
    assert!(notices.try_recv().is_err());
    // A stateless request has no session: nothing is disclosed.
    search(&r, CallCtx::detached(), "write a file", None).await;
    assert_eq!(
        listed(&r, CallCtx::detached()).await,
        [SEARCH_TOOLS, CALL_TOOL]
    );
    // The session ends: its tools are forgotten.
    s1.end();
    mcpwire_testkit::wait::wait_until_async(Duration::from_secs(5), "forgotten", async || {
        listed(&r, in_session(&s1)).await.len() == 2
    })
    .await;
}

#[tokio::test]
async fn disclosure_is_bounded_and_the_least_recently_found_leave_first() {
    let names: Vec<String> = (0..40).map(|i| format!("report_{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new("many", server("many", &refs)))
        .member(Member::new("fs", server("fs", &["read_file"])));
    let fed = Federation::new(cfg).await.unwrap();
    let r = searching(&fed);
    let (s, _notices) = session();
    let hits = found(&search(&r, in_session(&s), "report", Some(50)).await);
    assert_eq!(hits.len(), 40);
    let shown = listed(&r, in_session(&s)).await;
    assert_eq!(shown.len(), 2 + MAX_DISCLOSED_PER_SESSION);
    // The best hits stay; the worst ones left.
    assert!(shown.contains(&hits[0]) && !shown.contains(&hits[39]));
    let file = found(&search(&r, in_session(&s), "read a file", Some(1)).await);
    let shown = listed(&r, in_session(&s)).await;
    assert_eq!(shown.len(), 2 + MAX_DISCLOSED_PER_SESSION);
    assert_eq!(shown.last(), file.first(), "the newest joins at the end");
    assert!(!shown.contains(&hits[MAX_DISCLOSED_PER_SESSION - 1]));
}

#[tokio::test]
async fn tools_list_with_a_query_answers_ranked_tools_in_either_mode() {
    let fed = federation(Policy::default()).await;
    for r in [Router::new(fed.clone()), searching(&fed)] {
        let page = call(&r, "tools/list", json!({"query": "commits history"}))
            .await
            .unwrap();
        let tools = page["tools"].as_array().unwrap();
        assert_eq!(tools[0]["name"], "gh_list_commits");
        assert!(tools.iter().all(|t| t["name"] != SEARCH_TOOLS));
        assert!(page.get("nextCursor").is_none());
    }
    let e = call(&Router::new(fed.clone()), "tools/list", json!({"query": 3}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::InvalidParams(_)), "{e:?}");
}

#[tokio::test]
async fn the_index_follows_a_replaced_member() {
    let fed = federation(Policy::default()).await;
    let r = searching(&fed);
    assert!(found(&search(&r, CallCtx::detached(), "multiply", None).await).is_empty());
    fed.replace_member(
        "calc",
        Some(Member::new("calc", server("calc", &["multiply"]))),
    )
    .await
    .unwrap();
    let hits = found(&search(&r, CallCtx::detached(), "multiply numbers", None).await);
    assert_eq!(hits.first().map(String::as_str), Some("calc_multiply"));
    fed.replace_member("calc", None).await.unwrap();
    let hits = found(&search(&r, CallCtx::detached(), "multiply numbers", None).await);
    assert!(hits.is_empty(), "{hits:?}");
}

/// A 2026-07-28 call (with or without the tasks extension).
fn stateless(tasks: bool) -> CallCtx {
    let mut caps = mcpwire_model::types::ClientCapabilities::default();
    if tasks {
        caps.extensions = Some(json!({ mcpwire_router::TASKS_EXTENSION: {} }));
    }
    CallCtx::new(
        mcpwire_model::Revision::V2026_07_28,
        Arc::new(caps),
        tokio_util::sync::CancellationToken::new(),
        None,
    )
}

/// Tools that take 30 ms (a slow call becomes a task; the clock is paused, so exact).
#[tokio::test(start_paused = true)]
async fn call_tool_keeps_the_inner_tools_task_routing() {
    use mcpwire_router::{NoArgs, Server, TaskConfig, TaskSupport, ToolError, tool};
    let jobs = Server::builder(Implementation::new("jobs", "1"))
        .tool(
            tool("build", |_: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok::<_, ToolError>("built")
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            tool("deploy", |_: CallCtx, _: NoArgs| async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                Ok::<_, ToolError>("deployed")
            })
            .task_support(TaskSupport::Required),
        )
        .build();
    let cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new("jobs", jobs))
        .member(Member::new("calc", server("calc", &["add"])));
    let fed = Federation::new(cfg).await.unwrap();
    let r = Router::new(fed.search_catalog(fed.clone())).with_tasks(TaskConfig::default());
    let via = |name: &str| json!({"name": CALL_TOOL, "arguments": {"name": name, "arguments": {}}});
    for tool in ["jobs_build", "jobs_deploy"] {
        // As a direct call would: a task for a client with the extension …
        let direct = call_with(
            &r,
            "tools/call",
            json!({"name": tool, "arguments": {}}),
            stateless(true),
        )
        .await
        .unwrap();
        let through = call_with(&r, "tools/call", via(tool), stateless(true))
            .await
            .unwrap();
        assert_eq!(direct["resultType"], "task", "{direct}");
        assert_eq!(through["resultType"], "task", "{tool}: {through}");
    }
    // … a plain call of an optional one without it, and a required one refused the same way.
    let plain = call_with(&r, "tools/call", via("jobs_build"), stateless(false))
        .await
        .unwrap();
    assert_eq!(text(&plain), "built");
    let direct = call_with(
        &r,
        "tools/call",
        json!({"name": "jobs_deploy", "arguments": {}}),
        stateless(false),
    )
    .await
    .unwrap_err();
    let through = call_with(&r, "tools/call", via("jobs_deploy"), stateless(false))
        .await
        .unwrap_err();
    assert_eq!(through, direct);
    // A tool without task support, and search_tools, are never tasks.
    let add = call_with(
        &r,
        "tools/call",
        json!({"name": CALL_TOOL, "arguments": {"name": "calc_add", "arguments": {"text": "1"}}}),
        stateless(true),
    )
    .await
    .unwrap();
    assert_eq!(text(&add), "calc:add:1");
    let found = call_with(
        &r,
        "tools/call",
        json!({"name": SEARCH_TOOLS, "arguments": {"query": "build"}}),
        stateless(true),
    )
    .await
    .unwrap();
    assert!(
        found.get("resultType").is_none_or(|t| t != "task"),
        "{found}"
    );
}
