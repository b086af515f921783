//! A downstream user's consent to the upstream's OAuth, asked while their call waits for
//! it. When the call needs a token the gateway does not have for the caller, the OAuth
//! flow opens an authorization in the gateway's [`PendingConsents`]
//! ([`ElicitConsent`](crate::client::auth::ElicitConsent)); this puts it to the user: a
//! URL-mode `elicitation/create` to a client that declared `elicitation.url` (the call then
//! finishes once the authorization comes back, within the consent timeout), otherwise the
//! `URLElicitationRequired` error (−32042) carrying the URL — the authorization goes on
//! without the call, and the client's retry finds the token.

use std::future::Future;
use std::sync::Arc;

use mcpwire_model::types::{ElicitAction, ElicitParams};
use mcpwire_model::{McpError, Reply};
use mcpwire_router::CallCtx;

use crate::client::auth::{PendingConsent, PendingConsents};

/// Runs `call` for `ctx` at the upstream `upstream`, putting any authorization the caller
/// is asked for meanwhile to them.
pub(super) async fn asking_consent(
    consents: Option<&Arc<PendingConsents>>,
    upstream: &str,
    ctx: &CallCtx,
    call: impl Future<Output = Result<Reply, McpError>>,
) -> Result<Reply, McpError> {
    let (Some(consents), Some(identity)) = (consents, ctx.identity()) else {
        return call.await;
    };
    tokio::select! {
        reply = call => reply,
        refused = ask_user(consents, upstream, identity.subject(), ctx) => Err(refused),
    }
}

/// Waits for an authorization of `who` at `upstream`, then shows it to them; resolves only
/// when the call is to end with an error (the client cannot be asked, or declined).
async fn ask_user(
    consents: &PendingConsents,
    upstream: &str,
    who: &str,
    ctx: &CallCtx,
) -> McpError {
    let mut opened = consents.subscribe();
    let pending = loop {
        if let Some(p) = consents.pending_for(upstream, who) {
            break p;
        }
        if opened.changed().await.is_err() {
            return std::future::pending().await;
        }
    };
    let params = elicitation(&pending);
    if !takes_url_elicitation(ctx) {
        return McpError::UrlElicitationRequired {
            message: params.message.clone(),
            elicitations: vec![params],
        };
    }
    match ctx.elicit_with(None, params).await {
        // The user went to the URL: the call goes on when the authorization comes back.
        Ok(r) if r.action == ElicitAction::Accept => std::future::pending().await,
        Ok(_) => {
            consents.cancel(&pending.elicitation_id);
            McpError::Forbidden(format!(
                "the authorization of `{upstream}` was declined: the call needs it"
            ))
        }
        Err(e) => e,
    }
}

/// The URL-mode elicitation showing `pending`.
fn elicitation(pending: &PendingConsent) -> ElicitParams {
    ElicitParams {
        message: format!(
            "`{}` needs your authorization: open the link to sign in and approve access, \
             then come back",
            pending.upstream
        ),
        requested_schema: None,
        mode: Some("url".into()),
        url: Some(pending.url.clone()),
        elicitation_id: Some(pending.elicitation_id.clone()),
    }
}

/// Whether the client declared URL-mode elicitation (`elicitation: {url: {}}`).
fn takes_url_elicitation(ctx: &CallCtx) -> bool {
    ctx.client_capabilities()
        .elicitation
        .as_ref()
        .is_some_and(|e| e.get("url").is_some())
}
