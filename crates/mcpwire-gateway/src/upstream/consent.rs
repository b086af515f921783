//! A downstream user's consent to the upstream's OAuth, asked while their call waits for
//! it. When the call needs a token the gateway does not have for the caller, the OAuth
//! flow opens an authorization in the gateway's [`PendingConsents`]
//! ([`ElicitConsent`](mcpwire_client::auth::ElicitConsent)); this puts it to the user: a
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

use mcpwire_client::auth::{PendingConsent, PendingConsents};

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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use mcpwire_model::types::ClientCapabilities;
    use mcpwire_model::{CallEvent, ClientAsk, Raw, Revision, to_raw};
    use mcpwire_router::{BoxFuture, Identity, Peer};
    use tokio_util::sync::CancellationToken;

    use super::*;
    use mcpwire_client::auth::PendingConsent;

    /// A client answering every elicitation with `action`, keeping what it was asked.
    struct Client {
        action: &'static str,
        asked: Mutex<Vec<serde_json::Value>>,
    }

    impl Peer for Client {
        fn event(&self, _: CallEvent) {}
        fn ask(&self, ask: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
            let params = ask.params.map(|p| serde_json::from_str(p.get()).unwrap());
            self.asked.lock().unwrap().push(params.unwrap_or_default());
            let answer = to_raw(&serde_json::json!({ "action": self.action }));
            Box::pin(async move { Ok(answer) })
        }
    }

    fn ctx(url_elicitation: bool, client: &Arc<Client>) -> CallCtx {
        let caps = ClientCapabilities {
            elicitation: Some(match url_elicitation {
                true => serde_json::json!({ "form": {}, "url": {} }),
                false => serde_json::json!({ "form": {} }),
            }),
            ..ClientCapabilities::default()
        };
        let peer: Arc<dyn Peer> = client.clone();
        CallCtx::new(
            Revision::LATEST_STATEFUL,
            Arc::new(caps),
            CancellationToken::new(),
            Some(peer),
        )
        .with_identity(Some(Identity::api_key("alice", Vec::new())))
    }

    /// What the OAuth flow does when the call needs a token: opens an authorization.
    fn open(table: &PendingConsents, state: &str) -> tokio::sync::oneshot::Receiver<String> {
        table
            .open(
                state,
                Arc::from("up"),
                Arc::from("key:alice"),
                PendingConsent {
                    elicitation_id: format!("e-{state}"),
                    url: format!("https://as.example/authorize?state={state}"),
                    upstream: Arc::from("up"),
                },
                "https://gw.example/oauth/callback".into(),
                Duration::from_secs(300),
            )
            .unwrap()
    }

    /// A downstream client answering every elicitation with `action`.
    fn answering(action: &'static str) -> Arc<Client> {
        Arc::new(Client {
            action,
            asked: Mutex::default(),
        })
    }

    /// A call whose OAuth flow opens the authorization `s1` (its code awaited in `kept`), then
    /// waits for it for ever.
    async fn opens_then_waits(
        table: &PendingConsents,
        kept: &Mutex<Option<tokio::sync::oneshot::Receiver<String>>>,
    ) -> Result<Reply, McpError> {
        *kept.lock().unwrap() = Some(open(table, "s1"));
        std::future::pending().await
    }

    fn done() -> Result<Reply, McpError> {
        Ok(Reply::Complete(to_raw(
            &serde_json::json!({ "content": [] }),
        )))
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_without_url_elicitation_gets_the_url_in_an_error() {
        let table = PendingConsents::new(8, Vec::new());
        let client = answering("accept");
        let ctx = ctx(false, &client);
        let kept = Mutex::new(None);
        let call = || opens_then_waits(&table, &kept);
        let e = asking_consent(&table, "up", &ctx, "key:alice", call)
            .await
            .unwrap_err();
        let McpError::UrlElicitationRequired { elicitations, .. } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(elicitations[0].mode.as_deref(), Some("url"));
        assert_eq!(elicitations[0].elicitation_id.as_deref(), Some("e-s1"));
        assert!(elicitations[0].url.as_deref().unwrap().contains("state=s1"));
        assert!(client.asked.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn an_accepted_authorization_outlasting_the_handshake_runs_the_call_again() {
        let table = PendingConsents::new(8, Vec::new());
        let client = answering("accept");
        let ctx = ctx(true, &client);
        let attempts = AtomicUsize::new(0);
        let answer = Arc::new(Mutex::new(None));
        let call = || async {
            if attempts.fetch_add(1, Ordering::SeqCst) == 1 {
                return done();
            }
            // The flow waits for the user; the upstream session's handshake gives up first.
            *answer.lock().unwrap() = Some(open(&table, "s1"));
            tokio::time::sleep(Duration::from_secs(30)).await;
            Err(McpError::Unavailable("the handshake timed out".into()))
        };
        // The user comes back from the authorization server a minute later.
        let browser = {
            let table = table.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                table.complete("code=c&state=s1").unwrap();
            })
        };
        let reply = asking_consent(&table, "up", &ctx, "key:alice", call).await;
        assert!(reply.is_ok(), "{reply:?}");
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        browser.await.unwrap();
        let asked = client.asked.lock().unwrap();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0]["mode"], "url");
        assert_eq!(asked[0]["elicitationId"], "e-s1");
    }

    #[tokio::test(start_paused = true)]
    async fn a_declined_authorization_ends_the_call_and_is_forgotten() {
        let table = PendingConsents::new(8, Vec::new());
        let client = answering("decline");
        let ctx = ctx(true, &client);
        let kept = Mutex::new(None);
        let call = || opens_then_waits(&table, &kept);
        let e = asking_consent(&table, "up", &ctx, "key:alice", call)
            .await
            .unwrap_err();
        assert!(
            matches!(&e, McpError::Forbidden(m) if m.contains("declined")),
            "{e:?}"
        );
        assert!(table.is_empty());
    }
}
