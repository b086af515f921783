//! A `[backends.NAME]` table: its keys, and the backend they describe.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcpwire_federation::Glob;
use serde::Deserialize;
use serde::de::{SeqAccess, Visitor};

use super::Refusal;
use crate::config::{BackendSource, FailMode, ProcessSpec, UpstreamSpec, mcpb_target};
use crate::credentials::{CredentialsSpec, RawCredentials};
use mcpwire_client::{EraChoice, Target};
use mcpwire_server::tls::ClientTls;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBackend {
    native: Option<String>,
    process: Option<PathBuf>,
    command: Option<CommandLine>,
    args: Option<Vec<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    mcpb: Option<String>,
    openapi: Option<String>,
    grpc: Option<String>,
    descriptors: Option<PathBuf>,
    #[serde(default)]
    services: Vec<String>,
    max_stream_messages: Option<usize>,
    base_url: Option<String>,
    max_response_bytes: Option<u64>,
    refresh_secs: Option<u64>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    exclude_tags: Vec<String>,
    #[serde(default)]
    paths: Vec<Glob>,
    #[serde(default)]
    exclude_paths: Vec<Glob>,
    #[serde(default)]
    operations: Vec<Glob>,
    #[serde(default)]
    exclude_operations: Vec<Glob>,
    runtime: Option<String>,
    handshake_timeout_secs: Option<u64>,
    max_result_bytes: Option<u64>,
    watch: Option<bool>,
    call_timeout_secs: Option<u64>,
    relay: Option<bool>,
    shared: Option<bool>,
    max_sessions: Option<usize>,
    session_idle_secs: Option<u64>,
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
    pub(super) include: Vec<Glob>,
    #[serde(default)]
    pub(super) exclude: Vec<Glob>,
    #[serde(default)]
    pub(super) rename: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) fail: FailMode,
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

