//! Credentials an HTTP upstream connection presents — never a downstream client's token
//! (the MCP authorization spec forbids passing it through): static headers, a static
//! bearer token, or OAuth 2.1 ([`OAuthConfig`]): the client-credentials or JWT-bearer
//! grant, or the MCP
//! authorization-code flow run when the server answers `401` (protected-resource and
//! authorization-server metadata discovery, client ID metadata documents or dynamic
//! registration, PKCE, scope selection and step-up on `403 insufficient_scope`, the
//! `resource` parameter, refresh). OAuth tokens are kept per downstream identity
//! ([`UpstreamAuth::for_identity`]), so one user's grant never serves another.
//! Decisions: `docs/design/upstream-auth.md`.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hyper::header::{AUTHORIZATION, HeaderName, HeaderValue};

mod assertion;
mod challenge;
mod consent;
mod discovery;
mod dpop;
mod elicit;
mod flow;
mod form;
mod loopback;
mod pending;
mod pkce;
mod scope;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_consent;
mod token;

pub use assertion::ClientSigningKey;
pub use consent::{AuthorizationRequest, Consent, FollowRedirect};
pub use elicit::ElicitConsent;
pub use loopback::LoopbackConsent;
pub use pending::{
    CallbackRefusal, ConsentsFull, MAX_PENDING_CONSENTS, PendingConsent, PendingConsents,
};

pub(crate) use challenge::Challenge;
use flow::OAuthClient;

use super::ClientError;

/// Which OAuth grant obtains the tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthGrant {
    /// The client's own credentials (`client_credentials`): machine to machine, no user.
    ClientCredentials,
    /// A user's authorization (`authorization_code` with PKCE), obtained through a
    /// [`Consent`].
    AuthorizationCode,
    /// A JWT asserting the workload's identity (RFC 7523 §2.1, workload identity
    /// federation): [`OAuthConfig::assertion`], read afresh for every token request.
    JwtBearer,
}

/// Where a JWT-bearer assertion comes from (printed without the tokens).
#[derive(Clone, PartialEq, Eq)]
pub enum Assertion {
    /// This JWT.
    Value(String),
    /// The JWT in this file, read at each use (platforms rotate such tokens in place).
    File(std::path::PathBuf),
    /// Enterprise-managed authorization (SEP-990): an identity assertion grant (ID-JAG)
    /// obtained at each use from the enterprise identity provider by token exchange
    /// (RFC 8693) for the user's ID token, with the authorization server's issuer as its
    /// audience and the upstream as its resource.
    IdJag {
        /// The identity provider's token endpoint.
        token_endpoint: String,
        /// This client's id at the identity provider.
        client_id: String,
        /// The user's ID token there.
        id_token: Box<Assertion>,
    },
}

impl fmt::Debug for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assertion::Value(_) => f.write_str("Assertion::Value(…)"),
            Assertion::File(path) => write!(f, "Assertion::File({})", path.display()),
            Assertion::IdJag { token_endpoint, .. } => {
                write!(f, "Assertion::IdJag({token_endpoint})")
            }
        }
    }
}

impl Assertion {
    /// The assertion for the authorization server `issuer` and `resource`.
    async fn obtain(
        &self,
        issuer: &str,
        resource: Option<&str>,
        reach: &crate::fetch::Reach,
    ) -> Result<String, ClientError> {
        match self {
            Assertion::Value(v) => Ok(v.trim().to_owned()),
            Assertion::File(path) => std::fs::read_to_string(path)
                .map(|v| v.trim().to_owned())
                .map_err(|e| {
                    ClientError::Auth(format!("reading the assertion {}: {e}", path.display()))
                }),
            Assertion::IdJag {
                token_endpoint,
                client_id,
                id_token,
            } => {
                let id_token = Box::pin(id_token.obtain(issuer, resource, reach)).await?;
                token::exchange_for_id_jag(
                    token_endpoint,
                    client_id,
                    &id_token,
                    issuer,
                    resource,
                    reach,
                )
                .await
            }
        }
    }
}

