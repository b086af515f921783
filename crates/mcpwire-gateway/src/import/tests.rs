//! The three hosts' shapes, and what is refused.

use super::*;

fn import(name: &str, text: &str) -> Result<Vec<BackendSpec>, ConfigError> {
    let dir = std::env::temp_dir().join(format!("mcpwire-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    mcp_servers(&path)
}

fn upstream(b: &BackendSpec) -> &UpstreamSpec {
    match &b.source {
        BackendSource::Upstream(u) => u,
        other => panic!("an upstream, not {other:?}"),
    }
}

#[test]
fn claude_desktop_cursor_and_vscode() {
    let claude = import(
        "claude.json",
        r#"{"globalShortcut": "x", "mcpServers": {
            "memory": {"command": "npx", "args": ["-y", "@scope/server memory"], "env": {"A": "1", "N": 2}},
            "web.search": {"url": "https://example.com/mcp", "headers": {"X-Key": "k"}},
            "old": {"type": "sse", "url": "https://example.com/sse"},
            "off": {"command": "x", "disabled": true}
        }}"#,
    )
    .expect("claude");
    let names: Vec<&str> = claude.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        ["memory", "web-search"],
        "file order, sse and disabled left out"
    );
    let memory = upstream(&claude[0]);
    assert_eq!(
        memory.target,
        Target::Command {
            argv: vec!["npx".into(), "-y".into(), "@scope/server memory".into()]
        },
        "args are words as given, never split"
    );
    assert_eq!(memory.env["A"], "1");
    assert_eq!(memory.env["N"], "2");
    let web = upstream(&claude[1]);
    assert_eq!(web.target, Target::Url("https://example.com/mcp".into()));
    assert_eq!(web.credentials.headers, [("x-key".into(), "k".into())]);

    let vscode = import(
        "settings.json",
        "{\n // JSONC\n \"mcp\": {\"servers\": {\"fs\": {\"type\": \"stdio\", \"command\": \"fs-server\", \"cwd\": \"sub\",},},},\n}",
    )
    .expect("vscode settings");
    assert_eq!(vscode[0].name, "fs");
    assert!(
        upstream(&vscode[0])
            .cwd
            .as_ref()
            .expect("cwd")
            .ends_with("sub")
    );
    let vscode = import(
        "mcp.json",
        r#"{"servers": {"gh": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}, "inputs": []}"#,
    )
    .expect("vscode mcp.json");
    assert_eq!(vscode[0].source.kind(), "upstream");
}

#[test]
fn refusals_name_the_entry() {
    for (text, key, says) in [
        (
            r#"{"servers": {"x": {"type": "ws", "url": "ws://h"}}}"#,
            "servers.x.type",
            "unknown type `ws`",
        ),
        (
            r#"{"mcpServers": {"x": {"url": "http://h:99999/mcp"}}}"#,
            "mcpServers.x.url",
            "port `99999`",
        ),
        (
            r#"{"mcpServers": {"x": {"args": ["a"]}}}"#,
            "mcpServers.x",
            "needs a `command`",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "c", "args": "a b"}}}"#,
            "mcpServers.x",
            "invalid type",
        ),
        (
            r#"{"mcpServers": {"x": {"command": "${input:tok}"}}}"#,
            "mcpServers.x.command",
            "asks the user",
        ),
    ] {
        let e = import("bad.json", text).unwrap_err();
        assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
        assert!(e.message.contains(says), "{text}: {e}");
    }
    let e = import("none.json", r#"{"other": 1}"#).unwrap_err();
    assert!(e.message.contains("no servers in it"), "{e}");
    let e = import("broken.json", "{\n  \"mcpServers\": {\n    x\n").unwrap_err();
    assert!(e.place.ends_with("broken.json:3:5"), "{e}");
}
