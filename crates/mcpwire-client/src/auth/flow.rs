//! [`OAuthClient`]: the OAuth state of one upstream — registrations per authorization
//! server, tokens per downstream identity — and the flows that fill it: discovery after a
//! challenge (`discovery.rs`), then refresh, client credentials, a JWT-bearer assertion or the
//! authorization code with PKCE.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::challenge::Challenge;
use super::consent::{AuthorizationRequest, read_response};
use super::discovery::{ServerMetadata, discover, split};
use super::dpop::DpopKey;
use super::pkce::{Pkce, random_token};
use super::scope;
use super::token::{self, ClientMetadata, Registered, TokenAuth, TokenRequest, TokenSet};
use super::{OAuthConfig, OAuthGrant, form};
use crate::ClientError;
use crate::fetch::Reach;

/// Identities whose tokens are kept at once per upstream; beyond, an idle one is forgotten.
pub(crate) const MAX_IDENTITIES: usize = 4096;

/// Authorization servers whose registrations are kept at once.
const MAX_REGISTRATIONS: usize = 16;

/// A token this close to expiry is refreshed before it is sent.
const REFRESH_MARGIN: Duration = Duration::from_secs(60);

/// The JWT-bearer grant type (RFC 7523 §2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// Whose tokens: a downstream subject, or `None` for the client itself.
type Who = Option<Arc<str>>;

/// The tokens of one identity, behind a lock held while they are being obtained.
type Slot = Arc<tokio::sync::Mutex<Option<TokenSet>>>;

/// The OAuth state of one upstream.
pub(crate) struct OAuthClient {
    config: OAuthConfig,
    slots: Mutex<HashMap<Who, Slot>>,
    /// Registrations by issuer: credentials from one server are never shown to another.
    registrations: Mutex<HashMap<String, Registered>>,
    /// The DPoP key tokens are bound to where the authorization server offers it.
    dpop: Option<DpopKey>,
    /// How the authorization server is reached (deadline, TLS trust).
    reach: Reach,
}

impl OAuthClient {
    pub(crate) fn new(config: OAuthConfig) -> OAuthClient {
        let dpop = if config.dpop {
            DpopKey::new()
                .inspect_err(|e| tracing::warn!(error = %e, "no DPoP key: bearer tokens only"))
                .ok()
        } else {
            None
        };
        OAuthClient {
            reach: Reach {
                timeout: config.timeout,
                tls: config.tls.clone(),
            },
            config,
            slots: Mutex::new(HashMap::new()),
            registrations: Mutex::new(HashMap::new()),
            dpop,
        }
    }

    pub(crate) fn config(&self) -> &OAuthConfig {
        &self.config
    }

    /// Identities whose tokens are kept now.
    #[cfg(test)]
    pub(crate) fn slot_count(&self) -> usize {
        lock(&self.slots).len()
    }

    /// Makes `who`'s slot (as a request would) and returns how many are kept.
    #[cfg(test)]
    pub(crate) fn slot_count_after_touch(&self, who: &Arc<str>) -> usize {
        let _ = self.slot(Some(who));
        self.slot_count()
    }

    /// The slot of `who`, made if new (an idle one is forgotten when the table is full).
    fn slot(&self, who: Option<&Arc<str>>) -> Result<Slot, ClientError> {
        let mut slots = lock(&self.slots);
        if let Some(s) = slots.get(&who.cloned()) {
            return Ok(s.clone());
        }
        if slots.len() >= MAX_IDENTITIES {
            let idle = slots
                .iter()
                .find(|(_, s)| Arc::strong_count(s) == 1)
                .map(|(k, _)| k.clone());
            match idle {
                Some(k) => {
                    slots.remove(&k);
                }
                None => {
                    return Err(ClientError::Auth(format!(
                        "tokens for {MAX_IDENTITIES} identities are being obtained at once"
                    )));
                }
            }
        }
        let s = Slot::default();
        slots.insert(who.cloned(), s.clone());
        Ok(s)
    }

