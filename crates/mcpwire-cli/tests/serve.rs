//! `mcpwire serve` through the binary: several listeners serving one merged catalog, quick
//! flags and a configuration file giving the same gateway, configuration errors that name
//! file, line and key, `--check`, and hot reload of the file while a client stays connected.
//! The backends are native (the built-in example, twice, under two names) so nothing but
//! the binary is needed; the tool-process cases use the venv's protomcp SDK.

mod common;
mod peers;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::http::HttpServer;
use common::wires::{Conversation, Mcpb, Peer};
use serde_json::{Value, json};

/// A running `mcpwire serve`: JSON-RPC over its stdio, and its stderr line by line.
struct Gateway {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<String>,
    stderr: mpsc::Receiver<String>,
    /// Stderr lines already read while waiting for others.
    log: Vec<String>,
}

impl Gateway {
    fn start(args: &[&str], envs: &[(&str, &str)]) -> Gateway {
        let mut child = Command::new(peers::bin())
            .arg("serve")
            .args(args)
            .envs(envs.iter().copied())
            .env("MCPWIRE_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcpwire serve");
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(r).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        };
        let stdout = lines(Box::new(child.stdout.take().expect("stdout")));
        let stderr = lines(Box::new(child.stderr.take().expect("stderr")));
        Gateway {
            stdin: child.stdin.take(),
            child,
            stdout,
            stderr,
            log: Vec::new(),
        }
    }

    /// The rest of the first stderr line starting with `prefix` (waits at most 20 s).
    fn stderr_line(&mut self, prefix: &str) -> String {
        let line = self.stderr_where(|l| l.starts_with(prefix), prefix);
        line[prefix.len()..].to_owned()
    }

    /// The first stderr line containing `needle` (waits at most 20 s).
    fn stderr_containing(&mut self, needle: &str) -> String {
        self.stderr_where(|l| l.contains(needle), needle)
    }

    /// The first stderr line satisfying `want`, waiting for it at most 20 s.
    fn stderr_where(&mut self, want: impl Fn(&str) -> bool, what: &str) -> String {
        if let Some(i) = self.log.iter().position(|l| want(l)) {
            return self.log.remove(i);
        }
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if want(&line) => return line,
                Ok(line) => self.log.push(line),
                Err(_) => panic!("no stderr line with {what:?}; saw {:#?}", self.log),
            }
        }
    }
}

impl Peer for Gateway {
    fn send(&mut self, msg: Value) {
        let w = self.stdin.as_mut().expect("stdin open");
        writeln!(w, "{msg}").expect("write");
        w.flush().expect("flush");
    }
    fn recv(&mut self) -> Value {
        let line = self
            .stdout
            .recv_timeout(Duration::from_secs(20))
            .expect("a line from mcpwire within 20 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A directory of its own for one test's configuration file.
type Dir = common::TestDir;

fn init_params() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "serve-test", "version": "1"}})
}

/// Initializes a session over `peer` and returns the tool names it lists.
fn tool_names<P: Peer>(c: &mut Conversation<P>) -> Vec<String> {
    let init = c.request(1, "initialize", init_params());
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    c.notify("notifications/initialized", json!({}));
    listed(c, 2)
}

/// `tools/list` as names.
fn listed<P: Peer>(c: &mut Conversation<P>, id: i64) -> Vec<String> {
    common::listed_names(&c.request(id, "tools/list", json!({})))
}

/// `mcpwire ARGS` to completion (bounded): status code, stdout, stderr.
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let r = peers::run_env(args, &[("MCPWIRE_LOG", "error")]);
    (r.code, r.stdout, r.stderr)
}

const TWO_DEMOS: &str = r#"
[backends.a]
native = "demo"
include = ["echo", "add"]

[backends.b]
native = "demo"
include = ["echo"]
"#;

