//! `mcpwire list|call` against real servers: the npm reference servers (everything,
//! filesystem, memory) and a FastMCP server with rich Pydantic types, over stdio and
//! Streamable HTTP — including a tool that must run as a task, and redirects.

mod peers;

use std::process::Command;

use peers::{UrlServer, fastmcp_server, free_port, npm_server, root, run, run_env};
use serde_json::{Value, json};

fn json_of(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// server-everything: `[task]` marks its task-required tool, and `call` runs it as a task
/// (create, poll `tasks/get`, `tasks/result`).
#[test]
fn everything_server_task_tool_over_stdio() {
    let Some(everything) = npm_server("everything") else {
        return;
    };
    let listing = run(&["list", &everything]);
    let line = listing
        .ok()
        .lines()
        .find(|l| l.starts_with("simulate-research-query"))
        .expect("the tool is listed");
    assert!(line.contains("[task]"), "{line}");
    assert!(
        listing
            .ok()
            .lines()
            .filter(|l| l.starts_with("echo "))
            .all(|l| !l.contains("[task]"))
    );

    let r = run(&[
        "call",
        &everything,
        "simulate-research-query",
        "--args",
        r#"{"topic": "wire formats"}"#,
    ]);
    let result = json_of(r.ok());
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Research Report: wire formats"), "{result}");
    assert!(
        r.stderr.contains("[task ") && r.stderr.contains("] completed"),
        "{}",
        r.stderr
    );

    let echo = json_of(
        run(&[
            "call",
            &everything,
            "echo",
            "--args",
            r#"{"message": "hi"}"#,
        ])
        .ok(),
    );
    assert_eq!(echo["content"][0]["text"], "Echo: hi");
}

/// The same over Streamable HTTP (server-everything's own HTTP transport).
#[test]
fn everything_server_over_http() {
    let Some(everything) = npm_server("everything") else {
        return;
    };
    let port = free_port();
    let mut cmd = Command::new("node");
    cmd.arg(everything.trim_start_matches("node ").trim_matches('\''))
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    let url = format!("http://127.0.0.1:{port}/mcp");
    let expected = url.clone();
    let _server = UrlServer::spawn(cmd, true, move |line| {
        line.contains("listening on port").then(|| expected.clone())
    });
    assert!(run(&["list", &url]).ok().contains("[task]"));
    let r = run(&[
        "call",
        &url,
        "simulate-research-query",
        "--args",
        r#"{"topic": "http"}"#,
    ]);
    assert!(
        json_of(r.ok())["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Research Report: http"))
    );
    let sum = json_of(run(&["call", &url, "get-sum", "--args", r#"{"a": 2, "b": 3}"#]).ok());
    assert!(
        sum["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains('5')),
        "{sum}"
    );
}

#[test]
fn filesystem_server_reads_a_directory() {
    let Some(fs) = npm_server("filesystem") else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mcpwire-fs-peer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("hello.txt"), "hello from mcpwire\n").expect("file");
    let dir_s = dir.canonicalize().expect("path");
    let dir_s = dir_s.to_str().expect("utf-8");
    let target = format!("{fs} {dir_s}");
    assert!(run(&["list", &target]).ok().contains("read_text_file"));
    let args = json!({ "path": format!("{dir_s}/hello.txt") }).to_string();
    let r = json_of(run(&["call", &target, "read_text_file", "--args", &args]).ok());
    assert_eq!(r["content"][0]["text"], "hello from mcpwire\n");
    // a path outside the allowed directory is the tool's error: exit status 4
    let args = json!({ "path": "/etc/hostname" }).to_string();
    run(&["call", &target, "read_text_file", "--args", &args]).fails(4, &["isError"]);
    std::fs::remove_dir_all(&dir).expect("cleanup");
}

/// Two calls, two processes, one knowledge graph (the server's file).
#[test]
fn memory_server_keeps_entities_across_calls() {
    let Some(memory) = npm_server("memory") else {
        return;
    };
    let file = std::env::temp_dir().join(format!("mcpwire-memory-{}.jsonl", std::process::id()));
    let env = [("MEMORY_FILE_PATH", file.to_str().expect("utf-8"))];
    let args = json!({ "entities": [
        { "name": "mcpwire", "entityType": "project", "observations": ["speaks MCP"] }
    ]})
    .to_string();
    run_env(&["call", &memory, "create_entities", "--args", &args], &env).ok();
    let graph = json_of(run_env(&["call", &memory, "read_graph"], &env).ok());
    let text = graph["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("speaks MCP"), "{graph}");
    let _ = std::fs::remove_file(&file);
}

/// FastMCP with nested models: a call with a nested object gets a structured result; a
/// tool error is exit status 4; a trailing slash is a redirect followed over HTTP.
#[test]
fn fastmcp_server_over_stdio_and_http() {
    let Some(fastmcp) = fastmcp_server() else {
        return;
    };
    let args = json!({ "task": {
        "title": "ship", "priority": "urgent", "due": "2026-12-01T10:00:00Z",
        "assignee": { "name": "Ada" }, "subtasks": [{ "title": "tests", "children": [] }]
    }})
    .to_string();
    let r = json_of(run(&["call", &fastmcp, "create_task", "--args", &args]).ok());
    assert_eq!(
        r["structuredContent"]["task"]["assignee"]["name"], "Ada",
        "{r}"
    );
    assert_eq!(r["structuredContent"]["id"], 1);
    let args = json!({ "task_id": 7, "people": [{ "name": "Ada" }] }).to_string();
    run(&["call", &fastmcp, "assign", "--args", &args]).fails(4, &["isError"]);

    let python = root().join("target/venv/bin/python");
    let script = root().join("tests/peers/fastmcp_tasks.py");
    let server = UrlServer::start(
        &python,
        &[script.to_str().expect("utf-8"), "--http", "0"],
        true,
    );
    for url in [server.url.clone(), format!("{}/", server.url)] {
        let listing = run(&["list", &url]);
        assert!(listing.ok().contains("create_task"), "{url}");
    }
}
