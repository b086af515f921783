//! What a new user meets first with `mcpwire serve` (issue 23), through the binary:
//! configuration errors with exit status 2 naming the flag or key (a program that cannot be
//! found, a URL with a bad port), stdin that cannot have a client, flags adding to a
//! configuration file (and again at every reload), command backends' `args`, `env` and
//! `cwd`, another MCP host's `mcpServers` file, backends' stderr logged under their names,
//! and a listener's error said once.

mod common;
mod peers;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::wires::Stdio as StdioClient;
use mcpwire_testkit::wait::{poll_for, wait_for};
use serde_json::{Value, json};

/// A directory of its own for one test's files.
type Dir = common::TestDir;

/// `mcpwire ARGS` to completion with stdin at /dev/null: status, stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let r = peers::run_env(args, &[("MCPWIRE_LOG", "error")]);
    (r.code, r.stderr)
}

/// `mcpwire serve ARGS` as a stdio server, its stderr (default filter) written to `log`.
fn serve_logging(args: &[&str], log: &Path, env: &[(&str, &str)]) -> StdioClient {
    let mut cmd = Command::new(common::BIN);
    cmd.arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .env_remove("MCPWIRE_LOG")
        .stderr(Stdio::from(std::fs::File::create(log).expect("log file")));
    StdioClient::spawn(cmd)
}

