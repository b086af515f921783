//! The `mcpwire` command line.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use mcpwire::observe::LogFormat;
use mcpwire_client::auth::{LoopbackConsent, OAuthConfig, OAuthGrant, UpstreamAuth};
use mcpwire_client::{Client, ClientOptions, Target};
use serde_json::Value;

/// mimalloc rather than glibc's malloc: a forwarded call allocates ~85 times, and glibc's
/// `_int_malloc`/`_int_free`/`malloc_consolidate` were the largest items of the HTTP
/// gateway's profile (docs/benchmarks.md § Issue 24 has the side-by-side figures).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod auth_args;
mod check_as;
mod exit;
mod limits_args;
mod logging;
mod process_cmd;
mod schema_cmd;
mod serve_cmd;
mod stdin_kind;
mod synthetic_tools;
mod tls_args;
mod tokens;

use exit::UsageError;

const ABOUT: &str = "mcpwire serves MCP tools over every wire from one fast core.";

const LONG_ABOUT: &str = "\
mcpwire serves MCP tools over every wire from one fast core.

It speaks MCP JSON-RPC (revisions 2025-06-18, 2025-11-25 and the stateless 2026-07-28, plus the
bb-1.0 dialect for clients asking for protocolVersion \"1.0\") and is also a client for
inspecting any MCP server.

Try it:
  mcpwire demo                          serve the built-in example over stdio
  mcpwire demo --transport http         ... over Streamable HTTP at http://127.0.0.1:8000/mcp
  mcpwire demo --transport ws|grpc      ... as proto-mcp (buf.mcp.v1) over WebSocket or gRPC
                                        (stdio serves proto-mcp frames too, by first byte)
  mcpwire list http://127.0.0.1:8000/mcp  list the tools of an HTTP server
  mcpwire list 'mcpwire demo'           list the example's tools
  mcpwire call 'mcpwire demo' add --args '{\"a\": 2, \"b\": 3}'
  mcpwire dev tools.py                  serve a protomcp tool file, reloading it on edits
  mcpwire serve --demo --process tools=tools.py --listen http://127.0.0.1:8000/mcp --listen stdio
                                        one catalog from several backends, on several wires
  mcpwire serve --config mcpwire.toml   the same from a file, applying its edits while serving
                                        (keys: docs/config.md; flags add to the file)
  mcpwire serve --mcp-servers claude_desktop_config.json --listen http://127.0.0.1:8000/mcp
                                        the servers an MCP host (Claude Desktop, Cursor,
                                        VS Code) is configured with, behind one endpoint

Logs go to stderr; set MCPWIRE_LOG (e.g. MCPWIRE_LOG=debug) to see more. stdout carries only
protocol messages when serving over stdio.

Errors print as `error: …` with their causes on stderr (MCPWIRE_LOG=debug adds the debug form
and, with RUST_BACKTRACE=1, a backtrace). Exit status:
  0  success
  1  any other failure (a file that cannot be read, a schema that does not convert, …)
  2  usage error: bad arguments or options, a target that is neither a command line nor an
     http(s):// URL (or a URL with a bad port), --args that is not a JSON object, a
     configuration refused (a backend's program that cannot be found included), `serve`
     without --listen while stdin is /dev/null or a file
  3  connection failure: the server could not be started or reached, did not answer within
     --timeout, wrote something that is not MCP, or went away; a backend of `serve` (`run`,
     `dev`) could not be started
  4  server or tool error: the server answered with a JSON-RPC error, or the tool's result
     has isError: true";

#[derive(Parser, Debug)]
#[command(name = "mcpwire", version, about = ABOUT, long_about = LONG_ABOUT)]
struct Cli {
    /// How log lines on stderr are written: `text`, or `json` (one JSON object per line:
    /// timestamp, level, target, fields, spans). Default: the configuration's
    /// `[server] log_format`, else text.
    #[arg(long, global = true, env = "MCPWIRE_LOG_FORMAT", value_name = "FORMAT")]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the built-in example tools, resources and prompts (the conformance fixture).
    ///
    /// Over stdio, an MCP host launches `mcpwire demo` as its server command. With
    /// `--transport http` it listens on http://HOST:PORT/PATH (Streamable HTTP) and prints
    /// that URL on stderr.
    Demo {
        #[command(flatten)]
        serve: ServeArgs,
    },
    /// List the tools of an MCP server.
    ///
    /// TARGET is the command line that starts a stdio server, e.g. 'mcpwire demo' or
    /// 'python3 server.py', or the URL of a Streamable HTTP server, e.g.
    /// 'http://127.0.0.1:8000/mcp' or 'https://…'. `[task]` marks tools that must run as
    /// tasks (execution.taskSupport: required); `mcpwire call` runs them.
    List {
        #[command(flatten)]
        connect: ConnectArgs,
        /// Print the raw JSON tool definitions instead of a summary.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool of an MCP server and print its result as JSON.
    ///
    /// A tool that must run as a task is called as one: the task is created, polled (its
    /// status goes to stderr) and its result printed. Exit status 4 when the tool's result
    /// has isError: true.
    Call {
        #[command(flatten)]
        connect: ConnectArgs,
        /// The tool's name.
        tool: String,
        /// The tool's arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
    },
    /// Serve the tools of a protomcp tool file (Python, TypeScript, … written with a protomcp SDK).
    Run(process_cmd::RunArgs),
    /// Like `run`, and reload the tool process whenever the file changes.
    Dev(process_cmd::RunArgs),
    /// The gateway: serve one catalog merged from several backends (upstream MCP servers,
    /// protomcp tool files, the built-in example) on several listeners at once.
    ///
    /// Quick flags for the common case (`--upstream`, `--process`, `--demo`, `--listen`,
    /// each repeatable), or a TOML file with every option (`--config`; see the README),
    /// whose edits are applied while serving. `demo`, `run` and `dev` are presets of it.
    Serve(serve_cmd::ServeCmdArgs),
    /// Tool schemas as protobuf: JSON Schema → .proto, a server's FileDescriptorSet.
    Schema(schema_cmd::SchemaArgs),
    /// Count the tokens a server's tool catalog costs an agent's context, rendered as
    /// JSON-RPC and as proto-mcp listings (cl100k_base and o200k_base).
    Tokens(schema_cmd::TokensArgs),
}

/// A server to talk to, and how long to wait for it.
#[derive(clap::Args, Debug)]
pub struct ConnectArgs {
    /// Command line of a stdio MCP server, an http:// or https:// URL, or an MCPB address
    /// (mcpb://HOST:PORT, over TLS mcpbs://HOST:PORT).
    target: String,
    #[command(flatten)]
    timeout: TimeoutArg,
    #[command(flatten)]
    tls: tls_args::ClientTlsArgs,
    /// HTTP: a header sent with every request, `NAME: VALUE` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// HTTP: send `Authorization: Bearer TOKEN`, the token read from this environment
    /// variable (never from the command line, where other users could read it).
    #[arg(long = "bearer-env", value_name = "VAR")]
    bearer_env: Option<String>,
    /// HTTP: authorize with OAuth when the server asks (the MCP authorization flow): the
    /// authorization URL is printed, and the browser's redirect comes back to a loopback
    /// port this command listens on.
    #[arg(long, conflicts_with = "bearer_env")]
    oauth: bool,
    /// With --oauth: a client id registered with the authorization server beforehand
    /// (default: dynamic registration).
    #[arg(long = "oauth-client-id", value_name = "ID", requires = "oauth")]
    oauth_client_id: Option<String>,
}

/// A usage error (exit status 2).
fn usage(message: String) -> anyhow::Error {
    mcpwire_client::ClientError::Target(message).into()
}

impl ConnectArgs {
    /// The credentials `--header` and `--bearer-env` give, if any.
    fn credentials(&self) -> Result<Option<UpstreamAuth>> {
        if self.headers.is_empty() && self.bearer_env.is_none() && !self.oauth {
            return Ok(None);
        }
        let mut auth = UpstreamAuth::new();
        for h in &self.headers {
            let Some((name, value)) = h.split_once(':') else {
                return Err(usage(format!("--header `{h}`: write it as `NAME: VALUE`")));
            };
            auth = auth.header(name.trim(), value.trim())?;
        }
        if let Some(var) = &self.bearer_env {
            let token = std::env::var(var)
                .ok()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| {
                    usage(format!(
                        "--bearer-env: the environment variable {var} is not set"
                    ))
                })?;
            auth = auth.bearer(&token)?;
        }
        if self.oauth {
            let consent = LoopbackConsent::bind(std::time::Duration::from_secs(300), |url| {
                eprintln!("mcpwire: the server asks for authorization; open this URL:\n  {url}");
            })?;
            let mut config = OAuthConfig::new(OAuthGrant::AuthorizationCode);
            config.client_id = self.oauth_client_id.clone();
            config.redirect_uri = consent.redirect_uri();
            config.consent = Some(std::sync::Arc::new(consent));
            auth = auth.oauth(config)?;
        }
        Ok(Some(auth))
    }
}

/// `--timeout`, shared by every command that connects to a server.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct TimeoutArg {
    /// Seconds to wait for the server to start (or answer the connection) and answer
    /// `initialize`.
    #[arg(long = "timeout", value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    handshake: std::time::Duration,
}

impl TimeoutArg {
    /// The client options these arguments ask for. Logs at `info` and above are asked
    /// for (2026-07-28 servers send none unless asked) and printed on stderr; the tasks
    /// extension is declared (`call` follows a task to its result).
    pub fn options(self) -> ClientOptions {
        let mut opts = ClientOptions::with_handshake_timeout(self.handshake);
        opts.log_level = Some(mcpwire_model::types::LoggingLevel::Info);
        opts.capabilities.extensions =
            Some(serde_json::json!({ "io.modelcontextprotocol/tasks": {} }));
        opts
    }
}

fn parse_secs(s: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("`{s}` is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("`{s}`: give between 0 and 86400 seconds"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// Options shared by every serving command.
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// The wire to serve on.
    #[arg(long, value_enum, default_value_t = Transport::Stdio)]
    transport: Transport,
    /// Largest accepted message (one stdio line) in bytes; longer ones get −32600.
    #[arg(long, default_value_t = 16 * 1024 * 1024, env = "MCPWIRE_MAX_MESSAGE_BYTES")]
    max_message_bytes: usize,
    /// Requests one client may have in flight; more get −32600.
    #[arg(long, default_value_t = 1024, env = "MCPWIRE_MAX_IN_FLIGHT")]
    max_in_flight: usize,
    /// Microseconds to keep polling for input before sleeping (0 disables). Spends CPU to
    /// save the wake-up latency of an idle CPU between requests.
    #[arg(long, default_value_t = 100, env = "MCPWIRE_BUSY_POLL_US")]
    busy_poll_us: u64,
    /// proto-mcp: a directory of `.proto` modules (`{owner}/{repo}/{version}/`) whose messages
    /// tools may reference as `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}`.
    #[arg(long, value_name = "DIR", env = "MCPWIRE_SCHEMA_REGISTRY")]
    schema_registry: Option<std::path::PathBuf>,
    #[command(flatten)]
    http: HttpArgs,
    #[command(flatten)]
    mcpb: McpbArgs,
    #[command(flatten)]
    auth: auth_args::AuthArgs,
    #[command(flatten)]
    limits: limits_args::LimitsArgs,
    #[command(flatten)]
    tls: tls_args::TlsArgs,
    /// Serve Prometheus `/metrics`, `/healthz` and `/readyz` on this address (e.g.
    /// 127.0.0.1:9100; port 0 picks a free one). Overrides a configuration file's `[admin]`.
    #[arg(long, value_name = "ADDR", env = "MCPWIRE_METRICS_LISTEN")]
    metrics_listen: Option<std::net::SocketAddr>,
}

/// Options of the MCPB binary TCP wire (it listens on --host/--port).
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "MCPB")]
struct McpbArgs {
    /// A token clients may authenticate with (repeat for several; none: authentication off).
    #[arg(
        long = "mcpb-token",
        value_name = "TOKEN",
        env = "MCPWIRE_MCPB_TOKENS",
        value_delimiter = ','
    )]
    tokens: Vec<String>,
    /// Every request must carry a valid `auth_token` wrapper.
    #[arg(long = "mcpb-per-message-auth")]
    per_message_auth: bool,
    /// Also answer health checks (only) on this port (0 picks a free one).
    #[arg(long = "mcpb-health-port", value_name = "PORT")]
    health_port: Option<u16>,
    /// Seconds an authenticated session lives.
    #[arg(long = "mcpb-session-ttl-secs", default_value_t = 86_400, value_parser = clap::value_parser!(u64).range(1..))]
    session_ttl_secs: u64,
    /// Milliseconds a connection has to negotiate its version and authenticate.
    #[arg(long = "mcpb-handshake-timeout-ms", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    handshake_timeout_ms: u64,
    /// Seconds of quiet after which the server pings (a second quiet period closes).
    #[arg(long = "mcpb-idle-ping-secs", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    idle_ping_secs: u64,
    /// Seconds connections get to finish their calls on shutdown (SIGTERM, Ctrl-C).
    #[arg(long = "mcpb-shutdown-grace-secs", default_value_t = 30)]
    shutdown_grace_secs: u64,
    /// Connections served at once.
    #[arg(long = "mcpb-max-connections", default_value_t = 1024)]
    max_connections: usize,
}

