//! Authentication on every network listener, as one layer: the [`Authenticator`] turns a
//! credential (an API key, or a JWT bearer token) into the caller's [`Identity`] or an
//! [`AuthFailure`]. The wires know it only as [`Authenticate`] (`mcpwire_server::identify`): each
//! says where the credential is and how a refusal looks (HTTP: `Authorization` header,
//! 401/403 with a challenge naming the protected resource metadata; WebSocket: the upgrade
//! request's `Authorization`; gRPC: `authorization` metadata; MCPB: the `initialize` token
//! and per-message `auth_token`s). The identity then travels with every request in
//! [`mcpwire_router::CallCtx::identity`].
//!
//! - [`config`]: [`AuthConfig`], what is accepted.
//! - `api_keys`: keys kept as SHA-256 digests, compared in constant time.
//! - `jwt`: signature, `exp`/`nbf` with leeway, `iss`, `aud` bound to this server.
//! - `jwks`: key sets from a file or URL, cached, reloaded on an unknown `kid` at most once
//!   per interval.
//! - `verified`: tokens verified already, until they expire; `remembered`: per connection,
//!   the credential it presented last ([`Authenticate::for_connection`]).
//! - The RFC 9728 metadata and `WWW-Authenticate` challenges for HTTP are the wires'
//!   ([`mcpwire_server::identify::resource`]); the `Authenticate` impl here fills them in from
//!   `[auth]`.
//!
//! Decisions: `docs/design/auth.md`.

mod api_keys;
pub mod config;
mod jwks;
mod jwt;
mod remembered;
mod verified;

use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;

use jsonwebtoken::DecodingKey;
use mcpwire_router::{Credential, Identity};

use api_keys::ApiKey;
pub(crate) use api_keys::ApiKeys;
pub use config::{ApiKeyConfig, ApiKeySecret, AuthConfig, JwtConfig, JwtKeySource};
pub use jwks::JwksSource;
use jwt::{JwtKeys, JwtVerifier, Verdict};
use remembered::ConnectionCredential;
pub use verified::MAX_VERIFIED as MAX_VERIFIED_TOKENS;

pub use mcpwire_server::identify::{AuthFailure, Check, MAX_CREDENTIAL, ResourceServer};
use mcpwire_server::identify::{Authenticate, count_failure, resource};

/// A configuration [`Authenticator::new`] refuses, saying why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthConfigError(pub String);

/// Verifies credentials: API keys, then JWTs; then the required scopes. What it accepts
/// can be replaced while serving ([`Authenticator::replace`], a reload of `[auth]`): the
/// verifiers are swapped atomically, so a check uses either the old ones or the new ones.
pub struct Authenticator {
    current: ArcSwap<Verifiers>,
}

/// What one configuration accepts.
struct Verifiers {
    keys: ApiKeys,
    jwt: Option<JwtVerifier>,
    required_scopes: Vec<String>,
    config: AuthConfig,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("config", &self.current.load().config)
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator for `config`: reads the API key files, hashes the keys, and
    /// prepares the key source (a JWKS is loaded on first use, or by
    /// [`Authenticator::prefetch`]).
    pub fn new(config: AuthConfig) -> Result<Authenticator, AuthConfigError> {
        Ok(Authenticator {
            current: ArcSwap::from_pointee(Verifiers::new(config)?),
        })
    }

    /// Accepts what `next` accepts from now on (a reload of `[auth]`): checks already
    /// under way finish with the verifiers they started with; sessions already
    /// authenticated keep their identity.
    pub fn replace(&self, next: &Authenticator) {
        self.current.store(next.current.load_full());
    }

    /// The configuration it accepts now.
    pub fn config(&self) -> AuthConfig {
        self.current.load().config.clone()
    }

    /// Scopes every request needs now.
    pub fn required_scopes(&self) -> Vec<String> {
        self.current.load().required_scopes.clone()
    }

    /// Loads a configured JWKS now (at start-up), so the first request does not wait; a
    /// failure is logged and the load is tried again when a token needs it.
    pub async fn prefetch(&self) {
        let current = self.current.load_full();
        if let Some(JwtVerifier {
            keys: JwtKeys::Jwks(cache),
            ..
        }) = &current.jwt
        {
            cache.prefetch().await;
        }
    }

