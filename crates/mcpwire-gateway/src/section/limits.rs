//! `[limits]`: rate and connection limits for every listener of `mcpwire serve`.
//! Decisions: `docs/design/limits.md`.
//!
//! ```toml
//! [limits]
//! per_identity = "600/min"   # calls per caller (subject; the anonymous caller shares one)
//! per_ip = "100/s"           # calls per client address (network listeners)
//! per_tool = "50/s"          # calls of one tool, by every caller together
//! connections_per_ip = 64    # open connections per client address
//! max_keys = 10000           # identities / addresses / tools each limiter remembers
//! ```

use serde::Deserialize;

use crate::limits::{DEFAULT_MAX_KEYS, Rate};

/// `[limits]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    per_identity: Option<String>,
    per_ip: Option<String>,
    per_tool: Option<String>,
    connections_per_ip: Option<u32>,
    max_keys: Option<usize>,
}

/// The limits of one gateway, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Calls per identity.
    pub per_identity: Option<Rate>,
    /// Calls per client IP.
    pub per_ip: Option<Rate>,
    /// Calls per tool.
    pub per_tool: Option<Rate>,
    /// Open connections per client IP.
    pub connections_per_ip: Option<u32>,
    /// Keys each rate limiter keeps at most.
    pub max_keys: usize,
}

impl Default for LimitsConfig {
    /// No limit.
    fn default() -> LimitsConfig {
        LimitsConfig {
            per_identity: None,
            per_ip: None,
            per_tool: None,
            connections_per_ip: None,
            max_keys: crate::limits::DEFAULT_MAX_KEYS,
        }
    }
}

impl RawLimits {
    /// The checked limits, or the key at fault (below `limits`) and why.
    pub(crate) fn check(self) -> Result<LimitsConfig, (String, String)> {
        let rate = |key: &str, v: Option<String>| -> Result<Option<Rate>, (String, String)> {
            v.map(|t| Rate::parse(&t).map_err(|m| (key.to_owned(), m)))
                .transpose()
        };
        if self.connections_per_ip == Some(0) {
            return Err((
                "connections_per_ip".to_owned(),
                "0 would refuse every connection: leave the key out for no limit".to_owned(),
            ));
        }
        if self.max_keys.is_some_and(|n| n < 2) {
            return Err(("max_keys".to_owned(), "at least 2".to_owned()));
        }
        Ok(LimitsConfig {
            per_identity: rate("per_identity", self.per_identity)?,
            per_ip: rate("per_ip", self.per_ip)?,
            per_tool: rate("per_tool", self.per_tool)?,
            connections_per_ip: self.connections_per_ip,
            max_keys: self.max_keys.unwrap_or(DEFAULT_MAX_KEYS),
        })
    }
}

impl LimitsConfig {
    /// Whether any call rate is limited.
    pub fn limits_calls(&self) -> bool {
        self.per_identity.is_some() || self.per_ip.is_some() || self.per_tool.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<LimitsConfig, (String, String)> {
        toml::from_str::<RawLimits>(text).unwrap().check()
    }

    #[test]
    fn the_shape_and_its_refusals() {
        let ok = parse("per_identity = \"10/min\"\nconnections_per_ip = 3\n").unwrap();
        assert!(ok.per_identity.is_some() && ok.per_ip.is_none());
        assert_eq!(ok.connections_per_ip, Some(3));
        assert_eq!(ok.max_keys, DEFAULT_MAX_KEYS);
        assert_eq!(parse("per_ip = \"5/week\"").unwrap_err().0, "per_ip");
        assert_eq!(parse("per_tool = \"0/s\"").unwrap_err().0, "per_tool");
        assert_eq!(
            parse("connections_per_ip = 0").unwrap_err().0,
            "connections_per_ip"
        );
        assert!(toml::from_str::<RawLimits>("per_user = \"1/s\"").is_err());
    }
}
