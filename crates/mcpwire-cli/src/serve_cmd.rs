//! `mcpwire serve`: the gateway from a configuration file or quick flags — and `demo`,
//! `run` and `dev` as presets of it (each builds a one-backend configuration; one code
//! path serves them all). Flag parsing only: the configuration model, starting and
//! serving are the library's (`mcpwire_gateway`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::ArgMatches;
use mcpwire_gateway::{
    Additions, AdminConfig, BackendSource, BackendSpec, CatalogMode, CheckCaller, Gateway,
    GatewayConfig, GatewayError, ListenOptions, ListenerSpec, Natives, PrefixMode, ProcessSpec,
    ServerOptions, UpstreamSpec,
};

use crate::auth_args::AuthArgs;
use crate::check_as::CheckAsArgs;
use crate::exit::UsageError;
use crate::limits_args::LimitsArgs;
use crate::tls_args::TlsArgs;
use crate::{ServeArgs, Transport};

/// Options of `serve`.
#[derive(clap::Args, Debug)]
pub struct ServeCmdArgs {
    /// A TOML configuration file (keys: docs/config.md). Edits are applied while serving: a
    /// backend added, changed or removed; an invalid edit is refused and logged.
    /// --listen, --upstream, --process, --demo and --mcp-servers add to the file (a
    /// --listen replaces its default stdio listener; a backend named like one of the
    /// file's is refused) and are added again at every reload.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["prefix"])]
    config: Option<PathBuf>,
    /// Serve the servers of an MCP host's configuration (repeatable): Claude Desktop's
    /// claude_desktop_config.json or Cursor's mcp.json ({"mcpServers": …}), VS Code's
    /// .vscode/mcp.json or settings.json ({"servers": …}). Each server is a backend.
    #[arg(long, value_name = "FILE")]
    mcp_servers: Vec<PathBuf>,
    /// An upstream MCP server (repeatable): NAME='COMMAND LINE' (a stdio server),
    /// NAME=http(s)://… (Streamable HTTP) or NAME=mcpb://HOST:PORT.
    #[arg(long, value_name = "NAME=TARGET")]
    upstream: Vec<String>,
    /// A tool file written with a protomcp SDK, run as a tool process (repeatable): NAME=FILE.
    #[arg(long, value_name = "NAME=FILE")]
    process: Vec<String>,
    /// The built-in example tools, resources and prompts, as the backend `demo`.
    #[arg(long)]
    demo: bool,
    /// Where to listen (repeatable): stdio, http://HOST:PORT/PATH, ws://HOST:PORT/PATH,
    /// grpc://HOST:PORT or mcpb://HOST:PORT (port 0 picks a free one), or with TLS
    /// (--tls-cert, --tls-key) https://, wss://, grpcs:// or mcpbs://. Default: stdio.
    #[arg(long, value_name = "URL")]
    listen: Vec<String>,
    /// When tool and prompt names get their backend's name as a prefix.
    #[arg(long, value_parser = ["conditional", "always", "never"])]
    prefix: Option<String>,
    /// What `tools/list` shows: every tool (`full`), or `search`: the meta-tools
    /// `search_tools` and `call_tool`, then the tools each session's searches found.
    /// Overrides a configuration file's `[server] catalog`.
    #[arg(long, value_parser = ["full", "search"])]
    catalog: Option<String>,
    /// A sentence-embedding model's directory (`config.json`, `model.safetensors`,
    /// `vocab.txt`) that re-ranks tool searches; loaded at start, never downloaded (needs a
    /// build with the `semantic` feature). Overrides a configuration file's
    /// `[server] search_model`.
    #[arg(long, value_name = "DIR")]
    search_model: Option<PathBuf>,
    /// Do not watch the configuration file for edits (SIGHUP still reloads it).
    #[arg(long, requires = "config")]
    no_reload: bool,
    /// Check the configuration, start the backends, print the merged catalog (renames,
    /// collisions, backend health) and exit without serving: status 0 when every backend
    /// is healthy, 3 when one is not.
    #[arg(long)]
    check: bool,
    /// With --check: print the report as JSON.
    #[arg(long, requires = "check")]
    json: bool,
    /// Serve Prometheus `/metrics`, `/healthz` and `/readyz` on this address (e.g.
    /// 127.0.0.1:9100; port 0 picks a free one). Overrides a configuration file's `[admin]`.
    #[arg(long, value_name = "ADDR", env = "MCPWIRE_METRICS_LISTEN")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Microseconds a connection (listener or upstream) keeps polling for input before it
    /// sleeps (0 disables; default 100). Overrides a configuration file's
    /// `[server] busy_poll_us`.
    #[arg(long, value_name = "US", env = "MCPWIRE_BUSY_POLL_US")]
    busy_poll_us: Option<u64>,
    #[command(flatten)]
    auth: AuthArgs,
    #[command(flatten)]
    limits: LimitsArgs,
    #[command(flatten)]
    tls: TlsArgs,
    /// Whose catalog `--check` prints.
    #[command(flatten)]
    pub check_as: CheckAsArgs,
}

