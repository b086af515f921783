//! `#[server]`, `#[tool]`, `#[prompt]` and `#[resource]` through the `Router`: listings
//! built from signatures and doc comments, calls reaching `&self` state, every return shape.

// The macros call `::mcpwire::__private`; this test depends on the router alone.
extern crate mcpwire_router as mcpwire;

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcpwire_model::McpError;
use mcpwire_model::types::{Content, Implementation};
use mcpwire_router::{CallCtx, Json, Router, Server, ToolError, prompt, resource, server, tool};
use mcpwire_testkit::router::{call, call_tool as tool_call};
use serde_json::json;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Total {
    /// The sum so far.
    total: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    /// Left.
    a: i64,
    /// Right.
    b: i64,
}

#[derive(Default)]
struct Counter {
    total: Mutex<i64>,
}

#[server]
impl Counter {
    /// Adds `n` to the total.
    ///
    /// Returns the new total.
    #[tool(idempotent = false, title = "Add")]
    fn add(
        &self,
        /// How much to add.
        n: i64,
    ) -> Json<Total> {
        let mut t = self.total.lock().unwrap_or_else(|p| p.into_inner());
        *t += n;
        Json(Total { total: *t })
    }

    /// The total.
    #[tool(read_only)]
    async fn total(&self, ctx: &CallCtx) -> String {
        ctx.info("reading");
        self.total.lock().map(|t| t.to_string()).unwrap_or_default()
    }

    /// Multiplies.
    #[tool(name = "mul")]
    fn multiply(#[args] p: Pair) -> Result<String, String> {
        p.a.checked_mul(p.b)
            .map(|v| v.to_string())
            .ok_or_else(|| "overflow".to_owned())
    }

    /// Fails the way a client ask does.
    #[tool(destructive, open_world = false)]
    async fn ask(_ctx: CallCtx) -> Result<(), McpError> {
        Err(McpError::InputRequired)
    }

    /// Optional argument.
    #[tool]
    fn greet(
        /// Who.
        name: Option<String>,
        #[serde(default)] loud: bool,
    ) -> Content {
        let s = format!("hello {}", name.unwrap_or_else(|| "you".into()));
        Content::text(if loud { s.to_uppercase() } else { s })
    }

    /// A summary prompt.
    #[prompt(title = "Summarize")]
    fn summarize(
        &self,
        /// The topic.
        #[complete(topics)]
        topic: String,
        /// At most this many lines.
        lines: Option<u32>,
        #[serde(rename = "styleName")]
        #[complete("short", "shouty")]
        style: Option<String>,
    ) -> String {
        format!(
            "{topic}/{lines:?}/{style:?}/{}",
            self.total.lock().map(|t| *t).unwrap_or(0)
        )
    }

    fn topics(&self, typed: &str) -> Vec<String> {
        ["rust", "ruby"]
            .iter()
            .filter(|t| t.starts_with(typed))
            .map(|t| t.to_string())
            .collect()
    }

    /// One entry.
    #[resource("count://{n}/x", mime = "text/plain", title = "Entry")]
    fn entry(&self, #[complete(entry_ids)] n: u32) -> Option<String> {
        (n < 10).then(|| format!("entry {n}"))
    }

    fn entry_ids(&self, typed: &str, _others: &BTreeMap<String, String>) -> Vec<&'static str> {
        ["1", "2"]
            .into_iter()
            .filter(|v| v.starts_with(typed))
            .collect()
    }

    /// Parameters may carry any name, even those the generated code uses itself.
    #[tool]
    fn names(&self, this: String, args: u32, uri: bool, __mcpwire_x: u8) -> String {
        format!("{this}/{args}/{uri}/{__mcpwire_x}")
    }

    /// A template whose variable is called `uri`.
    #[resource("names://{uri}")]
    fn by_uri(&self, uri: String, ctx: &CallCtx) -> String {
        let _ = ctx.revision();
        format!("name {uri}")
    }

    /// The total as JSON.
    #[resource("count://total")]
    async fn total_json(&self) -> Json<Total> {
        Json(Total {
            total: *self.total.lock().unwrap_or_else(|p| p.into_inner()),
        })
    }
}

/// Echoes.
#[tool(read_only)]
fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// Fails.
#[tool]
async fn fail() -> Result<String, ToolError> {
    Err(ToolError::new("nope"))
}