/// Options of the Streamable HTTP wire.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "HTTP")]
struct HttpArgs {
    /// Address to listen on. Anything but loopback also needs --allowed-hosts.
    #[arg(long, default_value = "127.0.0.1")]
    host: std::net::IpAddr,
    /// Port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 8000)]
    port: u16,
    /// Path of the MCP endpoint.
    #[arg(long, default_value = "/mcp")]
    path: String,
    /// Origins accepted besides none (comma-separated: `https://app.example.com`, a bare
    /// host, or `*`). Default: localhost, 127.0.0.1 and [::1] on any port.
    #[arg(long, value_delimiter = ',')]
    allowed_origins: Option<Vec<String>>,
    /// Host headers accepted (comma-separated: `host:port`, a bare host, or `*`). Default:
    /// localhost, 127.0.0.1 and [::1] on any port.
    #[arg(long, value_delimiter = ',')]
    allowed_hosts: Option<Vec<String>>,
    /// Stateful sessions alive at once. A full table evicts the least recently used idle
    /// session (nothing in flight, no open stream); `initialize` gets 503 only when every
    /// session is busy.
    #[arg(long, default_value_t = 1024)]
    max_sessions: usize,
    /// Seconds after which a session with nothing in flight and no open stream ends.
    #[arg(long, default_value_t = 1800)]
    session_idle_secs: u64,
    /// Seconds a client may take to send a request's headers, and then its body (a late
    /// body gets 408); also how long an idle connection stays open between requests.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    read_timeout_secs: u64,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP (stateful sessions and stateless 2026-07-28) on --host/--port/--path.
    Http,
    /// WebSocket on ws://HOST:PORT/PATH: binary messages proto-mcp, text messages JSON-RPC.
    Ws,
    /// gRPC proto-mcp `buf.mcp.v1.MCPService` on --host/--port.
    Grpc,
    /// MCPB, the gateway's binary TCP framing, on --host/--port (see the MCPB options).
    Mcpb,
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let requested = cli.log_format;
    let code = match start(cli, &matches) {
        Ok(code) => code,
        Err(e) => exit::report(&e, logging::format(requested.unwrap_or_default())),
    };
    // Serving is over (a SIGTERM drain ends here too): export the last spans.
    logging::flush();
    code
}

