//! The configuration file (`mcpwire serve --config mcpwire.toml`): its TOML shape, read
//! with unknown keys refused, then checked into a [`GatewayConfig`]. Every refusal names
//! the file, line, column and key.
//!
//! ```toml
//! [server]                     # optional
//! prefix = "conditional"       # conditional | always | never
//! log_format = "json"          # text (default) | json: one JSON object per stderr line
//!
//! [telemetry]                  # optional: OpenTelemetry traces over OTLP/HTTP
//! otlp_endpoint = "http://127.0.0.1:4318"   # or OTEL_EXPORTER_OTLP_ENDPOINT
//! service_name = "gateway"     # or OTEL_SERVICE_NAME; default mcpwire
//! sample_ratio = 0.1           # share of new traces kept (default 1.0)
//!
//! [[listen]]
//! url = "http://127.0.0.1:8000/mcp"
//!
//! [[listen]]                   # TLS: https://, wss://, grpcs://, mcpbs:// (tcps://)
//! url = "https://0.0.0.0:8443/mcp"
//! tls = { cert = "cert.pem", key = "key.pem" }   # re-read when they change
//! # tls.client_ca = "clients.pem"                # mTLS; client_auth = "optional"
//!
//! [backends.demo]
//! native = "demo"
//!
//! [backends.tools]
//! process = "tools.py"
//!
//! [backends.fs]
//! command = "npx -y @modelcontextprotocol/server-filesystem /srv"
//! exclude = ["write_*"]
//! shared = false               # an upstream session per client session (the default)
//! max_sessions = 64            # children at once besides the shared one (URLs: 4096)
//! call_timeout_secs = 120      # a request without progress for this long times out
//!
//! [backends.remote]
//! url = "https://example.com/mcp"
//! era = "auto"                 # auto | handshake | stateless
//! ca = "internal-ca.pem"       # trust this CA (not the system's); client_cert/client_key
//! bearer_env = "REMOTE_TOKEN"  # credentials toward it: see `credentials.rs`
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcpwire_federation::{Glob, ViewSpec};
use serde::Deserialize;
use serde::de::{MapAccess, SeqAccess, Visitor};