#[test]
fn several_listeners_serve_one_catalog() {
    let dir = Dir::new("listeners");
    let conf = dir.config(&format!(
        "[[listen]]\nurl = \"stdio\"\n[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\
         [[listen]]\nurl = \"mcpb://127.0.0.1:0\"\n[[listen]]\nurl = \"ws://127.0.0.1:0/ws\"\n{TWO_DEMOS}"
    ));
    let mut g = Gateway::start(&["--config", &conf], &[]);
    let http = g.stderr_line("mcpwire: listening on http://");
    let mcpb = g.stderr_line("mcpwire: listening on mcpb://");
    let ws = g.stderr_line("mcpwire: listening on ws://");
    let want = ["a_echo", "a_add", "b_echo"];

    let mut stdio = Conversation::new(g);
    assert_eq!(tool_names(&mut stdio), want, "stdio");

    let mut over_mcpb = Conversation::new(Mcpb::connect(&mcpb));
    assert_eq!(tool_names(&mut over_mcpb), want, "MCPB");
    let call = over_mcpb.request(
        3,
        "tools/call",
        json!({"name": "b_echo", "arguments": {"text": "through b"}}),
    );
    assert_eq!(call["result"]["content"][0]["text"], "through b", "{call}");

    let mut over_ws = Conversation::new(common::wires::Ws::connect(&ws));
    assert_eq!(tool_names(&mut over_ws), want, "WebSocket");

    let server = HttpServer::at(&http);
    let sid = server.initialize();
    let r = server.post(
        Some(&sid),
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    );
    let names: Vec<Value> = r.json()["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, want.map(Value::from), "HTTP");

    // The same catalog through every listener, called from stdio too.
    let call = stdio.request(
        4,
        "tools/call",
        json!({"name": "a_add", "arguments": {"a": 2, "b": 3}}),
    );
    assert_eq!(call["result"]["structuredContent"]["sum"], 5.0, "{call}");
}

#[test]
fn quick_flags_and_a_file_give_the_same_gateway() {
    let dir = Dir::new("equivalence");
    let mut flags = vec![
        "serve",
        "--demo",
        "--prefix",
        "always",
        "--listen",
        "http://127.0.0.1:0/mcp",
        "--listen",
        "stdio",
    ];
    let mut file = String::from(
        "[server]\nprefix = \"always\"\n[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\
         [[listen]]\nurl = \"stdio\"\n[backends.demo]\nnative = \"demo\"\n",
    );
    let tools = peers::root().join("tests/python/protomcp_tools/kitchen.py");
    let kitchen = format!("kitchen={}", tools.display());
    let python = peers::venv_python();
    if python.is_some() {
        flags.extend(["--process", &kitchen]);
        file.push_str(&format!(
            "[backends.kitchen]\nprocess = {:?}\n",
            tools.display().to_string()
        ));
    }
    let conf = dir.config(&file);
    let python = python.map(|p| p.to_string_lossy().into_owned());
    let check = |args: &[&str]| -> Value {
        let mut all = args.to_vec();
        all.extend(["--check", "--json"]);
        let out = Command::new(peers::bin())
            .args(&all)
            .envs(python.iter().map(|p| ("PROTOMCP_PYTHON", p.as_str())))
            .env("MCPWIRE_LOG", "error")
            .output()
            .expect("run");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON report")
    };
    let by_flags = check(&flags);
    let by_file = check(&["serve", "--config", &conf]);
    assert_eq!(by_flags, by_file);
    let tools: Vec<&str> = by_file["catalog"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["exposed"].as_str().expect("exposed"))
        .collect();
    assert!(tools.contains(&"demo_echo"), "{tools:?}");
    assert_eq!(by_file["listeners"][1]["url"], "stdio");
}

#[test]
fn configuration_errors_name_the_file_line_and_key() {
    let dir = Dir::new("errors");
    let cases = [
        (
            "[backends.demo]\nnative = \"demo\"\n\n[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\nmax_sesions = 4\n",
            ":6:1: listen[0].max_sesions: unknown field `max_sesions`",
        ),
        (
            "[[listen]]\nurl = \"https://127.0.0.1:8443/mcp\"\n[backends.demo]\nnative = \"demo\"\n",
            ":2:7: listen[0].url: `https://127.0.0.1:8443/mcp` is a TLS listener: give its certificate and key",
        ),
        (
            "[backends.demo]\nnative = \"demo\"\n[backends.tools]\nprocess = \"t.py\"\nfail = \"sometimes\"\n",
            ":5:8: backends.tools.fail: unknown variant `sometimes`, expected `open` or `closed`",
        ),
        (
            "[backends.demo]\nnative = \"everything\"\n",
            ":1:11: backends.demo: no native server named `everything` (this program has demo)",
        ),
        (
            "[backends.fs]\ncommand = \"npx -y @modelcontextprotocol/server-filesystem /srv\"\nmax_sessions = 0\n",
            ":3:16: backends.fs.max_sessions: `max_sessions` must be at least 1",
        ),
        (
            "[backends.demo]\nnative = \"demo\"\nexclude = [\"[oops\"]\n",
            ":3:11: backends.demo.exclude: invalid pattern \"[oops\": unclosed",
        ),
        (
            "[[listen]]\nurl = \"stdio\"\nview = \"nope\"\n[backends.demo]\nnative = \"demo\"\n",
            ":3:8: listen[0].view: no view is named `nope`",
        ),
    ];
    for (text, says) in cases {
        let conf = dir.config(text);
        let (code, _, stderr) = run(&["serve", "--config", &conf, "--check"]);
        assert_eq!(code, Some(2), "{text}\n{stderr}");
        let want = format!("error: {conf}{says}");
        assert!(
            stderr.starts_with(&want),
            "{text}\n  got: {stderr}\n want: {want}"
        );
    }
    for (args, says) in [
        (
            vec!["serve", "--demo", "--listen", "ftp://127.0.0.1:1"],
            "error: --listen ftp://127.0.0.1:1: ",
        ),
        (
            vec!["serve", "--process", "tools.py"],
            "error: --process tools.py: give NAME=VALUE",
        ),
        (
            vec!["serve", "--upstream", "fs=127.0.0.1:8000/mcp"],
            "error: --upstream fs=127.0.0.1:8000/mcp: `127.0.0.1:8000/mcp` looks like a URL without its scheme",
        ),
        (
            vec!["serve", "--demo", "--process", "demo=t.py"],
            "error: --process demo=t.py: a second backend named `demo`",
        ),
        (
            vec!["serve", "--listen", "stdio"],
            "error: command line: nothing to serve",
        ),
        (
            vec!["serve", "--config", "/nonexistent/mcpwire.toml"],
            "error: /nonexistent/mcpwire.toml: cannot read",
        ),
    ] {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}\n{stderr}");
        assert!(
            stderr.starts_with(says),
            "{args:?}\n  got: {stderr}\n want: {says}"
        );
    }
    let (code, _, stderr) = run(&["serve", "--config", "x.toml", "--prefix", "always"]);
    assert_eq!(
        code,
        Some(2),
        "the file's [server] prefix, not the flag: {stderr}"
    );
}

