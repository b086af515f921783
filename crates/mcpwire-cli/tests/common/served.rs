//! Starts `mcpwire demo --transport {transport} --port 0` and learns its address from the
//! `listening on {transport}://…` line it prints on stderr.

#![allow(dead_code)]

use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A served `mcpwire demo`, killed when dropped.
pub struct Served {
    child: Child,
    /// `host:port[/path]`, as printed after `listening on {transport}://`.
    pub addr: String,
    /// The stderr lines after that one, when started with [`Served::spawn`]`(…, true)`.
    log: Option<mpsc::Receiver<String>>,
}

impl Served {
    /// Serves on `transport` with `extra` arguments, logging errors only.
    pub fn start(transport: &str, extra: &[&str]) -> Served {
        Served::spawn(transport, extra, "error", false)
    }

    /// Serves with log filter `log`; `keep_log` keeps stderr for [`Served::wait_for_log`].
    pub fn spawn(transport: &str, extra: &[&str], log: &str, keep_log: bool) -> Served {
        let mut args = vec!["demo", "--transport", transport, "--port", "0"];
        args.extend_from_slice(extra);
        let prefix = format!("mcpwire: listening on {transport}://");
        let mut l = super::listen(
            env!("CARGO_BIN_EXE_mcpwire"),
            &args,
            log,
            &[prefix.as_str()],
            keep_log,
        );
        Served {
            child: l.child,
            addr: l.addrs.remove(0),
            log: l.log,
        }
    }

    /// The `host:port` part of the address.
    pub fn host_port(&self) -> &str {
        self.addr.split('/').next().unwrap_or(&self.addr)
    }

    /// Waits (at most 10 s) for a log line containing `needle`, and returns it.
    pub fn wait_for_log(&self, needle: &str) -> Option<String> {
        let log = self.log.as_ref().expect("started keeping its log");
        let until = Instant::now() + Duration::from_secs(10);
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

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
