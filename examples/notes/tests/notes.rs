//! The notes server through the router, and its binary over stdio.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use mcpwire::model::{McpError, Method, Reply, to_raw};
use mcpwire::router::{CallCtx, McpCall, Router};
use serde_json::{Value, json};

async fn call(r: &Router, method: &str, params: Value) -> Result<Value, McpError> {
    let reply = r
        .call(McpCall::new(
            Method::parse(method),
            Some(to_raw(&params)),
            CallCtx::detached(),
        ))
        .await?;
    match reply {
        Reply::Complete(raw) | Reply::InputRequired(raw) => {
            Ok(serde_json::from_str(raw.get()).unwrap_or_default())
        }
    }
}

async fn tool(r: &Router, name: &str, args: Value) -> Value {
    call(r, "tools/call", json!({ "name": name, "arguments": args }))
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"))["structuredContent"]
        .clone()
}

#[tokio::test]
async fn add_list_search_prompt_and_resource() {
    let r = Router::new(mcpwire_example_notes::server());
    let first = tool(
        &r,
        "add",
        json!({ "text": "Buy milk", "tags": ["shopping"] }),
    )
    .await;
    assert_eq!(
        first,
        json!({ "id": 1, "text": "Buy milk", "tags": ["shopping"] })
    );
    tool(
        &r,
        "add",
        json!({ "text": "Call Ada", "tags": ["people", "phone"] }),
    )
    .await;
    tool(&r, "add", json!({ "text": "Buy stamps" })).await;

    let all = tool(&r, "list", json!({})).await;
    assert_eq!(all["notes"].as_array().map(Vec::len), Some(3));
    let found = tool(&r, "search", json!({ "query": "BUY", "limit": 1 })).await;
    assert_eq!(
        found["notes"],
        json!([{ "id": 1, "text": "Buy milk", "tags": ["shopping"] }])
    );
    let by_tag = tool(&r, "search", json!({ "query": "phone" })).await;
    assert_eq!(by_tag["notes"][0]["id"], 2);

    let prompt = call(
        &r,
        "prompts/get",
        json!({ "name": "summarize", "arguments": { "tag": "shopping" } }),
    )
    .await
    .unwrap_or_default();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Summarize my notes tagged \"shopping\" in one paragraph:\n- Buy milk"
    );
    let tags = call(
        &r,
        "completion/complete",
        json!({ "ref": { "type": "ref/prompt", "name": "summarize" }, "argument": { "name": "tag", "value": "p" } }),
    )
    .await
    .unwrap_or_default();
    assert_eq!(tags["completion"]["values"], json!(["people", "phone"]));

    let read = call(&r, "resources/read", json!({ "uri": "notes://2" }))
        .await
        .unwrap_or_default();
    assert_eq!(
        read["contents"],
        json!([{ "uri": "notes://2", "mimeType": "text/plain", "text": "Call Ada" }])
    );
    let missing = call(&r, "resources/read", json!({ "uri": "notes://9" })).await;
    assert!(matches!(missing, Err(McpError::ResourceNotFound(_))));
}

#[tokio::test]
async fn listing_describes_every_argument() {
    let r = Router::new(mcpwire_example_notes::server());
    let list = call(&r, "tools/list", json!({})).await.unwrap_or_default();
    let add = &list["tools"][0];
    assert_eq!(add["name"], "add");
    assert_eq!(
        add["description"],
        "Adds a note and returns it with its id."
    );
    assert_eq!(
        add["inputSchema"]["properties"]["text"]["description"],
        "What the note says."
    );
    assert_eq!(add["inputSchema"]["required"], json!(["text"]));
    assert_eq!(
        add["outputSchema"]["properties"]["id"]["description"],
        "The note's id, counting from 1."
    );
    let search = &list["tools"][2];
    assert_eq!(search["annotations"], json!({ "readOnlyHint": true }));
    assert_eq!(
        search["inputSchema"]["properties"]["limit"]["description"],
        "The most notes to return (default 10)."
    );
    let templates = call(&r, "resources/templates/list", json!({}))
        .await
        .unwrap_or_default();
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "notes://{id}"
    );
}

/// The binary answers a real session over stdio: initialize, add, read back.
#[test]
fn serves_over_stdio() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_notes"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn notes: {e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
    let lines = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "add", "arguments": { "text": "hello" } } }),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": { "uri": "notes://1" } }),
    ];
    for l in &lines {
        writeln!(stdin, "{l}").unwrap_or_else(|e| panic!("write: {e}"));
    }
    drop(stdin);
    let out = BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("stdout")));
    let answers: Vec<Value> = out
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect();
    let _ = child.wait();
    let by_id = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by_id(1)["result"]["serverInfo"]["name"], "notes");
    assert_eq!(by_id(2)["result"]["structuredContent"]["id"], 1);
    assert_eq!(by_id(3)["result"]["contents"][0]["text"], "hello");
}

/// The binary serves Streamable HTTP from the library (`ServeConfig`), and mcpwire's HTTP
/// client adds and reads a note through it.
#[tokio::test]
async fn serves_over_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("free port: {e}"));
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_notes"))
        .args(["--http", &format!("127.0.0.1:{port}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn notes: {e}"));
    // The server prints its address once it listens.
    let stderr = child.stderr.take().unwrap_or_else(|| panic!("stderr"));
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stderr));
    let listening = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Ok(Some(l)) = lines.next_line().await {
            if l.contains("listening on http://") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(listening.ok(), Some(true));
    let url = format!("http://127.0.0.1:{port}/mcp");
    let opts = mcpwire_client::ClientOptions::default();
    let target = mcpwire_client::Target::parse(&url).unwrap_or_else(|e| panic!("{e}"));
    let (client, _events) = mcpwire_client::Client::connect(&target, &opts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let added = client
        .request(
            "tools/call",
            json!({ "name": "add", "arguments": { "text": "over http", "tags": ["web"] } }),
        )
        .await
        .unwrap_or_else(|e| panic!("add: {e}"));
    assert_eq!(added["structuredContent"]["id"], 1);
    let read = client
        .request("resources/read", json!({ "uri": "notes://1" }))
        .await
        .unwrap_or_else(|e| panic!("read: {e}"));
    assert_eq!(read["contents"][0]["text"], "over http");
    let _ = client.close().await;
    let _ = child.kill().await;
}
