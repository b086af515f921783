//! The gateway's configuration, validated: what `mcpwire serve` serves (backends), where
//! (listeners) and how (server options). Read from a TOML file (`file.rs`) or built from
//! quick flags by the CLI; both give the same [`GatewayConfig`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mcpwire_federation::{Glob, ViewSpec};
use serde::{Deserialize, Serialize};

pub use mcpwire_federation::{CatalogMode, PrefixMode};

use crate::error::{ConfigError, Origin};
use crate::key_path::KeyPath;
use crate::listen::ListenerSpec;
use mcpwire_client::{EraChoice, Target};
use mcpwire_server::tls::ClientTls;

/// Everything `mcpwire serve` needs: listeners, backends and server options.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Where the configuration came from (for messages and reloads).
    pub origin: Origin,
    /// Identity, naming and limits shared by every listener.
    pub server: ServerOptions,
    /// Where to listen, in order (stdio when none is given).
    pub listeners: Vec<ListenerSpec>,
    /// What to serve, in order (the order decides who keeps a colliding name).
    pub backends: Vec<BackendSpec>,
    /// Named subsets of the catalog a listener may serve instead of all of it.
    pub views: Vec<ViewSpec>,
    /// Authentication for every network listener (`[auth]`, see `gateway/auth.rs`).
    pub auth: Option<crate::auth::AuthConfig>,
    /// Who may see and call what (`[policy]`, see `gateway/policy.rs`); `None`: everyone
    /// everything.
    pub policy: Option<mcpwire_federation::Policy>,
    /// Rate and connection limits (`[limits]`, see `gateway/limits.rs`); `None`: none.
    pub limits: Option<crate::section::limits::LimitsConfig>,
    /// The admin listener (`[admin]`: `/metrics`, `/healthz`, `/readyz`); `None`: none.
    pub admin: Option<AdminConfig>,
    /// One replica of several sharing a store (`[cluster]`, see `gateway/cluster.rs`);
    /// `None`: a single process with its state in memory.
    pub cluster: Option<crate::cluster::ClusterConfig>,
    /// Where traces go (`[telemetry]`; read at start only, the binary installs it).
    pub telemetry: mcpwire_server::observe::TelemetryConfig,
    /// What command-line flags added to the file (added again on every reload).
    pub additions: Additions,
}

/// What command-line flags add to a configuration file, each with the flag that said it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Additions {
    /// `--listen`.
    pub listeners: Vec<(ListenerSpec, String)>,
    /// `--upstream`, `--process`, `--demo`, `--mcp-servers`, in command-line order.
    pub backends: Vec<(BackendSpec, String)>,
}

impl Additions {
    /// Whether the flags added nothing.
    pub fn is_empty(&self) -> bool {
        self.listeners.is_empty() && self.backends.is_empty()
    }
}

/// The admin listener (`[admin]`, `--metrics-listen`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminConfig {
    /// Where it listens (port 0 picks a free one; the bound address is printed).
    pub listen: std::net::SocketAddr,
    /// `[auth]` API keys whose holders may log into the console on `/ui`; empty: no
    /// console unless `console_scope` is set (`docs/console.md`).
    pub console_keys: Vec<String>,
    /// A scope whose bearer tokens (checked by `[auth]`) may log into the console too.
    pub console_scope: Option<String>,
}

impl AdminConfig {
    /// Whether the console is on: some admin credential is configured.
    pub fn console(&self) -> bool {
        !self.console_keys.is_empty() || self.console_scope.is_some()
    }
}