/// The log so far.
fn log_of(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Waits for a log line containing `needle`.
fn wait_for_log(log: &Path, needle: &str) -> String {
    poll_for(Duration::from_secs(20), || {
        log_of(log)
            .lines()
            .find(|l| l.contains(needle))
            .map(str::to_owned)
    })
    .unwrap_or_else(|| {
        let text = log_of(log);
        let lines: Vec<&str> = text.lines().collect();
        let tail: Vec<String> = lines[lines.len().saturating_sub(20)..]
            .iter()
            .map(|l| l.chars().take(300).collect())
            .collect();
        panic!(
            "no log line with {needle:?}; the log ends with:\n{}",
            tail.join("\n")
        )
    })
}

/// The tool names a session lists.
fn tool_names(c: &mut StdioClient, id: i64) -> Vec<String> {
    common::listed_names(&c.request(id, "tools/list", json!({})))
}

/// The text of a `tools/call` of `name`.
fn call_text(c: &mut StdioClient, id: i64, name: &str, arguments: Value) -> String {
    let r = c.request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    assert!(r["result"]["isError"] != json!(true), "{name}: {r}");
    r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: a text result: {r}"))
        .to_owned()
}

#[test]
fn a_program_that_cannot_be_found_is_a_configuration_error() {
    // Before: exit 0 over stdio, and an HTTP listener serving "0 servers" (exit status 0).
    for listen in ["stdio", "http://127.0.0.1:0/mcp"] {
        let (code, stderr) = run(&[
            "serve",
            "--upstream",
            "ghost=/nonexistent/x",
            "--listen",
            listen,
        ]);
        assert_eq!(code, Some(2), "{listen}: {stderr}");
        assert!(
            stderr.starts_with(
                "error: --upstream ghost=/nonexistent/x: cannot run `/nonexistent/x`: no such file"
            ),
            "{stderr}"
        );
        assert!(!stderr.contains("serving the others"), "{stderr}");
    }
    let dir = Dir::new("ghost");
    let conf = dir.write(
        "mcpwire.toml",
        "[backends.ghost]\ncommand = \"no-such-program-mcpwire --flag\"\n",
    );
    let (code, stderr) = run(&["serve", "--config", &conf, "--listen", "stdio"]);
    assert_eq!(code, Some(2), "{stderr}");
    let want = format!(
        "error: {conf}:2:11: backends.ghost.command: `no-such-program-mcpwire` was not found on PATH"
    );
    assert!(stderr.starts_with(&want), "{stderr}\nwant: {want}");
}

#[test]
fn a_url_with_a_bad_port_is_refused_when_read() {
    // Before: accepted, then "Connection refused" (exit 3).
    let (code, stderr) = run(&["serve", "--upstream", "web=http://127.0.0.1:99999/mcp"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(
            "error: --upstream web=http://127.0.0.1:99999/mcp: `http://127.0.0.1:99999/mcp` is \
             not a usable URL: port `99999` is not 1 to 65535"
        ),
        "{stderr}"
    );
    let dir = Dir::new("port");
    let conf = dir.write(
        "mcpwire.toml",
        "[backends.web]\nurl = \"http://localhost:99999/mcp\"\n",
    );
    let (code, stderr) = run(&["serve", "--config", &conf, "--check"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!("error: {conf}:2:7: backends.web.url: ")),
        "{stderr}"
    );
    let (code, stderr) = run(&["list", "http://127.0.0.1:70000/mcp"]);
    assert_eq!(code, Some(2), "the client's targets too: {stderr}");
}

#[test]
fn no_others_are_mentioned_when_there_are_none() {
    // Two backends that are down (nothing listens on a port just closed).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let dir = Dir::new("none");
    let log = dir.path("log");
    let a = format!("a=http://127.0.0.1:{port}/a");
    let b = format!("b=http://127.0.0.1:{port}/b");
    let mut c = serve_logging(
        &["--upstream", &a, "--upstream", &b, "--listen", "stdio"],
        &log,
        &[],
    );
    c.initialize("2025-11-25");
    let line = wait_for_log(&log, "backend `a`");
    assert!(
        line.contains("no other backend is running"),
        "{}",
        log_of(&log)
    );
    wait_for_log(&log, "backend `b`");
    assert!(
        !log_of(&log).contains("serving the others"),
        "{}",
        log_of(&log)
    );
}

#[test]
fn stdin_that_cannot_have_a_client_is_refused() {
    // Before: exit 0 in 0.7 s, printing nothing.
    let (code, stderr) = run(&["serve", "--demo"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: no --listen given, and stdin is /dev/null (or was closed)"),
        "{stderr}"
    );
    assert!(stderr.contains("--listen stdio"), "{stderr}");

    let dir = Dir::new("stdin");
    let file = dir.write("requests.jsonl", "");
    let out = Command::new(common::BIN)
        .args(["serve", "--demo"])
        .stdin(std::fs::File::open(&file).expect("open"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("stdin is a regular file"), "{stderr}");

    // Asked for explicitly, stdio is served, and its end is said.
    let (code, stderr) = run(&["serve", "--demo", "--listen", "stdio"]);
    assert_eq!(code, Some(0), "{stderr}");
    let r = peers::run_env(&["serve", "--demo", "--listen", "stdio"], &[]);
    assert!(
        r.stderr.contains("mcpwire: stdin reached end of input"),
        "{}",
        r.stderr
    );
    // A pipe is a client: served as before.
    let mut c = StdioClient::spawn({
        let mut cmd = Command::new(common::BIN);
        cmd.args(["serve", "--demo"]).stderr(Stdio::null());
        cmd
    });
    c.initialize("2025-11-25");
    assert!(tool_names(&mut c, 1).contains(&"echo".to_owned()));
}

#[test]
fn flags_add_to_a_configuration_file_and_stay_across_reloads() {
    let dir = Dir::new("add");
    let conf = dir.write(
        "mcpwire.toml",
        "[backends.a]\nnative = \"demo\"\ninclude = [\"echo\"]\n",
    );
    // A name the file has already.
    let (code, stderr) = run(&[
        "serve",
        "--config",
        &conf,
        "--upstream",
        "a=mcpwire demo",
        "--listen",
        "stdio",
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: --upstream a=mcpwire demo: a backend named `a` is already in {conf}"
        )),
        "{stderr}"
    );

    let log = dir.path("log");
    let mut c = serve_logging(
        &["--config", &conf, "--demo", "--listen", "stdio"],
        &log,
        &[],
    );
    c.initialize("2025-11-25");
    let names = tool_names(&mut c, 1);
    assert!(names.contains(&"a_echo".to_owned()), "{names:?}");
    assert!(names.contains(&"demo_add".to_owned()), "{names:?}");

    // Reloading the file keeps what the flags added.
    dir.write(
        "mcpwire.toml",
        "[backends.b]\nnative = \"demo\"\ninclude = [\"echo\"]\n",
    );
    wait_for_log(&log, "mcpwire: reloaded");
    let names = wait_for(Duration::from_secs(20), "the reloaded catalog", || {
        let names = tool_names(&mut c, 2);
        names.contains(&"b_echo".to_owned()).then_some(names)
    });
    assert!(!names.contains(&"a_echo".to_owned()), "{names:?}");
    assert!(names.contains(&"demo_add".to_owned()), "{names:?}");
}

#[test]
fn a_listener_error_is_said_once() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", taken.local_addr().expect("addr"));
    let (code, stderr) = run(&["serve", "--demo", "--listen", &url]);
    assert_ne!(code, Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("Address already in use").count(),
        1,
        "{stderr}"
    );
}

#[test]
fn a_backends_stderr_is_logged_under_its_name() {
    let dir = Dir::new("stderr");
    let log = dir.path("log");
    // 100 kB on one line, invalid UTF-8, then the demo as a stdio server.
    let script = format!(
        "echo 'hello from the child' >&2; head -c 100000 /dev/zero | tr '\\0' x >&2; echo >&2; \
         printf 'bad \\377 byte\\n' >&2; exec {} demo",
        common::BIN
    );
    let conf = dir.write(
        "mcpwire.toml",
        &format!(
            "[backends.noisy]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nshared = true\n",
            toml_string(&script)
        ),
    );
    let mut c = serve_logging(
        &[
            "--config",
            &conf,
            "--listen",
            "stdio",
            "--log-format",
            "json",
        ],
        &log,
        &[],
    );
    c.initialize("2025-11-25");
    let line = wait_for_log(&log, "hello from the child");
    let event: Value = serde_json::from_str(&line).expect("a JSON event");
    assert_eq!(event["fields"]["backend"], "noisy", "{event}");
    assert_eq!(event["fields"]["message"], "noisy: hello from the child");
    assert_eq!(event["target"], "mcpwire::child");
    let long = wait_for_log(&log, "xxxxxxxx");
    assert!(long.len() < 9 * 1024, "cut: {} bytes", long.len());
    let bad = wait_for_log(&log, "bad ");
    assert!(bad.contains("bad \u{fffd} byte"), "{bad}");
    // The child was never blocked on its stderr: it answers.
    assert!(!tool_names(&mut c, 1).is_empty());
}

#[test]
fn every_child_of_a_backend_is_heard() {
    // Not shared: the session's own child starts at its first call, beside the one that
    // lists; each child's stderr is read and named.
    let dir = Dir::new("children");
    let log = dir.path("log");
    let script = format!("echo \"child $$ started\" >&2; exec {} demo", common::BIN);
    let conf = dir.write(
        "mcpwire.toml",
        &format!(
            "[backends.per]\ncommand = \"sh\"\nargs = [\"-c\", {}]\nshared = false\n",
            toml_string(&script)
        ),
    );
    let mut c = serve_logging(&["--config", &conf, "--listen", "stdio"], &log, &[]);
    c.initialize("2025-11-25");
    assert_eq!(call_text(&mut c, 1, "echo", json!({"text": "hi"})), "hi");
    let started = wait_for(Duration::from_secs(20), "two children heard", || {
        let text = log_of(&log);
        let lines: Vec<String> = text
            .lines()
            .filter(|l| l.contains("per: child ") && l.contains(" started"))
            .map(str::to_owned)
            .collect();
        (lines.len() >= 2).then_some(lines)
    });
    assert_ne!(started[0], started[1], "two processes: {started:?}");
}

/// `s` as a TOML basic string.
fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The npm server `name`'s script, or `None` (skipped locally, a failure under CI).
fn npm_script(name: &str) -> Option<String> {
    peers::npm_server(name)?;
    Some(
        peers::root()
            .join(format!(
                "target/npm-peers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
            ))
            .to_string_lossy()
            .into_owned(),
    )
}

#[test]
fn command_backends_take_args_env_and_cwd() {
    let (Some(fs), Some(memory)) = (npm_script("filesystem"), npm_script("memory")) else {
        return;
    };
    let dir = Dir::new("args");
    std::fs::create_dir_all(dir.path("data dir")).expect("mkdir");
    let memory_file = dir.path("memory.jsonl");
    let conf = dir.write(
        "mcpwire.toml",
        &format!(
            "[backends.fs]\ncommand = \"node\"\nargs = [{}, \".\"]\ncwd = \"data dir\"\n\n\
             [backends.mem]\ncommand = \"node\"\nargs = [{}]\nenv = {{ MEMORY_FILE_PATH = {} }}\n",
            toml_string(&fs),
            toml_string(&memory),
            toml_string(&memory_file.to_string_lossy()),
        ),
    );
    let log = dir.path("log");
    let mut c = serve_logging(&["--config", &conf, "--listen", "stdio"], &log, &[]);
    c.initialize("2025-11-25");
    // `.` is the backend's cwd, a directory whose name has a space (args are not split).
    let allowed = call_text(&mut c, 1, "fs_list_allowed_directories", json!({}));
    assert!(allowed.contains("data dir"), "{allowed}");
    // MEMORY_FILE_PATH came from `env`.
    call_text(
        &mut c,
        2,
        "mem_create_entities",
        json!({"entities": [{"name": "n", "entityType": "t", "observations": []}]}),
    );
    assert!(
        memory_file.is_file(),
        "the memory server wrote its env's file"
    );
    // The filesystem server's banner, under its name.
    wait_for_log(&log, "fs: Secure MCP Filesystem Server");
}

#[test]
fn mcp_servers_files_are_served() {
    let Some(memory) = npm_script("memory") else {
        return;
    };
    let dir = Dir::new("import");
    let memory_file = dir.path("memory.jsonl");
    let claude = dir.write(
        "claude_desktop_config.json",
        &json!({
            "mcpServers": {
                "memory": {
                    "command": "node",
                    "args": [memory],
                    "env": {"MEMORY_FILE_PATH": "${env:MCPWIRE_TEST_MEMORY}"}
                },
                "demo": {"command": common::BIN, "args": ["demo"], "someOtherTool": {"x": 1}}
            },
            "globalShortcut": "Ctrl+Space"
        })
        .to_string(),
    );
    let log = dir.path("log");
    let memory_env = memory_file.to_string_lossy().into_owned();
    let mut c = serve_logging(
        &["--mcp-servers", &claude, "--listen", "stdio"],
        &log,
        &[("MCPWIRE_TEST_MEMORY", &memory_env)],
    );
    c.initialize("2025-11-25");
    let names = tool_names(&mut c, 1);
    assert!(names.contains(&"demo_echo".to_owned()), "{names:?}");
    call_text(
        &mut c,
        2,
        "memory_create_entities",
        json!({"entities": [{"name": "n", "entityType": "t", "observations": []}]}),
    );
    assert!(memory_file.is_file(), "${{env:…}} was expanded");
    drop(c);

    // VS Code's shape, next to a configuration file.
    std::fs::create_dir_all(dir.path(".vscode")).expect("mkdir");
    let vscode = dir.write(
        ".vscode/mcp.json",
        &format!(
            "{{\n  // VS Code allows comments\n  \"servers\": {{\"echo\": {{\"type\": \"stdio\", \
             \"command\": {}, \"args\": [\"demo\"]}},}},\n  \"inputs\": []\n}}",
            json!(common::BIN)
        ),
    );
    let conf = dir.write("mcpwire.toml", "[backends.a]\nnative = \"demo\"\n");
    let mut c = serve_logging(
        &[
            "--config",
            &conf,
            "--mcp-servers",
            &vscode,
            "--listen",
            "stdio",
        ],
        &log,
        &[],
    );
    c.initialize("2025-11-25");
    let names = tool_names(&mut c, 1);
    assert!(
        names.contains(&"a_add".to_owned()) && names.contains(&"echo_add".to_owned()),
        "{names:?}"
    );

    // An unknown type is refused, naming the entry.
    let bad = dir.write(
        "bad.json",
        r#"{"servers": {"x": {"type": "websocket", "url": "ws://h/"}}}"#,
    );
    let (code, stderr) = run(&["serve", "--mcp-servers", &bad]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "error: {bad}: servers.x.type: unknown type `websocket`"
        )),
        "{stderr}"
    );
}
