//! Reading what negotiation returns: a `server/discover` result (2026-07-28) or an
//! `initialize` result, and a −32022 refusal's `supported` list.

use mcpwire_model::types::{
    Implementation, InitializeResult, META_SERVER_INFO, ServerCapabilities,
};
use mcpwire_model::{ErrorObject, McpError, Raw, Revision, codes};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The era a client session settled on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientEra {
    /// `initialize` negotiated this (stateful) revision.
    Handshake(Revision),
    /// 2026-07-28: every request carries its own `_meta` envelope.
    Stateless,
}

impl ClientEra {
    /// The revision requests are spoken in.
    pub fn revision(self) -> Revision {
        match self {
            ClientEra::Handshake(r) => r,
            ClientEra::Stateless => Revision::STATELESS,
        }
    }
}

/// What negotiation settled: the era and what the server said about itself.
#[derive(Debug, Clone)]
pub struct Negotiated {
    /// The era (and revision).
    pub era: ClientEra,
    /// `serverInfo` (2026-07-28: from the discover result's `_meta`; empty when absent).
    pub server_info: Implementation,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// `instructions` for the model.
    pub instructions: Option<String>,
    /// The `initialize` or `server/discover` result as received.
    pub result: Raw,
}

#[derive(Deserialize)]
struct DiscoverWire {
    #[serde(rename = "supportedVersions")]
    supported_versions: Vec<String>,
    capabilities: ServerCapabilities,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(rename = "serverInfo", default)]
    server_info: Option<Implementation>,
    #[serde(rename = "_meta", default)]
    meta: Option<Map<String, Value>>,
}

/// A discover result that adopts 2026-07-28; `None` when it cannot be read or offers no
/// version this client speaks (the caller falls back to `initialize`, as the Python client
/// does).
pub(crate) fn read_discover(raw: &RawValue) -> Option<Negotiated> {
    let d: DiscoverWire = serde_json::from_str(raw.get()).ok()?;
    if !d.supported_versions.iter().any(|v| is_stateless(v)) {
        return None;
    }
    let server_info = d
        .meta
        .as_ref()
        .and_then(|m| m.get(META_SERVER_INFO))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .or(d.server_info)
        .unwrap_or_else(|| Implementation::new("", ""));
    Some(Negotiated {
        era: ClientEra::Stateless,
        server_info,
        capabilities: d.capabilities,
        instructions: d.instructions,
        result: raw.to_owned(),
    })
}

/// An `initialize` result in a revision this client speaks, or why not.
pub(crate) fn read_initialize(raw: &RawValue) -> Result<Negotiated, McpError> {
    let r: InitializeResult = serde_json::from_str(raw.get())
        .map_err(|e| McpError::BadPeerMessage(format!("an unreadable initialize result: {e}")))?;
    let revision = Revision::parse(&r.protocol_version)
        .filter(|r| r.dialect() == mcpwire_model::Dialect::Mcp && !r.is_stateless());
    let Some(revision) = revision else {
        return Err(McpError::UnsupportedVersion {
            requested: r.protocol_version,
            supported: handshake_versions(),
        });
    };
    Ok(Negotiated {
        era: ClientEra::Handshake(revision),
        server_info: r.server_info,
        capabilities: r.capabilities,
        instructions: r.instructions,
        result: raw.to_owned(),
    })
}

/// The handshake revisions this client speaks, newest first.
pub(crate) fn handshake_versions() -> Vec<String> {
    Revision::ALL
        .iter()
        .rev()
        .filter(|r| r.dialect() == mcpwire_model::Dialect::Mcp && !r.is_stateless())
        .map(|r| r.as_str().to_owned())
        .collect()
}

fn is_stateless(v: &str) -> bool {
    Revision::parse(v).is_some_and(Revision::is_stateless)
}

/// What a −32022 refusal lists as supported, when it is one and its data can be read.
pub(crate) fn refused_versions(e: &ErrorObject) -> Option<Vec<String>> {
    if e.code != codes::UNSUPPORTED_PROTOCOL_VERSION {
        return None;
    }
    #[derive(Deserialize)]
    struct Data {
        supported: Vec<String>,
    }
    serde_json::from_str::<Data>(e.data.as_ref()?.get())
        .ok()
        .map(|d| d.supported)
}

/// Whether a refusal's `supported` list names 2026-07-28.
pub(crate) fn lists_stateless(supported: &[String]) -> bool {
    supported.iter().any(|v| is_stateless(v))
}

/// Whether a refusal's `supported` list names a handshake revision this client speaks.
pub(crate) fn lists_handshake(supported: &[String]) -> bool {
    let ours = handshake_versions();
    supported.iter().any(|v| ours.contains(v))
}