/// How the gateway presents itself and bounds its clients (`[server]`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerOptions {
    /// `serverInfo.name` when several backends are served (one backend speaks as itself).
    pub name: String,
    /// When tool and prompt names get their backend's name as a prefix.
    pub prefix: PrefixMode,
    /// Between a prefix and a name.
    pub separator: String,
    /// Largest accepted message in bytes (also the largest envelope from a tool process).
    pub max_message_bytes: usize,
    /// Requests one client may have in flight.
    pub max_in_flight: usize,
    /// How long a connection keeps polling for input before it sleeps.
    pub busy_poll: Duration,
    /// The runtime's worker threads when the gateway serves more than stdio (`None`: one
    /// per core, or `TOKIO_WORKER_THREADS`). Read at start only.
    pub workers: Option<usize>,
    /// Threads of their own HTTP listeners serve connections on, each a single-threaded
    /// runtime (a listener's `threads` overrides it; `None`: none, the runtime's workers).
    pub http_threads: Option<usize>,
    /// How long a request may run before it is answered with a timeout (`None`: no limit).
    pub call_timeout: Option<Duration>,
    /// A directory of `.proto` modules proto-mcp tool schemas may reference.
    pub schema_registry: Option<PathBuf>,
    /// Watch the configuration file and apply its edits while serving.
    pub reload: bool,
    /// How stderr lines are written (`None`: as the command line or environment says,
    /// else text). Read at start only.
    pub log_format: Option<mcpwire_server::observe::LogFormat>,
    /// What `tools/list` shows (`full`, or `search`: the meta-tools and what the session
    /// found), unless a listener or view says otherwise.
    pub catalog: CatalogMode,
    /// A sentence-embedding model's directory (`config.json`, `model.safetensors`,
    /// `vocab.txt` or `tokenizer.json`), loaded at start, that re-ranks tool searches with
    /// the lexical index (needs the `semantic` build feature). Read at start only.
    pub search_model: Option<PathBuf>,
}

impl GatewayConfig {
    /// Whether any listener serves its catalog in `search` mode (the meta-tools are the
    /// federation's: such a configuration is always served through one).
    pub fn searches(&self) -> bool {
        self.server.catalog == CatalogMode::Search
            || self
                .listeners
                .iter()
                .any(|l| l.options.catalog == Some(CatalogMode::Search))
    }
}

impl Default for ServerOptions {
    fn default() -> ServerOptions {
        ServerOptions {
            name: "mcpwire".into(),
            prefix: PrefixMode::default(),
            separator: "_".into(),
            max_message_bytes: mcpwire_wire::Limits::default().max_message_bytes,
            max_in_flight: mcpwire_session::SessionLimits::default().max_in_flight,
            busy_poll: mcpwire_server::serve::DEFAULT_BUSY_POLL,
            workers: None,
            http_threads: None,
            call_timeout: None,
            schema_registry: None,
            reload: true,
            log_format: None,
            catalog: CatalogMode::Full,
            search_model: None,
        }
    }
}

/// What a backend's failure does to the catalog (`fail = "open"` or `"closed"`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailMode {
    /// The catalog is served without it while it cannot list (and it is listed again
    /// with backoff); a fail-open backend that does not start is left out.
    #[default]
    Open,
    /// No partial catalog: the gateway does not start without it, and lists answer an
    /// error naming it while it is unavailable.
    Closed,
}

impl From<FailMode> for mcpwire_federation::FailMode {
    fn from(mode: FailMode) -> Self {
        match mode {
            FailMode::Open => mcpwire_federation::FailMode::FailOpen,
            FailMode::Closed => mcpwire_federation::FailMode::FailClosed,
        }
    }
}

/// One backend: its name, where its catalog comes from and how it joins the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSpec {
    /// Its name (a prefix for its names when prefixes apply), `[A-Za-z0-9_-]{1,64}`.
    pub name: String,
    /// Where its tools come from.
    pub source: BackendSource,
    /// Which of its names are served, and under which names.
    pub member: MemberOptions,
    /// Where it was declared (`backends.NAME`), for messages.
    pub key: KeyPath,
}