/// Hello.
#[prompt]
fn hello(who: String) -> Result<String, String> {
    if who.is_empty() {
        Err("empty".into())
    } else {
        Ok(format!("hi {who}"))
    }
}

/// The readme.
#[resource("doc://readme", name = "readme")]
fn readme() -> &'static str {
    "read me"
}

fn router() -> Router {
    let s = Server::builder(Implementation::new("t", "1"))
        .handlers(Counter::default())
        .tool(echo_tool())
        .tool(fail_tool())
        .prompt(hello_prompt())
        .resource(readme_resource())
        .build();
    Router::new(s)
}

#[tokio::test]
async fn listing_comes_from_signatures_and_docs() {
    let r = router();
    let list = call(&r, "tools/list", json!({})).await.unwrap_or_default();
    let tools = list["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "add", "total", "mul", "ask", "greet", "names", "echo", "fail"
        ]
    );
    let add = &tools[0];
    assert_eq!(
        add["description"],
        "Adds `n` to the total.\n\nReturns the new total."
    );
    assert_eq!(add["title"], "Add");
    assert_eq!(add["annotations"], json!({ "idempotentHint": false }));
    assert_eq!(
        add["inputSchema"]["properties"]["n"]["description"],
        "How much to add."
    );
    assert_eq!(add["inputSchema"]["required"], json!(["n"]));
    assert_eq!(
        add["outputSchema"]["properties"]["total"]["description"],
        "The sum so far."
    );
    assert_eq!(tools[1]["annotations"], json!({ "readOnlyHint": true }));
    assert_eq!(
        tools[1]["inputSchema"],
        json!({ "type": "object", "properties": {} })
    );
    assert_eq!(
        tools[2]["inputSchema"]["properties"]["a"]["description"],
        "Left."
    );
    assert_eq!(
        tools[3]["annotations"],
        json!({ "destructiveHint": true, "openWorldHint": false })
    );
    let greet = &tools[4]["inputSchema"];
    assert_eq!(greet["properties"]["name"]["description"], "Who.");
    assert!(greet.get("required").is_none(), "{greet}");

    let prompts = call(&r, "prompts/list", json!({}))
        .await
        .unwrap_or_default();
    assert_eq!(
        prompts["prompts"][0],
        json!({
            "name": "summarize",
            "title": "Summarize",
            "description": "A summary prompt.",
            "arguments": [
                { "name": "topic", "description": "The topic.", "required": true },
                { "name": "lines", "description": "At most this many lines.", "required": false },
                { "name": "styleName", "required": false },
            ],
        })
    );
    let templates = call(&r, "resources/templates/list", json!({}))
        .await
        .unwrap_or_default();
    assert_eq!(
        templates["resourceTemplates"][0],
        json!({
            "uriTemplate": "count://{n}/x",
            "name": "entry",
            "title": "Entry",
            "description": "One entry.",
            "mimeType": "text/plain",
        })
    );
    let resources = call(&r, "resources/list", json!({}))
        .await
        .unwrap_or_default();
    let uris: Vec<&str> = resources["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(uris, ["count://total", "doc://readme"]);
}

#[tokio::test]
async fn calls_reach_state_and_every_return_shape() {
    let r = router();
    let added = tool_call(&r, "add", json!({ "n": 2 }))
        .await
        .unwrap_or_default();
    assert_eq!(added["structuredContent"], json!({ "total": 2 }));
    let total = tool_call(&r, "total", json!({})).await.unwrap_or_default();
    assert_eq!(total["content"][0]["text"], "2");
    let mul = tool_call(&r, "mul", json!({ "a": 6, "b": 7 }))
        .await
        .unwrap_or_default();
    assert_eq!(mul["content"][0]["text"], "42");
    // Tool failures reach the session as errors; it answers them as `isError` results.
    let overflow = tool_call(&r, "mul", json!({ "a": i64::MAX, "b": 2 })).await;
    assert!(matches!(overflow, Err(McpError::ToolFailed { message, .. }) if message == "overflow"));
    let greet = tool_call(&r, "greet", json!({ "loud": true }))
        .await
        .unwrap_or_default();
    assert_eq!(greet["content"][0]["text"], "HELLO YOU");
    let echo = tool_call(&r, "echo", json!({ "text": "hi" }))
        .await
        .unwrap_or_default();
    assert_eq!(echo["content"][0]["text"], "hi");
    let fail = tool_call(&r, "fail", json!({})).await;
    assert!(matches!(fail, Err(McpError::ToolFailed { message, .. }) if message == "nope"));
    let bad = tool_call(&r, "add", json!({ "n": "two" })).await;
    assert!(
        matches!(bad, Err(McpError::InvalidToolParams { .. })),
        "{bad:?}"
    );
}

