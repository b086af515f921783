//! The authentication flags of `serve`, `demo`, `run` and `dev`: the common case of the
//! gateway's `[auth]` section (the library's `AuthConfig`) on the command line.

use std::path::PathBuf;

use anyhow::Result;
use mcpwire_gateway::auth::{AuthConfig, JwksSource, JwtConfig, JwtKeySource};

use crate::exit::UsageError;

/// Authentication of every network listener (stdio is never authenticated).
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Authentication (every network listener)")]
pub struct AuthArgs {
    /// A file of API keys, one `NAME=KEY` or `NAME=sha256:HEX` per line (repeatable).
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Vec<PathBuf>,
    /// Accept JWTs signed by the keys of this JWKS URL (an authorization server's jwks_uri).
    #[arg(long, value_name = "URL", conflicts_with_all = ["jwks_file", "jwt_secret_env"])]
    pub jwks_url: Option<String>,
    /// Accept JWTs signed by the keys of this JWKS file.
    #[arg(long, value_name = "FILE", conflicts_with = "jwt_secret_env")]
    pub jwks_file: Option<PathBuf>,
    /// Accept HS256 JWTs signed with the secret in this environment variable.
    #[arg(long, value_name = "VAR")]
    pub jwt_secret_env: Option<String>,
    /// An accepted token issuer (`iss`; repeatable; none: any).
    #[arg(long, value_name = "URL")]
    pub issuer: Vec<String>,
    /// An accepted token audience (`aud`; repeatable; default: --resource).
    #[arg(long, value_name = "URI")]
    pub audience: Vec<String>,
    /// This server's canonical URI (RFC 8707), e.g. https://mcp.example.com/mcp: the
    /// protected resource metadata's `resource` and the audience tokens must name.
    #[arg(long, value_name = "URI")]
    pub resource: Option<String>,
    /// An authorization server the protected resource metadata names (repeatable).
    #[arg(long, value_name = "URL")]
    pub authorization_server: Vec<String>,
    /// A scope every request needs (repeatable); a token without it gets 403.
    #[arg(long = "scope", value_name = "SCOPE")]
    pub scopes: Vec<String>,
}

impl AuthArgs {
    /// Whether any authentication flag was given.
    pub fn given(&self) -> bool {
        !self.api_key_file.is_empty()
            || self.jwks_url.is_some()
            || self.jwks_file.is_some()
            || self.jwt_secret_env.is_some()
            || !self.issuer.is_empty()
            || !self.audience.is_empty()
            || self.resource.is_some()
            || !self.authorization_server.is_empty()
            || !self.scopes.is_empty()
    }

    /// The configuration the flags describe (`None`: no flag given).
    pub fn config(&self) -> Result<Option<AuthConfig>> {
        if !self.given() {
            return Ok(None);
        }
        let keys = match (&self.jwks_url, &self.jwks_file, &self.jwt_secret_env) {
            (Some(url), _, _) => Some(JwtKeySource::Jwks(JwksSource::Url(url.clone()))),
            (_, Some(file), _) => Some(JwtKeySource::Jwks(JwksSource::File(file.clone()))),
            (_, _, Some(var)) => match std::env::var(var) {
                Ok(secret) => Some(JwtKeySource::Secret(secret)),
                Err(_) => {
                    return Err(UsageError(format!(
                        "--jwt-secret-env {var}: the environment variable is not set"
                    ))
                    .into());
                }
            },
            _ => None,
        };
        let jwt = keys.map(|keys| {
            let mut j = JwtConfig::new(keys);
            j.issuers = self.issuer.clone();
            j.audiences = self.audience.clone();
            j
        });
        if jwt.is_none() && self.api_key_file.is_empty() {
            return Err(UsageError(
                "authentication accepts nothing: add --api-key-file, --jwks-url, --jwks-file or \
                 --jwt-secret-env"
                    .into(),
            )
            .into());
        }
        Ok(Some(AuthConfig {
            api_key_files: self.api_key_file.clone(),
            jwt,
            required_scopes: self.scopes.clone(),
            resource: self.resource.clone(),
            authorization_servers: self.authorization_server.clone(),
            ..AuthConfig::default()
        }))
    }
}
