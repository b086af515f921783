//! The [`SessionDirectory`] of a replica set: sealed session ids, session records, the relay
//! and the replay logs of [`Cluster`], as the HTTP listener uses them. Store failures are
//! counted here (`mcpwire_cluster_store_errors_total{use="session"|"relay"}`), once per
//! failed operation.

use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use mcpwire_model::{BackendEvent, RequestId};
use mcpwire_router::{BoxFuture, Identity, SharedSession};
use mcpwire_session::HandshakeState;
use mcpwire_store::StoreError;
use tokio::sync::broadcast;

use super::session_id::SessionClaims;
use super::{Cluster, relay, upstreams};
use mcpwire_server::directory::{
    CopiedEvent, DirectoryUnavailable, FollowError, Followed, HeldSessions, SessionDirectory,
    SessionTicket, StreamLog,
};

impl SessionDirectory for Cluster {
    fn start<'a>(
        &'a self,
        path: &'a str,
        sid: &'a str,
        state: &'a HandshakeState,
        owner: Option<&'a Identity>,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<String, DirectoryUnavailable>> {
        Box::pin(async move {
            let (id, spilled) = SessionClaims::new(sid, state, owner).seal(&self.keys, path);
            self.register(sid, spilled.as_ref(), ttl)
                .await
                .map_err(|e| unavailable("session", e))?;
            Ok(id)
        })
    }

    fn open(&self, path: &str, id: &str, caller: Option<&Identity>) -> Option<SessionTicket> {
        let claims = match SessionClaims::open(&self.keys, path, id) {
            Ok(claims) => claims,
            Err(e) => {
                tracing::debug!(error = %e, "session id refused");
                return None;
            }
        };
        if !claims.allows(caller) {
            tracing::debug!(session = %claims.sid, "session id presented by another caller; refused");
            return None;
        }
        Some(claims.ticket())
    }

    fn recheck(&self) -> Duration {
        self.recheck
    }

    fn refresh<'a>(
        &'a self,
        sid: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, DirectoryUnavailable>> {
        Box::pin(async move {
            match self.revive_record(sid, ttl, false).await {
                Ok(live) => Ok(live.is_some()),
                Err(e) => Err(unavailable("session", e)),
            }
        })
    }

    fn revive<'a>(
        &'a self,
        ticket: &'a SessionTicket,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<HandshakeState>, DirectoryUnavailable>> {
        Box::pin(async move {
            let want_caps = ticket.client_capabilities.is_none();
            let kept = match self.revive_record(&ticket.sid, ttl, want_caps).await {
                Ok(Some(kept)) => kept,
                Ok(None) => return Ok(None),
                Err(e) => return Err(unavailable("session", e)),
            };
            let state = ticket.handshake(kept);
            if state.is_none() {
                tracing::debug!(session = %ticket.sid, revision = %ticket.revision, "sealed with a revision this replica does not know");
            }
            Ok(state)
        })
    }

    fn subscriptions<'a>(
        &'a self,
        sid: &'a str,
    ) -> BoxFuture<'a, Result<Vec<String>, DirectoryUnavailable>> {
        Box::pin(async move {
            self.recorded_subscriptions(sid)
                .await
                .map_err(|e| unavailable("session", e))
        })
    }

    fn end<'a>(
        &'a self,
        endpoint: &'a str,
        sid: &'a str,
    ) -> BoxFuture<'a, Result<bool, DirectoryUnavailable>> {
        Box::pin(async move {
            let live = self
                .remove_records(sid)
                .await
                .map_err(|e| unavailable("session", e))?;
            if let Err(e) = self.relay.publish_end(endpoint, sid).await {
                // The others end it at their next record check instead.
                tracing::debug!(error = %e, "could not tell the other replicas a session ended");
            }
            Ok(live)
        })
    }

    fn backend_session(&self, sid: &str, ttl: Duration) -> SharedSession {
        SharedSession {
            sid: Arc::from(sid),
            records: Arc::new(upstreams::StoreRecords::new(self.store.clone(), ttl)),
        }
    }

    fn attach<'a>(
        &'a self,
        sessions: Weak<dyn HeldSessions>,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Arc<str>, DirectoryUnavailable>> {
        Box::pin(async move {
            self.relay
                .attach(sessions, path)
                .await
                .map_err(DirectoryUnavailable::new)
        })
    }

    fn spread_events(
        self: Arc<Self>,
        endpoint: Arc<str>,
        path: String,
        events: broadcast::Receiver<BackendEvent>,
        hub: broadcast::Sender<BackendEvent>,
        alive: Weak<dyn HeldSessions>,
    ) {
        relay::spread_events(self, endpoint, path, events, hub, alive);
    }

    fn ask_prefix(&self, endpoint: &str) -> Arc<str> {
        relay::ReplicaRelay::ask_prefix(endpoint)
    }

    fn asked_elsewhere<'a>(&self, endpoint: &str, id: &'a RequestId) -> Option<&'a str> {
        relay::ReplicaRelay::asked_elsewhere(endpoint, id)
    }

    fn relay<'a>(
        &'a self,
        from: &'a str,
        to: Option<&'a str>,
        sid: &'a str,
        msg: &'a [u8],
    ) -> BoxFuture<'a, Result<(), DirectoryUnavailable>> {
        Box::pin(async move {
            self.relay
                .publish(from, to, sid, msg)
                .await
                .map_err(|e| unavailable("relay", e))
        })
    }

    fn share_subscription<'a>(
        &'a self,
        from: &'a str,
        sid: &'a str,
        uri: &'a str,
        on: bool,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), DirectoryUnavailable>> {
        Box::pin(async move {
            let shared = match self.record_subscription(sid, uri, on, ttl).await {
                Ok(()) => self.relay.publish_subscription(from, sid, uri, on).await,
                Err(e) => Err(e),
            };
            shared.map_err(|e| unavailable("relay", e))
        })
    }

    fn log_event(&self, log: &StreamLog, seq: u64, data: &str, keep_from: u64, end: bool) {
        self.streams.append(log, seq, data, keep_from, end);
    }

    fn follow<'a>(
        &'a self,
        sid: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<BoxStream<'static, Followed>, FollowError>> {
        Box::pin(async move {
            let followed = self.streams.follow(sid, stream, after).await?;
            Ok(followed.boxed())
        })
    }

    fn replay<'a>(
        &'a self,
        sid: &'a str,
        stream: &'a str,
        after: u64,
    ) -> BoxFuture<'a, Result<Vec<CopiedEvent>, FollowError>> {
        Box::pin(self.streams.replay(sid, stream, after))
    }
}

/// A store failure while using it for `used_for` (counted), as the listener sees it.
fn unavailable(used_for: &'static str, e: StoreError) -> DirectoryUnavailable {
    mcpwire_server::observe::store_error(used_for);
    DirectoryUnavailable::new(e)
}