/// Where a backend's tools, resources and prompts come from.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendSource {
    /// A native server compiled into the program, by its registered name (`demo`).
    Native {
        /// The registered name.
        server: String,
    },
    /// A tool file written with a protomcp SDK, run as a tool process.
    Process(ProcessSpec),
    /// An MCP server the gateway is a client of.
    Upstream(UpstreamSpec),
    /// An HTTP service described by an OpenAPI document: its operations as tools.
    OpenApi(crate::openapi::OpenApiSpec),
    /// A gRPC service: its unary and server-streaming methods as tools.
    Grpc(crate::grpc::GrpcSpec),
}

impl BackendSpec {
    /// A backend named `name` serving everything `source` offers, failing open.
    pub fn new(name: impl Into<String>, source: BackendSource) -> BackendSpec {
        let name = name.into();
        BackendSpec {
            key: KeyPath::root().key("backends").key(&name),
            name,
            source,
            member: MemberOptions::default(),
        }
    }
}

impl BackendSource {
    /// What kind of backend this is, in words (`native`, `process`, `upstream`, `openapi`, `grpc`).
    pub fn kind(&self) -> &'static str {
        match self {
            BackendSource::Native { .. } => "native",
            BackendSource::Process(_) => "process",
            BackendSource::Upstream(_) => "upstream",
            BackendSource::OpenApi(_) => "openapi",
            BackendSource::Grpc(_) => "grpc",
        }
    }
}

/// How to run a tool process (what `mcpwire run FILE` takes).
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessSpec {
    /// The tool file (relative paths are relative to the configuration file).
    pub file: PathBuf,
    /// Command line that runs the file, overriding the choice by extension.
    pub runtime: Option<String>,
    /// How long the process may take to connect and complete its handshake.
    pub handshake_timeout: Duration,
    /// Largest result (raw or decompressed) accepted from the process.
    pub max_result_bytes: u64,
    /// Reload the process whenever the file changes (`mcpwire dev`).
    pub watch: bool,
}

impl ProcessSpec {
    /// Defaults for `file` (those of `mcpwire run`).
    pub fn new(file: impl Into<PathBuf>) -> ProcessSpec {
        ProcessSpec {
            file: file.into(),
            runtime: None,
            handshake_timeout: Duration::from_secs(30),
            max_result_bytes: mcpwire_process::codec::DEFAULT_MAX_RAW,
            watch: false,
        }
    }
}

/// An upstream MCP server: where it is (the client's [`Target`], the one parser of
/// targets) and how the gateway keeps sessions with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamSpec {
    /// A stdio command line, a Streamable HTTP URL or an MCPB address.
    pub target: Target,
    /// How long starting or reaching it and negotiating may take.
    pub handshake_timeout: Duration,
    /// How long a forwarded request may wait without progress (`None`: no limit).
    pub call_timeout: Option<Duration>,
    /// One upstream session for every downstream session (`Some(true)`), or one per
    /// stateful downstream session (`Some(false)`, the default: the upstream sees each end
    /// client's session — its subscriptions, log level and asks — as it would directly).
    pub shared: Option<bool>,
    /// Upstream sessions open at once besides the shared one: by default 64 for a stdio
    /// command (each is a child process) and 4,096 for an HTTP URL or MCPB address (each
    /// is a session id or a connection); beyond, calls are refused naming the key.
    pub max_sessions: usize,
    /// `shared = false`: a downstream session's upstream session unused this long is
    /// closed, the session's next call opening a new one (`session_idle_secs`, default
    /// 300; `None`, from 0: kept until the downstream session ends).
    pub session_idle: Option<Duration>,
    /// Which era to speak upstream (`era = "auto" | "handshake" | "stateless"`).
    pub era: EraChoice,
    /// `https://` and `mcpbs://` upstreams: the CA to trust instead of the system's, and a
    /// client certificate to present (`ca`, `client_cert`, `client_key`).
    pub tls: ClientTls,
    /// What the gateway authenticates with toward it (`bearer_*`, `headers`, `oauth`).
    pub credentials: crate::credentials::CredentialsSpec,
    /// A command: variables set in its environment (`env`), over the inherited ones.
    pub env: BTreeMap<String, String>,
    /// A command: its working directory (`cwd`; `None`: the gateway's).
    pub cwd: Option<PathBuf>,
    /// Whether plain calls may be relayed to it as raw frames (`relay`, default `true`;
    /// `false`: every call the general way).
    pub relay: bool,
}