#[test]
fn check_prints_the_merged_catalog() {
    let dir = Dir::new("check");
    let conf = dir.config(&format!(
        "[server]\nprefix = \"never\"\n[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\
         [[listen]]\nurl = \"mcpb://127.0.0.1:0\"\nview = \"adder\"\n{TWO_DEMOS}\
         rename = {{ echo = \"shout\" }}\n[views.adder]\ntools = [\"add\"]\n"
    ));
    let (code, text, stderr) = run(&["serve", "--config", &conf, "--check"]);
    assert_eq!(code, Some(0), "{stderr}");
    for line in [
        "listeners (2):",
        "  mcpb://127.0.0.1:0  (view adder)",
        "  a  native    demo",
        "tools (3):",
        "  shout  ← b: echo",
        "tool b/echo → shout (renamed)",
        "view adder: 1 tools",
    ] {
        assert!(text.contains(line), "--check lacks {line:?}:\n{text}");
    }

    // Collisions without prefixes or renames, as JSON.
    let conf = dir.config(&format!("[server]\nprefix = \"never\"\n{TWO_DEMOS}"));
    let (code, json, _) = run(&["serve", "--config", &conf, "--check", "--json"]);
    assert_eq!(code, Some(0));
    let report: Value = serde_json::from_str(&json).expect("JSON");
    let collisions = report["catalog"]["collisions"]
        .as_array()
        .expect("collisions");
    assert_eq!(collisions.len(), 1, "{report}");
    assert_eq!(collisions[0]["name"], "echo");
    assert_eq!(collisions[0]["kept_by"], "a");

    // A backend that does not start is shown, and the status says so (a tool file that
    // does not exist at all is a configuration error: status 2).
    let broken = dir.0.join("broken");
    std::fs::write(&broken, "#!/bin/sh\nexit 1\n").expect("write");
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let conf = dir.config(&format!(
        "{TWO_DEMOS}[backends.broken]\nprocess = \"broken\"\n"
    ));
    let (code, text, _) = run(&["serve", "--config", &conf, "--check"]);
    assert_eq!(code, Some(3), "{text}");
    assert!(
        text.contains("broken") && text.contains("NOT STARTED"),
        "{text}"
    );
}

