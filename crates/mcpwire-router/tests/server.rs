//! The native `Server` through the `Router`: pagination, validation paths, catalog changes.

use mcpwire_model::types::Implementation;
use mcpwire_model::{BackendEvent, McpError};
use mcpwire_router::{CallCtx, Router, Server, ToolError, tool};
use mcpwire_testkit::router::call;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Plain {
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Bounded {
    #[schemars(range(min = 1, max = 10))]
    n: u32,
}

fn server() -> std::sync::Arc<Server> {
    let mut b = Server::builder(Implementation::new("t", "1")).page_size(2);
    for i in 0..5 {
        b = b.tool(
            tool(format!("t{i}"), |_c: CallCtx, a: Plain| async move {
                Ok::<_, ToolError>(a.text)
            })
            .description("plain"),
        );
    }
    b.tool(
        tool("bounded", |_c: CallCtx, a: Bounded| async move {
            Ok::<_, ToolError>(a.n.to_string())
        })
        .description("bounded"),
    )
    .build()
}

#[tokio::test]
async fn pages_follow_cursors_to_the_end() {
    let r = Router::new(server());
    let mut names = Vec::new();
    let mut params = json!({});
    loop {
        let page = call(&r, "tools/list", params).await.unwrap();
        names.extend(
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        match page.get("nextCursor") {
            Some(c) => params = json!({ "cursor": c }),
            None => break,
        }
    }
    assert_eq!(names, ["t0", "t1", "t2", "t3", "t4", "bounded"]);
    let bad = call(&r, "tools/list", json!({"cursor": "nope"}))
        .await
        .unwrap_err();
    assert!(matches!(bad, McpError::InvalidParams(_)));
}

#[tokio::test]
async fn typed_and_constrained_arguments_are_checked() {
    let r = Router::new(server());
    let ok = call(
        &r,
        "tools/call",
        json!({"name": "t0", "arguments": {"text": "hi"}}),
    )
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["text"], "hi");
    for bad in [json!({"text": 3}), json!({})] {
        let e = call(&r, "tools/call", json!({"name": "t0", "arguments": bad}))
            .await
            .unwrap_err();
        assert!(matches!(e, McpError::InvalidToolParams { .. }), "{e:?}");
    }
    // Params that break tools/call's own schema are the request's fault, not the tool's.
    for bad in [
        json!({"name": "t0", "arguments": [1]}),
        json!({"name": "t0", "arguments": "text=hi"}),
        json!({"name": ["t0"], "arguments": {"text": "hi"}}),
    ] {
        let e = call(&r, "tools/call", bad).await.unwrap_err();
        assert!(matches!(e, McpError::InvalidParams(_)), "{e:?}");
    }
    // A range serde cannot see is enforced by the schema validator (feature `validation`;
    // without it the handler gets the value).
    let out_of_range = call(
        &r,
        "tools/call",
        json!({"name": "bounded", "arguments": {"n": 50}}),
    )
    .await;
    if cfg!(feature = "validation") {
        let e = out_of_range.unwrap_err();
        assert!(matches!(e, McpError::InvalidToolParams { .. }), "{e:?}");
    } else {
        assert_eq!(out_of_range.unwrap()["content"][0]["text"], "50");
    }
    let ok = call(
        &r,
        "tools/call",
        json!({"name": "bounded", "arguments": {"n": 5}}),
    )
    .await
    .unwrap();
    assert_eq!(ok["content"][0]["text"], "5");
    let e = call(&r, "tools/call", json!({"name": "missing"}))
        .await
        .unwrap_err();
    assert_eq!(e, McpError::ToolNotFound("missing".into()));
    let e = call(&r, "prompts/list", json!({})).await.unwrap_err();
    assert!(
        matches!(e, McpError::MethodNotFound(_)),
        "no prompts offered: {e:?}"
    );
}

#[tokio::test]
async fn catalog_changes_are_announced() {
    let s = server();
    let mut events = mcpwire_router::Backend::events(&*s).unwrap();
    s.add_tool(
        tool("late", |_c: CallCtx, a: Plain| async move {
            Ok::<_, ToolError>(a.text)
        })
        .description("late"),
    );
    assert!(matches!(
        events.recv().await.unwrap(),
        BackendEvent::ToolsListChanged
    ));
    assert!(s.tool_names().contains(&"late".to_string()));
    assert!(s.remove_tool("late"));
    assert!(!s.remove_tool("late"));
    assert!(matches!(
        events.recv().await.unwrap(),
        BackendEvent::ToolsListChanged
    ));
}