impl ServeCmdArgs {
    /// `--check` (and whether as JSON).
    pub fn check(&self) -> Option<bool> {
        self.check.then_some(self.json)
    }
}

/// `mcpwire serve --check`: the report (of what `caller` may see) on stdout; the exit
/// status says whether every backend is healthy.
pub async fn check(config: GatewayConfig, caller: &CheckCaller, json: bool) -> Result<ExitCode> {
    let report = Gateway::check_as(config, natives(), caller).await?;
    if json {
        crate::emit(&serde_json::to_string_pretty(&report)?);
    } else {
        crate::emit(report.to_string().trim_end());
    }
    Ok(if report.healthy() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::exit::CONNECTION)
    })
}

/// The native servers the binary offers: the built-in example as `demo`.
pub fn natives() -> Natives {
    Natives::new().with("demo", mcpwire_example_everything::server)
}

/// The configuration `serve` was given: the file and what flags add to it, or the flags
/// alone, in command-line order (the order decides who keeps a colliding name).
pub fn config(args: &ServeCmdArgs, matches: Option<&ArgMatches>) -> Result<GatewayConfig> {
    let additions = additions(args, matches)?;
    if let Some(path) = &args.config {
        let mut config = GatewayConfig::load(path)?;
        if args.no_reload {
            config.server.reload = false;
        }
        if args.auth.given() {
            return Err(UsageError(
                "with --config, authentication is the file's [auth] section, not flags".into(),
            )
            .into());
        }
        if args.limits.given() {
            return Err(UsageError(
                "with --config, limits are the file's [limits] section, not flags".into(),
            )
            .into());
        }
        if args.tls.given() {
            return Err(UsageError(
                "with --config, TLS is each [[listen]] entry's `tls`, not flags".into(),
            )
            .into());
        }
        config.add(additions)?;
        apply_metrics_listen(&mut config, args.metrics_listen);
        apply_busy_poll(&mut config, args.busy_poll_us);
        apply_catalog(&mut config, args.catalog.as_deref());
        apply_search_model(&mut config, args.search_model.as_ref());
        return Ok(config);
    }
    let mut config = GatewayConfig::new(Vec::new(), Vec::new());
    apply_busy_poll(&mut config, args.busy_poll_us);
    apply_catalog(&mut config, args.catalog.as_deref());
    apply_search_model(&mut config, args.search_model.as_ref());
    if let Some(prefix) = &args.prefix {
        config.server.prefix = match prefix.as_str() {
            "always" => PrefixMode::Always,
            "never" => PrefixMode::Never,
            _ => PrefixMode::Conditional,
        };
    }
    for (spec, shown) in additions.backends {
        config.push_backend(spec, shown);
    }
    for (spec, shown) in additions.listeners {
        config.push_listener(spec, shown);
    }
    if config.listeners.is_empty() {
        // The implicit listener: no key of its own (see `GatewayConfig::implicit_stdio`).
        config
            .listeners
            .push(ListenerSpec::parse("stdio").map_err(UsageError)?);
    }
    config.auth = args.auth.config()?;
    config.limits = args.limits.config()?;
    apply_metrics_listen(&mut config, args.metrics_listen);
    config.validate()?;
    Ok(config)
}

