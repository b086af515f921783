//! [`ProcessConfig`]: how to run and bound a tool process.

use std::time::Duration;

use crate::codec::{DEFAULT_MAX_ENVELOPE, DEFAULT_MAX_RAW};
use crate::spawn::Launch;

/// Default most requests one process may have unanswered (see [`ProcessConfig::max_pending`]).
pub const DEFAULT_MAX_PENDING: usize = 1024;

/// How to run and bound a tool process.
#[derive(Debug, Clone)]
pub struct ProcessConfig {
    /// The file and runtime.
    pub launch: Launch,
    /// How long a process may take to connect and complete its handshake.
    pub handshake_timeout: Duration,
    /// Largest envelope accepted from the process.
    pub max_envelope: usize,
    /// Largest raw (and decompressed) result accepted from the process.
    pub max_raw: u64,
    /// Most requests (and followed process tasks) one process may have unanswered; a call
    /// cancelled by its client counts until the process answers it or a later result retires
    /// it. Beyond this, requests are refused with a limit error (a hung process).
    pub max_pending: usize,
    /// How long a replaced process may keep finishing its calls after a reload.
    pub reload_grace: Duration,
    /// Watch the file's directory and reload on changes (`mcpwire dev`).
    pub watch: bool,
    /// The backend's name its output is logged under (`backend` field of each line of its
    /// stderr and stdout); `None`: the file's stem.
    pub name: Option<String>,
}

impl ProcessConfig {
    /// Defaults for running `launch`.
    pub fn new(launch: Launch) -> ProcessConfig {
        ProcessConfig {
            launch,
            handshake_timeout: Duration::from_secs(30),
            max_envelope: DEFAULT_MAX_ENVELOPE,
            max_raw: DEFAULT_MAX_RAW,
            max_pending: DEFAULT_MAX_PENDING,
            reload_grace: Duration::from_secs(10),
            watch: false,
            name: None,
        }
    }

    /// The name the process's output is logged under.
    pub fn log_name(&self) -> String {
        self.name.clone().unwrap_or_else(|| {
            self.launch
                .file
                .file_stem()
                .map_or_else(|| "tool".into(), |s| s.to_string_lossy().into_owned())
        })
    }
}