use crate::config::{
    BackendSource, BackendSpec, FailMode, GatewayConfig, MemberOptions, PrefixMode, ProcessSpec,
    ServerOptions, UpstreamSpec, mcpb_target,
};
use crate::credentials::{CredentialsSpec, RawCredentials};
use crate::error::{ConfigError, Origin};
use crate::key_path::KeyPath;
use crate::listen::{ListenOptions, ListenerSpec};
use mcpwire_client::{EraChoice, Target};
use mcpwire_server::tls::ClientTls;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    server: RawServer,
    #[serde(default)]
    listen: Vec<ListenOptions>,
    #[serde(default)]
    backends: Ordered<RawBackend>,
    #[serde(default)]
    views: Ordered<RawView>,
    auth: Option<crate::section::auth::RawAuth>,
    policy: Option<crate::section::policy::RawPolicy>,
    limits: Option<crate::section::limits::RawLimits>,
    admin: Option<RawAdmin>,
    cluster: Option<crate::section::cluster::RawCluster>,
    telemetry: Option<mcpwire_server::observe::TelemetryConfig>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAdmin {
    listen: std::net::SocketAddr,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawView {
    #[serde(default)]
    members: Vec<String>,
    #[serde(default)]
    tools: Vec<Glob>,
    #[serde(default)]
    prompts: Vec<Glob>,
    #[serde(default)]
    resources: Vec<Glob>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: Option<String>,
    prefix: Option<PrefixMode>,
    separator: Option<String>,
    max_message_bytes: Option<usize>,
    max_in_flight: Option<usize>,
    busy_poll_us: Option<u64>,
    call_timeout_secs: Option<u64>,
    schema_registry: Option<PathBuf>,
    reload: Option<bool>,
    log_format: Option<mcpwire_server::observe::LogFormat>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBackend {
    native: Option<String>,
    process: Option<PathBuf>,
    command: Option<CommandLine>,
    url: Option<String>,
    mcpb: Option<String>,
    runtime: Option<String>,
    handshake_timeout_secs: Option<u64>,
    max_result_bytes: Option<u64>,
    watch: Option<bool>,
    call_timeout_secs: Option<u64>,
    shared: Option<bool>,
    max_sessions: Option<usize>,
    era: Option<RawEra>,
    ca: Option<PathBuf>,
    client_cert: Option<PathBuf>,
    client_key: Option<PathBuf>,
    bearer_env: Option<String>,
    bearer_file: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    header_env: BTreeMap<String, String>,
    oauth: Option<crate::credentials::RawOAuth>,
    #[serde(default)]
    include: Vec<Glob>,
    #[serde(default)]
    exclude: Vec<Glob>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
    #[serde(default)]
    fail: FailMode,
}

/// Which era an upstream is spoken to in.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawEra {
    /// `server/discover` first, then `initialize`.
    Auto,
    /// `initialize` only (2025-11-25 and earlier).
    Handshake,
    /// 2026-07-28 only.
    Stateless,
}

impl From<RawEra> for EraChoice {
    fn from(e: RawEra) -> EraChoice {
        match e {
            RawEra::Auto => EraChoice::Auto,
            RawEra::Handshake => EraChoice::Handshake,
            RawEra::Stateless => EraChoice::Stateless,
        }
    }
}

/// A table's entries in the order written (the `toml` crate keeps it: `preserve_order`).
#[derive(Debug)]
struct Ordered<T>(Vec<(String, T)>);

impl<T> Default for Ordered<T> {
    fn default() -> Self {
        Ordered(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Ordered<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Ordered<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table of entries by name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry()? {
                    entries.push((k, v));
                }
                Ok(Ordered(entries))
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// A command line as one string (split like a POSIX shell would) or as an array of words.
#[derive(Debug)]
enum CommandLine {
    Line(String),
    Words(Vec<String>),
}

impl<'de> Deserialize<'de> for CommandLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandLine;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a command line (a string, or an array of words)")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<CommandLine, E> {
                Ok(CommandLine::Line(s.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandLine, A::Error> {
                let mut words = Vec::new();
                while let Some(w) = seq.next_element::<String>()? {
                    words.push(w);
                }
                Ok(CommandLine::Words(words))
            }
        }
        d.deserialize_any(V)
    }
}

impl GatewayConfig {
    /// Reads and checks the configuration file at `path`.
    pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            place: path.display().to_string(),
            key: None,
            message: format!("cannot read the configuration file: {e}"),
        })?;
        GatewayConfig::from_toml(path, &text)
    }

    /// Checks `text`, the configuration file at `path` (relative paths in it are relative
    /// to the file's directory).
    pub fn from_toml(path: &Path, text: &str) -> Result<GatewayConfig, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| Origin::toml_error(path, text, &e))?;
        let origin = Origin::File {
            path: path.to_path_buf(),
            text: Arc::from(text),
        };
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let root = KeyPath::root();
        let server = server_options(raw.server, &base)
            .map_err(|(key, m)| origin.error_at(&root.key("server").key(key), m))?;
        let mut listeners = Vec::new();
        for (i, mut entry) in raw.listen.into_iter().enumerate() {
            let key = root.key("listen").index(i);
            entry.tls = entry.tls.map(|t| t.relative_to(&base));
            let mut spec = ListenerSpec::with_options(entry)
                .map_err(|(option, m)| origin.error_at(&key.key(option), m))?;
            spec.key = key;
            listeners.push(spec);
        }
        if listeners.is_empty() {
            listeners.push(ListenerSpec::parse("stdio").map_err(|m| origin.error_at(&root, m))?);
        }
        let mut backends = Vec::new();
        for (name, raw) in raw.backends.0 {
            let key = root.key("backends").key(&name);
            let source = backend_source(&raw, &base).map_err(|(option, m)| {
                let at = if option.is_empty() {
                    key.clone()
                } else {
                    key.key(option)
                };
                origin.error_at(&at, m)
            })?;
            backends.push(BackendSpec {
                name,
                source,
                member: MemberOptions {
                    include: raw.include,
                    exclude: raw.exclude,
                    rename: raw.rename,
                    fail: raw.fail,
                },
                key,
            });
        }
        for b in &mut backends {
            crate::consent::redirect_to_the_gateway(b, &listeners)
                .map_err(|m| origin.error_at(&b.key.key("oauth").key("redirect_uri"), m))?;
        }
        let views = raw
            .views
            .0
            .into_iter()
            .map(|(name, v)| ViewSpec {
                name,
                members: v.members,
                tools: v.tools,
                prompts: v.prompts,
                resources: v.resources,
            })
            .collect();
        let auth = match raw.auth {
            None => None,
            Some(a) => Some(a.check(&base).map_err(|(key, m)| {
                let mut at = root.key("auth");
                for part in key.split('.') {
                    at = at.key(part);
                }
                origin.error_at(&at, m)
            })?),
        };
        let names: Vec<&str> = backends.iter().map(|b| b.name.as_str()).collect();
        let policy = match raw.policy {
            None => None,
            Some(p) => Some(p.check(&names).map_err(|(key, m)| {
                let mut at = root.key("policy");
                for part in key.split('.') {
                    at = match part.parse::<usize>() {
                        Ok(i) => at.index(i),
                        Err(_) => at.key(part),
                    };
                }
                origin.error_at(&at, m)
            })?),
        };
        let limits = match raw.limits {
            None => None,
            Some(l) => Some(
                l.check()
                    .map_err(|(key, m)| origin.error_at(&root.key("limits").key(&key), m))?,
            ),
        };
        let cluster = match raw.cluster {
            None => None,
            Some(c) => Some(
                c.check()
                    .map_err(|(key, m)| origin.error_at(&root.key("cluster").key(&key), m))?,
            ),
        };
        let telemetry = raw.telemetry.unwrap_or_default();
        telemetry
            .check()
            .map_err(|(key, m)| origin.error_at(&root.key("telemetry").key(key), m))?;
        let config = GatewayConfig {
            origin,
            cluster,
            telemetry,
            server,
            listeners,
            backends,
            views,
            auth,
            policy,
            limits,
            admin: raw
                .admin
                .map(|a| crate::config::AdminConfig { listen: a.listen }),
        };
        config.validate()?;
        Ok(config)
    }
}