/// The listeners and backends the flags declare, each with the flag as shown in messages;
/// backends in command-line order.
fn additions(args: &ServeCmdArgs, matches: Option<&ArgMatches>) -> Result<Additions> {
    let at = |id: &str, n: usize| -> Vec<usize> {
        matches
            .and_then(|m| m.indices_of(id))
            .map(|i| i.collect())
            .unwrap_or_else(|| (0..n).collect())
    };
    let mut backends: Vec<(usize, BackendSpec, String)> = Vec::new();
    for (i, flag) in at("upstream", args.upstream.len())
        .into_iter()
        .zip(&args.upstream)
    {
        let shown = format!("--upstream {flag}");
        let (name, target) = split_named(flag, &shown)?;
        let target =
            UpstreamSpec::parse(target).map_err(|e| UsageError(format!("{shown}: {e}")))?;
        let spec = BackendSpec::new(name, BackendSource::Upstream(target));
        backends.push((i, spec, shown));
    }
    for (i, flag) in at("process", args.process.len())
        .into_iter()
        .zip(&args.process)
    {
        let shown = format!("--process {flag}");
        let (name, file) = split_named(flag, &shown)?;
        let source = BackendSource::Process(ProcessSpec::new(file));
        backends.push((i, BackendSpec::new(name, source), shown));
    }
    for (i, file) in at("mcp_servers", args.mcp_servers.len())
        .into_iter()
        .zip(&args.mcp_servers)
    {
        let shown = format!("--mcp-servers {}", file.display());
        for spec in mcpwire_gateway::mcp_servers(file)? {
            backends.push((i, spec, shown.clone()));
        }
    }
    if args.demo {
        let i = at("demo", 1).first().copied().unwrap_or(0);
        let source = BackendSource::Native {
            server: "demo".into(),
        };
        backends.push((i, BackendSpec::new("demo", source), "--demo".into()));
    }
    backends.sort_by_key(|(i, _, _)| *i);
    if args.tls.given() && !args.listen.iter().any(|u| ListenerSpec::is_tls_url(u)) {
        return Err(UsageError(
            "--tls-cert is for TLS listeners: give --listen https://…, wss://…, grpcs://… or \
             mcpbs://…"
                .into(),
        )
        .into());
    }
    let mut listeners = Vec::new();
    for url in &args.listen {
        let shown = format!("--listen {url}");
        let options = ListenOptions {
            url: url.clone(),
            tls: args.tls.options().filter(|_| ListenerSpec::is_tls_url(url)),
            ..ListenOptions::default()
        };
        let spec = ListenerSpec::with_options(options)
            .map_err(|(_, e)| UsageError(format!("{shown}: {e}")))?;
        listeners.push((spec, shown));
    }
    Ok(Additions {
        listeners,
        backends: backends
            .into_iter()
            .map(|(_, spec, shown)| (spec, shown))
            .collect(),
    })
}

/// `--metrics-listen`: the admin listener, over the file's `[admin]`.
fn apply_metrics_listen(config: &mut GatewayConfig, listen: Option<std::net::SocketAddr>) {
    if let Some(listen) = listen {
        let (console_keys, console_scope) = config
            .admin
            .take()
            .map(|a| (a.console_keys, a.console_scope))
            .unwrap_or_default();
        config.admin = Some(AdminConfig {
            listen,
            console_keys,
            console_scope,
        });
    }
}

/// `NAME=VALUE`.
fn split_named<'a>(flag: &'a str, shown: &str) -> Result<(&'a str, &'a str)> {
    match flag.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() && !value.trim().is_empty() => {
            Ok((name.trim(), value.trim()))
        }
        _ => Err(UsageError(format!("{shown}: give NAME=VALUE, e.g. fs='npx -y @modelcontextprotocol/server-filesystem /srv'")).into()),
    }
}

/// `--catalog`, when given: what `tools/list` shows on every listener.
fn apply_catalog(config: &mut GatewayConfig, mode: Option<&str>) {
    match mode {
        Some("search") => config.server.catalog = CatalogMode::Search,
        Some(_) => config.server.catalog = CatalogMode::Full,
        None => {}
    }
}

/// `--search-model`, when given (errors about the model then name the flag).
fn apply_search_model(config: &mut GatewayConfig, dir: Option<&PathBuf>) {
    if let Some(dir) = dir {
        config.server.search_model = Some(dir.clone());
        let key = mcpwire_gateway::KeyPath::root()
            .key("server")
            .key("search_model");
        config.note_flag(&key, "--search-model".into());
    }
}

/// `--busy-poll-us`, when given, for every listener and upstream.
fn apply_busy_poll(config: &mut GatewayConfig, us: Option<u64>) {
    if let Some(us) = us {
        config.server.busy_poll = Duration::from_micros(us);
    }
}

/// `mcpwire demo`: the built-in example as the only backend.
pub fn demo(serve: &ServeArgs) -> Result<GatewayConfig> {
    let source = BackendSource::Native {
        server: "demo".into(),
    };
    preset(serve, BackendSpec::new("demo", source), "demo")
}

/// One backend on the listener and with the limits the serving options describe.
pub fn preset(serve: &ServeArgs, backend: BackendSpec, command: &str) -> Result<GatewayConfig> {
    let mut config = GatewayConfig::new(Vec::new(), Vec::new());
    config.server = ServerOptions {
        max_message_bytes: serve.max_message_bytes,
        max_in_flight: serve.max_in_flight,
        busy_poll: Duration::from_micros(serve.busy_poll_us),
        schema_registry: serve.schema_registry.clone(),
        reload: false,
        ..ServerOptions::default()
    };
    if serve.schema_registry.is_some() {
        let key = mcpwire_gateway::KeyPath::root()
            .key("server")
            .key("schema_registry");
        config.note_flag(&key, "--schema-registry".into());
    }
    config.push_backend(backend, command);
    let listener = ListenerSpec::with_options(listen_options(serve)?)
        .map_err(|(option, e)| UsageError(format!("--{}: {e}", option.replace('_', "-"))))?;
    config.push_listener(listener, "--transport");
    config.auth = serve.auth.config()?;
    config.limits = serve.limits.config()?;
    apply_metrics_listen(&mut config, serve.metrics_listen);
    config.validate()?;
    Ok(config)
}