    /// The access token to send for `who`: the current one, refreshed first when it is
    /// about to expire; for client credentials with a known token endpoint, a new one.
    pub(crate) async fn token(
        &self,
        who: Option<&Arc<str>>,
    ) -> Result<Option<(String, bool)>, ClientError> {
        let slot = self.slot(who)?;
        let mut tokens = slot.lock().await;
        let now = Instant::now();
        if let Some(t) = tokens.as_ref()
            && t.expiring(now, REFRESH_MARGIN)
        {
            let old = tokens.take();
            *tokens = match old {
                Some(t) if t.refresh.is_some() => match self.refresh(&t).await {
                    Ok(new) => Some(new),
                    Err(e) => {
                        tracing::info!(error = %e, "refreshing an upstream token failed");
                        None
                    }
                },
                _ => None,
            };
        }
        if tokens.is_none()
            && self.config.grant != OAuthGrant::AuthorizationCode
            && let Some(endpoint) = self.config.token_endpoint.clone()
        {
            let (origin, _) = split(&endpoint)?;
            let server = ServerMetadata {
                token_endpoint: endpoint,
                ..ServerMetadata::legacy_defaults(&origin)
            };
            *tokens = Some(self.client_credentials(&server, None, None).await?);
        }
        Ok(tokens.as_ref().map(|t| (t.access.clone(), t.dpop)))
    }

    /// The DPoP key, when tokens from `server` are to be bound to it: DPoP is enabled and
    /// the server takes ES256 proofs.
    fn dpop_for(&self, server: &ServerMetadata) -> Option<&DpopKey> {
        let offered = server
            .dpop_signing_alg_values_supported
            .as_ref()
            .is_some_and(|a| a.iter().any(|a| a == "ES256"));
        if offered { self.dpop.as_ref() } else { None }
    }

    /// The DPoP key (proofs toward the server for DPoP-bound tokens).
    pub(crate) fn dpop(&self) -> Option<&DpopKey> {
        self.dpop.as_ref()
    }

    /// Obtains tokens after `server` answered `status` with `challenge` to a request that
    /// carried `sent`. Returns at once when the tokens changed since (another request
    /// already obtained new ones).
    pub(crate) async fn challenged(
        self: &Arc<Self>,
        who: Option<&Arc<str>>,
        status: u16,
        challenge: Challenge,
        sent: Option<&str>,
        server: &str,
    ) -> Result<(), ClientError> {
        let slot = self.slot(who)?;
        let mut tokens = slot.lock_owned().await;
        if tokens.as_ref().map(|t| t.access.as_str()) != sent {
            return Ok(());
        }
        let prior = tokens.as_ref().and_then(|t| t.scope.clone());
        let step_up = status == 403;
        if step_up {
            match challenge.scope.as_deref() {
                Some(needed) if !scope::covers(prior.as_deref(), needed) => {}
                Some(needed) => {
                    return Err(ClientError::Auth(format!(
                        "{server} refuses the token for want of scope `{needed}`, which was \
                         already asked for: asking again would not help"
                    )));
                }
                None => {
                    return Err(ClientError::Auth(format!(
                        "{server} answered 403 insufficient_scope without naming a scope"
                    )));
                }
            }
        }
        let found = discover(
            &challenge,
            server,
            self.config.issuer.as_deref(),
            &self.reach,
        )
        .await?;
        if !step_up
            && let Some(t) = tokens.take()
            && t.refresh.is_some()
            && t.issuer == found.server.issuer
        {
            match self.refresh(&t).await {
                Ok(new) => {
                    *tokens = Some(new);
                    return Ok(());
                }
                Err(e) => tracing::info!(error = %e, "refreshing an upstream token failed"),
            }
        }
        let resource = self.config.resource.clone().or(found.resource);
        let new = match self.config.grant {
            OAuthGrant::ClientCredentials | OAuthGrant::JwtBearer => {
                let scope = scope::select(
                    self.config.scope.as_deref(),
                    challenge.scope.as_deref(),
                    found.scopes_supported.as_deref(),
                    prior.as_deref(),
                    None,
                );
                self.client_credentials(&found.server, scope.as_deref(), resource.as_deref())
                    .await?
            }
            OAuthGrant::AuthorizationCode => {
                let scope = scope::select(
                    self.config.scope.as_deref(),
                    challenge.scope.as_deref(),
                    found.scopes_supported.as_deref(),
                    prior.as_deref(),
                    found.server.scopes_supported.as_deref(),
                );
                // A user's consent may outlive the request that needed it (its caller was
                // told to authorize and retry): the flow runs on its own, holding this
                // identity's tokens until it stores what it got.
                let this = self.clone();
                let who = who.cloned();
                let server = found.server;
                let flow = tokio::spawn(async move {
                    let new = this
                        .authorization_code(
                            who.as_ref(),
                            &server,
                            scope.as_deref(),
                            resource.as_deref(),
                        )
                        .await?;
                    *tokens = Some(new);
                    Ok(())
                });
                return flow.await.map_err(|e| {
                    ClientError::Auth(format!("the authorization flow ended abnormally: {e}"))
                })?;
            }
        };
        *tokens = Some(new);
        Ok(())
    }

