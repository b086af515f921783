//! [`ElicitConsent`]: consent of a gateway's downstream users. The authorization request
//! is opened in the gateway's [`PendingConsents`] under its `state`; the upstream layer
//! serving the user's call sees it there and shows the user the URL (URL-mode elicitation,
//! or a `URLElicitationRequired` error to retry after); the authorization server sends the
//! user's browser to the gateway's redirect endpoint, which hands the answer back here by
//! `state`. The gateway's own session has no user: it follows the redirect instead
//! ([`FollowRedirect`]), which works where the authorization server approves the
//! gateway's client without a page.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::consent::{AuthorizationRequest, Consent, FollowRedirect};
use super::pending::{PendingConsent, PendingConsents};
use super::pkce::random_token;
use crate::ClientError;

/// Consent of the downstream user a token is for, asked through the gateway.
#[derive(Debug, Clone)]
pub struct ElicitConsent {
    /// The gateway's pending authorizations (shared with its redirect endpoint).
    pub pending: Arc<PendingConsents>,
    /// The upstream (backend name) asking.
    pub upstream: Arc<str>,
    /// How long a user has to complete the authorization.
    pub timeout: Duration,
    /// For the gateway's own session, which has no user.
    pub own: FollowRedirect,
}

impl Consent for ElicitConsent {
    fn authorize(
        &self,
        request: AuthorizationRequest,
    ) -> BoxFuture<'static, Result<String, ClientError>> {
        let Some(identity) = request.identity.clone() else {
            return self.own.authorize(request);
        };
        let this = self.clone();
        Box::pin(async move {
            let consent = PendingConsent {
                elicitation_id: random_token()?,
                url: request.url.clone(),
                upstream: this.upstream.clone(),
            };
            let answer = this
                .pending
                .open(
                    &request.state,
                    this.upstream.clone(),
                    Arc::from(identity.as_str()),
                    consent,
                    request.redirect_uri.clone(),
                    this.timeout,
                )
                .map_err(|e| ClientError::Auth(e.to_string()))?;
            // However this ends (answered, timed out, abandoned), the state is spent.
            let _spent = Spent(&this.pending, &request.state);
            tracing::info!(
                upstream = %this.upstream,
                user = %identity,
                "asking the user to authorize the upstream"
            );
            match tokio::time::timeout(this.timeout, answer).await {
                Ok(Ok(redirect)) => Ok(redirect),
                Ok(Err(_)) => Err(ClientError::Auth(format!(
                    "the authorization of `{}` for {identity} was declined or abandoned",
                    this.upstream
                ))),
                Err(_) => Err(ClientError::Auth(format!(
                    "{identity} did not complete the authorization of `{}` within {:?}",
                    this.upstream, this.timeout
                ))),
            }
        })
    }
}

/// Closes a pending authorization when its flow stops waiting.
struct Spent<'a>(&'a PendingConsents, &'a str);

impl Drop for Spent<'_> {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}
