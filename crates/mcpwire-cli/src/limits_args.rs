//! The rate and connection limit flags of `serve`, `demo`, `run` and `dev`: the gateway's
//! `[limits]` section on the command line.

use anyhow::Result;
use mcpwire_gateway::LimitsConfig;
use mcpwire_gateway::limits::{DEFAULT_MAX_KEYS, Rate};

use crate::exit::UsageError;

/// Rate and connection limits (decisions: `docs/design/limits.md`).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Limits")]
pub struct LimitsArgs {
    /// Calls per caller, e.g. `600/min` (s, min or h; the anonymous caller shares one).
    #[arg(long, value_name = "RATE")]
    pub rate_per_identity: Option<String>,
    /// Calls per client IP address (network listeners), e.g. `100/s`.
    #[arg(long, value_name = "RATE")]
    pub rate_per_ip: Option<String>,
    /// Calls of one tool by every caller together, e.g. `50/s`.
    #[arg(long, value_name = "RATE")]
    pub rate_per_tool: Option<String>,
    /// Open connections per client IP address on the network listeners.
    #[arg(long, value_name = "N")]
    pub connections_per_ip: Option<u32>,
}

impl LimitsArgs {
    /// Whether any limit flag was given.
    pub fn given(&self) -> bool {
        self.rate_per_identity.is_some()
            || self.rate_per_ip.is_some()
            || self.rate_per_tool.is_some()
            || self.connections_per_ip.is_some()
    }

    /// The limits the flags describe (`None`: no flag given).
    pub fn config(&self) -> Result<Option<LimitsConfig>> {
        if !self.given() {
            return Ok(None);
        }
        let rate = |flag: &str, v: &Option<String>| -> Result<Option<Rate>> {
            v.as_deref()
                .map(|t| Rate::parse(t).map_err(|m| UsageError(format!("--{flag}: {m}")).into()))
                .transpose()
        };
        if self.connections_per_ip == Some(0) {
            return Err(UsageError("--connections-per-ip: at least 1".into()).into());
        }
        Ok(Some(LimitsConfig {
            per_identity: rate("rate-per-identity", &self.rate_per_identity)?,
            per_ip: rate("rate-per-ip", &self.rate_per_ip)?,
            per_tool: rate("rate-per-tool", &self.rate_per_tool)?,
            connections_per_ip: self.connections_per_ip,
            max_keys: DEFAULT_MAX_KEYS,
        }))
    }
}
