//! A downstream user's consent to the upstream's OAuth, asked while their call waits for
//! it. When the call needs a token the gateway does not have for the caller, the OAuth
//! flow opens an authorization in the gateway's [`PendingConsents`]
//! ([`ElicitConsent`](crate::client::auth::ElicitConsent)); this puts it to the user: a
//! URL-mode `elicitation/create` to a client that declared `elicitation.url` (the call then
//! finishes once the authorization comes back: when it failed meanwhile for want of it —
//! the upstream session's handshake timed out before the user was done — it runs once more
//! once the authorization has ended), otherwise the
//! `URLElicitationRequired` error (−32042) carrying the URL — the authorization goes on
//! without the call, and the client's retry finds the token.

use mcpwire_model::types::{ElicitAction, ElicitParams};
use mcpwire_model::{McpError, Reply};
use mcpwire_router::CallCtx;
use std::future::Future;

use crate::client::auth::{PendingConsent, PendingConsents};

/// Runs `call` (again, at most once) for `ctx`, whose caller is `who`, at the upstream
/// `upstream`, putting any authorization they are asked for meanwhile to them.
pub(super) async fn asking_consent<F, Fut>(
    consents: &PendingConsents,
    upstream: &str,
    ctx: &CallCtx,
    who: &str,
    call: F,
) -> Result<Reply, McpError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Reply, McpError>>,
{
    let mut failed = None;
    for _ in 0..2 {
        let mut attempt = std::pin::pin!(call());
        tokio::select! {
            reply = &mut attempt => return reply,
            refused = ask_user(consents, upstream, who, ctx) => {
                if let Some(e) = refused {
                    return Err(e);
                }
            }
        }
        // The user is authorizing: the call goes on when the authorization comes back.
        let e = match attempt.await {
            Ok(reply) => return Ok(reply),
            Err(e) => e,
        };
        // Failed while the authorization was still waiting (so before the upstream ran
        // anything): once more when it has ended.
        if consents.pending_for(upstream, who).is_none() {
            return Err(e);
        }
        consents.settled(upstream, who).await;
        failed = Some(e);
    }
    Err(failed.unwrap_or(McpError::Internal("no attempt".into())))
}

/// Waits for an authorization of `who` at `upstream`, then shows it to them: `None` when
/// they went to authorize (the call goes on), else the error the call ends with (the
/// client cannot be asked, or the user declined).
async fn ask_user(
    consents: &PendingConsents,
    upstream: &str,
    who: &str,
    ctx: &CallCtx,
) -> Option<McpError> {
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
        return Some(McpError::UrlElicitationRequired {
            message: params.message.clone(),
            elicitations: vec![params],
        });
    }
    match ctx.elicit_with(None, params).await {
        Ok(r) if r.action == ElicitAction::Accept => None,
        Ok(_) => {
            consents.cancel(&pending.elicitation_id);
            Some(McpError::Forbidden(format!(
                "the authorization of `{upstream}` was declined: the call needs it"
            )))
        }
        Err(e) => Some(e),
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
