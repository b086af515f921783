//! An upstream backend's credentials (`bearer_*`, `headers`, `header_env`, `[…oauth]`):
//! what the gateway presents to the upstream — its own, never a client's token. Secrets are
//! read from environment variables (`*_env`) or files (`*_file`, relative to the
//! configuration file; trailing whitespace trimmed) when the configuration is loaded or
//! reloaded, never written in the file itself. Decisions: `docs/design/upstream-auth.md`.
//!
//! ```toml
//! [backends.github]
//! url = "https://api.githubcopilot.com/mcp/"
//! bearer_env = "GITHUB_TOKEN"                 # or bearer_file = "github.token"
//! headers = { "X-Team" = "platform" }         # plain values
//! header_env = { "X-Api-Key" = "SEARCH_KEY" } # values from environment variables
//!
//! [backends.billing]
//! url = "https://billing.internal/mcp"
//! [backends.billing.oauth]
//! grant = "client_credentials"                # or "jwt_bearer" (+ assertion_file), "authorization_code"
//! client_id = "mcpwire-gateway"
//! client_secret_env = "BILLING_SECRET"        # or client_secret_file, or private_key_file
//! client_auth = "client_secret_post"          # default: basic (or as the metadata says)
//! token_endpoint = "https://auth.internal/oauth/token"  # else discovered from the 401
//! scope = "billing:read"
//! resource = "https://billing.internal/mcp"   # RFC 8707 (default: the server's own)
//!
//! [backends.crm.oauth]
//! grant = "authorization_code"                # each user authorizes their own token
//! consent = "elicit"                          # the default: asked through the gateway (URL
//!                                             # elicitation), back at /oauth/callback
//! consent_timeout_secs = 300                  # how long a user has to authorize
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use mcpwire_client::Target;
use mcpwire_client::auth::{
    Assertion, ClientSigningKey, ElicitConsent, FollowRedirect, OAuthConfig, OAuthGrant,
    PendingConsents, UpstreamAuth,
};
use mcpwire_server::tls::ClientTls;

/// The credential keys of an upstream backend, as written (keys of the backend's table).
#[derive(Debug)]
pub(super) struct RawCredentials<'a> {
    pub(super) bearer_env: Option<&'a String>,
    pub(super) bearer_file: Option<&'a String>,
    pub(super) headers: &'a BTreeMap<String, String>,
    pub(super) header_env: &'a BTreeMap<String, String>,
    pub(super) oauth: Option<&'a RawOAuth>,
}

/// `[backends.NAME.oauth]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawOAuth {
    grant: RawGrant,
    client_id: Option<String>,
    client_secret_env: Option<String>,
    client_secret_file: Option<String>,
    client_auth: Option<String>,
    private_key_file: Option<String>,
    assertion_file: Option<String>,
    signing_alg: Option<String>,
    client_metadata_url: Option<String>,
    client_name: Option<String>,
    redirect_uri: Option<String>,
    token_endpoint: Option<String>,
    issuer: Option<String>,
    scope: Option<String>,
    resource: Option<String>,
    audience: Option<String>,
    consent: Option<RawConsent>,
    consent_timeout_secs: Option<u64>,
    timeout_secs: Option<u64>,
    dpop: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawGrant {
    ClientCredentials,
    AuthorizationCode,
    JwtBearer,
}

/// How consent for the authorization-code grant is obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum RawConsent {
    /// Follow the authorization server's redirect without a user (pre-approved clients).
    FollowRedirect,
    /// Ask the downstream user (URL-mode elicitation), redirect to the gateway.
    Elicit,
}

/// How the authorization-code grant gets a user's consent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConsentMode {
    /// `follow_redirect`: the authorization URL is fetched and its redirect read (an
    /// authorization server that approves the gateway's client without a page).
    FollowRedirect,
    /// `elicit` (the default): the downstream user is sent to the authorization URL by
    /// URL-mode elicitation and comes back to the gateway's redirect endpoint; the
    /// gateway's own session follows the redirect.
    Elicit,
}