type Refusal = (&'static str, String);

fn server_options(raw: RawServer, base: &Path) -> Result<ServerOptions, Refusal> {
    let d = ServerOptions::default();
    if let Some(name) = &raw.name
        && name.trim().is_empty()
    {
        return Err(("name", "the server's name cannot be empty".into()));
    }
    if let Some(sep) = &raw.separator
        && !(1..=8).contains(&sep.len())
            | !sep
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err((
            "separator",
            format!("`{sep}` cannot join names: use 1 to 8 of A-Z a-z 0-9 _ -"),
        ));
    }
    for (key, value) in [
        ("max_message_bytes", raw.max_message_bytes),
        ("max_in_flight", raw.max_in_flight),
    ] {
        if value == Some(0) {
            return Err((key, format!("`{key}` must be at least 1")));
        }
    }
    if raw.call_timeout_secs == Some(0) {
        return Err((
            "call_timeout_secs",
            "`call_timeout_secs` must be at least 1".into(),
        ));
    }
    Ok(ServerOptions {
        name: raw.name.unwrap_or(d.name),
        prefix: raw.prefix.unwrap_or(d.prefix),
        separator: raw.separator.unwrap_or(d.separator),
        max_message_bytes: raw.max_message_bytes.unwrap_or(d.max_message_bytes),
        max_in_flight: raw.max_in_flight.unwrap_or(d.max_in_flight),
        busy_poll: raw.busy_poll_us.map_or(d.busy_poll, Duration::from_micros),
        call_timeout: raw.call_timeout_secs.map(Duration::from_secs),
        schema_registry: raw.schema_registry.map(|p| base.join(p)),
        reload: raw.reload.unwrap_or(d.reload),
        log_format: raw.log_format,
    })
}

