//! `mcpwire run FILE` and `mcpwire dev FILE`: serving a protomcp tool process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use mcpwire::Service;
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig};
use mcpwire_router::{Router, TaskConfig};

use crate::{ServeArgs, Transport};

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

impl RunArgs {
    /// Whether the command serves Streamable HTTP (the binary then uses every core).
    pub fn is_http(&self) -> bool {
        !matches!(self.serve.transport, Transport::Stdio)
    }
}

/// Starts the tool process and serves it until the client goes away or a signal arrives;
/// the process (and its process group) ends with it.
pub async fn run(args: RunArgs, dev: bool) -> Result<()> {
    let mut config = ProcessConfig::new(Launch {
        file: args.file.clone(),
        runtime: args.runtime.clone(),
    });
    config.watch = dev;
    config.handshake_timeout = Duration::from_secs(args.handshake_timeout);
    config.max_raw = args.max_result_bytes;
    config.max_envelope = args.serve.max_message_bytes;
    let backend = ProcessBackend::start(config).await.with_context(|| {
        format!(
            "starting {} as a protomcp tool process (`mcpwire run` serves files written with \
             a protomcp SDK; for a plain MCP server, use `mcpwire list|call '<its command>'`)",
            args.file.display()
        )
    })?;
    tracing::info!(tools = ?backend.tool_names(), "tool process ready");
    let info = backend.server_info();
    let router = Router::new(backend.clone()).with_tasks(TaskConfig::default());
    let mut service = Service::new(router, info, None);
    service.limits.max_message_bytes = args.serve.max_message_bytes;
    service.busy_poll = Duration::from_micros(args.serve.busy_poll_us);
    let limits = &mut Arc::make_mut(&mut service.config).limits;
    limits.max_in_flight = args.serve.max_in_flight;
    limits.request_timeout = Some(Duration::from_secs(args.call_timeout));
    crate::use_schema_registry(&mut service, &args.serve)?;
    let mcpb = matches!(args.serve.transport, Transport::Mcpb);
    let serving = async {
        match args.serve.transport {
            Transport::Stdio => service.serve_stdio().await.context("serving stdio"),
            Transport::Http => crate::serve_http(service, args.serve.http).await,
            Transport::Ws | Transport::Grpc => crate::serve_proto(service, &args.serve).await,
            // Handles SIGTERM and Ctrl-C itself, with a graceful shutdown.
            Transport::Mcpb => crate::serve_mcpb(service, &args.serve).await,
        }
    };
    if mcpb {
        return serving.await;
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        r = serving => r?,
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
        _ = term.recv() => tracing::info!("terminated"),
    }
    drop(backend);
    // Give the supervisor a moment to end the process group politely.
    tokio::time::sleep(Duration::from_millis(50)).await;
    Ok(())
}