/// An upstream's credentials, secrets resolved. Compared (by value) to tell whether a
/// reload changed them; printed without the secrets.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CredentialsSpec {
    /// Headers sent with every request (a bearer token is an `authorization` header).
    pub headers: Vec<(String, String)>,
    /// OAuth, if configured.
    pub oauth: Option<Box<OAuthSpec>>,
}

/// `[backends.NAME.oauth]`, secrets resolved.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthSpec {
    /// The grant.
    pub grant: OAuthGrant,
    /// The JWT-bearer grant's assertion file (read at each token request).
    pub assertion_file: Option<std::path::PathBuf>,
    /// Pre-registered client id.
    pub client_id: Option<String>,
    /// Its secret.
    pub client_secret: Option<String>,
    /// `client_secret_basic` or `client_secret_post`.
    pub client_auth: Option<String>,
    /// Its private key (PEM) and algorithm, for `private_key_jwt`.
    pub private_key: Option<(String, String)>,
    /// Client ID metadata document URL.
    pub client_metadata_url: Option<String>,
    /// `client_name` for dynamic registration.
    pub client_name: Option<String>,
    /// Redirect URI.
    pub redirect_uri: Option<String>,
    /// Token endpoint (skips discovery for client credentials).
    pub token_endpoint: Option<String>,
    /// Issuer override.
    pub issuer: Option<String>,
    /// Scope override.
    pub scope: Option<String>,
    /// Resource override.
    pub resource: Option<String>,
    /// `audience` parameter.
    pub audience: Option<String>,
    /// How a user consents (authorization code only).
    pub consent: Option<ConsentMode>,
    /// How long a user has to complete an authorization (`elicit`).
    pub consent_timeout: Duration,
    /// Per request to the authorization server.
    pub timeout: Duration,
    /// DPoP-bound tokens where the authorization server offers them.
    pub dpop: bool,
}

impl fmt::Debug for CredentialsSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("CredentialsSpec")
            .field("headers", &names)
            .field(
                "oauth",
                &self
                    .oauth
                    .as_ref()
                    .map(|o| (&o.client_id, &o.token_endpoint)),
            )
            .finish()
    }
}

type Refusal = (&'static str, String);

impl RawCredentials<'_> {
    /// Whether any credential key is set.
    pub(super) fn is_set(&self) -> bool {
        self.bearer_env.is_some()
            || self.bearer_file.is_some()
            || !self.headers.is_empty()
            || !self.header_env.is_empty()
            || self.oauth.is_some()
    }

    /// Resolves the secrets (environment, files relative to `base`) and checks the
    /// combination for `target`.
    pub(super) fn resolve(&self, base: &Path, target: &Target) -> Result<CredentialsSpec, Refusal> {
        let bearer = secret(
            base,
            ("bearer_env", self.bearer_env.map(String::as_str)),
            ("bearer_file", self.bearer_file.map(String::as_str)),
        )?;
        let http = matches!(target, Target::Url(_));
        let mcpb = matches!(target, Target::Mcpb { .. });
        let only_a_token =
            self.oauth.is_none() && self.headers.is_empty() && self.header_env.is_empty();
        if !(http || (mcpb && only_a_token)) {
            let key = if self.oauth.is_some() {
                "oauth"
            } else if !self.headers.is_empty() {
                "headers"
            } else if !self.header_env.is_empty() {
                "header_env"
            } else if self.bearer_env.is_some() {
                "bearer_env"
            } else {
                "bearer_file"
            };
            return Err((
                key,
                format!(
                    "`{key}` is an option of url backends{}",
                    if mcpb {
                        " (an mcpb backend takes bearer_env or bearer_file as its token)"
                    } else {
                        ""
                    }
                ),
            ));
        }
        let mut headers = Vec::new();
        if let Some(token) = bearer {
            headers.push(("authorization".to_owned(), format!("Bearer {token}")));
        }
        for (name, value) in self.headers {
            headers.push((name.to_ascii_lowercase(), value.clone()));
        }
        for (name, var) in self.header_env {
            headers.push((name.to_ascii_lowercase(), env("header_env", var)?));
        }
        for (i, (name, _)) in headers.iter().enumerate() {
            if headers[..i].iter().any(|(n, _)| n == name) {
                return Err(("headers", format!("the header `{name}` is given twice")));
            }
        }
        let oauth = match &self.oauth {
            None => None,
            Some(o) => {
                if headers.iter().any(|(n, _)| n == "authorization") {
                    return Err((
                        "oauth",
                        "OAuth obtains the Authorization header: drop bearer_* and an \
                         `authorization` header"
                            .into(),
                    ));
                }
                Some(Box::new(o.resolve(base)?))
            }
        };
        let spec = CredentialsSpec { headers, oauth };
        let checking = PendingConsents::new(1, Vec::new());
        spec.to_auth("check", &ClientTls::default(), &checking)
            .map_err(|e| ("headers", e))?;
        Ok(spec)
    }
}

