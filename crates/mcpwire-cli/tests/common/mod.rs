//! Spawns the `mcpwire` binary and talks NDJSON to it, line by line.

#![allow(dead_code)]

pub mod http;
pub mod served;
pub mod wires;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcpwire_testkit::wait::poll_for;
use serde_json::{Value, json};

/// A listening child and what it printed.
pub struct Listening {
    /// The child.
    pub child: Child,
    /// The rest of each line that started with one of the prefixes (the addresses), in the
    /// order of the prefixes.
    pub addrs: Vec<String>,
    /// The later stderr lines, when asked to keep them.
    pub log: Option<mpsc::Receiver<String>>,
}

/// Spawns `BINARY ARGS` (a network listener) with log filter `log` and reads its stderr until
/// it has printed a line starting with each of `prefixes` (in any order). The rest of stderr
/// is drained so the server never blocks on it, and kept in [`Listening::log`] if `keep_log`.
pub fn listen(
    binary: &str,
    args: &[&str],
    log: &str,
    prefixes: &[&str],
    keep_log: bool,
) -> Listening {
    let mut child = Command::new(binary)
        .args(args)
        .env("MCPWIRE_LOG", log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mcpwire");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut found: Vec<Option<String>> = vec![None; prefixes.len()];
    while found.iter().any(Option::is_none) {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("stderr") == 0 {
            panic!("mcpwire exited before printing {prefixes:?}");
        }
        for (p, slot) in prefixes.iter().zip(found.iter_mut()) {
            if let Some(rest) = line.trim().strip_prefix(p) {
                *slot = Some(rest.to_owned());
            }
        }
    }
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines() {
            let Ok(line) = line else { break };
            if keep_log {
                let _ = tx.send(line);
            }
        }
    });
    Listening {
        child,
        addrs: found.into_iter().flatten().collect(),
        log: keep_log.then_some(rx),
    }
}

/// [`listen`] logging at `warn`, stderr dropped: the child and the addresses.
pub fn spawn_listening(binary: &str, args: &[&str], prefixes: &[&str]) -> (Child, Vec<String>) {
    let l = listen(binary, args, "warn", prefixes, false);
    (l.child, l.addrs)
}

/// A running `mcpwire` child with line-oriented access to its stdio.
pub struct Proc {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Proc {
    pub fn spawn(args: &[&str]) -> Proc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpwire"));
        cmd.args(args)
            .env("MCPWIRE_LOG", "warn")
            .stderr(Stdio::null());
        Proc::start(cmd)
    }

    /// Spawns with the default log filter, stderr going to `log`.
    pub fn spawn_logging(args: &[&str], log: &std::path::Path) -> Proc {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpwire"));
        let file = std::fs::File::create(log).expect("log file");
        cmd.args(args)
            .env_remove("MCPWIRE_LOG")
            .stderr(Stdio::from(file));
        Proc::start(cmd)
    }

    fn start(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn mcpwire");
        let stdin = child.stdin.take();
        let stdout: ChildStdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc {
            child,
            stdin,
            lines: rx,
        }
    }

    pub fn demo() -> Proc {
        Proc::spawn(&["demo"])
    }

    pub fn write_raw(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().expect("stdin open");
        w.write_all(bytes).expect("write");
        w.flush().expect("flush");
    }

    pub fn send(&mut self, v: Value) {
        let mut b = serde_json::to_vec(&v).unwrap();
        b.push(b'\n');
        self.write_raw(&b);
    }

    /// The next line from stdout, parsed (panics after 10 s).
    pub fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line from mcpwire within 10 s");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// Receives until the response with `id`, returning it and the messages before it.
    pub fn recv_response(&mut self, id: Value) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let m = self.recv();
            if m.get("id") == Some(&id) && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    pub fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.recv_response(json!(id)).0
    }

    pub fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        r
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Closes stdin and waits for a clean exit (panics after 10 s).
    pub fn finish(mut self) -> std::process::ExitStatus {
        self.close_stdin();
        let exited = poll_for(Duration::from_secs(10), || {
            self.child.try_wait().expect("wait")
        });
        exited.unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!("mcpwire did not exit after stdin closed");
        })
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
