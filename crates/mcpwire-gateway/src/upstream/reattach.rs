//! A downstream session's HTTP upstream session, re-attached on another replica: in a
//! replica set, the upstream's `Mcp-Session-Id` and its `initialize` result are recorded
//! in the store per (downstream session, backend) when the upstream session opens; a
//! replica that rebuilds the downstream session continues that upstream session instead
//! of opening a new one (no `initialize` is sent). An upstream that no longer holds it
//! (404: it expired or restarted) gets a fresh `initialize`, and the record is replaced.

use std::sync::Arc;

use mcpwire_model::BackendEvent;
use mcpwire_router::SharedSession;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio::sync::broadcast;

use super::link::Link;
use mcpwire_client::{Client, ClientEra, ClientError, ClientOptions};

/// Bytes of one recorded `initialize` result, at most (a larger one is not recorded: that
/// session starts afresh on another replica).
const MAX_RECORDED_RESULT: usize = 64 << 10;

/// What a replica records about one upstream session of a downstream session.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct UpstreamRecord {
    /// The upstream's `Mcp-Session-Id`.
    session_id: String,
    /// The upstream's `initialize` result (its revision, server info, capabilities and
    /// instructions), as it sent it.
    initialize: Box<RawValue>,
}

/// The upstream session recorded for `cluster`'s session and backend `backend`, if any
/// (a store failure is logged and treated as none: a new upstream session is opened).
pub(super) async fn recorded(cluster: &SharedSession, backend: &str) -> Option<UpstreamRecord> {
    match cluster.records.load(&cluster.sid, backend).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).ok(),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(upstream = %backend, error = %e, "upstream session record unreadable");
            None
        }
    }
}

/// Continues the recorded upstream session at `url`, checked with a `ping`; `None` when
/// the upstream no longer holds it (or cannot be reached that way: the caller opens a new
/// one).
pub(super) async fn reattach(
    url: &str,
    options: &ClientOptions,
    record: &UpstreamRecord,
    backend: &str,
    session: Option<mcpwire_router::SessionScope>,
    events: &broadcast::Sender<BackendEvent>,
) -> Option<Arc<Link>> {
    let attached = Client::reattach(url, options, &record.session_id, &record.initialize).await;
    let (client, client_events) = match attached {
        Ok(c) => c,
        Err(e) => {
            tracing::info!(upstream = %backend, error = %e, "re-attaching failed; initializing");
            return None;
        }
    };
    match client.request("ping", serde_json::json!({})).await {
        Ok(_) => {
            tracing::info!(upstream = %backend, peer = %client.peer(), "upstream session re-attached");
            Some(Link::start(client, client_events, session, events.clone()))
        }
        Err(e) => {
            if e.is_session_gone() {
                tracing::info!(upstream = %backend, "the upstream no longer holds the session; initializing");
            } else {
                tracing::info!(upstream = %backend, error = %e, "re-attached session refused; initializing");
            }
            // Nothing to delete: the upstream does not have it (or cannot be reached).
            client.close_keeping_session().await.ok();
            None
        }
    }
}

/// Records `client`'s upstream session for `cluster`'s session and backend `backend`, when
/// it is a handshake-era HTTP session (one with an `Mcp-Session-Id`). Failures are logged:
/// another replica then opens a new upstream session.
pub(super) async fn record(cluster: &SharedSession, backend: &str, client: &Client) {
    let Some(session_id) = client.wire_session_id() else {
        return;
    };
    if !matches!(client.negotiated().era, ClientEra::Handshake(_)) {
        return;
    }
    let initialize = &client.negotiated().result;
    if initialize.get().len() > MAX_RECORDED_RESULT {
        tracing::debug!(upstream = %backend, "initialize result too large to record");
        return;
    }
    let record = UpstreamRecord {
        session_id: session_id.to_owned(),
        initialize: initialize.clone(),
    };
    let bytes = match serde_json::to_vec(&record) {
        Ok(b) => b,
        Err(e) => return tracing::warn!(upstream = %backend, error = %e, "unrecordable session"),
    };
    if let Err(e) = cluster.records.save(&cluster.sid, backend, bytes).await {
        tracing::warn!(upstream = %backend, error = %e, "upstream session not recorded");
    }
}

/// Closes `client` when its downstream session ended here: the upstream session is kept
/// (no `DELETE`) while the downstream session lives on in the replica set — another
/// replica may have re-attached to it — or while the store cannot tell (the upstream
/// expires it), and deleted once it ended everywhere.
pub(super) async fn close(
    client: Client,
    cluster: Option<&SharedSession>,
) -> Result<(), ClientError> {
    if let Some(cluster) = cluster
        && client.wire_session_id().is_some()
        && cluster.records.is_live(&cluster.sid).await.unwrap_or(true)
    {
        return client.close_keeping_session().await;
    }
    client.close().await
}