impl RawOAuth {
    /// Whether the grant obtains a token per downstream user (`authorization_code`).
    pub(super) fn is_per_user(&self) -> bool {
        matches!(self.grant, RawGrant::AuthorizationCode)
    }

    fn resolve(&self, base: &Path) -> Result<OAuthSpec, Refusal> {
        let secret = secret(
            base,
            ("client_secret_env", self.client_secret_env.as_deref()),
            ("client_secret_file", self.client_secret_file.as_deref()),
        )
        .map_err(|(_, m)| ("oauth", m))?;
        let private_key = match &self.private_key_file {
            Some(file) => Some((
                read(base, "oauth", file)?,
                self.signing_alg.clone().unwrap_or_else(|| "ES256".into()),
            )),
            None => None,
        };
        let grant = match self.grant {
            RawGrant::ClientCredentials => OAuthGrant::ClientCredentials,
            RawGrant::AuthorizationCode => OAuthGrant::AuthorizationCode,
            RawGrant::JwtBearer => OAuthGrant::JwtBearer,
        };
        let client_credentials = grant == OAuthGrant::ClientCredentials;
        if grant == OAuthGrant::JwtBearer
            && (self.client_id.is_none() || self.assertion_file.is_none())
        {
            return Err((
                "oauth",
                "the jwt_bearer grant needs client_id and assertion_file".into(),
            ));
        }
        if client_credentials
            && (self.client_id.is_none() || (secret.is_none() && private_key.is_none()))
        {
            return Err((
                "oauth",
                "the client_credentials grant needs client_id and a client_secret_env, \
                 client_secret_file or private_key_file"
                    .into(),
            ));
        }
        let consent = match (grant, self.consent) {
            (OAuthGrant::AuthorizationCode, Some(RawConsent::FollowRedirect)) => {
                Some(ConsentMode::FollowRedirect)
            }
            (OAuthGrant::AuthorizationCode, _) => Some(ConsentMode::Elicit),
            (_, Some(_)) => {
                return Err((
                    "oauth",
                    "`consent` is an option of the authorization_code grant".into(),
                ));
            }
            (_, None) => None,
        };
        if self.timeout_secs == Some(0) || self.consent_timeout_secs == Some(0) {
            return Err((
                "oauth",
                "`timeout_secs` and `consent_timeout_secs` must be at least 1".into(),
            ));
        }
        Ok(OAuthSpec {
            grant,
            assertion_file: self.assertion_file.as_ref().map(|f| base.join(f)),
            client_id: self.client_id.clone(),
            client_secret: secret,
            client_auth: self.client_auth.clone(),
            private_key,
            client_metadata_url: self.client_metadata_url.clone(),
            client_name: self.client_name.clone(),
            redirect_uri: self.redirect_uri.clone(),
            token_endpoint: self.token_endpoint.clone(),
            issuer: self.issuer.clone(),
            scope: self.scope.clone(),
            resource: self.resource.clone(),
            audience: self.audience.clone(),
            consent,
            consent_timeout: Duration::from_secs(self.consent_timeout_secs.unwrap_or(300)),
            timeout: Duration::from_secs(self.timeout_secs.unwrap_or(30)),
            dpop: self.dpop.unwrap_or(true),
        })
    }
}

