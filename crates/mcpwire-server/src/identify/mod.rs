//! Who is calling, as the network wires see it: [`Authenticate`], the one thing a wire knows
//! of authentication. A wire finds the credential (HTTP and WebSocket: the `Authorization`
//! header; gRPC: `authorization` metadata; MCPB: the `initialize` token and per-message
//! `auth_token`s), hands it to the service's [`Authenticate`] and gets the caller's
//! [`Identity`] or an [`AuthFailure`], which it answers its own way. What is accepted (API
//! keys, JWTs, key sets) is an implementation's business: the gateway's `Authenticator`
//! (`auth/`) is one, and a server that does not authenticate compiles none of it (no
//! `jsonwebtoken`, `sha2` or `subtle` here or in any wire).
//!
//! What belongs to the wires lives here with the trait: [`AuthFailure`] (why a credential was
//! refused, and the error-table variant every wire answers it with), [`bearer_token`] and
//! [`MAX_CREDENTIAL`] (reading a credential), and [`resource`] (RFC 9728 protected resource
//! metadata and the RFC 6750 challenges an HTTP refusal carries).
//!
//! MCPB's own static tokens (`--mcpb-token`, when the service has no authenticator) are an
//! implementation of the trait in the MCPB listener (`mcpb/tokens.rs`) rather than an
//! authenticator over API keys: a server with MCPB tokens then needs no authentication crate,
//! and the tokens are compared in constant time without a digest — a handful of tokens
//! checked once per connection, where a keyed hash would buy nothing but a dependency.
//!
//! Decisions: `docs/design/auth.md`.

mod failure;
pub mod resource;

use std::sync::Arc;

use mcpwire_router::{BoxFuture, Identity};

pub use failure::AuthFailure;
pub use resource::ResourceServer;

/// Largest credential looked at; longer ones are refused unread.
pub const MAX_CREDENTIAL: usize = 16 * 1024;

/// What [`Authenticate::check`] decided without waiting.
pub enum Check {
    /// The answer.
    Done(Result<Identity, AuthFailure>),
    /// The answer needs something loaded first (a token named a signing key not loaded
    /// yet): await it.
    Wait(BoxFuture<'static, Result<Identity, AuthFailure>>),
}

/// Checks the credentials a network listener's callers present. Object-safe: a
/// [`crate::Service`] carries one as `Arc<dyn Authenticate>` to every listener serving it
/// (never stdio).
pub trait Authenticate: Send + Sync + std::fmt::Debug {
    /// Checks `credential` (a bearer token or API key as presented; `None`: none was sent)
    /// into the caller it names, answering at once when it can; only a check that needs
    /// something loaded first is [`Check::Wait`]. Every refusal is counted
    /// ([`count_failure`]).
    fn check(&self, credential: Option<&str>) -> Check;

    /// This authenticator as one connection uses it for its requests, one after another (an
    /// HTTP keep-alive connection): it may remember the credential the connection presented
    /// last and who it was accepted as, so the next request presenting the same one is
    /// recognised without being checked again — while what was accepted still counts. Made
    /// once per connection; checks the same credentials as `self`.
    fn for_connection(self: Arc<Self>) -> Arc<dyn Authenticate>;

    /// The protected resource an HTTP listener whose own URL is `listener_url` is: its RFC
    /// 9728 metadata (served at the well-known path it names) and the challenges of its
    /// refusals.
    fn resource_server(&self, listener_url: &str) -> ResourceServer;

    /// The `WWW-Authenticate` challenge refusing `failure` outside the HTTP listener (which
    /// names its own metadata: [`ResourceServer::challenge`]), e.g. on a WebSocket upgrade.
    fn challenge(&self, failure: &AuthFailure) -> String;
}

impl dyn Authenticate {
    /// Checks `credential`, waiting for what the check needs if it must.
    pub async fn verify(&self, credential: Option<&str>) -> Result<Identity, AuthFailure> {
        match self.check(credential) {
            Check::Done(r) => r,
            Check::Wait(f) => f.await,
        }
    }

    /// Checks the value of an HTTP `Authorization` header (`None`: the header is absent).
    /// A header that is not a bearer token is refused without being counted.
    pub async fn verify_header(&self, header: Option<&[u8]>) -> Result<Identity, AuthFailure> {
        let token = bearer_token(header)?;
        self.verify(token).await
    }
}

/// Counts a refusal in `mcpwire_auth_failures_total{reason}` (the reason is
/// [`AuthFailure::kind`]): what an [`Authenticate`] does with each one it answers.
pub fn count_failure(failure: &AuthFailure) {
    crate::observe::auth_failure(failure.kind());
}

/// The token of an `Authorization: Bearer <token>` header value (the scheme is
/// case-insensitive, RFC 9110 § 11.1); `None` when there is no header.
pub fn bearer_token(header: Option<&[u8]>) -> Result<Option<&str>, AuthFailure> {
    let Some(raw) = header else {
        return Ok(None);
    };
    let text = std::str::from_utf8(raw)
        .map_err(|_| AuthFailure::Malformed("the Authorization header is not text".into()))?
        .trim();
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            let token = token.trim();
            if token.is_empty() {
                Err(AuthFailure::Malformed("an empty bearer token".into()))
            } else {
                Ok(Some(token))
            }
        }
        _ => Err(AuthFailure::Malformed(
            "the Authorization header must use the Bearer scheme".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_headers() {
        assert_eq!(bearer_token(None), Ok(None));
        assert_eq!(bearer_token(Some(b"Bearer abc")), Ok(Some("abc")));
        assert_eq!(bearer_token(Some(b"bearer  abc ")), Ok(Some("abc")));
        assert!(bearer_token(Some(b"Basic abc")).is_err());
        assert!(bearer_token(Some(b"Bearer ")).is_err());
    }
}
