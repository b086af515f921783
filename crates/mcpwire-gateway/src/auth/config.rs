//! What authentication accepts: [`AuthConfig`], as the gateway's `[auth]` section, the
//! CLI's flags or a library user builds it.

use std::path::PathBuf;
use std::time::Duration;

use super::jwks::JwksSource;

/// Authentication for every network listener of a server (stdio is never authenticated:
/// its client is the process that started it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthConfig {
    /// API keys given inline.
    pub api_keys: Vec<ApiKeyConfig>,
    /// Files of API keys, one `NAME=SECRET` or `NAME=sha256:HEX` per line (`#` comments),
    /// read when the configuration is loaded.
    pub api_key_files: Vec<PathBuf>,
    /// JWT bearer tokens, when accepted.
    pub jwt: Option<JwtConfig>,
    /// Scopes every request needs; a valid credential without them is refused with 403
    /// `insufficient_scope` (and the challenge names them).
    pub required_scopes: Vec<String>,
    /// This server's canonical URI (RFC 8707 / RFC 9728 `resource`), e.g.
    /// `https://mcp.example.com/mcp`. Tokens must name it in `aud` unless
    /// [`JwtConfig::audiences`] says otherwise. `None`: each HTTP listener uses its own URL
    /// in its metadata, and JWTs need explicit audiences.
    pub resource: Option<String>,
    /// The authorization servers (issuer URLs) the protected resource metadata names.
    pub authorization_servers: Vec<String>,
    /// `scopes_supported` in the metadata (empty: the required scopes).
    pub scopes_supported: Vec<String>,
    /// `resource_name` in the metadata.
    pub resource_name: Option<String>,
}

/// One API key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyConfig {
    /// Its name (the caller's identity is `key:NAME`).
    pub name: String,
    /// The secret, or its digest.
    pub secret: ApiKeySecret,
    /// The scopes it grants (`None`: the required scopes).
    pub scopes: Option<Vec<String>>,
}

/// An API key's secret as configured. Only its SHA-256 digest is kept in memory.
#[derive(Clone, PartialEq, Eq)]
pub enum ApiKeySecret {
    /// The key itself.
    Plain(String),
    /// Its SHA-256 digest as 64 hex digits (so the configuration need not hold the key).
    Sha256(String),
}

impl std::fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiKeySecret::Plain(_) => f.write_str("Plain(…)"),
            ApiKeySecret::Sha256(h) => write!(f, "Sha256({h})"),
        }
    }
}

/// JWT bearer tokens: where the keys are and which issuers and audiences are accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtConfig {
    /// The signing keys.
    pub keys: JwtKeySource,
    /// Accepted `iss` values (empty: any, and `iss` is not required).
    pub issuers: Vec<String>,
    /// Accepted `aud` values (empty: [`AuthConfig::resource`], which must then be set).
    pub audiences: Vec<String>,
    /// Clock skew allowed on `exp` and `nbf`.
    pub leeway: Duration,
}

impl JwtConfig {
    /// Tokens signed by the keys of `keys`, 30 s of leeway, any issuer, audience from the
    /// resource.
    pub fn new(keys: JwtKeySource) -> JwtConfig {
        JwtConfig {
            keys,
            issuers: Vec::new(),
            audiences: Vec::new(),
            leeway: Duration::from_secs(30),
        }
    }
}

/// Where JWT signing keys come from.
#[derive(Clone, PartialEq, Eq)]
pub enum JwtKeySource {
    /// A JWKS file or URL (RS256, ES256, EdDSA, … — public keys).
    Jwks(JwksSource),
    /// A shared HS256/HS384/HS512 secret.
    Secret(String),
}

impl std::fmt::Debug for JwtKeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwtKeySource::Jwks(s) => write!(f, "Jwks({s})"),
            JwtKeySource::Secret(_) => f.write_str("Secret(…)"),
        }
    }
}

impl AuthConfig {
    /// Whether anything is configured that accepts a credential.
    pub fn is_enabled(&self) -> bool {
        !self.api_keys.is_empty() || !self.api_key_files.is_empty() || self.jwt.is_some()
    }
}