const DEMO: serve_cmd::Preset = serve_cmd::Preset {
    hint: Some(
        "mcpwire demo: serving MCP over stdio. Point an MCP host at `mcpwire demo`, or type \
         JSON-RPC lines here; Ctrl-D exits.\nTry: mcpwire list 'mcpwire demo'",
    ),
    ..serve_cmd::SERVE
};

const RUN: serve_cmd::Preset = serve_cmd::Preset {
    hint: None,
    process_help: "`mcpwire run` serves files written with a protomcp SDK; for a plain MCP \
                   server, use `mcpwire list|call '<its command>'`",
};

fn start(cli: Cli, matches: &clap::ArgMatches) -> Result<ExitCode> {
    // The flag (or environment) wins over the configuration's `[server] log_format`.
    // Serving commands (a configuration) export traces when `[telemetry]` or the
    // environment names an endpoint.
    let log_format = |config: Option<&mcpwire_gateway::GatewayConfig>, serving: bool| {
        let format = cli
            .log_format
            .or_else(|| config.and_then(|c| c.server.log_format));
        let telemetry = config.filter(|_| serving).map(|c| &c.telemetry);
        logging::init(format.unwrap_or_default(), telemetry)
    };
    // Serving commands are presets of `serve`: each is a gateway configuration.
    let (config, preset) = match &cli.command {
        Command::Demo { serve } => (serve_cmd::demo(serve)?, DEMO),
        Command::Run(args) => (process_cmd::preset(args, false)?, RUN),
        Command::Dev(args) => (process_cmd::preset(args, true)?, RUN),
        Command::Serve(args) => {
            let config = serve_cmd::config(args, matches.subcommand_matches("serve"))?;
            if let Some(json) = args.check() {
                log_format(Some(&config), false)?;
                let caller = args.check_as.caller(&config)?;
                return runtime(true)?.block_on(serve_cmd::check(config, &caller, json));
            }
            if config.implicit_stdio() {
                stdin_kind::check_default_stdio()?;
            }
            (config, serve_cmd::SERVE)
        }
        _ => {
            log_format(None, false)?;
            return runtime(false)?.block_on(run(cli));
        }
    };
    log_format(Some(&config), true)?;
    // Many clients (HTTP, …): use every core. Stdio alone serves one: stay on this thread.
    let workers = config.server.workers;
    runtime_with(serve_cmd::multi_threaded(&config), workers)?
        .block_on(serve_cmd::serve(config, preset))
}