impl UpstreamSpec {
    /// Defaults for `target`.
    pub fn new(target: Target) -> UpstreamSpec {
        let max_sessions = if matches!(target, Target::Command { .. }) {
            64
        } else {
            4096
        };
        UpstreamSpec {
            target,
            handshake_timeout: Duration::from_secs(30),
            call_timeout: None,
            shared: None,
            max_sessions,
            session_idle: Some(crate::upstream::DEFAULT_SESSION_IDLE),
            era: EraChoice::Auto,
            tls: ClientTls::default(),
            credentials: Default::default(),
            env: BTreeMap::new(),
            cwd: None,
            relay: true,
        }
    }

    /// Reads `--upstream`'s TARGET: an `http(s)://` URL, an `mcpb://[TOKEN@]host:port`
    /// address or a command line.
    pub fn parse(target: &str) -> Result<UpstreamSpec, String> {
        Target::parse(target)
            .map(UpstreamSpec::new)
            .map_err(|e| e.to_string())
    }

    /// Whether one upstream session serves every downstream session.
    pub fn is_shared(&self) -> bool {
        self.shared.unwrap_or(false)
    }
}

/// An MCPB address, `host:port` or `mcpb://[TOKEN@]host:port` (TLS: `mcpbs://…` or
/// `tcps://…`), as a target.
pub fn mcpb_target(address: &str) -> Result<Target, String> {
    let text = address.trim();
    let lower = text.to_ascii_lowercase();
    let full = if ["mcpb://", "mcpbs://", "tcps://"]
        .iter()
        .any(|s| lower.starts_with(s))
    {
        text.to_owned()
    } else {
        format!("mcpb://{text}")
    };
    let bare = full.split_once("://").map_or("", |(_, b)| b);
    let addr = bare.rsplit_once('@').map_or(bare, |(_, a)| a);
    let valid = addr.rsplit_once(':').is_some_and(|(host, port)| {
        !host.is_empty()
            && !host.contains(['/', '?', '#', ' '])
            && port.parse::<u16>().is_ok_and(|p| p != 0)
    });
    if !valid {
        return Err(format!(
            "`{text}` is not an MCPB address: give host:port, e.g. mcpb://127.0.0.1:9000"
        ));
    }
    Target::parse(&full).map_err(|e| e.to_string())
}

impl std::fmt::Display for UpstreamSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.target.fmt(f)
    }
}

/// How a backend joins the merged catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberOptions {
    /// Names and URIs (globs: `*`, `?`, `[a-z]`) to serve; empty: all.
    pub include: Vec<Glob>,
    /// Names and URIs (globs) not to serve, applied after `include`.
    pub exclude: Vec<Glob>,
    /// Names served under another name (the backend's name → the new one).
    pub rename: BTreeMap<String, String>,
    /// What the backend's failure does.
    pub fail: FailMode,
}

impl GatewayConfig {
    /// A configuration serving `backends` on `listeners` with default server options.
    pub fn new(listeners: Vec<ListenerSpec>, backends: Vec<BackendSpec>) -> GatewayConfig {
        GatewayConfig {
            origin: Origin::flags(),
            server: ServerOptions::default(),
            listeners,
            backends,
            views: Vec::new(),
            auth: None,
            policy: None,
            limits: None,
            admin: None,
            cluster: None,
            telemetry: mcpwire_server::observe::TelemetryConfig::default(),
            additions: Additions::default(),
        }
    }

