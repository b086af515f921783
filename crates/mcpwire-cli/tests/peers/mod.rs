//! Real and fake MCP servers for the client-verb tests, and running the binary with a
//! bounded wait.
//!
//! Real peers: the npm servers (`scripts/npm-peers.sh` installs them into
//! `target/npm-peers`) and the FastMCP fixture `tests/peers/fastmcp_tasks.py` (run by the
//! venv `scripts/test.sh` creates). When one is missing, a test skips with a message —
//! except under CI (`CI` set), where it fails.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The `mcpwire` binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcpwire")
}

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Quotes a path for a target command line.
fn quoted(p: &Path) -> String {
    shlex_quote(&p.to_string_lossy())
}

fn shlex_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:@".contains(&b))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A peer is missing: `None` with a message locally, a failure under CI.
fn missing(what: &str, how: &str) -> Option<String> {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{what} is missing under CI ({how}); the install step failed");
    }
    eprintln!("SKIPPED: {what} is not installed ({how})");
    None
}

/// The command line of npm server `name` (`everything`, `filesystem`, `memory`).
pub fn npm_server(name: &str) -> Option<String> {
    let script = root().join(format!(
        "target/npm-peers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ));
    if !script.is_file() {
        return missing(
            &format!("@modelcontextprotocol/server-{name}"),
            "run scripts/npm-peers.sh",
        );
    }
    Some(format!("node {}", quoted(&script)))
}

/// The venv's Python with FastMCP, if installed.
pub fn venv_python() -> Option<PathBuf> {
    let python = root().join("target/venv/bin/python");
    let ok = python.is_file()
        && Command::new(&python)
            .args(["-c", "import fastmcp"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        Some(python)
    } else {
        missing(
            "the Python venv with fastmcp (target/venv)",
            "run scripts/test.sh, or create it as the brief says",
        )?;
        None
    }
}

/// A free loopback port (for servers that cannot be told to pick one).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// The command line of the FastMCP fixture over stdio.
pub fn fastmcp_server() -> Option<String> {
    let python = venv_python()?;
    Some(format!(
        "{} {}",
        quoted(&python),
        quoted(&root().join("tests/peers/fastmcp_tasks.py"))
    ))
}

/// The command line of the fake server in `mode` (see `tests/peers/fake_server.py`).
pub fn fake_server(mode: &str) -> String {
    format!(
        "python3 {} {mode}",
        quoted(&root().join("tests/peers/fake_server.py"))
    )
}

/// A server child that printed its URL; killed on drop.
pub struct UrlServer {
    child: Child,
    /// Its MCP endpoint.
    pub url: String,
}

impl UrlServer {
    /// Starts `program args`, waiting (bounded) for a line containing `listening on URL` on
    /// stdout or stderr.
    pub fn start(program: &Path, args: &[&str], on_stderr: bool) -> UrlServer {
        let mut cmd = Command::new(program);
        cmd.args(args);
        UrlServer::spawn(cmd, on_stderr, |line| {
            let i = line.find("listening on ")?;
            Some(line[i + "listening on ".len()..].trim().to_owned())
        })
    }

    /// Starts `cmd`; its URL is what `url_of` finds in the first line it accepts (waited
    /// for, bounded).
    pub fn spawn(
        mut cmd: Command,
        on_stderr: bool,
        url_of: impl Fn(&str) -> Option<String> + Send + 'static,
    ) -> UrlServer {
        cmd.stdin(Stdio::piped());
        if on_stderr {
            cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        } else {
            cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
        }
        let mut child = cmd.spawn().expect("spawn server");
        let out: Box<dyn std::io::Read + Send> = if on_stderr {
            Box::new(child.stderr.take().expect("stderr"))
        } else {
            Box::new(child.stdout.take().expect("stdout"))
        };
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(url) = url_of(&line) {
                    sent = tx.send(url).is_ok();
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the server printed its URL");
        UrlServer { child, url }
    }

    /// The fake HTTP server in `mode` (`http-status 404`, …).
    pub fn fake(mode: &[&str]) -> UrlServer {
        let script = root().join("tests/peers/fake_server.py");
        let mut args = vec![script.to_str().expect("utf-8 path")];
        args.extend_from_slice(mode);
        UrlServer::start(Path::new("python3"), &args, false)
    }
}

impl Drop for UrlServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a run of the binary gave.
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(self.code, Some(0), "failed: {}", self.stderr);
        &self.stdout
    }

    /// Asserts exit status `code` and that stderr mentions every one of `needles`.
    pub fn fails(&self, code: i32, needles: &[&str]) -> &Run {
        assert_eq!(
            self.code,
            Some(code),
            "exit status; stderr: {}\nstdout: {}",
            self.stderr,
            self.stdout
        );
        for n in needles {
            assert!(
                self.stderr.contains(n),
                "stderr lacks {n:?}: {}",
                self.stderr
            );
        }
        self
    }
}

/// How long any one run may take before the test fails (generous: the machine is shared).
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// Runs `mcpwire args…` with extra environment, bounded by [`RUN_LIMIT`]; prints the
/// duration (the tests never assert it, the report quotes it).
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let start = Instant::now();
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("MCPWIRE_LOG")
        .env_remove("RUST_BACKTRACE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("spawn mcpwire");
    let out = wait_bounded(child, RUN_LIMIT);
    let elapsed = start.elapsed();
    eprintln!("[{:>6} ms] mcpwire {}", elapsed.as_millis(), args.join(" "));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed,
    }
}

/// Runs `mcpwire args…`.
pub fn run(args: &[&str]) -> Run {
    run_env(args, &[])
}

/// Waits for `child`, killing it after `limit` (the test then fails on its output).
fn wait_bounded(child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("mcpwire did not finish within {limit:?}");
        }
    }
}
