//! [`PendingConsents`]: the authorization requests waiting for their user, by `state`.
//! The gateway's [`ElicitConsent`](crate::auth::ElicitConsent) opens one when it sends a
//! user to the authorization server; the redirect endpoint the gateway adds to its HTTP
//! listeners ([`PendingConsents::complete`]) hands the authorization server's answer to the
//! flow waiting for it. Each `state` is unguessable (256 random bits, minted by the flow),
//! answers once, and expires; the table is bounded. A leaf (tokio only).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

use percent_encoding::percent_decode_str;

/// Authorizations waiting for their user at once, by default.
pub const MAX_PENDING_CONSENTS: usize = 1024;

/// One authorization a user is asked to complete: what the gateway shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingConsent {
    /// The URL-mode elicitation's id (not the `state`: the client never needs that).
    pub elicitation_id: String,
    /// The authorization URL the user opens.
    pub url: String,
    /// Which upstream asks (the backend's name), for the message shown.
    pub upstream: Arc<str>,
}

/// The table is full: an authorization cannot wait for its user now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0} authorizations are already waiting for their users: try again later")]
pub struct ConsentsFull(pub usize);

/// Why a redirect to the callback was refused (each a 400 page, with the reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackRefusal {
    /// The request has no `state` parameter.
    #[error("the request has no state parameter")]
    NoState,
    /// No authorization with this `state` is waiting: unknown, already used or expired.
    #[error("this authorization is unknown, was already completed, or has expired")]
    Unknown,
    /// The authorization was waiting, and nobody waits for its answer any more.
    #[error("nobody is waiting for this authorization any more")]
    Abandoned,
}

struct Entry {
    upstream: Arc<str>,
    identity: Arc<str>,
    consent: PendingConsent,
    redirect_uri: String,
    expires: Instant,
    answer: oneshot::Sender<String>,
}

/// The pending authorizations of a gateway, shared by its upstreams (matched by `state`,
/// which is unique across them) and its HTTP listeners' redirect endpoint.
pub struct PendingConsents {
    entries: Mutex<HashMap<String, Entry>>,
    max: usize,
    /// The paths the redirect endpoint is served at (those of the redirect URIs).
    paths: Vec<String>,
    /// Bumped whenever an authorization opens or ends: the upstreams' callers look for
    /// theirs.
    changed: watch::Sender<u64>,
}

impl std::fmt::Debug for PendingConsents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingConsents")
            .field("pending", &self.len())
            .field("paths", &self.paths)
            .finish()
    }
}

impl PendingConsents {
    /// An empty table holding at most `max` authorizations, answering redirects at `paths`.
    pub fn new(max: usize, paths: Vec<String>) -> Arc<PendingConsents> {
        Arc::new(PendingConsents {
            entries: Mutex::new(HashMap::new()),
            max: max.max(1),
            paths,
            changed: watch::Sender::new(0),
        })
    }

    /// The paths of the redirect endpoint (`/oauth/callback`).
    pub fn paths(&self) -> &[String] {
        &self.paths
    }

    /// Authorizations waiting now (expired ones included until they are swept).
    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Whether none is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens the authorization `state` of `identity` at `upstream` for `ttl`; the
    /// receiver gets the full redirect URL (`redirect_uri?code=…&state=…`). Expired
    /// entries are swept first; a full table refuses.
    pub fn open(
        &self,
        state: &str,
        upstream: Arc<str>,
        identity: Arc<str>,
        consent: PendingConsent,
        redirect_uri: String,
        ttl: Duration,
    ) -> Result<oneshot::Receiver<String>, ConsentsFull> {
        let now = Instant::now();
        let (tx, rx) = oneshot::channel();
        {
            let mut entries = lock(&self.entries);
            entries.retain(|_, e| e.expires > now && !e.answer.is_closed());
            if entries.len() >= self.max {
                return Err(ConsentsFull(self.max));
            }
            entries.insert(
                state.to_owned(),
                Entry {
                    upstream,
                    identity,
                    consent,
                    redirect_uri,
                    expires: now + ttl,
                    answer: tx,
                },
            );
        }
        self.bump();
        Ok(rx)
    }

    fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Forgets the authorization `state` (its flow gave up or was declined).
    pub fn close(&self, state: &str) {
        lock(&self.entries).remove(state);
        self.bump();
    }

    /// The authorization waiting for `identity` at `upstream`, if one is (and has not
    /// expired).
    pub fn pending_for(&self, upstream: &str, identity: &str) -> Option<PendingConsent> {
        let now = Instant::now();
        lock(&self.entries)
            .values()
            .find(|e| {
                e.expires > now
                    && !e.answer.is_closed()
                    && &*e.upstream == upstream
                    && &*e.identity == identity
            })
            .map(|e| e.consent.clone())
    }