#[tokio::test]
async fn an_mcp_error_keeps_its_meaning() {
    let r = router();
    let asked = tool_call(&r, "ask", json!({})).await;
    assert!(
        !matches!(asked, Err(McpError::ToolFailed { .. })),
        "{asked:?}"
    );
}

#[tokio::test]
async fn prompts_parse_and_complete_their_arguments() {
    let r = router();
    let got = call(&r, "prompts/get", json!({ "name": "summarize", "arguments": { "topic": "rust", "lines": "3", "styleName": "short" } }))
        .await
        .unwrap_or_default();
    assert_eq!(
        got["messages"][0]["content"]["text"],
        "rust/Some(3)/Some(\"short\")/0"
    );
    let bad = call(
        &r,
        "prompts/get",
        json!({ "name": "summarize", "arguments": { "topic": "rust", "lines": "many" } }),
    )
    .await;
    assert!(matches!(bad, Err(McpError::InvalidParams(m)) if m.contains("lines")));
    let missing = call(
        &r,
        "prompts/get",
        json!({ "name": "summarize", "arguments": {} }),
    )
    .await;
    assert!(matches!(missing, Err(McpError::InvalidParams(_))));
    let failed = call(
        &r,
        "prompts/get",
        json!({ "name": "hello", "arguments": { "who": "" } }),
    )
    .await;
    assert!(matches!(failed, Err(McpError::InvalidParams(m)) if m == "empty"));

    let complete = |arg: &str, value: &str| json!({ "ref": { "type": "ref/prompt", "name": "summarize" }, "argument": { "name": arg, "value": value } });
    let c = call(&r, "completion/complete", complete("topic", "ru"))
        .await
        .unwrap_or_default();
    assert_eq!(c["completion"]["values"], json!(["rust", "ruby"]));
    let c = call(&r, "completion/complete", complete("styleName", "sh"))
        .await
        .unwrap_or_default();
    assert_eq!(c["completion"]["values"], json!(["short", "shouty"]));
    let c = call(
        &r,
        "completion/complete",
        json!({ "ref": { "type": "ref/resource", "uri": "count://{n}/x" }, "argument": { "name": "n", "value": "2" } }),
    )
    .await
    .unwrap_or_default();
    assert_eq!(c["completion"]["values"], json!(["2"]));
}

#[tokio::test]
async fn resources_read_through_their_handlers() {
    let r = router();
    let read = |uri: &str| json!({ "uri": uri });
    let got = call(&r, "resources/read", read("count://3/x"))
        .await
        .unwrap_or_default();
    assert_eq!(
        got["contents"][0],
        json!({ "uri": "count://3/x", "mimeType": "text/plain", "text": "entry 3" })
    );
    let none = call(&r, "resources/read", read("count://12/x")).await;
    assert!(matches!(none, Err(McpError::ResourceNotFound(_))));
    let unparsable = call(&r, "resources/read", read("count://abc/x")).await;
    assert!(matches!(unparsable, Err(McpError::ResourceNotFound(_))));
    let json = call(&r, "resources/read", read("count://total"))
        .await
        .unwrap_or_default();
    assert_eq!(json["contents"][0]["mimeType"], "application/json");
    assert_eq!(json["contents"][0]["text"], "{\"total\":0}");
    let named = call(&r, "resources/read", read("names://x"))
        .await
        .unwrap_or_default();
    assert_eq!(named["contents"][0]["text"], "name x");
    let names = tool_call(
        &r,
        "names",
        json!({ "this": "t", "args": 2, "uri": true, "__mcpwire_x": 1 }),
    )
    .await
    .unwrap_or_default();
    assert_eq!(names["content"][0]["text"], "t/2/true/1");
    let readme = call(&r, "resources/read", read("doc://readme"))
        .await
        .unwrap_or_default();
    assert_eq!(readme["contents"][0]["text"], "read me");
}