fn runtime(multi_thread: bool) -> Result<tokio::runtime::Runtime> {
    runtime_with(multi_thread, None)
}

/// The async runtime: `workers` threads when multi-threaded (`None`: one per core, or
/// `TOKIO_WORKER_THREADS`).
fn runtime_with(multi_thread: bool, workers: Option<usize>) -> Result<tokio::runtime::Runtime> {
    let mut builder = if multi_thread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if let Some(n) = workers {
            b.worker_threads(n);
        }
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Prints a line of command output; a closed stdout (`mcpwire list … | head`) ends the
/// program quietly instead of panicking.
fn emit(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").is_err() {
        std::process::exit(0);
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Demo { .. } | Command::Run(_) | Command::Dev(_) | Command::Serve(_) => {
            unreachable!("serving commands are started by `start`")
        }
        Command::List { connect, json } => {
            let client = connect_to(&connect).await?;
            let tools = client.list_tools().await?;
            if json {
                emit(&serde_json::to_string_pretty(&tools)?);
            } else {
                for t in &tools {
                    let name = t["name"].as_str().unwrap_or("?");
                    let desc = t["description"].as_str().unwrap_or("");
                    let first = desc.lines().next().unwrap_or("");
                    let task = if mcpwire_client::requires_task(t) {
                        "[task] "
                    } else {
                        ""
                    };
                    emit(&format!("{name:<40} {task}{first}"));
                }
            }
            client.close().await?;
        }
        Command::Call {
            connect,
            tool,
            args,
        } => {
            let args = tool_arguments(&args)?;
            let client = connect_to(&connect).await?;
            let as_task = must_run_as_task(&client, &tool).await?;
            let result = client.call_tool(&tool, args, as_task).await?;
            emit(&serde_json::to_string_pretty(&result)?);
            client.close().await?;
            if result.get("isError") == Some(&Value::Bool(true)) {
                eprintln!("error: the tool `{tool}` reported an error (isError: true)");
                return Ok(ExitCode::from(exit::SERVER));
            }
        }
        Command::Schema(args) => schema_cmd::run_schema(args).await?,
        Command::Tokens(args) => schema_cmd::run_tokens(args).await?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Parses and starts (or reaches) the server a command names; its log notifications go to
/// stderr.
async fn connect_to(connect: &ConnectArgs) -> Result<Client> {
    let target = Target::parse(&connect.target)?;
    let mut options = connect.timeout.options();
    options.tls = connect.tls.client();
    options.auth = connect.credentials()?;
    if options.auth.is_some() && !matches!(target, Target::Url(_)) {
        return Err(usage(
            "--header, --bearer-env and --oauth are for http(s):// targets".into(),
        ));
    }
    let (client, events) = Client::connect(&target, &options).await?;
    events.print_logs();
    Ok(client)
}

/// `--args`: a JSON object, refused locally otherwise.
fn tool_arguments(args: &str) -> Result<Value> {
    let value: Value = serde_json::from_str(args)
        .map_err(|e| UsageError(format!("--args is not valid JSON ({e}): {args}")))?;
    if !value.is_object() {
        let kind = match &value {
            Value::Array(_) => "an array",
            Value::String(_) => "a string",
            Value::Number(_) => "a number",
            Value::Bool(_) => "a boolean",
            _ => "null",
        };
        return Err(UsageError(format!(
            "--args must be a JSON object of the tool's arguments (e.g. '{{\"a\": 1}}'), not {kind}: {args}"
        ))
        .into());
    }
    Ok(value)
}

/// Whether `tool` must be called as a task: only asked (one `tools/list`) of servers that
/// offer tasks for `tools/call`.
async fn must_run_as_task(client: &Client, tool: &str) -> Result<bool> {
    if client
        .server()
        .pointer("/capabilities/tasks/requests/tools/call")
        .is_none()
    {
        return Ok(false);
    }
    let tools = client.list_tools().await?;
    Ok(tools
        .iter()
        .any(|t| t["name"] == tool && mcpwire_client::requires_task(t)))
}
