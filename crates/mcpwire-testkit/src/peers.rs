//! Where the tests' outside peers live, and what a test does when one is missing: the
//! workspace, the Python venv `scripts/test.sh` creates (`target/venv`: the official `mcp`
//! client, FastMCP, the protomcp SDK). A missing peer skips the test locally with a message
//! and fails it under CI (`CI` set), where the install step should have provided it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace root")
}

/// A peer is missing: `None` with a `SKIPPED` message locally, a panic under CI. `what`
/// names the peer, `how` how to install it.
pub fn missing<T>(what: &str, how: &str) -> Option<T> {
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{what} is missing under CI ({how}); the install step failed");
    }
    eprintln!("SKIPPED: {what} is not installed ({how})");
    None
}

/// The venv's Python when it can import every module of `modules` (e.g. `"fastmcp"`,
/// `"mcp, protomcp"`); otherwise see [`missing`].
pub fn venv_python(modules: &str) -> Option<PathBuf> {
    let python = root().join("target/venv/bin/python");
    let ok = python.is_file()
        && Command::new(&python)
            .args(["-c", &format!("import {modules}")])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    missing(
        &format!("the Python venv with {modules} (target/venv)"),
        "run scripts/test.sh",
    )
}