pub(super) fn backend_source(raw: &RawBackend, base: &Path) -> Result<BackendSource, Refusal> {
    let kinds: Vec<&'static str> = [
        ("native", raw.native.is_some()),
        ("process", raw.process.is_some()),
        ("command", raw.command.is_some()),
        ("url", raw.url.is_some()),
        ("mcpb", raw.mcpb.is_some()),
        ("openapi", raw.openapi.is_some()),
        ("grpc", raw.grpc.is_some()),
    ]
    .into_iter()
    .filter_map(|(k, set)| set.then_some(k))
    .collect();
    match kinds.as_slice() {
        [] => {
            return Err((
                "",
                "say what this backend is: native = \"demo\", process = \"FILE\", \
                 command = \"COMMAND LINE\", url = \"http(s)://…\", mcpb = \"HOST:PORT\", \
                 openapi = \"FILE or URL\" or grpc = \"http(s)://HOST:PORT\""
                    .into(),
            ));
        }
        [_] => {}
        [first, second, ..] => {
            return Err((
                second,
                format!(
                    "a backend is one of native, process, command, url, mcpb, openapi or grpc: this one already has `{first}`"
                ),
            ));
        }
    }
    let kind = kinds[0];
    only_of(
        raw.process.is_some(),
        &[
            ("runtime", raw.runtime.is_some()),
            ("max_result_bytes", raw.max_result_bytes.is_some()),
            ("watch", raw.watch.is_some()),
        ],
        "process backends",
        kind,
    )?;
    only_of(
        raw.command.is_some(),
        &[
            ("args", raw.args.is_some()),
            ("env", !raw.env.is_empty()),
            ("cwd", raw.cwd.is_some()),
        ],
        "command backends",
        kind,
    )?;
    if let Some(name) = raw
        .env
        .keys()
        .find(|k| k.is_empty() || k.contains(['=', '\0']))
    {
        return Err((
            "env",
            format!("`{name}` cannot be an environment variable's name"),
        ));
    }
    let openapi = raw.openapi.is_some();
    let grpc = raw.grpc.is_some();
    only_of(
        grpc,
        &[
            ("descriptors", raw.descriptors.is_some()),
            ("services", !raw.services.is_empty()),
            ("max_stream_messages", raw.max_stream_messages.is_some()),
        ],
        "grpc backends",
        kind,
    )?;
    only_of(
        openapi,
        &[
            ("base_url", raw.base_url.is_some()),
            ("max_response_bytes", raw.max_response_bytes.is_some()),
            ("refresh_secs", raw.refresh_secs.is_some()),
            ("tags", !raw.tags.is_empty()),
            ("exclude_tags", !raw.exclude_tags.is_empty()),
            ("paths", !raw.paths.is_empty()),
            ("exclude_paths", !raw.exclude_paths.is_empty()),
            ("operations", !raw.operations.is_empty()),
            ("exclude_operations", !raw.exclude_operations.is_empty()),
        ],
        "openapi backends",
        kind,
    )?;
    let upstream_only = [
        ("relay", raw.relay.is_some()),
        ("shared", raw.shared.is_some()),
        ("max_sessions", raw.max_sessions.is_some()),
        ("session_idle_secs", raw.session_idle_secs.is_some()),
        ("era", raw.era.is_some()),
        (
            "handshake_timeout_secs",
            openapi && raw.handshake_timeout_secs.is_some(),
        ),
    ];
    let upstream = raw.command.is_some() || raw.url.is_some() || raw.mcpb.is_some();
    only_of(
        upstream || openapi || grpc,
        &[
            ("call_timeout_secs", raw.call_timeout_secs.is_some()),
            ("ca", raw.ca.is_some()),
            ("client_cert", raw.client_cert.is_some()),
            ("client_key", raw.client_key.is_some()),
        ],
        "upstream, openapi and grpc backends",
        kind,
    )?;
    let credential_keys = [
        ("bearer_env", raw.bearer_env.is_some()),
        ("bearer_file", raw.bearer_file.is_some()),
        ("headers", !raw.headers.is_empty()),
        ("header_env", !raw.header_env.is_empty()),
        ("oauth", raw.oauth.is_some()),
    ];
    only_of(
        upstream || openapi || grpc,
        &credential_keys,
        "url, openapi and grpc (and, for a token, mcpb) backends",
        kind,
    )?;
    only_of(
        upstream,
        &upstream_only,
        "upstream backends (command, url, mcpb)",
        kind,
    )?;
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
        ("max_response_bytes", raw.max_response_bytes == Some(0)),
        ("refresh_secs", raw.refresh_secs == Some(0)),
        ("max_stream_messages", raw.max_stream_messages == Some(0)),
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
    if let Some(document) = &raw.openapi {
        return openapi_source(raw, document, base);
    }
    if let Some(url) = &raw.grpc {
        return grpc_source(raw, url, base);
    }
    let target = match (&raw.command, &raw.url, &raw.mcpb) {
        (Some(command), _, _) if raw.args.is_some() => {
            let CommandLine::Line(program) = command else {
                return Err((
                    "command",
                    "with `args`, `command` is the program alone (a string); or give the whole \
                     command line as an array and no `args`"
                        .into(),
                ));
            };
            if program.trim().is_empty() {
                return Err(("command", "the program is empty".into()));
            }
            let mut argv = vec![program.clone()];
            argv.extend(raw.args.iter().flatten().cloned());
            Target::Command { argv }
        }
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
            Target::url(url).map_err(|e| ("url", e.to_string()))?
        }
        (_, _, Some(addr)) => mcpb_target(addr).map_err(|e| ("mcpb", e))?,
        _ => unreachable!("one kind was found above"),
    };
    let tls = upstream_tls(raw, &target, base)?;
    let credentials = credentials_of(raw, base, &target)?;
    let d = UpstreamSpec::new(target);
    Ok(BackendSource::Upstream(UpstreamSpec {
        tls,
        credentials,
        handshake_timeout: raw
            .handshake_timeout_secs
            .map_or(d.handshake_timeout, Duration::from_secs),
        call_timeout: raw.call_timeout_secs.map(Duration::from_secs),
        relay: raw.relay.unwrap_or(d.relay),
        shared: raw.shared,
        max_sessions: raw.max_sessions.unwrap_or(d.max_sessions),
        // 0: kept until the downstream session ends.
        session_idle: match raw.session_idle_secs {
            Some(0) => None,
            Some(secs) => Some(Duration::from_secs(secs)),
            None => d.session_idle,
        },
        era: raw.era.map_or(d.era, EraChoice::from),
        env: raw.env.clone(),
        cwd: raw.cwd.as_ref().map(|dir| base.join(dir)),
        ..d
    }))
}

/// The backend's credential keys, their secrets resolved, for requests to `target`.
fn credentials_of(
    raw: &RawBackend,
    base: &Path,
    target: &Target,
) -> Result<CredentialsSpec, Refusal> {
    let credentials = RawCredentials {
        bearer_env: raw.bearer_env.as_ref(),
        bearer_file: raw.bearer_file.as_ref(),
        headers: &raw.headers,
        header_env: &raw.header_env,
        oauth: raw.oauth.as_ref(),
    };
    if credentials.is_set() {
        credentials.resolve(base, target)
    } else {
        Ok(CredentialsSpec::default())
    }
}