/// How to obtain OAuth tokens for one upstream.
#[derive(Clone)]
pub struct OAuthConfig {
    /// The grant.
    pub grant: OAuthGrant,
    /// A pre-registered client id (required for client credentials; otherwise a client ID
    /// metadata document or dynamic registration is used when it is absent).
    pub client_id: Option<String>,
    /// The pre-registered client's secret.
    pub client_secret: Option<String>,
    /// The JWT-bearer grant's assertion.
    pub assertion: Option<Assertion>,
    /// How the pre-registered client sends its secret: `client_secret_basic` or
    /// `client_secret_post` (default: what the server's metadata accepts, basic first;
    /// basic without metadata).
    pub client_auth: Option<String>,
    /// The pre-registered client's private key: it authenticates with `private_key_jwt`
    /// instead of a secret.
    pub signing_key: Option<ClientSigningKey>,
    /// This client's ID metadata document URL, used as its client id where the
    /// authorization server accepts such documents.
    pub client_metadata_url: Option<String>,
    /// `client_name` in dynamic registration.
    pub client_name: String,
    /// Where the authorization server redirects after consent.
    pub redirect_uri: String,
    /// Scopes always asked for (with those a challenge names; the protected resource's
    /// `scopes_supported` are then not used).
    pub scope: Option<String>,
    /// The `resource` to ask tokens for (RFC 8707), overriding the protected resource's.
    pub resource: Option<String>,
    /// An `audience` parameter for authorization servers that take one instead of
    /// `resource` (sent only when set).
    pub audience: Option<String>,
    /// The token endpoint: with it, client credentials are exchanged before the first
    /// request, without discovery.
    pub token_endpoint: Option<String>,
    /// The authorization server's issuer, overriding the protected resource's first.
    pub issuer: Option<String>,
    /// How the user consents (authorization code); `None` refuses that flow.
    pub consent: Option<Arc<dyn Consent>>,
    /// How long each request to the authorization server may take.
    pub timeout: Duration,
    /// How the authorization server's `https` URLs are trusted (its CA, a client
    /// certificate): the upstream's own TLS settings, so an internal authorization server
    /// behind the same private CA is reached.
    pub tls: mcpwire_server::tls::ClientTls,
    /// Ask for DPoP-bound tokens (RFC 9449) where the authorization server offers them
    /// with ES256 (default: yes).
    pub dpop: bool,
}

impl OAuthConfig {
    /// Defaults for `grant`: no client id (dynamic registration), redirect to
    /// `http://localhost:3000/callback`, 30 s per request, no consent.
    pub fn new(grant: OAuthGrant) -> OAuthConfig {
        OAuthConfig {
            grant,
            client_id: None,
            client_secret: None,
            client_auth: None,
            assertion: None,
            signing_key: None,
            client_metadata_url: None,
            client_name: "mcpwire".into(),
            redirect_uri: "http://localhost:3000/callback".into(),
            scope: None,
            resource: None,
            audience: None,
            token_endpoint: None,
            issuer: None,
            consent: None,
            timeout: Duration::from_secs(30),
            tls: mcpwire_server::tls::ClientTls::default(),
            dpop: true,
        }
    }
}

impl fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .field("scope", &self.scope)
            .field("token_endpoint", &self.token_endpoint)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

/// What an HTTP upstream connection authenticates with. Cheap to clone: connections of
/// one backend share its OAuth tokens (per identity).
#[derive(Clone, Default)]
pub struct UpstreamAuth {
    headers: Vec<(HeaderName, HeaderValue)>,
    oauth: Option<Arc<OAuthClient>>,
    identity: Option<Arc<str>>,
}

impl fmt::Debug for UpstreamAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("UpstreamAuth")
            .field("headers", &names)
            .field("oauth", &self.oauth.as_ref().map(|o| o.config()))
            .field("identity", &self.identity)
            .finish()
    }
}

impl UpstreamAuth {
    /// Nothing yet.
    pub fn new() -> UpstreamAuth {
        UpstreamAuth::default()
    }

    /// Adds a header sent with every request (marked sensitive: never logged).
    pub fn header(mut self, name: &str, value: &str) -> Result<UpstreamAuth, ClientError> {
        let n = HeaderName::try_from(name)
            .map_err(|e| ClientError::Target(format!("`{name}` is not a header name: {e}")))?;
        let mut v = HeaderValue::try_from(value).map_err(|e| {
            ClientError::Target(format!("the value of header `{name}` is not valid: {e}"))
        })?;
        v.set_sensitive(true);
        if n == AUTHORIZATION && self.oauth.is_some() {
            return Err(ClientError::Target(
                "an Authorization header and OAuth exclude each other".into(),
            ));
        }
        self.headers.retain(|(h, _)| *h != n);
        self.headers.push((n, v));
        Ok(self)
    }