/// The listener `--transport`, `--host`, `--port`, `--path`, the TLS flags and the wire's
/// options name.
fn listen_options(serve: &ServeArgs) -> Result<ListenOptions> {
    let tls = serve.tls.options();
    let s = if tls.is_some() { "s" } else { "" };
    if tls.is_some() && matches!(serve.transport, Transport::Stdio) {
        return Err(UsageError(
            "--tls-cert needs a network --transport (http, ws, grpc or mcpb)".into(),
        )
        .into());
    }
    let h = &serve.http;
    let addr = std::net::SocketAddr::new(h.host, h.port);
    let path = if h.path.starts_with('/') {
        h.path.clone()
    } else {
        format!("/{}", h.path)
    };
    Ok(match serve.transport {
        Transport::Stdio => ListenOptions {
            url: "stdio".into(),
            ..ListenOptions::default()
        },
        Transport::Http => ListenOptions {
            url: format!("http{s}://{addr}{path}"),
            tls,
            allowed_origins: h.allowed_origins.clone(),
            allowed_hosts: h.allowed_hosts.clone(),
            max_sessions: Some(h.max_sessions),
            session_idle_secs: Some(h.session_idle_secs),
            read_timeout_secs: Some(h.read_timeout_secs),
            ..ListenOptions::default()
        },
        Transport::Ws => ListenOptions {
            url: format!("ws{s}://{addr}{path}"),
            tls,
            max_connections: Some(h.max_sessions),
            ..ListenOptions::default()
        },
        Transport::Grpc => ListenOptions {
            url: format!("grpc{s}://{addr}"),
            tls,
            ..ListenOptions::default()
        },
        Transport::Mcpb => {
            let m = &serve.mcpb;
            ListenOptions {
                url: format!("mcpb{s}://{addr}"),
                tls,
                tokens: Some(m.tokens.clone()),
                per_message_auth: Some(m.per_message_auth),
                health_port: m.health_port,
                session_ttl_secs: Some(m.session_ttl_secs),
                handshake_timeout_ms: Some(m.handshake_timeout_ms),
                idle_ping_secs: Some(m.idle_ping_secs),
                shutdown_grace_secs: Some(m.shutdown_grace_secs),
                max_connections: Some(m.max_connections),
                ..ListenOptions::default()
            }
        }
    })
}

/// Whether serving `config` wants every core: anything but stdio alone serves many
/// clients; stdio alone serves one and stays on one thread.
pub fn multi_threaded(config: &GatewayConfig) -> bool {
    !config.listeners.iter().all(ListenerSpec::is_stdio)
}

/// What a serving command adds to the gateway's messages.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    /// Printed when serving stdio to a terminal.
    pub hint: Option<&'static str>,
    /// Said when a tool process does not start.
    pub process_help: &'static str,
}

/// `mcpwire serve`'s own messages.
pub const SERVE: Preset = Preset {
    hint: None,
    process_help: "process backends run files written with a protomcp SDK; a plain MCP server \
                   is an upstream: --upstream NAME='<its command line>' (command = … in a file)",
};

/// Starts the gateway and serves it.
pub async fn serve(config: GatewayConfig, preset: Preset) -> Result<ExitCode> {
    let processes = config
        .backends
        .iter()
        .any(|b| matches!(b.source, BackendSource::Process(_)));
    let gateway = match Gateway::start(config, natives()).await {
        Ok(g) => g,
        Err(e @ GatewayError::Start(_)) if processes => {
            return Err(anyhow::Error::new(e).context(preset.process_help));
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(hint) = preset.hint
        && gateway
            .config()
            .listeners
            .iter()
            .all(ListenerSpec::is_stdio)
        && std::io::IsTerminal::is_terminal(&std::io::stdin())
    {
        mcpwire::observe::announce(format_args!("{hint}"));
    }
    let stdio = gateway
        .config()
        .listeners
        .iter()
        .any(ListenerSpec::is_stdio);
    let signals = mcpwire::wires::shutdown_on_signals().context("serving")?;
    gateway
        .serve(Some(signals.child_token()))
        .await
        .context("serving")?;
    if stdio && !signals.is_cancelled() {
        // Not a signal: the stdio listener ended, which ends the gateway.
        mcpwire::observe::announce(format_args!(
            "mcpwire: stdin reached end of input: the stdio listener stopped, and with it the \
             gateway"
        ));
    }
    Ok(ExitCode::SUCCESS)
}
