//! Backends from another MCP host's configuration (`mcpwire serve --mcp-servers FILE`):
//! Claude Desktop's and Cursor's `{"mcpServers": {NAME: {...}}}` (Claude Code's `.mcp.json`
//! too), VS Code's `{"servers": {NAME: {"type": …}}}` (`.vscode/mcp.json`) or the same
//! under `"mcp"` (its `settings.json`). Comments and trailing commas are allowed (VS Code
//! writes JSONC). Fields mcpwire does not use are ignored — these are other tools' files —
//! but an unknown `type` is refused. Decisions: `docs/design/gateway.md` § Importing
//! mcpServers.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::config::{BackendSource, BackendSpec, UpstreamSpec};
use crate::credentials::RawCredentials;
use crate::error::ConfigError;
use crate::file::Ordered;
use mcpwire_client::Target;

mod jsonc;
mod vars;

/// One server entry, as the hosts write it (unknown fields ignored).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Entry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Vec<String>,
    env: Ordered<serde_json::Value>,
    cwd: Option<String>,
    url: Option<String>,
    headers: std::collections::BTreeMap<String, String>,
    disabled: bool,
}

/// The file's top level: where the servers are.
#[derive(Debug, Deserialize)]
struct Top {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<Ordered<serde_json::Value>>,
    servers: Option<Ordered<serde_json::Value>>,
    mcp: Option<Nested>,
}

#[derive(Debug, Deserialize)]
struct Nested {
    servers: Option<Ordered<serde_json::Value>>,
}

/// Reads the `mcpServers` (or `servers`) file at `path` into backends, in the file's
/// order. Names are made backend names (characters other than `A-Z a-z 0-9 _ -` become
/// `-`); disabled entries and `sse` ones (a transport mcpwire does not speak) are left out
/// with a warning.
pub fn mcp_servers(path: &Path) -> Result<Vec<BackendSpec>, ConfigError> {
    let refuse = |key: Option<String>, message: String| ConfigError {
        place: path.display().to_string(),
        key,
        message,
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| refuse(None, format!("cannot read the servers file: {e}")))?;
    let json = jsonc::to_json(&text);
    let top: Top = serde_json::from_str(&json).map_err(|e| ConfigError {
        place: format!("{}:{}:{}", path.display(), e.line(), e.column()),
        key: None,
        message: format!("not a JSON servers file: {e}"),
    })?;
    let (section, servers) = match (top.mcp_servers, top.servers, top.mcp) {
        (Some(s), _, _) => ("mcpServers", s),
        (None, Some(s), _) => ("servers", s),
        (None, None, Some(Nested { servers: Some(s) })) => ("mcp.servers", s),
        _ => {
            return Err(refuse(
                None,
                "no servers in it: expected {\"mcpServers\": {…}} (Claude Desktop, Cursor) or \
                 {\"servers\": {…}} (VS Code)"
                    .into(),
            ));
        }
    };
    let vars = vars::Vars::for_file(path);
    let mut backends = Vec::new();
    for (name, value) in servers.0 {
        let key = format!("{section}.{name}");
        let entry: Entry =
            serde_json::from_value(value).map_err(|e| refuse(Some(key.clone()), e.to_string()))?;
        let at = |field: &str| Some(format!("{key}.{field}"));
        if entry.disabled {
            tracing::warn!(server = %name, file = %path.display(), "left out: it is disabled");
            continue;
        }
        let kind = entry.kind.as_deref().map(str::to_ascii_lowercase);
        let remote = match kind.as_deref() {
            None => entry.command.is_none() && entry.url.is_some(),
            Some("stdio") => false,
            Some("http" | "streamable-http" | "streamablehttp" | "streamable_http") => true,
            Some("sse") => {
                tracing::warn!(
                    server = %name,
                    file = %path.display(),
                    "left out: type `sse` (the 2024-11-05 HTTP+SSE transport) is not supported; \
                     if the server also speaks Streamable HTTP, add it with its /mcp URL"
                );
                continue;
            }
            Some(other) => {
                return Err(refuse(
                    at("type"),
                    format!("unknown type `{other}`: mcpwire serves stdio and http servers"),
                ));
            }
        };
        let expand = |field: &str, s: &str| vars.expand(s).map_err(|m| refuse(at(field), m));
        let source = if remote {
            let url = entry
                .url
                .as_deref()
                .ok_or_else(|| refuse(Some(key.clone()), "an http server needs a `url`".into()))?;
            let target =
                Target::url(&expand("url", url)?).map_err(|e| refuse(at("url"), e.to_string()))?;
            let mut headers = std::collections::BTreeMap::new();
            for (h, v) in &entry.headers {
                headers.insert(h.clone(), expand("headers", v)?);
            }
            let mut spec = UpstreamSpec::new(target.clone());
            if !headers.is_empty() {
                let none = std::collections::BTreeMap::new();
                let raw = RawCredentials {
                    bearer_env: None,
                    bearer_file: None,
                    headers: &headers,
                    header_env: &none,
                    oauth: None,
                };
                spec.credentials = raw
                    .resolve(Path::new(""), &target)
                    .map_err(|(k, m)| refuse(at(k), m))?;
            }
            spec
        } else {
            let command = entry.command.as_deref().ok_or_else(|| {
                refuse(
                    Some(key.clone()),
                    "a stdio server needs a `command` (or a `url` for a remote one)".into(),
                )
            })?;
            let mut argv = vec![expand("command", command)?];
            for a in &entry.args {
                argv.push(expand("args", a)?);
            }
            let mut spec = UpstreamSpec::new(Target::Command { argv });
            for (k, v) in &entry.env.0 {
                let value = match v {
                    serde_json::Value::String(s) => expand("env", s)?,
                    serde_json::Value::Number(_) | serde_json::Value::Bool(_) => v.to_string(),
                    _ => return Err(refuse(at("env"), format!("`{k}` is not a string"))),
                };
                spec.env.insert(k.clone(), value);
            }
            if let Some(dir) = &entry.cwd {
                spec.cwd = Some(vars.workspace().join(PathBuf::from(expand("cwd", dir)?)));
            }
            spec
        };
        backends.push(BackendSpec::new(
            backend_name(&name),
            BackendSource::Upstream(source),
        ));
    }
    Ok(backends)
}

/// A server's name as a backend name: `A-Z a-z 0-9 _ -`, at most 64.
fn backend_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        out.push_str("server");
    }
    out
}

#[cfg(test)]
mod tests;