    /// Adds a listener declared by a command-line `flag` (e.g. `--listen http://…`).
    pub fn push_listener(&mut self, mut spec: ListenerSpec, flag: impl Into<String>) {
        spec.key = KeyPath::root().key("listen").index(self.listeners.len());
        self.note_flag(&spec.key, flag.into());
        self.listeners.push(spec);
    }

    /// Adds a backend declared by a command-line `flag` (e.g. `--process tools=t.py`).
    pub fn push_backend(&mut self, mut spec: BackendSpec, flag: impl Into<String>) {
        spec.key = KeyPath::root().key("backends").key(&spec.name);
        self.note_flag(&spec.key, flag.into());
        self.backends.push(spec);
    }

    /// Records that `flag` declared what is at `key` (for messages).
    pub fn note_flag(&mut self, key: &KeyPath, flag: String) {
        self.origin.note_flag(key, flag);
    }

    /// Whether the only listener is stdio by default (no `[[listen]]`, no `--listen`): the
    /// one listener without a key of its own.
    pub fn implicit_stdio(&self) -> bool {
        matches!(self.listeners.as_slice(), [l] if l.is_stdio() && l.key.segs().is_empty())
    }

    /// Adds what command-line flags declare to a configuration file's (`--config` with
    /// `--listen`, `--upstream`, `--process`, `--demo`, `--mcp-servers`), and keeps them so
    /// that every reload of the file adds them again. Listeners from flags replace the
    /// file's implicit stdio (a file without `[[listen]]`); a backend named like one of
    /// the file's is refused.
    pub fn add(&mut self, additions: Additions) -> Result<(), ConfigError> {
        if !additions.listeners.is_empty() && self.implicit_stdio() {
            self.listeners.clear();
        }
        for (spec, flag) in &additions.listeners {
            self.push_listener(spec.clone(), flag.clone());
        }
        for (spec, flag) in &additions.backends {
            if self.backend(&spec.name).is_some() {
                let file = match &self.origin {
                    Origin::File { path, .. } => path.display().to_string(),
                    Origin::Flags(_) => "the configuration".into(),
                };
                return Err(ConfigError {
                    place: flag.clone(),
                    key: None,
                    message: format!(
                        "a backend named `{}` is already in {file}: give this one another name",
                        spec.name
                    ),
                });
            }
            self.push_backend(spec.clone(), flag.clone());
        }
        self.additions = additions;
        self.validate()
    }

    /// The backend named `name`.
    pub fn backend(&self, name: &str) -> Option<&BackendSpec> {
        self.backends.iter().find(|b| b.name == name)
    }

    /// An error about the value at `key`, located in the file (or naming the flag).
    pub fn error_at(&self, key: &KeyPath, message: impl Into<String>) -> ConfigError {
        self.origin.error_at(key, message)
    }