fn backend_source(raw: &RawBackend, base: &Path) -> Result<BackendSource, Refusal> {
    let kinds: Vec<&'static str> = [
        ("native", raw.native.is_some()),
        ("process", raw.process.is_some()),
        ("command", raw.command.is_some()),
        ("url", raw.url.is_some()),
        ("mcpb", raw.mcpb.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    match kinds.as_slice() {
        [] => {
            return Err((
                "",
                "say what this backend is: native = \"demo\", process = \"FILE\", \
                 command = \"COMMAND LINE\", url = \"http(s)://…\" or mcpb = \"HOST:PORT\""
                    .into(),
            ));
        }
        [_] => {}
        [first, second, ..] => {
            return Err((
                second,
                format!(
                    "a backend is one of native, process, command, url or mcpb: this one already has `{first}`"
                ),
            ));
        }
    }
    let process_only = [
        ("runtime", raw.runtime.is_some()),
        ("max_result_bytes", raw.max_result_bytes.is_some()),
        ("watch", raw.watch.is_some()),
    ];
    if raw.process.is_none()
        && let Some((key, _)) = process_only.iter().find(|(_, set)| *set)
    {
        return Err((
            key,
            format!(
                "`{key}` is an option of process backends, not of {} backends",
                kinds[0]
            ),
        ));
    }
    let upstream_only = [
        ("call_timeout_secs", raw.call_timeout_secs.is_some()),
        ("shared", raw.shared.is_some()),
        ("max_sessions", raw.max_sessions.is_some()),
        ("era", raw.era.is_some()),
        ("ca", raw.ca.is_some()),
        ("client_cert", raw.client_cert.is_some()),
        ("client_key", raw.client_key.is_some()),
    ];
    let upstream = raw.command.is_some() || raw.url.is_some() || raw.mcpb.is_some();
    let credential_keys = [
        ("bearer_env", raw.bearer_env.is_some()),
        ("bearer_file", raw.bearer_file.is_some()),
        ("headers", !raw.headers.is_empty()),
        ("header_env", !raw.header_env.is_empty()),
        ("oauth", raw.oauth.is_some()),
    ];
    if !upstream && let Some((key, _)) = credential_keys.iter().find(|(_, set)| *set) {
        return Err((
            key,
            format!(
                "`{key}` is an option of url (and, for a token, mcpb) backends, not of {} backends",
                kinds[0]
            ),
        ));
    }
    if !upstream && let Some((key, _)) = upstream_only.iter().find(|(_, set)| *set) {
        return Err((
            key,
            format!(
                "`{key}` is an option of upstream backends (command, url, mcpb), not of {} backends",
                kinds[0]
            ),
        ));
    }
    if raw.native.is_some() && raw.handshake_timeout_secs.is_some() {
        return Err((
            "handshake_timeout_secs",
            "`handshake_timeout_secs` is an option of process and upstream backends, not of native backends".into(),
        ));
    }
    for (key, zero) in [
        (
            "handshake_timeout_secs",
            raw.handshake_timeout_secs == Some(0),
        ),
        ("call_timeout_secs", raw.call_timeout_secs == Some(0)),
        ("max_sessions", raw.max_sessions == Some(0)),
    ] {
        if zero {
            return Err((key, format!("`{key}` must be at least 1")));
        }
    }
    if let Some(server) = &raw.native {
        return Ok(BackendSource::Native {
            server: server.clone(),
        });
    }
    if let Some(file) = &raw.process {
        let d = ProcessSpec::new(base.join(file));
        return Ok(BackendSource::Process(ProcessSpec {
            runtime: raw.runtime.clone(),
            handshake_timeout: raw
                .handshake_timeout_secs
                .map_or(d.handshake_timeout, Duration::from_secs),
            max_result_bytes: raw.max_result_bytes.unwrap_or(d.max_result_bytes),
            watch: raw.watch.unwrap_or(d.watch),
            ..d
        }));
    }
    let target = match (&raw.command, &raw.url, &raw.mcpb) {
        (Some(CommandLine::Line(line)), _, _) => match Target::parse(line) {
            Ok(t @ Target::Command { .. }) => t,
            Ok(_) => {
                return Err((
                    "command",
                    format!("`{line}` is an address: write it as url = … or mcpb = …"),
                ));
            }
            Err(e) => return Err(("command", e.to_string())),
        },
        (Some(CommandLine::Words(words)), _, _) => {
            if words.first().is_none_or(|w| w.trim().is_empty()) {
                return Err(("command", "the command line is empty".into()));
            }
            Target::Command {
                argv: words.clone(),
            }
        }
        (_, Some(url), _) => {
            let lower = url.trim().to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                return Err((
                    "url",
                    format!(
                        "`{url}` is not an http:// or https:// URL (for MCPB, write mcpb = \"HOST:PORT\")"
                    ),
                ));
            }
            Target::Url(url.trim().to_owned())
        }
        (_, _, Some(addr)) => mcpb_target(addr).map_err(|e| ("mcpb", e))?,
        _ => unreachable!("one kind was found above"),
    };
    let tls = upstream_tls(raw, &target, base)?;
    let credentials = RawCredentials {
        bearer_env: raw.bearer_env.as_ref(),
        bearer_file: raw.bearer_file.as_ref(),
        headers: &raw.headers,
        header_env: &raw.header_env,
        oauth: raw.oauth.as_ref(),
    };
    let credentials = if credentials.is_set() {
        credentials.resolve(base, &target)?
    } else {
        CredentialsSpec::default()
    };
    let d = UpstreamSpec::new(target);
    Ok(BackendSource::Upstream(UpstreamSpec {
        tls,
        credentials,
        handshake_timeout: raw
            .handshake_timeout_secs
            .map_or(d.handshake_timeout, Duration::from_secs),
        call_timeout: raw.call_timeout_secs.map(Duration::from_secs),
        shared: raw.shared,
        max_sessions: raw.max_sessions.unwrap_or(d.max_sessions),
        era: raw.era.map_or(d.era, EraChoice::from),
        ..d
    }))
}