impl CredentialsSpec {
    /// The bearer token, if one is configured (what an MCPB upstream authenticates with).
    pub fn bearer(&self) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .and_then(|(_, v)| v.strip_prefix("Bearer "))
    }

    /// The client's credentials toward the upstream `name` (one per backend: its
    /// connections share OAuth tokens): OAuth documents and token requests trust the
    /// upstream's `tls`, and users consent through the gateway's `pending` authorizations.
    pub fn to_auth(
        &self,
        name: &str,
        tls: &ClientTls,
        pending: &Arc<PendingConsents>,
    ) -> Result<UpstreamAuth, String> {
        let mut auth = UpstreamAuth::new();
        for (name, value) in &self.headers {
            auth = auth.header(name, value).map_err(|e| e.to_string())?;
        }
        if let Some(o) = &self.oauth {
            let mut c = OAuthConfig::new(o.grant);
            c.assertion = o.assertion_file.clone().map(Assertion::File);
            c.client_id = o.client_id.clone();
            c.client_secret = o.client_secret.clone();
            c.client_auth = o.client_auth.clone();
            if let Some((pem, alg)) = &o.private_key {
                c.signing_key =
                    Some(ClientSigningKey::from_pem(pem, alg).map_err(|e| e.to_string())?);
            }
            c.client_metadata_url = o.client_metadata_url.clone();
            c.client_name = o
                .client_name
                .clone()
                .unwrap_or_else(|| "mcpwire-gateway".into());
            if let Some(r) = &o.redirect_uri {
                c.redirect_uri = r.clone();
            }
            c.token_endpoint = o.token_endpoint.clone();
            c.issuer = o.issuer.clone();
            c.scope = o.scope.clone();
            c.resource = o.resource.clone();
            c.audience = o.audience.clone();
            c.timeout = o.timeout;
            c.tls = tls.clone();
            c.dpop = o.dpop;
            let follow = FollowRedirect {
                timeout: o.timeout,
                tls: tls.clone(),
            };
            c.consent = match o.consent {
                None => None,
                Some(ConsentMode::FollowRedirect) => Some(Arc::new(follow)),
                Some(ConsentMode::Elicit) => Some(Arc::new(ElicitConsent {
                    pending: pending.clone(),
                    upstream: Arc::from(name),
                    timeout: o.consent_timeout,
                    own: follow,
                })),
            };
            auth = auth.oauth(c).map_err(|e| e.to_string())?;
        }
        Ok(auth)
    }
}

