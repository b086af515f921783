//! Protocol revisions and the dialects they imply.

use std::fmt;

/// How the proto-mcp translator spells a proto-mcp version as an `initialize`
/// protocolVersion: `"proto-mcp/1.0.0"`.
pub const PROTO_MCP_PREFIX: &str = "proto-mcp/";

/// The proto-mcp version mcpwire implements.
pub const PROTO_MCP_VERSION: &str = "1.0.0";

/// The major number of a `MAJOR.MINOR.PATCH` version (a leading `v` and a missing minor or
/// patch are tolerated: `"1"`, `"v1.2"`); `None` when it is not a version at all.
fn semver_major(v: &str) -> Option<u64> {
    let v = v.strip_prefix('v').unwrap_or(v);
    let core = v.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    for p in parts.by_ref().take(2) {
        p.parse::<u64>().ok()?;
    }
    parts.next().is_none().then_some(major)
}

/// A protocol revision a peer can ask for, newest last.
///
/// `Bb1_0` is the bb-mcp-server 1.0 dialect: chosen when a client's `initialize` asks for
/// protocolVersion `"1.0"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Revision {
    /// The bb-mcp-server 1.0 JSON-RPC dialect.
    Bb1_0,
    /// MCP 2024-11-05 (accepted from old clients, answered as itself).
    V2024_11_05,
    /// MCP 2025-03-26.
    V2025_03_26,
    /// MCP 2025-06-18.
    V2025_06_18,
    /// MCP 2025-11-25, the newest stateful revision.
    V2025_11_25,
    /// MCP 2026-07-28, the stateless revision (no `initialize`; per-request `_meta`).
    V2026_07_28,
    /// proto-mcp 1.x (`buf.mcp.v1`), spoken through the protobuf translator: a client whose
    /// `initialize` asks for `"proto-mcp/1.Y.Z"`. Not an MCP revision: ordered last only
    /// because it carries everything 2025-06-18 added (structured output).
    ProtoMcp1,
}

/// How errors, capabilities and results are spelled on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Standard MCP (every dated revision).
    Mcp,
    /// bb-mcp-server 1.0: boolean capabilities and its own error codes.
    Bb,
    /// proto-mcp (`buf.mcp.v1`): no notifications, its own codes −33000…−33003.
    Proto,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 7] = [
        Revision::Bb1_0,
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
        Revision::ProtoMcp1,
    ];

    /// The newest revision negotiated through `initialize`.
    pub const LATEST_STATEFUL: Revision = Revision::V2025_11_25;

    /// The stateless revision.
    pub const STATELESS: Revision = Revision::V2026_07_28;

    /// The string that names this revision on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            Revision::Bb1_0 => "1.0",
            Revision::V2024_11_05 => "2024-11-05",
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
            Revision::ProtoMcp1 => "proto-mcp/1.0.0",
        }
    }

    /// Parses a JSON-RPC revision string (MCP dates, bb-1.0's `"1.0"`); `None` for unknown
    /// ones. proto-mcp versions are semver ranges, read by [`Revision::negotiate`] only.
    pub fn parse(s: &str) -> Option<Revision> {
        Revision::ALL
            .into_iter()
            .find(|r| *r != Revision::ProtoMcp1 && r.as_str() == s)
    }

    /// The dialect this revision speaks.
    pub const fn dialect(self) -> Dialect {
        match self {
            Revision::Bb1_0 => Dialect::Bb,
            Revision::ProtoMcp1 => Dialect::Proto,
            _ => Dialect::Mcp,
        }
    }

    /// Whether this revision is the stateless one (no `initialize`, per-request `_meta`).
    pub const fn is_stateless(self) -> bool {
        matches!(self, Revision::V2026_07_28)
    }

    /// The revision a server answers an `initialize` asking for `requested` with: the same
    /// revision when both sides know it and it is negotiated through `initialize`, otherwise
    /// the newest stateful revision (the client then decides whether to continue).
    ///
    /// `"proto-mcp/X.Y.Z"` is semver: major 1 → [`Revision::ProtoMcp1`] (any minor and
    /// patch), anything else → [`UnsupportedRevision`] (an `McpError::UnsupportedVersion`:
    /// −33002 in proto-mcp).
    pub fn negotiate(requested: &str) -> Result<Revision, UnsupportedRevision> {
        if let Some(v) = requested.strip_prefix(PROTO_MCP_PREFIX) {
            return match semver_major(v) {
                Some(1) => Ok(Revision::ProtoMcp1),
                _ => Err(UnsupportedRevision {
                    requested: v.to_owned(),
                    supported: vec![PROTO_MCP_VERSION.to_owned()],
                }),
            };
        }
        Ok(match Revision::parse(requested) {
            Some(r) if !r.is_stateless() => r,
            _ => Revision::LATEST_STATEFUL,
        })
    }

    /// Whether results of this revision carry `structuredContent`, `outputSchema`, titles
    /// and elicitation (2025-06-18 and later).
    pub fn has_structured_output(self) -> bool {
        self >= Revision::V2025_06_18
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A protocol version [`Revision::negotiate`] refuses (it becomes
/// `McpError::UnsupportedVersion`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported protocol version {requested} (supported: {})", supported.join(", "))]
pub struct UnsupportedRevision {
    /// The version asked for.
    pub requested: String,
    /// The versions this server speaks.
    pub supported: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_falls_back_to_latest() {
        let n = |s| Revision::negotiate(s).unwrap();
        assert_eq!(n("2025-06-18"), Revision::V2025_06_18);
        assert_eq!(n("2025-11-25"), Revision::V2025_11_25);
        assert_eq!(n("1.0"), Revision::Bb1_0);
        assert_eq!(n("2099-01-01"), Revision::LATEST_STATEFUL);
        assert_eq!(n("2026-07-28"), Revision::LATEST_STATEFUL);
    }

    #[test]
    fn proto_mcp_negotiates_by_major_version() {
        for ok in ["1.0.0", "1.7.3", "1", "v1.2", "1.0.0-rc.1"] {
            let r = Revision::negotiate(&format!("proto-mcp/{ok}"));
            assert_eq!(r, Ok(Revision::ProtoMcp1), "{ok}");
        }
        for bad in ["2.0.0", "0.9.0", "", "one", "1.x.0", "1.0.0.0"] {
            let e = Revision::negotiate(&format!("proto-mcp/{bad}")).unwrap_err();
            assert_eq!(e.supported, [PROTO_MCP_VERSION], "{bad}");
            assert_eq!(
                crate::McpError::from(e).to_wire(Revision::ProtoMcp1).code,
                -33002
            );
        }
        assert_eq!(Revision::ProtoMcp1.dialect(), Dialect::Proto);
        assert!(Revision::ProtoMcp1.has_structured_output());
    }

    #[test]
    fn round_trips_every_json_rpc_revision() {
        for r in Revision::ALL {
            let want = (r != Revision::ProtoMcp1).then_some(r);
            assert_eq!(Revision::parse(r.as_str()), want);
        }
    }
}