    /// The pre-registered client, if one is configured: with its key, or its secret sent
    /// as the server `accepts`.
    fn preregistered(&self, accepts: impl Fn(&str) -> bool) -> Option<Registered> {
        let id = self.config.client_id.clone()?;
        Some(match &self.config.signing_key {
            Some(key) => Registered::with_key(id, key.clone()),
            None => {
                let mut client = Registered::choose(id, self.config.client_secret.clone(), accepts);
                if client.secret.is_some()
                    && let Some(auth) = self
                        .config
                        .client_auth
                        .as_deref()
                        .and_then(TokenAuth::from_name)
                {
                    client.auth = auth;
                }
                client
            }
        })
    }

    /// This client at `server`: pre-registered, its metadata document's URL, or
    /// registered dynamically (once per issuer).
    async fn registration(&self, server: &ServerMetadata) -> Result<Registered, ClientError> {
        let accepts = |m: &str| server.accepts_auth(m);
        if let Some(client) = self.preregistered(accepts) {
            return Ok(client);
        }
        if let Some(r) = lock(&self.registrations).get(&server.issuer) {
            return Ok(r.clone());
        }
        let registered = if server.client_id_metadata_document_supported
            && let Some(url) = &self.config.client_metadata_url
        {
            Registered::choose(url.clone(), None, accepts)
        } else if let Some(endpoint) = &server.registration_endpoint {
            let auth_method = if accepts("none") {
                "none"
            } else if accepts("client_secret_basic") {
                "client_secret_basic"
            } else {
                "client_secret_post"
            };
            let meta = ClientMetadata {
                name: &self.config.client_name,
                redirect_uri: &self.config.redirect_uri,
                auth_method,
            };
            token::register(endpoint, &meta, accepts, &self.reach).await?
        } else {
            return Err(ClientError::Auth(format!(
                "{} offers neither dynamic registration nor client ID metadata documents \
                 (that this client has one for): configure a client_id",
                server.issuer
            )));
        };
        let mut regs = lock(&self.registrations);
        if regs.len() >= MAX_REGISTRATIONS {
            regs.clear();
        }
        regs.insert(server.issuer.clone(), registered.clone());
        Ok(registered)
    }

