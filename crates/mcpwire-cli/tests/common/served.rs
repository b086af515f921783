//! The smoke tier's server: `mcpwire demo --transport {transport} --port 0`, its address
//! learnt from the `listening on {transport}://…` line it prints (testkit's `listen`).

#![allow(dead_code)]

use std::time::Duration;

use mcpwire_testkit::spawn::{Listening, listen};

/// A served `mcpwire demo`, killed when dropped.
pub struct Served {
    listening: Listening,
    /// `host:port[/path]`, as printed after `listening on {transport}://`.
    pub addr: String,
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
        let mut listening = listen(super::BIN, &args, log, &[prefix.as_str()], keep_log);
        let addr = listening.addrs.remove(0);
        Served { listening, addr }
    }

    /// The `host:port` part of the address.
    pub fn host_port(&self) -> &str {
        self.addr.split('/').next().unwrap_or(&self.addr)
    }

    /// Waits (at most 10 s) for a log line containing `needle`, and returns it.
    pub fn wait_for_log(&self, needle: &str) -> Option<String> {
        self.listening.wait_for_log(needle, Duration::from_secs(10))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.listening.child.kill();
        let _ = self.listening.child.wait();
    }
}