    /// Checks `credential` (a bearer token or API key; `None`: none was sent) with what is
    /// at hand; only a token naming a signing key not loaded yet needs to wait.
    /// Every refusal is counted (`mcpwire_auth_failures_total{reason}`).
    pub fn check(&self, credential: Option<&str>) -> Check {
        match self.check_uncounted(credential) {
            Check::Done(r) => Check::Done(counted(r)),
            Check::Wait(f) => Check::Wait(Box::pin(async move { counted(f.await) })),
        }
    }

    fn check_uncounted(&self, credential: Option<&str>) -> Check {
        let Some(token) = credential else {
            return Check::Done(Err(AuthFailure::Missing));
        };
        if token.is_empty() || token.len() > MAX_CREDENTIAL {
            return Check::Done(Err(AuthFailure::Malformed(format!(
                "a credential is 1 to {MAX_CREDENTIAL} bytes"
            ))));
        }
        let v = self.current.load();
        if let Some(id) = v.keys.find(token) {
            return Check::Done(v.scoped(id.clone()));
        }
        let Some(jwt) = &v.jwt else {
            return Check::Done(Err(AuthFailure::Unknown));
        };
        if !jwt::looks_like_jwt(token) {
            return Check::Done(Err(AuthFailure::Unknown));
        }
        if let JwtKeys::Jwks(cache) = &jwt.keys
            && cache.is_stale()
        {
            let cache = cache.clone();
            tokio::spawn(async move {
                let _ = cache.refresh().await;
            });
        }
        match jwt.verify_cached(token) {
            Verdict::Done(r) => Check::Done(r.and_then(|id| v.scoped(id))),
            Verdict::NeedKeys => {
                // The verifiers this check started with, even if replaced meanwhile.
                let (v, token) = (arc_swap::Guard::into_inner(v), token.to_owned());
                Check::Wait(Box::pin(async move {
                    let jwt = v.jwt.as_ref().ok_or(AuthFailure::Unknown)?;
                    let id = jwt.verify(&token).await?;
                    v.scoped(id)
                }))
            }
        }
    }

    /// Verifies `credential`, waiting for the signing keys if it must.
    pub async fn verify(&self, credential: Option<&str>) -> Result<Identity, AuthFailure> {
        (self as &dyn Authenticate).verify(credential).await
    }
}

/// How the wires use it: checks as [`Authenticator::check`]; per connection, the credential
/// presented last remembered (`remembered.rs`); the protected resource and challenges as
/// configured now (a reload of `[auth]` may change them).
impl Authenticate for Authenticator {
    fn check(&self, credential: Option<&str>) -> Check {
        Authenticator::check(self, credential)
    }

    fn for_connection(self: Arc<Self>) -> Arc<dyn Authenticate> {
        Arc::new(ConnectionCredential::new(self))
    }

    /// The protected-resource description of an HTTP listener whose own URL is
    /// `listener_url` (used as the resource when none is configured).
    fn resource_server(&self, listener_url: &str) -> ResourceServer {
        self.current.load().resource_server(listener_url)
    }

    /// The Bearer challenge refusing `failure` outside the HTTP listener (which names its
    /// own metadata): `resource_metadata` of the configured resource, if there is one.
    fn challenge(&self, failure: &AuthFailure) -> String {
        let v = self.current.load();
        let metadata = v
            .config
            .resource
            .as_deref()
            .map(|r| v.resource_server(r).metadata_url());
        resource::challenge(metadata.as_deref(), &v.required_scopes, failure)
    }
}

impl Verifiers {
    fn resource_server(&self, listener_url: &str) -> ResourceServer {
        ResourceServer {
            resource: self
                .config
                .resource
                .clone()
                .unwrap_or_else(|| listener_url.to_owned()),
            authorization_servers: self.config.authorization_servers.clone(),
            scopes_supported: self.config.scopes_supported.clone(),
            required_scopes: self.required_scopes.clone(),
            resource_name: self.config.resource_name.clone(),
        }
    }