    /// Forgets the authorization shown as `elicitation_id` (its user declined).
    pub fn cancel(&self, elicitation_id: &str) {
        lock(&self.entries).retain(|_, e| e.consent.elicitation_id != elicitation_id);
        self.bump();
    }

    /// Notified whenever an authorization opens or ends.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Waits until no authorization of `identity` at `upstream` is waiting.
    pub async fn settled(&self, upstream: &str, identity: &str) {
        let mut changed = self.subscribe();
        while self.pending_for(upstream, identity).is_some() {
            if changed.changed().await.is_err() {
                return;
            }
        }
    }

    /// Hands the authorization server's redirect (its query string) to the flow waiting
    /// for its `state`. Each state answers once; an expired one is refused.
    pub fn complete(&self, query: &str) -> Result<(), CallbackRefusal> {
        let state = query_value(query, "state").ok_or(CallbackRefusal::NoState)?;
        let entry = lock(&self.entries)
            .remove(&state)
            .ok_or(CallbackRefusal::Unknown)?;
        self.bump();
        if entry.expires <= Instant::now() {
            return Err(CallbackRefusal::Unknown);
        }
        entry
            .answer
            .send(format!("{}?{query}", entry.redirect_uri))
            .map_err(|_| CallbackRefusal::Abandoned)
    }
}

/// The value of `name` in a query string (`+` a space, percent escapes decoded).
fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode = |s: &str| {
            percent_decode_str(&s.replace('+', " "))
                .decode_utf8_lossy()
                .into_owned()
        };
        (decode(k) == name).then(|| decode(v))
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn consent(id: &str) -> PendingConsent {
        PendingConsent {
            elicitation_id: id.into(),
            url: format!("https://as.example/authorize?state={id}"),
            upstream: Arc::from("up"),
        }
    }

    fn open(
        table: &PendingConsents,
        state: &str,
        who: &str,
    ) -> Result<oneshot::Receiver<String>, ConsentsFull> {
        table.open(
            state,
            Arc::from("up"),
            Arc::from(who),
            consent(state),
            "https://gw.example/oauth/callback".into(),
            Duration::from_secs(60),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_state_answers_once() {
        let table = PendingConsents::new(8, vec!["/oauth/callback".into()]);
        let mut rx = open(&table, "s1", "alice").unwrap();
        assert_eq!(
            table.pending_for("up", "alice").unwrap().elicitation_id,
            "s1"
        );
        assert!(table.pending_for("up", "bob").is_none());
        assert!(table.pending_for("other", "alice").is_none());
        table.complete("code=c1&state=s1").unwrap();
        assert_eq!(
            rx.try_recv().unwrap(),
            "https://gw.example/oauth/callback?code=c1&state=s1"
        );
        // Replayed: refused, and nothing reaches anybody.
        assert_eq!(
            table.complete("code=c1&state=s1"),
            Err(CallbackRefusal::Unknown)
        );
        assert_eq!(
            table.complete("code=c1&state=guess"),
            Err(CallbackRefusal::Unknown)
        );
        assert_eq!(table.complete("code=c1"), Err(CallbackRefusal::NoState));
        // Escaped as a form: still found.
        let _rx = open(&table, "a b/c", "alice").unwrap();
        table.complete("state=a+b%2Fc&code=x").unwrap();
        assert!(table.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_state_expires() {
        let table = PendingConsents::new(8, Vec::new());
        let _rx = open(&table, "s1", "alice").unwrap();
        tokio::time::advance(Duration::from_secs(61)).await;
        assert!(table.pending_for("up", "alice").is_none());
        assert_eq!(
            table.complete("code=c&state=s1"),
            Err(CallbackRefusal::Unknown)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn abandoned_and_declined_flows_are_forgotten() {
        let table = PendingConsents::new(8, Vec::new());
        let rx = open(&table, "s1", "alice").unwrap();
        drop(rx);
        assert!(table.pending_for("up", "alice").is_none());
        assert_eq!(
            table.complete("code=c&state=s1"),
            Err(CallbackRefusal::Abandoned)
        );
        let _rx = open(&table, "s2", "alice").unwrap();
        table.cancel("s2");
        assert!(table.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_is_bounded_and_stays_flat() {
        let table = PendingConsents::new(4, Vec::new());
        let mut held = Vec::new();
        for i in 0..4 {
            held.push(open(&table, &format!("s{i}"), "alice").unwrap());
        }
        assert!(open(&table, "s4", "alice").is_err(), "full: refused");
        assert_eq!(table.len(), 4);
        // Expired entries make room, round after round: the table never grows past 4.
        for round in 0..100 {
            tokio::time::advance(Duration::from_secs(61)).await;
            held.clear();
            for i in 0..4 {
                held.push(open(&table, &format!("r{round}-{i}"), "bob").unwrap());
            }
            assert_eq!(table.len(), 4);
        }
    }
}