    /// Tokens from a grant without a user: the client's credentials, or (RFC 7523 §2.1) a
    /// JWT assertion of the workload's identity. Not retried on failure.
    async fn client_credentials(
        &self,
        server: &ServerMetadata,
        scope: Option<&str>,
        resource: Option<&str>,
    ) -> Result<TokenSet, ClientError> {
        let client = self.registration(server).await?;
        let resource = resource.or(self.config.resource.as_deref());
        let assertion;
        let mut params = match (&self.config.grant, &self.config.assertion) {
            (OAuthGrant::JwtBearer, Some(source)) => {
                assertion = source.obtain(&server.issuer, resource, &self.reach).await?;
                vec![
                    ("grant_type", JWT_BEARER),
                    ("assertion", assertion.as_str()),
                ]
            }
            (OAuthGrant::JwtBearer, None) => {
                return Err(ClientError::Auth(
                    "the JWT-bearer grant needs an assertion, and none is configured".into(),
                ));
            }
            _ => vec![("grant_type", "client_credentials")],
        };
        if let Some(a) = &self.config.audience {
            params.push(("audience", a));
        }
        let scope = scope.or(self.config.scope.as_deref());
        token::request(
            &client,
            TokenRequest {
                endpoint: &server.token_endpoint,
                issuer: &server.issuer,
                params,
                scope,
                resource,
            },
            self.dpop_for(server),
            &self.reach,
        )
        .await
    }

    async fn authorization_code(
        &self,
        who: Option<&Arc<str>>,
        server: &ServerMetadata,
        scope: Option<&str>,
        resource: Option<&str>,
    ) -> Result<TokenSet, ClientError> {
        let supports_s256 = server
            .code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"));
        if !supports_s256 {
            return Err(ClientError::Auth(format!(
                "{} does not offer PKCE with S256, which MCP requires: refused",
                server.issuer
            )));
        }
        let Some(endpoint) = &server.authorization_endpoint else {
            return Err(ClientError::Auth(format!(
                "{} has no authorization endpoint",
                server.issuer
            )));
        };
        let Some(consent) = &self.config.consent else {
            return Err(ClientError::Auth(format!(
                "{} needs a user's consent, and no way to ask for it is configured",
                server.issuer
            )));
        };
        let client = self.registration(server).await?;
        let pkce = Pkce::new()?;
        let state = random_token()?;
        let redirect_uri = self.config.redirect_uri.as_str();
        let mut params = vec![
            ("response_type", "code"),
            ("client_id", client.client_id.as_str()),
            ("redirect_uri", redirect_uri),
            ("code_challenge", pkce.challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("state", state.as_str()),
        ];
        if let Some(s) = scope {
            params.push(("scope", s));
        }
        if let Some(r) = resource {
            params.push(("resource", r));
        }
        let url = form::with_query(endpoint, params);
        let redirect = consent
            .authorize(AuthorizationRequest {
                state: state.clone(),
                url,
                redirect_uri: redirect_uri.to_owned(),
                identity: who.map(|w| w.to_string()),
            })
            .await?;
        let code = read_response(&redirect, &state, server)?;
        token::request(
            &client,
            TokenRequest {
                endpoint: &server.token_endpoint,
                issuer: &server.issuer,
                params: vec![
                    ("grant_type", "authorization_code"),
                    ("code", code.as_str()),
                    ("redirect_uri", redirect_uri),
                    ("code_verifier", pkce.verifier.as_str()),
                ],
                scope: None,
                resource,
            },
            self.dpop_for(server),
            &self.reach,
        )
        .await
        .map(|mut t| {
            // What was asked for counts as asked, whatever the answer lists.
            t.scope = scope::select(None, scope, None, t.scope.as_deref(), None);
            t
        })
    }

    /// New tokens for `old` from its refresh token, at the server that issued it.
    async fn refresh(&self, old: &TokenSet) -> Result<TokenSet, ClientError> {
        let Some(refresh) = &old.refresh else {
            return Err(ClientError::Auth("no refresh token".into()));
        };
        let mut new = token::request(
            &old.client,
            TokenRequest {
                endpoint: &old.token_endpoint,
                issuer: &old.issuer,
                params: vec![("grant_type", "refresh_token"), ("refresh_token", refresh)],
                scope: None,
                resource: old.resource.as_deref(),
            },
            if old.dpop { self.dpop.as_ref() } else { None },
            &self.reach,
        )
        .await?;
        if new.refresh.is_none() {
            new.refresh = old.refresh.clone();
        }
        if new.scope.is_none() {
            new.scope = old.scope.clone();
        }
        Ok(new)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
