//! `[policy]` on every wire of `mcpwire serve`: the API key `guest` may not see or call the
//! demo's `echo` (and the anonymous caller neither), the key `ci` may. Over HTTP, gRPC,
//! MCPB (authenticated) and stdio (anonymous): the denied tool is absent from the list and
//! its call answers exactly as a call of a tool that does not exist. `--check --as-key` /
//! `--as` / `--as-anonymous` print what each caller would see.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::http::HttpServer;
use common::wires::{Conversation, Mcpb, grpc_call_with};
use common::{listen, proc};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

const CI: &str = "ci-key-0123456789abcdef";
const GUEST: &str = "guest-key-0123456789abcdef";

/// A configuration file: the demo behind HTTP, gRPC and MCPB (or stdio), keys `ci` and
/// `guest`, and the policy.
fn config(name: &str, listeners: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("policy-{name}"));
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    let text = format!(
        r#"{listeners}
[backends.demo]
native = "demo"

[auth]
[[auth.api_keys]]
name = "ci"
key = "{CI}"
[[auth.api_keys]]
name = "guest"
key = "{GUEST}"

[policy]
[[policy.rules]]
effect = "allow"
keys = ["ci"]

[[policy.rules]]
effect = "deny"
tools = ["echo"]
"#
    );
    std::fs::write(&path, text).expect("write config");
    path
}

fn initialize_params() -> Value {
    json!({"protocolVersion":"2025-11-25","capabilities":{},
           "clientInfo":{"name":"policy-test","version":"1"}})
}

fn tool_names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect()
}

fn call(name: &str) -> Value {
    json!({"name": name, "arguments": {"text": "hi"}})
}

/// The error of a call of `hidden` is the error of a call of `unknown`, names aside.
fn same_as_unknown(hidden: &Value, unknown: &Value, name: &str) {
    let text = unknown.to_string().replace("no_such_tool", name);
    assert_eq!(
        hidden.to_string(),
        text,
        "a hidden tool answers as an unknown one"
    );
}

/// Lists and calls over a JSON-RPC conversation: `echo` hidden unless `sees_echo`.
fn check_conversation(
    mut request: impl FnMut(i64, &str, Value) -> Value,
    sees_echo: bool,
    who: &str,
) {
    let list = request(10, "tools/list", json!({}));
    let names = tool_names(&list);
    assert!(names.iter().any(|n| n == "add"), "{who}: {names:?}");
    assert_eq!(
        names.iter().any(|n| n == "echo"),
        sees_echo,
        "{who}: {names:?}"
    );
    let echo = request(11, "tools/call", call("echo"));
    if sees_echo {
        assert_eq!(echo["result"]["content"][0]["text"], "hi", "{who}: {echo}");
    } else {
        let unknown = request(11, "tools/call", call("no_such_tool"));
        assert!(unknown.get("error").is_some() || unknown["result"]["isError"] == true);
        same_as_unknown(&echo, &unknown, "echo");
    }
}