    fn new(config: AuthConfig) -> Result<Verifiers, AuthConfigError> {
        if !config.is_enabled() {
            return Err(AuthConfigError(
                "authentication accepts nothing: give API keys or a JWT key source".into(),
            ));
        }
        let keys = configured_keys(&config)?;
        for (i, k) in keys.iter().enumerate() {
            if keys[..i].iter().any(|o| o.name == k.name) {
                return Err(AuthConfigError(format!(
                    "two API keys are named `{}`: names must be unique",
                    k.name
                )));
            }
        }
        let jwt = match &config.jwt {
            None => None,
            Some(j) => Some(jwt_verifier(j, config.resource.as_deref())?),
        };
        Ok(Verifiers {
            keys: ApiKeys::new(keys, &config.required_scopes),
            jwt,
            required_scopes: config.required_scopes.clone(),
            config,
        })
    }

    /// The key set tokens are checked with now (`None`: none, or a shared secret).
    fn key_set(&self) -> verified::KeySet {
        match &self.jwt {
            Some(JwtVerifier {
                keys: JwtKeys::Jwks(cache),
                ..
            }) => Some(cache.keys()),
            _ => None,
        }
    }

    /// Until when (Unix seconds) an accepted `id` may be accepted again without a new
    /// check: a token until its `exp` (plus the leeway), an API key for as long as these
    /// verifiers are in force; `None`: never (a caller named by a client certificate).
    fn accepted_until(&self, id: &Identity) -> Option<u64> {
        match id.credential() {
            Credential::ApiKey { .. } => Some(u64::MAX),
            Credential::Bearer { .. } => {
                let exp = id.claim("exp")?.as_u64()?;
                let leeway = self.jwt.as_ref().map_or(0, |j| j.leeway);
                Some(exp.saturating_add(leeway))
            }
            _ => None,
        }
    }

    /// `id` if it holds every required scope.
    fn scoped(&self, id: Identity) -> Result<Identity, AuthFailure> {
        if self.required_scopes.iter().all(|s| id.has_scope(s)) {
            Ok(id)
        } else {
            Err(AuthFailure::InsufficientScope {
                required: self.required_scopes.clone(),
            })
        }
    }
}

/// `r`, its failure counted.
fn counted(r: Result<Identity, AuthFailure>) -> Result<Identity, AuthFailure> {
    if let Err(failure) = &r {
        count_failure(failure);
    }
    r
}

fn api_key(
    name: &str,
    secret: &ApiKeySecret,
    scopes: Option<Vec<String>>,
) -> Result<ApiKey, AuthConfigError> {
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(AuthConfigError(format!(
            "`{name}` is not an API key name: use a word without spaces"
        )));
    }
    let digest = match secret {
        ApiKeySecret::Plain(s) if s.is_empty() => {
            return Err(AuthConfigError(format!("the API key `{name}` is empty")));
        }
        ApiKeySecret::Plain(s) => {
            if s.len() < 16 {
                tracing::warn!(
                    key = name,
                    "a short API key: use at least 16 random characters"
                );
            }
            api_keys::digest(s)
        }
        ApiKeySecret::Sha256(hex) => api_keys::parse_digest(hex).ok_or_else(|| {
            AuthConfigError(format!(
                "the API key `{name}`: sha256 must be 64 hex digits (the key's SHA-256)"
            ))
        })?,
    };
    Ok(ApiKey::new(name.to_owned(), digest, scopes))
}

/// An API key's name and the scopes it grants.
pub(crate) type KeyScopes = (String, Vec<String>);

/// Every API key `config` names, inline and from its key files.
fn configured_keys(config: &AuthConfig) -> Result<Vec<ApiKey>, AuthConfigError> {
    let mut keys = Vec::new();
    for k in &config.api_keys {
        keys.push(api_key(&k.name, &k.secret, k.scopes.clone())?);
    }
    for path in &config.api_key_files {
        keys.extend(read_key_file(path)?);
    }
    Ok(keys)
}