    /// Sends `Authorization: Bearer TOKEN` with every request.
    pub fn bearer(self, token: &str) -> Result<UpstreamAuth, ClientError> {
        self.header("authorization", &format!("Bearer {}", token.trim()))
    }

    /// Obtains tokens with OAuth as `config` says.
    pub fn oauth(mut self, config: OAuthConfig) -> Result<UpstreamAuth, ClientError> {
        if self.headers.iter().any(|(n, _)| *n == AUTHORIZATION) {
            return Err(ClientError::Target(
                "an Authorization header and OAuth exclude each other".into(),
            ));
        }
        if let Some(m) = &config.client_auth
            && !matches!(m.as_str(), "client_secret_basic" | "client_secret_post")
        {
            return Err(ClientError::Target(format!(
                "`{m}` is not a client authentication method (client_secret_basic, \
                 client_secret_post)"
            )));
        }
        if config.grant != OAuthGrant::AuthorizationCode && config.client_id.is_none() {
            return Err(ClientError::Target(
                "the client-credentials and JWT-bearer grants need a client_id".into(),
            ));
        }
        if config.grant == OAuthGrant::JwtBearer && config.assertion.is_none() {
            return Err(ClientError::Target(
                "the JWT-bearer grant needs an assertion".into(),
            ));
        }
        self.oauth = Some(Arc::new(OAuthClient::new(config)));
        Ok(self)
    }

    /// The same credentials acting for `identity` (a downstream subject): OAuth tokens are
    /// obtained and kept for it alone.
    pub fn for_identity(&self, identity: Option<&str>) -> UpstreamAuth {
        UpstreamAuth {
            identity: identity.map(Arc::from),
            ..self.clone()
        }
    }

    /// Whether OAuth is configured (challenges are answered).
    pub fn has_oauth(&self) -> bool {
        self.oauth.is_some()
    }

    /// The headers for a `method` request to `url`, and the access token among them (to
    /// tell a later challenge whether the token has changed since). A DPoP-bound token goes
    /// with a fresh proof.
    pub async fn request_headers(
        &self,
        method: &str,
        url: &str,
    ) -> Result<(Vec<(HeaderName, HeaderValue)>, Option<String>), ClientError> {
        let mut headers = self.headers.clone();
        let mut sent = None;
        if let Some(oauth) = &self.oauth
            && let Some((token, bound)) = oauth.token(self.identity.as_ref()).await?
        {
            let scheme = if bound { "DPoP" } else { "Bearer" };
            headers.push((AUTHORIZATION, sensitive(format!("{scheme} {token}"))?));
            if bound && let Some(key) = oauth.dpop() {
                let proof = key.resource_proof(method, url, &token)?;
                headers.push((HeaderName::from_static("dpop"), sensitive(proof)?));
            }
            sent = Some(token);
        }
        Ok((headers, sent))
    }

    /// Takes the nonce a server answering `use_dpop_nonce` gave; whether the request is worth
    /// sending again with it.
    pub(crate) fn dpop_nonce(&self, challenge: &Challenge, nonce: Option<&str>) -> bool {
        match (&self.oauth, nonce) {
            (Some(oauth), Some(n)) if challenge.wants_dpop_nonce() => match oauth.dpop() {
                Some(key) => {
                    key.set_resource_nonce(n);
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    /// Whether an answer with `status` and `challenge` is one OAuth may fix: `401`, or
    /// `403` with `insufficient_scope`.
    pub(crate) fn answers(&self, status: u16, challenge: &Challenge) -> bool {
        self.oauth.is_some() && (status == 401 || (status == 403 && challenge.insufficient_scope()))
    }

    /// Obtains new tokens after `server` (the MCP endpoint) answered `status` with
    /// `challenge` to a request that carried `sent`; on success the request is worth
    /// sending again.
    pub(crate) async fn challenged(
        &self,
        status: u16,
        challenge: Challenge,
        sent: Option<&str>,
        server: &str,
    ) -> Result<(), ClientError> {
        let Some(oauth) = &self.oauth else {
            return Err(ClientError::Auth(format!(
                "{server} requires authorization and no OAuth is configured for it"
            )));
        };
        oauth
            .challenged(self.identity.as_ref(), status, challenge, sent, server)
            .await
    }
}

/// A header value kept out of logs.
fn sensitive(v: String) -> Result<HeaderValue, ClientError> {
    let mut v = HeaderValue::try_from(v)
        .map_err(|e| ClientError::Auth(format!("a credential is not a header value: {e}")))?;
    v.set_sensitive(true);
    Ok(v)
}
