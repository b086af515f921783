//! A binary started as a listening server, for the smoke tier: tests of the binary itself
//! (flags, configuration files, exit codes, signals, logs). A test that only needs a server
//! to talk to serves it in-process instead ([`crate::serve`], feature `wires`).
//!
//! The server announces each listener on stderr (`mcpwire: listening on {scheme}://{addr}`);
//! [`listen`] reads stderr until every announcement it waits for was printed, then drains
//! the rest on a thread (kept when asked) so the server never blocks on a full pipe.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A listening child and what it printed.
pub struct Listening {
    /// The child (not killed when this is dropped: move it into a guard or kill it).
    pub child: Child,
    /// The rest of the first line that started with each of the prefixes (the addresses),
    /// in the order of the prefixes.
    pub addrs: Vec<String>,
    /// The later stderr lines, when asked to keep them.
    pub log: Option<mpsc::Receiver<String>>,
}

/// Spawns `binary args` (a network listener) with `MCPWIRE_LOG={log}` and reads its stderr
/// until it has printed a line starting with each of `prefixes` (in any order). The rest of
/// stderr is drained so the server never blocks on it, and kept in [`Listening::log`] if
/// `keep_log`. Panics if the child exits first.
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
        .unwrap_or_else(|e| panic!("spawn {binary}: {e}"));
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut found: Vec<Option<String>> = vec![None; prefixes.len()];
    while found.iter().any(Option::is_none) {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("stderr") == 0 {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{binary} exited before printing {prefixes:?}");
        }
        for (p, slot) in prefixes.iter().zip(found.iter_mut()) {
            if slot.is_none()
                && let Some(rest) = line.trim().strip_prefix(p)
            {
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

impl Listening {
    /// Waits (at most `within`) for a log line containing `needle`, and returns it.
    /// Panics unless the log was kept.
    pub fn wait_for_log(&self, needle: &str, within: Duration) -> Option<String> {
        let log = self.log.as_ref().expect("started keeping its log");
        let until = Instant::now() + within;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match log.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }
}

/// Sends SIGTERM to `child` (through `kill`, so no signal crate is needed); panics if it
/// could not be sent.
pub fn terminate(child: &Child) {
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(sent.is_ok_and(|s| s.success()), "SIGTERM to {pid}");
}
