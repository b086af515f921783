//! `[auth]`: authentication for every network listener of `mcpwire serve` (one section
//! for the whole gateway; a listener opts out with `auth = false`; stdio is never
//! authenticated). Read from the file here, built into one [`Authenticator`] shared by
//! every listener. Decisions: `docs/design/auth.md`.
//!
//! ```toml
//! [auth]
//! resource = "https://mcp.example.com/mcp"     # this server's canonical URI (RFC 8707)
//! authorization_servers = ["https://auth.example.com"]
//! scopes = ["mcp:tools"]                        # required of every request
//! api_key_files = ["keys.txt"]                  # NAME=SECRET or NAME=sha256:HEX per line
//!
//! [[auth.api_keys]]
//! name = "ci"
//! sha256 = "…64 hex digits…"                    # or key = "…"
//!
//! [auth.jwt]
//! jwks_url = "https://auth.example.com/jwks"   # or jwks_file = "…", or secret_env = "VAR"
//! issuers = ["https://auth.example.com"]
//! audiences = []                                # default: [resource]
//! leeway_secs = 30
//! ```

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::auth::{ApiKeyConfig, ApiKeySecret, AuthConfig, JwksSource, JwtConfig, JwtKeySource};

/// `[auth]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAuth {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    scopes_supported: Vec<String>,
    resource_name: Option<String>,
    #[serde(default)]
    api_key_files: Vec<PathBuf>,
    #[serde(default)]
    api_keys: Vec<RawApiKey>,
    jwt: Option<RawJwt>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApiKey {
    name: String,
    key: Option<String>,
    sha256: Option<String>,
    scopes: Option<Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJwt {
    jwks_url: Option<String>,
    jwks_file: Option<PathBuf>,
    /// The name of an environment variable holding an HS256 secret (never the secret in
    /// the file).
    secret_env: Option<String>,
    #[serde(default)]
    issuers: Vec<String>,
    #[serde(default)]
    audiences: Vec<String>,
    leeway_secs: Option<u64>,
}

type Refusal = (String, String);

impl RawAuth {
    /// The checked configuration; relative paths are relative to `base` (the file's
    /// directory). On error: the key at fault (below `auth`) and why.
    pub(crate) fn check(self, base: &Path) -> Result<AuthConfig, Refusal> {
        let mut api_keys = Vec::new();
        for (i, k) in self.api_keys.into_iter().enumerate() {
            let at = |m: &str| (format!("api_keys[{i}]"), m.to_owned());
            let secret = match (k.key, k.sha256) {
                (Some(key), None) => ApiKeySecret::Plain(key),
                (None, Some(hex)) => ApiKeySecret::Sha256(hex),
                _ => return Err(at("give the key as `key` or its SHA-256 as `sha256` (one)")),
            };
            api_keys.push(ApiKeyConfig {
                name: k.name,
                secret,
                scopes: k.scopes,
            });
        }
        let jwt = match self.jwt {
            None => None,
            Some(j) => Some(jwt_config(j, base)?),
        };
        if let Some(r) = &self.resource {
            check_uri(r).map_err(|m| ("resource".to_owned(), m))?;
        }
        Ok(AuthConfig {
            api_keys,
            api_key_files: self.api_key_files.iter().map(|p| base.join(p)).collect(),
            jwt,
            required_scopes: self.scopes,
            resource: self.resource,
            authorization_servers: self.authorization_servers,
            scopes_supported: self.scopes_supported,
            resource_name: self.resource_name,
        })
    }
}

fn jwt_config(j: RawJwt, base: &Path) -> Result<JwtConfig, Refusal> {
    let at = |k: &str, m: String| (format!("jwt.{k}"), m);
    let keys = match (j.jwks_url, j.jwks_file, j.secret_env) {
        (Some(url), None, None) => {
            check_uri(&url).map_err(|m| at("jwks_url", m))?;
            JwtKeySource::Jwks(JwksSource::Url(url))
        }
        (None, Some(file), None) => JwtKeySource::Jwks(JwksSource::File(base.join(file))),
        (None, None, Some(var)) => match std::env::var(&var) {
            Ok(secret) => JwtKeySource::Secret(secret),
            Err(_) => {
                return Err(at(
                    "secret_env",
                    format!("the environment variable `{var}` is not set"),
                ));
            }
        },
        _ => {
            return Err((
                "jwt".into(),
                "give the signing keys as one of jwks_url, jwks_file or secret_env".into(),
            ));
        }
    };
    let mut config = JwtConfig::new(keys);
    config.issuers = j.issuers;
    config.audiences = j.audiences;
    if let Some(s) = j.leeway_secs {
        config.leeway = Duration::from_secs(s);
    }
    Ok(config)
}

/// An absolute `http(s)` URI without a fragment (RFC 8707 resource indicators).
fn check_uri(uri: &str) -> Result<(), String> {
    let ok = (uri.starts_with("https://") || uri.starts_with("http://"))
        && !uri.contains('#')
        && uri.split("://").nth(1).is_some_and(|rest| !rest.is_empty());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{uri}` is not an absolute http(s) URI without a fragment"
        ))
    }
}

/// `[auth]`'s tables and their keys, for the check of `docs/config.md`.
#[cfg(test)]
pub(crate) fn doc_sections() -> Vec<(&'static str, &'static [&'static str])> {
    use crate::serde_fields::fields_of;
    vec![
        ("`[auth]`", fields_of::<RawAuth>()),
        ("`[[auth.api_keys]]`", fields_of::<RawApiKey>()),
        ("`[auth.jwt]`", fields_of::<RawJwt>()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_jwt_sources() {
        let raw: RawAuth = toml::from_str(
            r#"
            resource = "https://mcp.example.com/mcp"
            scopes = ["mcp"]
            api_key_files = ["keys.txt"]
            [[api_keys]]
            name = "ci"
            key = "0123456789abcdef"
            [jwt]
            jwks_file = "jwks.json"
            issuers = ["https://as"]
            "#,
        )
        .unwrap();
        let c = raw.check(Path::new("/etc/mcpwire")).unwrap();
        assert_eq!(c.api_key_files, [PathBuf::from("/etc/mcpwire/keys.txt")]);
        let jwt = c.jwt.unwrap();
        assert_eq!(
            jwt.keys,
            JwtKeySource::Jwks(JwksSource::File("/etc/mcpwire/jwks.json".into()))
        );
        let two: RawAuth =
            toml::from_str("[jwt]\njwks_url = \"https://as/jwks\"\njwks_file = \"x\"\n").unwrap();
        assert_eq!(two.check(Path::new(".")).unwrap_err().0, "jwt");
        let bad: RawAuth = toml::from_str("resource = \"mcp.example.com\"").unwrap();
        assert_eq!(bad.check(Path::new(".")).unwrap_err().0, "resource");
    }
}