#[test]
fn denied_tools_are_hidden_and_refused_on_http_grpc_and_mcpb() {
    let path = config(
        "network",
        "[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n[[listen]]\nurl = \"grpc://127.0.0.1:0\"\n[[listen]]\nurl = \"mcpb://127.0.0.1:0\"\n",
    );
    let mut l = listen(
        env!("CARGO_BIN_EXE_mcpwire"),
        &["serve", "--config", path.to_str().expect("path")],
        "warn",
        &[
            "mcpwire: listening on http://",
            "mcpwire: listening on grpc://",
            "mcpwire: listening on mcpb://",
        ],
        false,
    );
    // HTTP: a session per key.
    let server = HttpServer::at(&l.addrs[0]);
    for (key, sees_echo) in [(GUEST, false), (CI, true)] {
        let init =
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":initialize_params()});
        let r = server.post_as(Some(key), None, &init);
        assert_eq!(r.status, 200);
        let session = r.header("mcp-session-id").expect("a session").to_owned();
        let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
        server.post_as(Some(key), Some(&session), &note);
        check_conversation(
            |id, method, params| {
                let msg = json!({"jsonrpc":"2.0","id":id,"method":method,"params":params});
                server.post_as(Some(key), Some(&session), &msg).json()
            },
            sees_echo,
            &format!("http {key}"),
        );
    }
    // gRPC: each RPC carries its key.
    let grpc = &l.addrs[1];
    for (key, sees_echo) in [(GUEST, false), (CI, true)] {
        let md = [("authorization", format!("Bearer {key}"))];
        let md: Vec<(&str, &str)> = md.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let list: pb::ListToolsResponse =
            grpc_call_with(grpc, "ListTools", &pb::ListToolsRequest::default(), &md).expect("list");
        let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
        assert!(names.contains(&"add"), "{names:?}");
        assert_eq!(names.contains(&"echo"), sees_echo, "grpc {key}: {names:?}");
        let call = |name: &str| {
            let req = pb::CallToolRequest {
                name: name.into(),
                ..Default::default()
            };
            format!(
                "{:?}",
                grpc_call_with::<pb::CallToolResponse>(grpc, "CallTool", &req, &md)
            )
        };
        let (echo, unknown) = (call("echo"), call("no_such_tool"));
        if sees_echo {
            // Found: its arguments are checked (none were given), unlike an unknown tool's.
            assert!(echo.contains("Invalid arguments for tool echo"), "{echo}");
            assert!(!unknown.contains("Invalid arguments"), "{unknown}");
        } else {
            assert_eq!(echo, unknown.replace("no_such_tool", "echo"));
        }
    }
    // MCPB: the key opens the connection.
    for (key, sees_echo) in [(GUEST, false), (CI, true)] {
        let mut c = Conversation::new(Mcpb::connect(&l.addrs[2]));
        let mut params = initialize_params();
        params["token"] = json!(key);
        let r = c.request(1, "initialize", params);
        assert!(r["result"]["sessionId"].is_string(), "{r}");
        c.notify("notifications/initialized", json!({}));
        check_conversation(
            |id, m, p| c.request(id, m, p),
            sees_echo,
            &format!("mcpb {key}"),
        );
    }
    let _ = l.child.kill();
    let _ = l.child.wait();
}

#[test]
fn stdio_is_the_anonymous_caller() {
    let path = config("stdio", "");
    let mut c = Conversation::new(proc(&["serve", "--config", path.to_str().expect("path")]));
    let r = c.request(1, "initialize", initialize_params());
    assert!(r["result"]["serverInfo"].is_object(), "{r}");
    c.notify("notifications/initialized", json!({}));
    check_conversation(|id, m, params| c.request(id, m, params), false, "stdio");
}

fn check_as(path: &std::path::Path, who: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_mcpwire"))
        .args(["serve", "--config", path.to_str().expect("path"), "--check"])
        .args(who)
        .env("MCPWIRE_LOG", "warn")
        .output()
        .expect("run --check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn check_as_prints_what_one_caller_sees() {
    let path = config("check", "");
    let lists_echo = |text: &str| text.lines().any(|l| l.trim_start().starts_with("echo "));
    let everything = check_as(&path, &[]);
    assert!(lists_echo(&everything), "{everything}");
    let guest = check_as(&path, &["--as-key", "guest"]);
    assert!(guest.contains("as `key:guest`"), "{guest}");
    assert!(!lists_echo(&guest) && guest.contains("  add "), "{guest}");
    let ci = check_as(&path, &["--as-key", "ci"]);
    assert!(lists_echo(&ci), "{ci}");
    let anonymous = check_as(&path, &["--as-anonymous"]);
    assert!(!lists_echo(&anonymous), "{anonymous}");
    let bob = check_as(&path, &["--as", "bob", "--json"]);
    let report: Value = serde_json::from_str(&bob).expect("JSON");
    let tools = report["catalog"]["tools"].as_array().expect("tools");
    assert!(tools.iter().all(|t| t["exposed"] != "echo"), "{bob}");
    assert!(tools.iter().any(|t| t["exposed"] == "add"), "{bob}");
}
