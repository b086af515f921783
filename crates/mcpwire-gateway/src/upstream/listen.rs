//! Change notifications from a 2026-07-28 upstream. In that era a server sends
//! `notifications/{tools,prompts,resources}/list_changed` only on a
//! `subscriptions/listen` stream the client opened; without one, a gateway in front of it
//! never hears that its catalog changed. So the shared session of a stateless upstream
//! keeps one open for the lists the server offers (the notifications arrive as the
//! client's events and are routed like any others), opening it again with backoff when it
//! ends — and, since changes may have been missed meanwhile, having the lists read again.
//! Its `resourceSubscriptions` are the resources the gateway's own listeners watch
//! (`super::watched`); when that set changes, the stream is opened again with the new one.

use std::time::Duration;

use mcpwire_client::{ClientEra, ClientError, RequestOptions};
use mcpwire_model::types::ServerCapabilities;
use serde_json::json;
use tokio::sync::watch;

use super::link::Link;
use super::restart::Backoff;

/// How a listen stream ended.
pub(crate) enum Ended {
    /// The server does not offer listening (or refused it): nothing to follow.
    Refused(String),
    /// It ended after being open (a dropped stream); open it again.
    Dropped(String),
}

/// The list changes the shared session on `link` should listen for (`None`: it should
/// not listen: not a 2026-07-28 session, or a server announcing no changes).
pub(crate) fn wanted(link: &Link) -> Option<Lists> {
    let n = link.client().negotiated();
    if n.era != ClientEra::Stateless {
        return None;
    }
    Lists::of(&n.capabilities)
}

/// Which lists' changes and whether resource updates a server announces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lists {
    tools: bool,
    prompts: bool,
    resources: bool,
    updates: bool,
}

impl Lists {
    fn of(caps: &ServerCapabilities) -> Option<Lists> {
        let r = caps.resources.as_ref();
        let l = Lists {
            tools: caps
                .tools
                .as_ref()
                .is_some_and(|t| t.list_changed == Some(true)),
            prompts: caps
                .prompts
                .as_ref()
                .is_some_and(|p| p.list_changed == Some(true)),
            resources: r.is_some_and(|r| r.list_changed == Some(true)),
            updates: r.is_some_and(|r| r.subscribe == Some(true)),
        };
        (l.tools || l.prompts || l.resources || l.updates).then_some(l)
    }

    /// The `notifications` filter, watching `uris`.
    fn filter(&self, uris: &[String]) -> serde_json::Value {
        let mut f = json!({
            "toolsListChanged": self.tools,
            "promptsListChanged": self.prompts,
            "resourcesListChanged": self.resources,
        });
        if self.updates && !uris.is_empty() {
            f["resourceSubscriptions"] = json!(uris);
        }
        f
    }
}

/// Keeps a listen stream open on `link` while it is up, watching what `watched` holds
/// (opened again at once when that changes), calling `reopened` after each stream opened
/// again after one ended (changes may have been missed). Completes only when the server
/// refused to listen; then says why.
pub(crate) async fn follow(
    link: &Link,
    lists: Lists,
    mut watched: watch::Receiver<Vec<String>>,
    reopened: impl Fn(),
) -> String {
    let mut backoff = Backoff::new();
    let mut dropped = false;
    loop {
        tokio::time::sleep(backoff.delay()).await;
        if dropped {
            reopened();
        }
        let uris = watched.borrow_and_update().clone();
        if !lists.tools && !lists.prompts && !lists.resources && uris.is_empty() {
            // Only resource updates to listen for, and none watched yet.
            if watched.changed().await.is_err() {
                return "the backend is gone".into();
            }
            continue;
        }
        let filter = lists.filter(&uris);
        tokio::select! {
            ended = listen_once(link, &filter) => match ended {
                Ended::Refused(why) => return why,
                Ended::Dropped(why) => {
                    backoff.failed();
                    dropped = true;
                    tracing::debug!(upstream = %link.client().peer(), "listen stream ended ({why}); opening it again in {:?}", backoff.delay());
                }
            },
            changed = watched.changed() => {
                if changed.is_err() {
                    return "the backend is gone".into();
                }
                // Opened again at once with the new set (the old stream is dropped).
                backoff = Backoff::new();
                dropped = false;
            }
        }
    }
}

/// One `subscriptions/listen` request, until it ends.
async fn listen_once(link: &Link, notifications: &serde_json::Value) -> Ended {
    let params = serde_json::value::to_raw_value(&json!({ "notifications": notifications })).ok();
    let opts = RequestOptions::default();
    let pending = match link
        .client()
        .send("subscriptions/listen", params, opts)
        .await
    {
        Ok(p) => p,
        Err(e) => return Ended::Dropped(e.to_string()),
    };
    let started = tokio::time::Instant::now();
    match pending.await {
        Err(ClientError::Rpc { error, .. }) => Ended::Refused(error.message),
        // An answer that comes at once (a server that answers rather than streams) would
        // loop: treat it as refusal.
        Ok(_) if started.elapsed() < Duration::from_secs(1) => {
            Ended::Refused("the server answered subscriptions/listen at once".into())
        }
        Ok(_) => Ended::Dropped("answered".into()),
        Err(e) => Ended::Dropped(e.to_string()),
    }
}