/// An upstream's `ca`, `client_cert` and `client_key`: for TLS targets only, the two
/// halves of a client certificate together.
fn upstream_tls(raw: &RawBackend, target: &Target, base: &Path) -> Result<ClientTls, Refusal> {
    let tls = ClientTls {
        ca: raw.ca.as_ref().map(|p| base.join(p)),
        cert: raw.client_cert.as_ref().map(|p| base.join(p)),
        key: raw.client_key.as_ref().map(|p| base.join(p)),
    };
    if tls == ClientTls::default() {
        return Ok(tls);
    }
    let secure = match target {
        Target::Url(url) => url.to_ascii_lowercase().starts_with("https://"),
        Target::Mcpb { tls, .. } => *tls,
        Target::Command { .. } => false,
    };
    let key = if raw.ca.is_some() {
        "ca"
    } else if raw.client_cert.is_some() {
        "client_cert"
    } else {
        "client_key"
    };
    if !secure {
        return Err((
            key,
            format!(
                "`{key}` is for TLS upstreams (url = \"https://…\", mcpb = \"mcpbs://…\"), not {target}"
            ),
        ));
    }
    if tls.cert.is_some() != tls.key.is_some() {
        let missing = if tls.cert.is_some() {
            "client_key"
        } else {
            "client_cert"
        };
        return Err((
            missing,
            format!(
                "a client certificate needs both client_cert and client_key: `{missing}` is missing"
            ),
        ));
    }
    Ok(tls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listen::Scheme;

    fn load(text: &str) -> Result<GatewayConfig, ConfigError> {
        GatewayConfig::from_toml(Path::new("conf/mcpwire.toml"), text)
    }

    #[test]
    fn a_full_file() {
        let c = load(
            r#"
[server]
name = "gw"
prefix = "always"
call_timeout_secs = 60

[[listen]]
url = "http://127.0.0.1:0/mcp"
max_sessions = 5

[[listen]]
url = "mcpb://127.0.0.1:0"
tokens = ["t"]

[backends.zeta]
native = "demo"

[backends.tools]
process = "tools.py"
watch = true
include = ["a*"]
rename = { add = "plus" }
fail = "closed"

[backends.fs]
command = ["npx", "-y", "server fs"]

[backends.web]
url = "https://example.com/mcp"

[backends.gw]
mcpb = "127.0.0.1:9000"
"#,
        )
        .unwrap();
        assert_eq!(c.server.name, "gw");
        assert_eq!(c.server.prefix, PrefixMode::Always);
        assert_eq!(c.server.call_timeout, Some(Duration::from_secs(60)));
        let schemes: Vec<Scheme> = c.listeners.iter().map(|l| l.scheme).collect();
        assert_eq!(schemes, [Scheme::Http, Scheme::Mcpb]);
        let names: Vec<&str> = c.backends.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["zeta", "tools", "fs", "web", "gw"],
            "the order written"
        );
        let BackendSource::Process(p) = &c.backends[1].source else {
            panic!("a process backend")
        };
        assert_eq!(p.file, Path::new("conf/tools.py"), "relative to the file");
        assert!(p.watch);
        assert_eq!(c.backends[1].member.fail, FailMode::Closed);
        assert_eq!(c.backends[1].member.rename["add"], "plus");
        assert_eq!(
            c.backends[2].source,
            BackendSource::Upstream(UpstreamSpec::new(Target::Command {
                argv: vec!["npx".into(), "-y".into(), "server fs".into()]
            }))
        );
        assert_eq!(c.backends[4].source.kind(), "upstream");
    }

    #[test]
    fn listeners_default_to_stdio() {
        let c = load("[backends.d]\nnative = \"demo\"\n").unwrap();
        assert_eq!(c.listeners.len(), 1);
        assert!(c.listeners[0].is_stdio());
    }

    #[test]
    fn admin_section_names_the_admin_listener() {
        let c = load("[admin]\nlisten = \"127.0.0.1:9100\"\n[backends.d]\nnative = \"demo\"\n")
            .unwrap();
        let admin = c.admin.expect("an admin listener");
        assert_eq!(admin.listen, "127.0.0.1:9100".parse().unwrap());
        assert!(
            load("[backends.d]\nnative = \"demo\"\n")
                .unwrap()
                .admin
                .is_none()
        );
        let e = refused("[admin]\nlisten = \"localhost\"\n[backends.d]\nnative = \"demo\"\n");
        assert!(
            e.starts_with("conf/mcpwire.toml:2:10: admin.listen: invalid socket address"),
            "{e}"
        );
    }

    #[test]
    fn tls_listeners_and_upstreams() {
        let c = load(
            r#"
[[listen]]
url = "tcps://127.0.0.1:9443"
tls = { cert = "c.pem", key = "/etc/k.pem", client_ca = "ca.pem", client_auth = "optional" }

[backends.web]
url = "https://example.com/mcp"
ca = "internal.pem"
"#,
        )
        .unwrap();
        let l = &c.listeners[0];
        assert_eq!(l.url(), "mcpbs://127.0.0.1:9443");
        let tls = l.tls.as_ref().expect("tls");
        assert_eq!(tls.cert, Path::new("conf/c.pem"), "relative to the file");
        assert_eq!(tls.key, Path::new("/etc/k.pem"));
        assert_eq!(tls.client_ca.as_deref(), Some(Path::new("conf/ca.pem")));
        assert_eq!(tls.client_auth, mcpwire_server::tls::ClientAuth::Optional);
        let BackendSource::Upstream(up) = &c.backends[0].source else {
            panic!("an upstream")
        };
        assert_eq!(up.tls.ca.as_deref(), Some(Path::new("conf/internal.pem")));

        for (text, says) in [
            (
                "[[listen]]\nurl = \"http://127.0.0.1:1/mcp\"\ntls = { cert = \"c\", key = \"k\" }\n",
                "listen[0].tls: `tls` is set but `http://127.0.0.1:1/mcp` is not a TLS URL: write https://",
            ),
            (
                "[[listen]]\nurl = \"wss://127.0.0.1:1/mcp\"\ntls = { cert = \"c\", key = \"k\", client_auth = \"optional\" }\n",
                "listen[0].tls: `tls.client_auth` needs `tls.client_ca`",
            ),
            (
                "[[listen]]\nurl = \"grpcs://127.0.0.1:1\"\ntls = { cert = \"c\" }\n",
                "listen[0].tls: missing field `key`",
            ),
            (
                "[backends.w]\nurl = \"http://example.com/mcp\"\nca = \"ca.pem\"\n",
                "backends.w.ca: `ca` is for TLS upstreams",
            ),
            (
                "[backends.w]\nmcpb = \"mcpbs://gw.local:1\"\nclient_cert = \"c.pem\"\n",
                "backends.w.client_key: a client certificate needs both",
            ),
            (
                "[backends.w]\nnative = \"demo\"\nca = \"ca.pem\"\n",
                "backends.w.ca: `ca` is an option of upstream backends",
            ),
        ] {
            let e = refused(&format!("{text}[backends.d]\nnative = \"demo\"\n"));
            assert!(e.contains(says), "{says}\n{e}");
        }
    }

    fn refused(text: &str) -> String {
        load(text).unwrap_err().to_string()
    }

    #[test]
    fn refusals_name_file_line_and_key() {
        let cases = [
            (
                "[backends.d]\nnative = \"demo\"\nnatve = 1\n",
                "conf/mcpwire.toml:3:1: backends.d.natve: unknown field `natve`",
            ),
            (
                "[[listen]]\nurl = \"stdio\"\n\n[[listen]]\nurl = \"http://127.0.0.1:1\"\nmax_sessions = \"many\"\n[backends.d]\nnative = \"x\"\n",
                "conf/mcpwire.toml:6:16: listen[1].max_sessions: invalid type: string \"many\"",
            ),
            (
                "[[listen]]\nurl = \"https://127.0.0.1:1/mcp\"\n[backends.d]\nnative = \"x\"\n",
                "conf/mcpwire.toml:2:7: listen[0].url: `https://127.0.0.1:1/mcp` is a TLS listener: give its certificate and key",
            ),
            (
                "[[listen]]\nurl = \"grpc://127.0.0.1:1\"\ntokens = [\"x\"]\n[backends.d]\nnative = \"x\"\n",
                "conf/mcpwire.toml:3:10: listen[0].tokens: `tokens` is an option of mcpb:// listeners, not of grpc://",
            ),
            (
                "[backends.fs]\ncommand = \"npx x\"\nruntime = \"node\"\n",
                "conf/mcpwire.toml:3:11: backends.fs.runtime: `runtime` is an option of process backends, not of command backends",
            ),
            (
                "[backends.d]\nnative = \"x\"\n[policy]\n[[policy.rules]]\neffect = \"deny\"\nbackends = [\"gh\"]\n",
                "conf/mcpwire.toml:6:12: policy.rules[0].backends: no backend is named `gh`",
            ),
            (
                "[backends.d]\nnative = \"x\"\n[policy]\n[[policy.rules]]\neffect = \"maybe\"\n",
                "conf/mcpwire.toml:5:10: policy.rules[0].effect: unknown variant `maybe`",
            ),
            (
                "[backends.fs]\ncommand = \"npx x\"\nurl = \"http://x\"\n",
                "conf/mcpwire.toml:3:7: backends.fs.url: a backend is one of",
            ),
            (
                "[backends.fs]\ninclude = [\"x\"]\n",
                "conf/mcpwire.toml:1:11: backends.fs: say what this backend is",
            ),
            (
                "[backends.\"a.b\"]\nnative = \"x\"\n",
                "conf/mcpwire.toml:1:11: backends.\"a.b\": `a.b` is not a backend name",
            ),
            (
                "[server]\nprefix = \"sometimes\"\n[backends.d]\nnative = \"x\"\n",
                "conf/mcpwire.toml:2:10: server.prefix: unknown variant `sometimes`",
            ),
            (
                "[backends.fs]\nurl = \"ws://x/mcp\"\n",
                "conf/mcpwire.toml:2:7: backends.fs.url: `ws://x/mcp` is not an http:// or https:// URL",
            ),
            (
                "[backends.fs]\nmcpb = \"nowhere\"\n",
                "conf/mcpwire.toml:2:8: backends.fs.mcpb: `nowhere` is not an MCPB address",
            ),
            (
                "[[listen]]\nurl = \"http://127.0.0.1:8000/a\"\n[[listen]]\nurl = \"mcpb://127.0.0.1:8000\"\n[backends.d]\nnative = \"x\"\n",
                "conf/mcpwire.toml:3:1: listen[1]: 127.0.0.1:8000 is already listened on by listener 1",
            ),
            ("", "conf/mcpwire.toml: nothing to serve"),
            (
                "[backends.d]\nnative = \"x\"\nrename = { a = \"b c\" }\n",
                "conf/mcpwire.toml:3:16: backends.d.rename.a: `b c` cannot be a tool or prompt name",
            ),
            ("[backends\n", "conf/mcpwire.toml:1:"),
        ];
        for (text, says) in cases {
            let e = refused(text);
            assert!(e.starts_with(says), "{text:?}\n  got: {e}\n want: {says}");
        }
    }
}
