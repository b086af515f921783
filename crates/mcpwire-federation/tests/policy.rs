//! Per-caller policy through the router: lists filtered per identity (pages and cursors
//! included), hidden items answering exactly as unknown ones, views narrowed further, and
//! the report of what one caller sees.

mod common;

use std::sync::Arc;

use common::*;
use mcpwire_federation::{
    Callers, Effect, Federation, FederationConfig, Glob, Member, Policy, PolicyRule, Targets,
    ViewSpec,
};
use mcpwire_model::McpError;
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, Identity, Router};
use serde_json::{Value, json};

fn g(p: &[&str]) -> Vec<Glob> {
    p.iter().map(|s| Glob::new(s).unwrap()).collect()
}

/// alice sees everything; nobody else sees `*delete*` tools; the anonymous caller does
/// not see backend `gh` at all.
fn policy() -> Policy {
    let rule = |effect, callers, targets| PolicyRule {
        effect,
        callers,
        targets,
    };
    Policy {
        default: Effect::Allow,
        rules: vec![
            rule(
                Effect::Allow,
                Callers {
                    subjects: g(&["alice"]),
                    ..Callers::default()
                },
                Targets::default(),
            ),
            rule(
                Effect::Deny,
                Callers::default(),
                Targets {
                    tools: Some(g(&["*delete*"])),
                    ..Targets::default()
                },
            ),
            rule(
                Effect::Deny,
                Callers {
                    anonymous: Some(true),
                    ..Callers::default()
                },
                Targets {
                    backends: g(&["gh"]),
                    ..Targets::default()
                },
            ),
        ],
    }
}

async fn federation() -> Arc<Federation> {
    let mut cfg = FederationConfig::new(Implementation::new("gateway", "1"))
        .member(Member::new(
            "fs",
            server("fs", &["read", "delete", "search"]),
        ))
        .member(Member::new("gh", server("gh", &["search", "delete_repo"])))
        .policy(policy());
    cfg.page_size = 2;
    Federation::new(cfg).await.unwrap()
}

fn who(sub: &str) -> Option<Identity> {
    Some(Identity::bearer(sub, None, vec![], Default::default()))
}

fn ctx(id: &Option<Identity>) -> CallCtx {
    CallCtx::detached().with_identity(id.clone())
}

/// Every name of a list as `id` sees it, following cursors (at most 50 pages).
async fn names(
    r: &Router,
    id: &Option<Identity>,
    method: &str,
    field: &str,
    key: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    let mut params = json!({});
    for _ in 0..50 {
        let page = call_with(r, method, params, ctx(id)).await.expect("list");
        for item in page[field].as_array().expect("items") {
            out.push(item[key].as_str().expect("key").to_owned());
        }
        match page.get("nextCursor") {
            Some(c) => params = json!({ "cursor": c }),
            None => return out,
        }
    }
    panic!("too many pages")
}

async fn call_tool(r: &Router, id: &Option<Identity>, name: &str) -> Result<Value, McpError> {
    let params = json!({"name": name, "arguments": {"text": "x"}});
    call_with(r, "tools/call", params, ctx(id)).await
}

#[tokio::test]
async fn lists_are_filtered_per_caller_and_hidden_tools_answer_as_unknown() {
    let fed = federation().await;
    let r = Router::new(fed.clone());
    let (alice, bob, anon) = (who("alice"), who("bob"), None);
    let all = [
        "fs_read",
        "fs_delete",
        "fs_search",
        "gh_search",
        "gh_delete_repo",
    ];
    // Interleaved, with pages of two: each caller's cursor walks its own list.
    assert_eq!(names(&r, &alice, "tools/list", "tools", "name").await, all);
    assert_eq!(
        names(&r, &bob, "tools/list", "tools", "name").await,
        ["fs_read", "fs_search", "gh_search"]
    );
    assert_eq!(
        names(&r, &anon, "tools/list", "tools", "name").await,
        ["fs_read", "fs_search"]
    );
    assert_eq!(names(&r, &alice, "tools/list", "tools", "name").await, all);

    assert_eq!(
        text(&call_tool(&r, &alice, "fs_delete").await.unwrap()),
        "fs:delete:x"
    );
    let unknown = call_tool(&r, &bob, "no_such_tool").await.unwrap_err();
    assert_eq!(unknown, McpError::ToolNotFound("no_such_tool".into()));
    for (id, name) in [
        (&bob, "fs_delete"),
        (&anon, "fs_delete"),
        (&anon, "gh_search"),
    ] {
        let hidden = call_tool(&r, id, name).await.unwrap_err();
        assert_eq!(hidden, McpError::ToolNotFound(name.into()), "{name}");
        assert_eq!(
            hidden.to_string(),
            unknown.to_string().replace("no_such_tool", name)
        );
    }
    assert_eq!(
        text(&call_tool(&r, &bob, "gh_search").await.unwrap()),
        "gh:search:x"
    );
}

