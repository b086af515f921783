//! `serve --check --as SUBJECT` (`--as-key NAME`, `--as-anonymous`): whose catalog the
//! check prints under the configuration's `[policy]`.

use anyhow::Result;
use mcpwire_gateway::{CheckCaller, GatewayConfig};
use mcpwire_router::Identity;

use crate::exit::UsageError;

/// The caller `--check` reports for.
#[derive(clap::Args, Debug, Default)]
pub struct CheckAsArgs {
    /// With --check: print what the caller with this subject (a token's `sub`) may list
    /// and call under [policy].
    #[arg(long = "as", value_name = "SUBJECT", requires = "check", conflicts_with_all = ["as_key", "as_anonymous"])]
    as_subject: Option<String>,
    /// With --check: as the holder of the API key NAME (its configured scopes).
    #[arg(
        long,
        value_name = "NAME",
        requires = "check",
        conflicts_with = "as_anonymous"
    )]
    as_key: Option<String>,
    /// With --check: as the anonymous caller (stdio, listeners without authentication).
    #[arg(long, requires = "check")]
    as_anonymous: bool,
    /// With --as or --as-key: a scope the caller holds (repeatable).
    #[arg(long, value_name = "SCOPE")]
    as_scope: Vec<String>,
    /// With --as: a claim of the caller's token, NAME=VALUE (VALUE as JSON, else a string;
    /// repeatable).
    #[arg(long, value_name = "NAME=VALUE", requires = "as_subject")]
    as_claim: Vec<String>,
}

impl CheckAsArgs {
    /// The caller these flags name; an API key's scopes come from `config`'s `[auth]`.
    pub fn caller(&self, config: &GatewayConfig) -> Result<CheckCaller> {
        if !self.as_scope.is_empty() && self.as_subject.is_none() && self.as_key.is_none() {
            return Err(UsageError("--as-scope needs --as or --as-key".into()).into());
        }
        if self.as_anonymous {
            return Ok(CheckCaller::Anonymous);
        }
        if let Some(name) = &self.as_key {
            let auth = config.auth.as_ref();
            let configured = auth
                .and_then(|a| a.api_keys.iter().find(|k| &k.name == name))
                .and_then(|k| k.scopes.clone());
            let mut scopes = configured
                .unwrap_or_else(|| auth.map(|a| a.required_scopes.clone()).unwrap_or_default());
            scopes.extend(self.as_scope.iter().cloned());
            return Ok(CheckCaller::Identity(Identity::api_key(
                name.clone(),
                scopes,
            )));
        }
        let Some(subject) = &self.as_subject else {
            return Ok(CheckCaller::Everything);
        };
        let mut claims = serde_json::Map::new();
        for c in &self.as_claim {
            let Some((name, value)) = c.split_once('=') else {
                return Err(UsageError(format!("--as-claim {c}: expected NAME=VALUE")).into());
            };
            let value = serde_json::from_str(value).unwrap_or_else(|_| value.into());
            claims.insert(name.to_owned(), value);
        }
        claims.insert("sub".into(), subject.clone().into());
        Ok(CheckCaller::Identity(Identity::bearer(
            subject.clone(),
            None,
            self.as_scope.clone(),
            claims,
        )))
    }
}
