//! `mcpwire run FILE` and `mcpwire dev FILE`: serving a protomcp tool process, a preset of
//! `mcpwire serve` with the file as its only backend.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use mcpwire_gateway::{BackendSource, BackendSpec, GatewayConfig, ProcessSpec};

use crate::ServeArgs;

/// Options of `run` and `dev`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The tool file (`.py`, `.ts`, `.js` or an executable) written with a protomcp SDK.
    file: PathBuf,
    /// Command line that runs the file, overriding the choice by extension (e.g. 'uv run python').
    #[arg(long)]
    runtime: Option<String>,
    /// Seconds a tool call may run before it is answered with a timeout and cancelled.
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    call_timeout: u64,
    /// Seconds the process may take to connect and complete its handshake.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout: u64,
    /// Largest result (raw or decompressed) accepted from the process, in bytes.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    max_result_bytes: u64,
    #[command(flatten)]
    serve: ServeArgs,
}

/// `mcpwire run FILE` (`dev`: reloading it on edits): the tool file as the only backend.
pub fn preset(args: &RunArgs, dev: bool) -> Result<GatewayConfig> {
    let mut process = ProcessSpec::new(args.file.clone());
    process.runtime = args.runtime.clone();
    process.handshake_timeout = Duration::from_secs(args.handshake_timeout);
    process.max_result_bytes = args.max_result_bytes;
    process.watch = dev;
    let name = backend_name(&args.file);
    let mut config = crate::serve_cmd::preset(
        &args.serve,
        BackendSpec::new(name, BackendSource::Process(process)),
        if dev { "dev" } else { "run" },
    )?;
    config.server.call_timeout = Some(Duration::from_secs(args.call_timeout));
    Ok(config)
}

/// A tool file's stem as a backend name (`A-Z a-z 0-9 _ -`, at most 64).
fn backend_name(file: &std::path::Path) -> String {
    let stem = file
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "tools".into()
    } else {
        name
    }
}