/// `grpc = …` and its keys.
fn grpc_source(raw: &RawBackend, url: &str, base: &Path) -> Result<BackendSource, Refusal> {
    let lower = url.trim().to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err((
            "grpc",
            format!("`{url}` is not an http:// or https:// address (https for TLS)"),
        ));
    }
    let target = Target::url(url.trim()).map_err(|e| ("grpc", e.to_string()))?;
    let tls = upstream_tls(raw, &target, base)?;
    if raw.oauth.as_ref().is_some_and(|o| o.is_per_user()) {
        return Err((
            "oauth",
            "a grpc backend authenticates as the gateway: use the client_credentials or \
             jwt_bearer grant (authorization_code is per user)"
                .into(),
        ));
    }
    let credentials = credentials_of(raw, base, &target)?;
    Ok(BackendSource::Grpc(crate::grpc::GrpcSpec {
        url: url.trim().to_owned(),
        descriptors: raw.descriptors.as_ref().map(|d| base.join(d)),
        services: raw.services.clone(),
        tls,
        credentials,
        call_timeout: Duration::from_secs(raw.call_timeout_secs.unwrap_or(30)),
        max_stream_messages: raw.max_stream_messages.unwrap_or(1000),
    }))
}

/// `openapi = …` and its keys.
fn openapi_source(raw: &RawBackend, document: &str, base: &Path) -> Result<BackendSource, Refusal> {
    use crate::openapi::{OpenApiSelection, OpenApiSpec};
    use mcpwire_openapi::Source;
    let http = |u: &str| {
        let l = u.trim().to_ascii_lowercase();
        l.starts_with("http://") || l.starts_with("https://")
    };
    let source = if http(document) {
        Target::url(document).map_err(|e| ("openapi", e.to_string()))?;
        Source::Url(document.trim().to_owned())
    } else if document.contains("://") {
        return Err((
            "openapi",
            format!("`{document}`: give a file or an http(s):// URL"),
        ));
    } else {
        Source::File(base.join(document))
    };
    if let Some(b) = &raw.base_url
        && !http(b)
    {
        return Err((
            "base_url",
            format!("`{b}` is not an http:// or https:// URL"),
        ));
    }
    // Credentials and TLS concern the service, where requests go.
    let service = raw
        .base_url
        .as_deref()
        .or(http(document).then_some(document));
    let target = match service {
        Some(u) => Target::url(u).map_err(|e| ("base_url", e.to_string()))?,
        None => Target::Url("https://service.invalid/".into()),
    };
    let tls = upstream_tls(raw, &target, base)?;
    if raw.oauth.as_ref().is_some_and(|o| o.is_per_user()) {
        return Err((
            "oauth",
            "an openapi backend authenticates as the gateway: use the client_credentials or \
             jwt_bearer grant (authorization_code is per user)"
                .into(),
        ));
    }
    let credentials = credentials_of(raw, base, &target)?;
    Ok(BackendSource::OpenApi(OpenApiSpec {
        document: document.to_owned(),
        source,
        base_url: raw.base_url.clone(),
        tls,
        credentials,
        call_timeout: Duration::from_secs(raw.call_timeout_secs.unwrap_or(30)),
        max_response_bytes: raw
            .max_response_bytes
            .map_or(4 << 20, |b| usize::try_from(b).unwrap_or(usize::MAX)),
        refresh: raw.refresh_secs.map(Duration::from_secs),
        select: OpenApiSelection {
            tags: raw.tags.clone(),
            exclude_tags: raw.exclude_tags.clone(),
            paths: raw.paths.clone(),
            exclude_paths: raw.exclude_paths.clone(),
            operations: raw.operations.clone(),
            exclude_operations: raw.exclude_operations.clone(),
        },
    }))
}

/// Refuses the first key set in `keys` unless the backend is of the kind they belong to
/// (`is_of`): `` `KEY` is an option of OF, not of KIND backends ``.
fn only_of(
    is_of: bool,
    keys: &[(&'static str, bool)],
    of: &str,
    kind: &str,
) -> Result<(), Refusal> {
    match keys.iter().find(|(_, set)| *set) {
        Some((key, _)) if !is_of => Err((
            key,
            format!("`{key}` is an option of {of}, not of {kind} backends"),
        )),
        _ => Ok(()),
    }
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