/// The API keys among `config`'s named in `names`, and the scopes of every key by name
/// (the console's admins, and the callers its "view as" offers).
pub(crate) fn named_keys(
    config: &AuthConfig,
    names: &[String],
) -> Result<(ApiKeys, Vec<KeyScopes>), AuthConfigError> {
    let all = configured_keys(config)?;
    let scopes = all
        .iter()
        .map(|k| {
            let s = k.scopes.clone();
            (
                k.name.clone(),
                s.unwrap_or_else(|| config.required_scopes.clone()),
            )
        })
        .collect();
    for n in names {
        if !all.iter().any(|k| &k.name == n) {
            return Err(AuthConfigError(format!(
                "[admin] console_keys: no API key is named `{n}` in [auth]"
            )));
        }
    }
    let admins = all
        .into_iter()
        .filter(|k| names.contains(&k.name))
        .collect();
    Ok((ApiKeys::new(admins, &config.required_scopes), scopes))
}

/// The keys of a key file: `NAME=SECRET` or `NAME=sha256:HEX` per line.
fn read_key_file(path: &Path) -> Result<Vec<ApiKey>, AuthConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        AuthConfigError(format!(
            "cannot read the API key file {}: {e}",
            path.display()
        ))
    })?;
    let mut keys = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |m: String| AuthConfigError(format!("{}:{}: {m}", path.display(), n + 1));
        let Some((name, secret)) = line.split_once('=') else {
            return Err(at("expected NAME=SECRET or NAME=sha256:HEX".into()));
        };
        let secret = match secret.trim().strip_prefix("sha256:") {
            Some(hex) => ApiKeySecret::Sha256(hex.to_owned()),
            None => ApiKeySecret::Plain(secret.trim().to_owned()),
        };
        keys.push(api_key(name.trim(), &secret, None).map_err(|e| at(e.0))?);
    }
    Ok(keys)
}

fn jwt_verifier(j: &JwtConfig, resource: Option<&str>) -> Result<JwtVerifier, AuthConfigError> {
    let audiences = if j.audiences.is_empty() {
        match resource {
            Some(r) => vec![r.to_owned()],
            None => {
                return Err(AuthConfigError(
                    "JWTs need an audience: set the resource (this server's canonical URI, \
                     e.g. https://mcp.example.com/mcp) or the accepted audiences"
                        .into(),
                ));
            }
        }
    } else {
        j.audiences.clone()
    };
    let keys = match &j.keys {
        JwtKeySource::Jwks(source) => JwtKeys::Jwks(Arc::new(jwks::JwksCache::new(source.clone()))),
        JwtKeySource::Secret(s) if s.len() < 32 => {
            return Err(AuthConfigError(
                "the JWT secret is too short: use at least 32 bytes".into(),
            ));
        }
        JwtKeySource::Secret(s) => JwtKeys::Secret(DecodingKey::from_secret(s.as_bytes())),
    };
    Ok(JwtVerifier {
        keys,
        issuers: j.issuers.clone(),
        audiences,
        leeway: j.leeway.as_secs(),
        verified: verified::VerifiedTokens::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn api_keys_with_scopes() {
        let auth = Arc::new(
            Authenticator::new(AuthConfig {
                api_keys: vec![
                    ApiKeyConfig {
                        name: "ci".into(),
                        secret: ApiKeySecret::Plain("0123456789abcdef".into()),
                        scopes: None,
                    },
                    ApiKeyConfig {
                        name: "ro".into(),
                        secret: ApiKeySecret::Plain("fedcba9876543210".into()),
                        scopes: Some(vec!["read".into()]),
                    },
                ],
                required_scopes: vec!["mcp".into()],
                ..AuthConfig::default()
            })
            .unwrap(),
        );
        let id = auth.verify(Some("0123456789abcdef")).await.unwrap();
        assert_eq!((id.subject(), id.key_name()), ("key:ci", Some("ci")));
        assert!(id.has_scope("mcp"));
        assert_eq!(
            auth.verify(Some("fedcba9876543210")).await,
            Err(AuthFailure::InsufficientScope {
                required: vec!["mcp".into()]
            })
        );
        assert_eq!(auth.verify(Some("nope")).await, Err(AuthFailure::Unknown));
        assert_eq!(auth.verify(None).await, Err(AuthFailure::Missing));
        assert!(Authenticator::new(AuthConfig::default()).is_err());
    }
}