    /// Checks what no single entry can: names unique and well-formed, at least one backend,
    /// stdio listened on at most once, no two listeners on one address.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.backends.is_empty() {
            return Err(self.origin.error_at(
                &KeyPath::root(),
                "nothing to serve: add a backend ([backends.NAME] in a file; --upstream, \
                 --process or --demo on the command line)",
            ));
        }
        for (i, b) in self.backends.iter().enumerate() {
            check_name(&b.name).map_err(|m| self.error_at(&b.key, m))?;
            if self.backends[..i].iter().any(|o| o.name == b.name) {
                return Err(self.error_at(
                    &b.key,
                    format!(
                        "a second backend named `{}`: backend names must be unique",
                        b.name
                    ),
                ));
            }
            for (from, to) in &b.member.rename {
                let taken = self.backends[..=i].iter().find_map(|o| {
                    o.member
                        .rename
                        .iter()
                        .find(|(f, t)| *t == to && (o.name != b.name || *f < from))
                        .map(|(f, _)| format!("{}/{f}", o.name))
                });
                if let Some(first) = taken {
                    return Err(self.error_at(
                        &b.key.key("rename").key(from),
                        format!("`{to}` is already the new name of {first}: renames must differ"),
                    ));
                }
                if !is_exposed_name(to) {
                    return Err(self.error_at(
                        &b.key.key("rename").key(from),
                        format!(
                            "`{to}` cannot be a tool or prompt name: use 1 to 64 of A-Z a-z 0-9 _ -"
                        ),
                    ));
                }
            }
        }
        let views = KeyPath::root().key("views");
        for (i, v) in self.views.iter().enumerate() {
            let key = views.key(&v.name);
            check_name(&v.name).map_err(|m| self.error_at(&key, m.replace("backend", "view")))?;
            if self.views[..i].iter().any(|o| o.name == v.name) {
                return Err(self.error_at(&key, format!("a second view named `{}`", v.name)));
            }
            for (j, m) in v.members.iter().enumerate() {
                if self.backend(m).is_none() {
                    return Err(self.error_at(
                        &key.key("members").index(j),
                        format!("no backend is named `{m}`"),
                    ));
                }
            }
        }
        for l in &self.listeners {
            if let Some(view) = &l.options.view
                && !self.views.iter().any(|v| &v.name == view)
            {
                return Err(self.error_at(
                    &l.key.key("view"),
                    format!("no view is named `{view}` (declare it as [views.{view}])"),
                ));
            }
        }
        let mut seen: Vec<(&ListenerSpec, usize)> = Vec::new();
        for (i, l) in self.listeners.iter().enumerate() {
            if let Some((other, j)) = seen.iter().find(|(o, _)| o.clashes_with(l)) {
                let what = if l.is_stdio() {
                    "stdio is listened on twice: there is one stdin".to_owned()
                } else {
                    format!(
                        "{} is already listened on by listener {} ({}); give each listener its \
                         own address",
                        l.address(),
                        j + 1,
                        other.url()
                    )
                };
                return Err(self.error_at(&l.key, what));
            }
            seen.push((l, i));
        }
        Ok(())
    }
}

/// A backend name: 1 to 64 of `A-Z a-z 0-9 _ -`.
fn check_name(name: &str) -> Result<(), String> {
    if is_exposed_name(name) {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a backend name: use 1 to 64 of A-Z a-z 0-9 _ - (it prefixes tool names)"
        ))
    }
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub(crate) fn is_exposed_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_targets() {
        let target = |s: &str| UpstreamSpec::parse(s).map(|u| u.target);
        assert_eq!(
            target("npx -y server 'a b'").unwrap(),
            Target::Command {
                argv: vec!["npx".into(), "-y".into(), "server".into(), "a b".into()]
            }
        );
        assert!(!UpstreamSpec::parse("npx x").unwrap().is_shared());
        assert_eq!(
            target("https://example.com/mcp").unwrap(),
            Target::Url("https://example.com/mcp".into())
        );
        assert!(
            !UpstreamSpec::parse("https://example.com/mcp")
                .unwrap()
                .is_shared()
        );
        assert_eq!(
            target("MCPB://gw.local:9000").unwrap(),
            Target::Mcpb {
                addr: "gw.local:9000".into(),
                token: None,
                tls: false,
            }
        );
        assert_eq!(
            mcpb_target("127.0.0.1:9000").unwrap().to_string(),
            "mcpb://127.0.0.1:9000"
        );
        for bad in ["mcpb://host", "mcpb://:9", "mcpb://h:9/x", "ws://h:1/x", ""] {
            assert!(UpstreamSpec::parse(bad).is_err(), "{bad}");
        }
        for bad in ["host", ":9", "h:0", "h:9/x"] {
            assert!(mcpb_target(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn names() {
        assert!(is_exposed_name("fs_2-x"));
        assert!(!is_exposed_name(""));
        assert!(!is_exposed_name("a.b"));
        assert!(!is_exposed_name(&"x".repeat(65)));
    }
}
