//! JSON logs through the binary: with `[server] log_format = "json"` (or `--log-format json`)
//! every stderr line — announcements, events, the error report — is one JSON object with a
//! timestamp, level, target and fields, and events inside a request carry the request span's
//! fields (wire, method, tool, backend, outcome).

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::http::HttpServer;
use serde_json::{Value, json};

const CONFIG: &str = r#"[server]
log_format = "json"

[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.a]
native = "demo"

[backends.b]
native = "demo"
"#;

struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns `mcpwire ARGS` with `MCPWIRE_LOG=log`; its stderr lines arrive on the receiver.
fn spawn(args: &[&str], log: &str) -> (ChildGuard, mpsc::Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcpwire"))
        .args(args)
        .env("MCPWIRE_LOG", log)
        .env_remove("MCPWIRE_LOG_FORMAT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcpwire");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (ChildGuard(child), rx)
}

/// One stderr line as a log object: it must parse, and have the fields every line has.
fn parse(line: &str) -> Value {
    let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    for key in ["timestamp", "level", "target"] {
        assert!(v[key].is_string(), "no {key}: {line}");
    }
    assert!(v["fields"].is_object(), "no fields: {line}");
    v
}

fn next_line(rx: &mpsc::Receiver<String>) -> Option<String> {
    rx.recv_timeout(Duration::from_secs(20)).ok()
}

#[test]
fn every_stderr_line_is_json_and_requests_carry_their_span() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("logs-json");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    std::fs::write(&path, CONFIG).expect("config");
    let (mut child, rx) = spawn(
        &["serve", "--config", path.to_str().expect("utf-8")],
        "warn,mcpwire::request=debug",
    );
    let mut lines = Vec::new();
    let url = loop {
        let line = next_line(&rx).expect("mcpwire printed its address");
        let v = parse(&line);
        lines.push(v.clone());
        let message = v["fields"]["message"].as_str().unwrap_or_default();
        if let Some(url) = message.strip_prefix("mcpwire: listening on http://") {
            assert_eq!(v["level"], "INFO", "{v}");
            break url.to_owned();
        }
    };

    let http = HttpServer::at(&url);
    let sid = http.initialize();
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "b_echo", "arguments": {"text": "hi"}}});
    let r = http.post(Some(&sid), &call);
    assert_eq!(r.status, 200);
    r.text();

    // The call's `request answered` event, inside its span.
    let answered = loop {
        let line = next_line(&rx).expect("the call's log line");
        let v = parse(&line);
        lines.push(v.clone());
        if v["fields"]["message"] == "request answered" && v["span"]["method"] == "tools/call" {
            break v;
        }
    };
    let span = &answered["span"];
    assert_eq!(span["name"], "request", "{answered}");
    assert_eq!(span["wire"], "http", "{answered}");
    assert_eq!(span["tool"], "b_echo", "{answered}");
    assert_eq!(span["backend"], "b", "{answered}");
    assert_eq!(span["outcome"], "ok", "{answered}");
    assert_eq!(answered["fields"]["outcome"], "ok", "{answered}");
    assert!(answered["spans"].is_array(), "{answered}");

    // SIGTERM: the drain's lines are JSON too, up to the end of stderr.
    let status = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    while let Some(line) = next_line(&rx) {
        lines.push(parse(&line));
    }
    let _ = child.0.wait();
    assert!(lines.len() >= 2, "{lines:?}");
}

#[test]
fn the_flag_and_the_environment_choose_json_and_errors_are_json_too() {
    // A configuration error, reported before anything is served.
    let (mut child, rx) = spawn(
        &[
            "serve",
            "--config",
            "/nonexistent/mcpwire.toml",
            "--log-format",
            "json",
        ],
        "warn",
    );
    let mut lines = Vec::new();
    while let Some(line) = next_line(&rx) {
        lines.push(parse(&line));
    }
    let status = child.0.wait().expect("exit");
    assert_eq!(status.code(), Some(2));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["level"], "ERROR");
    assert!(
        lines[0]["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("/nonexistent/mcpwire.toml")),
        "{lines:?}"
    );

    // The environment variable, on a preset.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpwire"));
    let out = cmd
        .args(["demo", "--transport", "http", "--port", "0"])
        .env("MCPWIRE_LOG_FORMAT", "json")
        .env("MCPWIRE_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut guard = ChildGuard(out);
    let mut stderr = BufReader::new(guard.0.stderr.take().expect("stderr"));
    let mut first = String::new();
    stderr.read_line(&mut first).expect("a line");
    let v = parse(first.trim());
    assert!(
        v["fields"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("mcpwire: listening on http://")),
        "{v}"
    );
}

/// `mcpwire serve` with [`CONFIG`]'s `[server]` given `server_lines` too (in a directory
/// named `dir`): the process and its HTTP listener's `host:port/path`.
#[cfg(target_os = "linux")]
fn serve_with(dir: &str, server_lines: &str) -> (ChildGuard, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join("mcpwire.toml");
    let config = CONFIG.replace("[server]\n", &format!("[server]\n{server_lines}"));
    std::fs::write(&path, config).expect("config");
    let (child, rx) = spawn(
        &["serve", "--config", path.to_str().expect("utf-8")],
        "info",
    );
    loop {
        let line = next_line(&rx).expect("mcpwire printed its address");
        let message = parse(&line)["fields"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if let Some(url) = message.strip_prefix("mcpwire: listening on http://") {
            return (child, url.to_owned());
        }
    }
}

/// The names of `child`'s threads starting with `prefix`, sorted (from `/proc`).
#[cfg(target_os = "linux")]
fn threads_named(child: &ChildGuard, prefix: &str) -> Vec<String> {
    let tasks = format!("/proc/{}/task", child.0.id());
    let mut names: Vec<String> = std::fs::read_dir(tasks)
        .expect("the process's threads")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|name| name.trim().to_owned())
        .filter(|name| name.starts_with(prefix))
        .collect();
    names.sort();
    names
}

/// `[server] workers` sets the runtime's worker threads (counted in `/proc`: Linux).
#[cfg(target_os = "linux")]
#[test]
fn the_configured_worker_threads_serve() {
    let (child, url) = serve_with("logs-workers", "workers = 3\n");
    // Served (the runtime runs), by the configured number of workers.
    let http = HttpServer::at(&url);
    http.initialize();
    assert_eq!(threads_named(&child, "tokio-rt-worker").len(), 3);
}

/// `[server] http_threads` serves the HTTP listener's connections on threads of its own,
/// each a single-threaded runtime (counted in `/proc`: Linux); sessions on connections
/// accepted by either are served.
#[cfg(target_os = "linux")]
#[test]
fn the_http_listener_serves_on_threads_of_its_own() {
    let (child, url) = serve_with("logs-http-threads", "http_threads = 2\n");
    let http = HttpServer::at(&url);
    for i in 0..8 {
        let sid = http.initialize();
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "a_echo", "arguments": {"text": format!("hi {i}")}}});
        let r = http.post(Some(&sid), &call);
        assert_eq!(r.status, 200);
        assert!(r.text().contains(&format!("hi {i}")));
    }
    assert_eq!(
        threads_named(&child, "mcpwire-http-"),
        ["mcpwire-http-0", "mcpwire-http-1"]
    );
}