/// A secret from the environment variable `env.1` or the file `file.1` (one of them; the
/// keys name them in refusals), or none.
fn secret(
    base: &Path,
    env_key: (&'static str, Option<&str>),
    file_key: (&'static str, Option<&str>),
) -> Result<Option<String>, Refusal> {
    match (env_key.1, file_key.1) {
        (Some(_), Some(_)) => Err((
            file_key.0,
            format!("give {} or {}, not both", env_key.0, file_key.0),
        )),
        (Some(var), None) => env(env_key.0, var).map(Some),
        (None, Some(file)) => read(base, file_key.0, file).map(Some),
        (None, None) => Ok(None),
    }
}

fn env(key: &'static str, var: &str) -> Result<String, Refusal> {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim().to_owned()),
        Ok(_) => Err((key, format!("the environment variable {var} is empty"))),
        Err(_) => Err((key, format!("the environment variable {var} is not set"))),
    }
}

fn read(base: &Path, key: &'static str, file: &str) -> Result<String, Refusal> {
    let path = base.join(file);
    match std::fs::read_to_string(&path) {
        Ok(v) if !v.trim().is_empty() => Ok(v.trim_end().to_owned()),
        Ok(_) => Err((key, format!("{} is empty", path.display()))),
        Err(e) => Err((key, format!("cannot read {}: {e}", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::{BackendSource, ConfigError, GatewayConfig};

    fn load(dir: &Path, backend: &str) -> Result<GatewayConfig, ConfigError> {
        GatewayConfig::from_toml(
            &dir.join("mcpwire.toml"),
            &format!("[backends.up]\n{backend}"),
        )
    }

    fn credentials(c: &GatewayConfig) -> &super::CredentialsSpec {
        match &c.backends[0].source {
            BackendSource::Upstream(u) => &u.credentials,
            other => panic!("{other:?}"),
        }
    }

    fn auth(spec: &super::CredentialsSpec) -> Result<mcpwire_client::auth::UpstreamAuth, String> {
        let pending = mcpwire_client::auth::PendingConsents::new(1, Vec::new());
        spec.to_auth("up", &mcpwire_server::tls::ClientTls::default(), &pending)
    }

    fn dir(test: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mcpwire-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn headers_and_a_bearer_from_a_file() {
        let d = dir("headers");
        std::fs::write(d.join("token"), "abc123\n").unwrap();
        let c = load(
            &d,
            "url = \"https://x.example/mcp\"\nbearer_file = \"token\"\nheaders = { \"X-Team\" = \"a\" }\n",
        )
        .unwrap();
        let spec = credentials(&c);
        assert_eq!(spec.bearer(), Some("abc123"));
        assert!(spec.headers.contains(&("x-team".into(), "a".into())));
        // Secrets stay out of what is printed.
        assert!(!format!("{c:?}").contains("abc123"));
        assert!(auth(spec).is_ok());
    }

    #[test]
    fn refusals_name_the_key() {
        let d = dir("refusals");
        let refused = |backend: &str, key: &str, words: &str| {
            let e = load(&d, backend).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains(words), "{e}");
        };
        refused(
            "url = \"https://x/mcp\"\nbearer_env = \"MCPWIRE_TEST_SURELY_UNSET\"\n",
            "bearer_env",
            "is not set",
        );
        refused(
            "url = \"https://x/mcp\"\nbearer_file = \"missing\"\n",
            "bearer_file",
            "cannot read",
        );
        refused(
            "command = \"x\"\nheaders = { a = \"b\" }\n",
            "headers",
            "url backends",
        );
        refused(
            "native = \"demo\"\nbearer_file = \"t\"\n",
            "bearer_file",
            "native backends",
        );
        refused(
            "url = \"https://x/mcp\"\n[backends.up.oauth]\ngrant = \"client_credentials\"\n",
            "oauth",
            "needs client_id",
        );
        refused(
            "url = \"https://x/mcp\"\n[backends.up.oauth]\ngrant = \"authorization_code\"\n",
            "oauth",
            "consent",
        );
        refused(
            "url = \"https://x/mcp\"\n[backends.up.oauth]\ngrant = \"sideways\"\n",
            "oauth",
            "unknown variant",
        );
    }

    #[test]
    fn oauth_with_a_secret_file_and_an_mcpb_token() {
        let d = dir("oauth");
        std::fs::write(d.join("secret"), "s3cret\n").unwrap();
        let c = load(
            &d,
            "url = \"https://x/mcp\"\n[backends.up.oauth]\ngrant = \"client_credentials\"\n\
             client_id = \"gw\"\nclient_secret_file = \"secret\"\nclient_auth = \"client_secret_post\"\n\
             token_endpoint = \"https://as.example/token\"\n",
        )
        .unwrap();
        let o = credentials(&c).oauth.as_ref().unwrap();
        assert_eq!(o.client_secret.as_deref(), Some("s3cret"));
        assert!(auth(credentials(&c)).unwrap().has_oauth());
        std::fs::write(d.join("token"), "mcpb-token\n").unwrap();
        let c = load(&d, "mcpb = \"127.0.0.1:9000\"\nbearer_file = \"token\"\n").unwrap();
        assert_eq!(credentials(&c).bearer(), Some("mcpb-token"));
    }
}