#[tokio::test]
async fn whole_backends_hide_prompts_resources_and_templates() {
    let fed = federation().await;
    let r = Router::new(fed.clone());
    let (bob, anon) = (who("bob"), None);
    assert_eq!(
        names(&r, &bob, "prompts/list", "prompts", "name").await,
        ["fs_summarize", "gh_summarize"]
    );
    assert_eq!(
        names(&r, &anon, "prompts/list", "prompts", "name").await,
        ["fs_summarize"]
    );
    let templates = names(
        &r,
        &anon,
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
    )
    .await;
    assert_eq!(templates, ["fs://items/{id}"]);
    let get = |id: &Option<Identity>, name: &str| {
        call_with(
            &r,
            "prompts/get",
            json!({"name": name, "arguments": {"topic": "t"}}),
            ctx(id),
        )
    };
    assert!(get(&bob, "gh_summarize").await.is_ok());
    let unknown = get(&anon, "nope").await.unwrap_err();
    assert_eq!(unknown, McpError::PromptNotFound("nope".into()));
    assert_eq!(
        get(&anon, "gh_summarize").await.unwrap_err(),
        McpError::PromptNotFound("gh_summarize".into())
    );
    let read = |id: &Option<Identity>, uri: &str| {
        call_with(&r, "resources/read", json!({"uri": uri}), ctx(id))
    };
    assert!(read(&bob, "gh://items/7").await.is_ok());
    assert_eq!(
        read(&anon, "gh://items/7").await.unwrap_err(),
        McpError::ResourceNotFound("gh://items/7".into())
    );
    assert!(read(&anon, "fs://items/7").await.is_ok());
}

#[tokio::test]
async fn views_are_narrowed_by_the_policy_and_reports_show_one_caller() {
    let fed = federation().await;
    let view = fed.view(&ViewSpec::new("deletes").tools(Glob::new("*delete*").unwrap()));
    let r = Router::new(view.clone());
    assert_eq!(
        names(&r, &who("alice"), "tools/list", "tools", "name").await,
        ["fs_delete", "gh_delete_repo"]
    );
    assert!(
        names(&r, &who("bob"), "tools/list", "tools", "name")
            .await
            .is_empty()
    );
    let report = fed.report_as(None);
    let tools: Vec<_> = report.tools.iter().map(|t| t.exposed.as_str()).collect();
    assert_eq!(tools, ["fs_read", "fs_search"]);
    let report = view.report_as(who("alice").as_ref());
    let tools: Vec<_> = report.tools.iter().map(|t| t.exposed.as_str()).collect();
    assert_eq!(tools, ["fs_delete", "gh_delete_repo"]);
}

/// Takes the events waiting on `rx` and says whether the tool list was announced.
fn tools_announced(rx: &mut tokio::sync::broadcast::Receiver<mcpwire_model::BackendEvent>) -> bool {
    let mut seen = false;
    while let Ok(e) = rx.try_recv() {
        seen |= matches!(e, mcpwire_model::BackendEvent::ToolsListChanged);
    }
    seen
}

#[tokio::test]
async fn a_replaced_policy_applies_to_the_next_lists_and_calls_and_is_announced() {
    use mcpwire_router::Backend;
    let fed = federation().await;
    let r = Router::new(fed.clone());
    let view = fed.view(&ViewSpec::new("searches").tools(Glob::new("*search*").unwrap()));
    let rv = Router::new(view.clone());
    let bob = who("bob");
    let mut fed_events = fed.events().expect("events");
    let mut view_events = view.events().expect("view events");
    // Build bob's subsets under the first policy.
    let before = names(&r, &bob, "tools/list", "tools", "name").await;
    assert!(before.contains(&"gh_search".to_owned()), "{before:?}");
    assert!(call_tool(&r, &bob, "fs_delete").await.is_err());

    // The new policy hides every search and allows deletes.
    fed.set_policy(Policy {
        default: Effect::Allow,
        rules: vec![PolicyRule {
            effect: Effect::Deny,
            callers: Callers::default(),
            targets: Targets {
                tools: Some(g(&["*search*"])),
                ..Targets::default()
            },
        }],
    });
    let after = names(&r, &bob, "tools/list", "tools", "name").await;
    assert!(!after.iter().any(|t| t.contains("search")), "{after:?}");
    assert!(after.contains(&"fs_delete".to_owned()), "{after:?}");
    assert!(call_tool(&r, &bob, "fs_delete").await.is_ok());
    assert!(matches!(
        call_tool(&r, &bob, "gh_search").await,
        Err(McpError::ToolNotFound(_))
    ));
    // The view follows the new policy too.
    let in_view = names(&rv, &bob, "tools/list", "tools", "name").await;
    assert!(in_view.is_empty(), "{in_view:?}");
    // Sessions are told: the federation's, and the view's although its own lists (before
    // the policy) did not change.
    assert!(tools_announced(&mut fed_events));
    let announced = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        loop {
            match view_events.recv().await {
                Ok(mcpwire_model::BackendEvent::ToolsListChanged) => return true,
                Ok(_) => continue,
                Err(_) => return false,
            }
        }
    })
    .await
    .unwrap_or(false);
    assert!(announced, "the view announced its tool list");
}
