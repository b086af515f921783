//! The configuration file (`mcpwire serve --config mcpwire.toml`): its TOML shape, read
//! with unknown keys refused, then checked into a [`GatewayConfig`]. Every refusal names
//! the file, line, column and key. Every key, its default and an example:
//! `docs/config.md`, which `keys.rs` checks against these types (a key added here and not
//! documented there fails the tests).
//!
//! ```toml
//! [[listen]]
//! url = "http://127.0.0.1:8000/mcp"
//!
//! [backends.fs]
//! command = "npx"
//! args = ["-y", "@modelcontextprotocol/server-filesystem", "/srv"]
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mcpwire_federation::{CatalogMode, Glob, ViewSpec};
use serde::Deserialize;
use serde::de::{MapAccess, Visitor};

use crate::config::{BackendSpec, GatewayConfig, MemberOptions, PrefixMode, ServerOptions};
use crate::error::{ConfigError, Origin};
use crate::key_path::KeyPath;
use crate::listen::{ListenOptions, ListenerSpec};

mod backend;
#[cfg(test)]
pub(crate) mod keys;

use backend::{RawBackend, backend_source};

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
    #[serde(default)]
    console_keys: Vec<String>,
    console_scope: Option<String>,
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
    catalog: Option<CatalogMode>,
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
    workers: Option<usize>,
    http_threads: Option<usize>,
    call_timeout_secs: Option<u64>,
    schema_registry: Option<PathBuf>,
    reload: Option<bool>,
    log_format: Option<mcpwire_server::observe::LogFormat>,
    catalog: Option<CatalogMode>,
    search_model: Option<PathBuf>,
}

/// A table's entries in the order written (the `toml` crate keeps it: `preserve_order`).
#[derive(Debug)]
pub(crate) struct Ordered<T>(pub(crate) Vec<(String, T)>);

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
            flags: Vec::new(),
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
                catalog: v.catalog,
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
            admin: raw.admin.map(|a| crate::config::AdminConfig {
                listen: a.listen,
                console_keys: a.console_keys,
                console_scope: a.console_scope,
            }),
            additions: Default::default(),
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
        ("workers", raw.workers),
        ("http_threads", raw.http_threads),
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
        workers: raw.workers,
        http_threads: raw.http_threads,
        call_timeout: raw.call_timeout_secs.map(Duration::from_secs),
        schema_registry: raw.schema_registry.map(|p| base.join(p)),
        reload: raw.reload.unwrap_or(d.reload),
        log_format: raw.log_format,
        catalog: raw.catalog.unwrap_or_default(),
        search_model: raw.search_model.map(|p| base.join(p)),
    })
}

#[cfg(test)]
mod tests;
