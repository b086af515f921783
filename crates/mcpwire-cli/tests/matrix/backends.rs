//! The matrix's backends: each a [`Service`] and what it offers the assertions — the tools
//! to call (names and arguments differ per backend) and a [`Witness`] telling when its
//! blocking tool started and saw its cancellation.

use std::any::Any;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire_client::Target;
use mcpwire_federation::{Federation, FederationConfig, Member};
use mcpwire_gateway::upstream::{UpstreamBackend, UpstreamConfig};
use mcpwire_model::types::Implementation;
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig};
use mcpwire_router::{CallCtx, NoArgs, Router, Server, ToolDef, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_testkit::peers;
use mcpwire_testkit::serve::{self, serve};
use mcpwire_testkit::wait::wait_until_async;
use serde_json::{Value, json};

/// How long a tool waiting for its cancellation waits at most (a bound, not a timing).
const HOLD: Duration = Duration::from_secs(30);

/// How long the witness waits for the blocking tool to start or see its cancellation.
const WITHIN: Duration = Duration::from_secs(10);

/// A backend of the matrix and what it offers the assertions.
pub struct Backend {
    /// Which kind it is (for messages).
    pub kind: &'static str,
    /// What the wires serve.
    pub service: Service,
    /// The server's name as it introduces itself.
    pub name: String,
    /// A tool echoing `{"text"}` as its text.
    pub echo: &'static str,
    /// A tool, its arguments and the structured content it answers.
    pub structured: (&'static str, Value, Value),
    /// A tool failing with `isError`, and its arguments.
    pub failing: (&'static str, Value),
    /// A tool reporting progress, and its arguments.
    pub progress: (&'static str, Value),
    /// A tool running until cancelled, and its arguments.
    pub blocking: (&'static str, Value),
    /// How the blocking tool is watched.
    pub witness: Witness,
    /// What must live as long as the backend (an upstream's server, a process).
    _keep: Vec<Box<dyn Any + Send>>,
}

impl Backend {
    /// A backend offering the example server's tools (its own, or through an upstream):
    /// `echo`, `add`'s structured sum, `test_error_handling`, `test_tool_with_progress`,
    /// and `blocking` run until cancelled.
    fn example(
        kind: &'static str,
        service: Service,
        blocking: (&'static str, Value),
        witness: Witness,
        keep: Vec<Box<dyn Any + Send>>,
    ) -> Backend {
        Backend {
            kind,
            name: service.config.server_info.name.clone(),
            service,
            echo: "echo",
            structured: ("add", json!({"a": 2, "b": 3}), json!({"sum": 5.0})),
            failing: ("test_error_handling", json!({})),
            progress: ("test_tool_with_progress", json!({})),
            blocking,
            witness,
            _keep: keep,
        }
    }

    /// Every tool the assertions call.
    pub fn tools(&self) -> [&'static str; 5] {
        [
            self.echo,
            self.structured.0,
            self.failing.0,
            self.progress.0,
            self.blocking.0,
        ]
    }
}

/// How a test learns that the blocking tool started, and that it saw its cancellation.
pub enum Witness {
    /// A native tool counting its starts and cancellations.
    Counted(Arc<Counts>),
    /// A tool process writing a file when it starts and one when it is cancelled.
    Files {
        /// Written at the start.
        started: PathBuf,
        /// Written on cancellation.
        cancelled: PathBuf,
    },
    /// An upstream in another process, watched through its log: a request it received,
    /// a request cancelled by its client (the gateway).
    Logged {
        /// The upstream's stderr.
        log: PathBuf,
        /// How many requests it had received when armed.
        armed: AtomicUsize,
    },
}

/// A native blocking tool's starts and cancellations.
#[derive(Default)]
pub struct Counts {
    started: AtomicUsize,
    cancelled: AtomicUsize,
}

/// What the upstream logs when a call reaches it (`mcpwire::telemetry` at trace).
const RECEIVED: &str = "request received method=tools/call";

/// What the upstream logs when its client cancels a call (`mcpwire_session` at debug).
const CANCELLED: &str = "request cancelled by client";

/// How many lines of the file `log` contain `needle`.
fn lines_with(log: &std::path::Path, needle: &str) -> usize {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().filter(|l| l.contains(needle)).count()
}

impl Witness {
    /// Before the blocking tool is called.
    pub fn arm(&self) {
        if let Witness::Logged { log, armed } = self {
            armed.store(lines_with(log, RECEIVED), Ordering::SeqCst);
        }
    }

    /// Waits until the blocking tool started.
    pub async fn started(&self) {
        let what = "the blocking tool starts";
        match self {
            Witness::Counted(c) => {
                wait_until_async(WITHIN, what, async || c.started.load(Ordering::SeqCst) > 0).await;
            }
            Witness::Files { started, .. } => {
                wait_until_async(WITHIN, what, async || started.exists()).await;
            }
            Witness::Logged { log, armed } => {
                let armed = armed.load(Ordering::SeqCst);
                wait_until_async(WITHIN, what, async || lines_with(log, RECEIVED) > armed).await;
            }
        }
    }

    /// Waits until the blocking tool saw its cancellation.
    pub async fn cancelled(&self) {
        let what = "the blocking tool sees its cancellation";
        match self {
            Witness::Counted(c) => {
                wait_until_async(WITHIN, what, async || {
                    c.cancelled.load(Ordering::SeqCst) > 0
                })
                .await;
            }
            Witness::Files { cancelled, .. } => {
                wait_until_async(WITHIN, what, async || cancelled.exists()).await;
            }
            Witness::Logged { log, .. } => {
                wait_until_async(WITHIN, what, async || lines_with(log, CANCELLED) > 0).await;
            }
        }
    }
}

/// Counts, when dropped, a run of the blocking tool that ended before its bound: it saw its
/// cancellation, or its future was dropped (a dropped gRPC call drops its call).
struct Ends(Option<Arc<Counts>>);

impl Drop for Ends {
    fn drop(&mut self) {
        if let Some(counts) = self.0.take() {
            counts.cancelled.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// `wait_for_cancel`: counts its start, then waits (at most [`HOLD`]) for its
/// cancellation; a run ending before the bound, by cancellation or drop, is counted.
fn wait_for_cancel(counts: Arc<Counts>) -> ToolDef {
    tool("wait_for_cancel", move |ctx: CallCtx, _: NoArgs| {
        let counts = counts.clone();
        async move {
            counts.started.fetch_add(1, Ordering::SeqCst);
            let mut ends = Ends(Some(counts));
            tokio::select! {
                _ = ctx.cancelled() => Ok::<_, ToolError>("cancelled"),
                _ = tokio::time::sleep(HOLD) => {
                    ends.0 = None;
                    Ok("not cancelled")
                }
            }
        }
    })
    .description("Waits until cancelled (or 30 s), counting")
}

/// The example server (`mcpwire demo`'s), plus a counted `wait_for_cancel`.
fn everything() -> (Arc<Server>, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let server = mcpwire_example_everything::server();
    server.add_tool(wait_for_cancel(counts.clone()));
    (server, counts)
}

/// A directory of this test's own.
fn scratch(kind: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir =
        std::env::temp_dir().join(format!("mcpwire-matrix-{}-{kind}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The protomcp SDK's `kitchen.py` as a tool process, marking its blocking tool's start
/// and cancellation in files of `dir`; `None` when the venv is missing.
async fn kitchen(dir: &std::path::Path) -> Option<(Arc<ProcessBackend>, Witness)> {
    let python = peers::venv_python("protomcp")?;
    let (started, cancelled) = (dir.join("started"), dir.join("cancelled"));
    let runtime = format!(
        "env KITCHEN_START_MARK={} KITCHEN_CANCEL_MARK={} {}",
        started.display(),
        cancelled.display(),
        python.display()
    );
    let launch = Launch {
        file: peers::root().join("tests/python/protomcp_tools/kitchen.py"),
        runtime: Some(runtime),
    };
    let process = ProcessBackend::start(ProcessConfig::new(launch))
        .await
        .expect("the tool process starts");
    Some((process, Witness::Files { started, cancelled }))
}

/// A native server: the example server.
pub async fn native() -> Option<Backend> {
    let (server, counts) = everything();
    let service = Service::from_server(server);
    let blocking = ("wait_for_cancel", json!({}));
    let witness = Witness::Counted(counts);
    Some(Backend::example(
        "native",
        service,
        blocking,
        witness,
        Vec::new(),
    ))
}

/// A tool process: `kitchen.py` (protomcp SDK) in the venv's Python.
pub async fn tool_process() -> Option<Backend> {
    let dir = scratch("process");
    let (process, witness) = kitchen(&dir).await?;
    let service = Service::new(
        Router::new(process),
        Implementation::new("kitchen", "1"),
        None,
    );
    Some(Backend {
        kind: "tool process",
        name: "kitchen".into(),
        service,
        echo: "echo",
        structured: (
            "weather",
            json!({"city": "Oslo"}),
            json!({"city": "Oslo", "temp": 21}),
        ),
        failing: ("fail", json!({"reason": "on purpose"})),
        progress: ("slow_count", json!({"steps": 3})),
        blocking: ("wait_for_cancel", json!({})),
        witness,
        _keep: vec![Box::new(Scratch(dir))],
    })
}

/// `upstream` as the one backend of a service introducing itself as the upstream does.
fn upstream_service(upstream: Arc<UpstreamBackend>) -> Service {
    let info = upstream.server_info().clone();
    let instructions = upstream.instructions().map(str::to_owned);
    Service::new(Router::new(upstream), info, instructions)
}

/// An upstream MCP server over stdio: `mcpwire demo`, another process, logging what it
/// receives and what its client cancels.
pub async fn upstream_stdio() -> Option<Backend> {
    let dir = scratch("upstream");
    let log = dir.join("upstream.log");
    let filter = "MCPWIRE_LOG=warn,mcpwire::telemetry=trace,mcpwire_session=debug";
    let argv = [
        "env",
        filter,
        "sh",
        "-c",
        r#"exec "$0" demo 2>>"$1""#,
        env!("CARGO_BIN_EXE_mcpwire"),
        log.to_str().expect("a UTF-8 path"),
    ];
    let target = Target::Command {
        argv: argv.map(str::to_owned).to_vec(),
    };
    let upstream = UpstreamBackend::connect(UpstreamConfig::new("demo", target))
        .await
        .expect("the stdio upstream answers");
    let witness = Witness::Logged {
        log,
        armed: AtomicUsize::new(0),
    };
    let blocking = ("test_slow", json!({"seconds": 30}));
    let keep: Vec<Box<dyn Any + Send>> = vec![Box::new(Scratch(dir))];
    let service = upstream_service(upstream);
    Some(Backend::example(
        "upstream over stdio",
        service,
        blocking,
        witness,
        keep,
    ))
}

/// An upstream MCP server over Streamable HTTP: the example server, served in-process.
pub async fn upstream_http() -> Option<Backend> {
    let (server, counts) = everything();
    let served = serve(server, serve::http()).await;
    let target = Target::Url(served.url());
    let upstream = UpstreamBackend::connect(UpstreamConfig::new("demo", target))
        .await
        .expect("the HTTP upstream answers");
    let blocking = ("wait_for_cancel", json!({}));
    let keep: Vec<Box<dyn Any + Send>> = vec![Box::new(served)];
    let service = upstream_service(upstream);
    Some(Backend::example(
        "upstream over HTTP",
        service,
        blocking,
        Witness::Counted(counts),
        keep,
    ))
}

/// A federation of two: the example server (`demo_…`) and the tool process
/// (`kitchen_…`), each answering some of the assertions.
pub async fn federation() -> Option<Backend> {
    let dir = scratch("federation");
    let (process, _) = kitchen(&dir).await?;
    let (server, counts) = everything();
    let config = FederationConfig::new(Implementation::new("matrix-federation", "1"))
        .member(Member::new("demo", server))
        .member(Member::new("kitchen", process));
    let fed = Federation::new(config)
        .await
        .expect("the federation starts");
    let service = Service::new(
        Router::new(fed.clone()),
        fed.server_info(),
        Some(fed.instructions()),
    );
    Some(Backend {
        kind: "federation",
        name: "matrix-federation".into(),
        service,
        echo: "demo_echo",
        structured: (
            "kitchen_weather",
            json!({"city": "Oslo"}),
            json!({"city": "Oslo", "temp": 21}),
        ),
        failing: ("demo_test_error_handling", json!({})),
        progress: ("kitchen_slow_count", json!({"steps": 3})),
        blocking: ("demo_wait_for_cancel", json!({})),
        witness: Witness::Counted(counts),
        _keep: vec![Box::new(Scratch(dir))],
    })
}

/// A scratch directory, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
