//! Protocol revisions and the dialects they imply.

use std::fmt;

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
}

/// How errors, capabilities and results are spelled on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Standard MCP (every dated revision).
    Mcp,
    /// bb-mcp-server 1.0: boolean capabilities and its own error codes.
    Bb,
}

impl Revision {
    /// Every revision, oldest first.
    pub const ALL: [Revision; 6] = [
        Revision::Bb1_0,
        Revision::V2024_11_05,
        Revision::V2025_03_26,
        Revision::V2025_06_18,
        Revision::V2025_11_25,
        Revision::V2026_07_28,
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
        }
    }

    /// Parses a wire revision string; `None` for unknown ones.
    pub fn parse(s: &str) -> Option<Revision> {
        Revision::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// The dialect this revision speaks.
    pub const fn dialect(self) -> Dialect {
        match self {
            Revision::Bb1_0 => Dialect::Bb,
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
    pub fn negotiate(requested: &str) -> Revision {
        match Revision::parse(requested) {
            Some(r) if !r.is_stateless() => r,
            _ => Revision::LATEST_STATEFUL,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_echoes_known_and_falls_back_to_latest() {
        assert_eq!(Revision::negotiate("2025-06-18"), Revision::V2025_06_18);
        assert_eq!(Revision::negotiate("2025-11-25"), Revision::V2025_11_25);
        assert_eq!(Revision::negotiate("1.0"), Revision::Bb1_0);
        assert_eq!(Revision::negotiate("2099-01-01"), Revision::LATEST_STATEFUL);
        assert_eq!(Revision::negotiate("2026-07-28"), Revision::LATEST_STATEFUL);
    }

    #[test]
    fn round_trips_every_revision() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
    }
}