#[test]
fn reload_applies_edits_while_a_client_stays_connected() {
    let dir = Dir::new("reload");
    let first =
        "[[listen]]\nurl = \"stdio\"\n[backends.a]\nnative = \"demo\"\ninclude = [\"echo\"]\n";
    let conf = dir.config(first);
    let mut c = Conversation::new(Gateway::start(&["--config", &conf], &[]));
    assert_eq!(tool_names(&mut c), ["echo"]);

    // A backend added: the session stays, is told, and sees it.
    dir.config(&format!(
        "{first}[backends.b]\nnative = \"demo\"\ninclude = [\"add\"]\n"
    ));
    let said = c.peer.stderr_line("mcpwire: reloaded ");
    assert!(said.ends_with(": added b"), "{said}");
    c.until(|m| m["method"] == "notifications/tools/list_changed");
    assert_eq!(listed(&mut c, 3), ["a_echo", "b_add"]);
    let call = c.request(
        4,
        "tools/call",
        json!({"name": "b_add", "arguments": {"a": 1, "b": 2}}),
    );
    assert_eq!(call["result"]["structuredContent"]["sum"], 3.0, "{call}");

    // An invalid edit is refused and logged; the previous configuration keeps serving.
    dir.config(&format!(
        "{first}[backends.b]\nnative = \"demo\"\ninclude = \"add\"\n"
    ));
    let refused = c.peer.stderr_containing("edit refused");
    assert!(refused.contains("backends.b.include"), "{refused}");
    assert_eq!(listed(&mut c, 5), ["a_echo", "b_add"]);

    // A backend removed.
    dir.config(first);
    let said = c.peer.stderr_line("mcpwire: reloaded ");
    assert!(said.ends_with(": removed b"), "{said}");
    c.until(|m| m["method"] == "notifications/tools/list_changed");
    assert_eq!(listed(&mut c, 6), ["echo"]);
}

#[test]
fn sighup_reloads_when_the_file_is_not_watched() {
    let dir = Dir::new("sighup");
    let first =
        "[[listen]]\nurl = \"stdio\"\n[backends.a]\nnative = \"demo\"\ninclude = [\"echo\"]\n";
    let conf = dir.config(first);
    let mut c = Conversation::new(Gateway::start(&["--config", &conf, "--no-reload"], &[]));
    assert_eq!(tool_names(&mut c), ["echo"]);
    dir.config(&format!(
        "{first}[backends.b]\nnative = \"demo\"\ninclude = [\"add\"]\n"
    ));
    // Not watched: the edit waits for SIGHUP.
    let pid = c.peer.child.id().to_string();
    let hup = Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(hup.success());
    let said = c.peer.stderr_line("mcpwire: reloaded ");
    assert!(said.ends_with(": added b"), "{said}");
    assert_eq!(listed(&mut c, 3), ["a_echo", "b_add"]);
}
