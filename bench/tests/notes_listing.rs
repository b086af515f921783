//! The notes server written with mcpwire's macros (`examples/notes`) lists at least what
//! the same server written with rmcp's macros (`bench/src/notes_rmcp.rs`) lists: every
//! tool with the same description, annotations, argument names, types, descriptions and
//! required set, and the same output schema fields; the prompt with the same arguments.

use mcpwire::model::{Method, Reply, to_raw};
use mcpwire::router::{CallCtx, McpCall, Router};
use mcpwire_bench::notes_rmcp::Notes;
use serde_json::{Value, json};

async fn mcpwire_list(method: &str) -> Value {
    let r = Router::new(mcpwire_example_notes::server());
    let reply = r
        .call(McpCall::new(
            Method::parse(method),
            Some(to_raw(&json!({}))),
            CallCtx::detached(),
        ))
        .await
        .unwrap_or_else(|e| panic!("{method}: {e}"));
    match reply {
        Reply::Complete(raw) | Reply::InputRequired(raw) => {
            serde_json::from_str(raw.get()).unwrap_or_default()
        }
    }
}

/// `schema`'s properties with `$ref`s to its `$defs` resolved, as name → (type, description).
fn fields(schema: &Value) -> Vec<(String, Value, Value)> {
    let defs = &schema["$defs"];
    let mut out: Vec<(String, Value, Value)> = schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, p)| {
            let p = match p["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
                Some(d) => &defs[d],
                None => p,
            };
            (name.clone(), p["type"].clone(), p["description"].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn required(schema: &Value) -> Vec<String> {
    let mut r: Vec<String> = serde_json::from_value(schema["required"].clone()).unwrap_or_default();
    r.sort();
    r
}

#[tokio::test]
async fn mcpwire_lists_at_least_what_rmcp_lists() {
    let rmcp = Notes::new();
    let rmcp_tools = serde_json::to_value(rmcp.tool_router.list_all()).unwrap_or_default();
    let ours = mcpwire_list("tools/list").await;
    let ours = ours["tools"].as_array().cloned().unwrap_or_default();
    let rmcp_tools = rmcp_tools.as_array().cloned().unwrap_or_default();
    assert_eq!(rmcp_tools.len(), 3);
    assert_eq!(ours.len(), rmcp_tools.len());
    for theirs in &rmcp_tools {
        let name = &theirs["name"];
        let mine = ours
            .iter()
            .find(|t| &t["name"] == name)
            .unwrap_or_else(|| panic!("mcpwire lacks {name}"));
        assert_eq!(mine["description"], theirs["description"], "{name}");
        assert_eq!(
            mine["annotations"]["readOnlyHint"], theirs["annotations"]["readOnlyHint"],
            "{name}"
        );
        for key in ["inputSchema", "outputSchema"] {
            let (m, t) = (&mine[key], &theirs[key]);
            assert_eq!(fields(m), fields(t), "{name} {key}");
            assert!(
                !fields(t).is_empty() || key == "inputSchema",
                "{name} {key}: {t}"
            );
            assert_eq!(required(m), required(t), "{name} {key}");
            assert_eq!(m["type"], t["type"], "{name} {key}");
        }
    }
    // Every argument is described in both (the comparison above would pass on two blanks).
    let add = ours
        .iter()
        .find(|t| t["name"] == "add")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        fields(&add["inputSchema"])[0].2,
        "Labels to find the note by."
    );

    let rmcp_prompts = serde_json::to_value(rmcp.prompt_router.list_all()).unwrap_or_default();
    let our_prompts = mcpwire_list("prompts/list").await;
    let (theirs, mine) = (&rmcp_prompts[0], &our_prompts["prompts"][0]);
    assert_eq!(mine["name"], theirs["name"]);
    assert_eq!(mine["description"], theirs["description"]);
    assert_eq!(mine["arguments"], theirs["arguments"]);
}
