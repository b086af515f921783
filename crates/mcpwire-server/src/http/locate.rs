//! Which session an `Mcp-Session-Id` names, for `POST`, `GET` and `DELETE`.
//!
//! One process (no cluster): the id is the key of the session table, random, and a session
//! answers only the caller that opened it. In a replica set ([`crate::cluster`]) the id is
//! sealed state: it must open with one of the session keys (else 404, as for any unknown
//! session), be presented by the identity it is bound to (else 404 too: to anyone else the
//! session does not exist), and its record must still be in the store (ended or expired:
//! 404). A replica that does not hold the session rebuilds it from the sealed handshake; one
//! that does re-checks the record every [`crate::cluster::Cluster::recheck`], so a session
//! ended on another replica ends here too. While the store cannot be reached, sessions this
//! replica holds go on and everything else is refused 503 (retryable).

use std::net::IpAddr;

use mcpwire_model::McpError;
use mcpwire_router::Identity;
use mcpwire_store::StoreError;

use super::App;
use super::session::SessionHandle;
use crate::cluster::Cluster;
use crate::cluster::session_id::SessionClaims;
use crate::observe;

/// A session found (or rebuilt) for a request.
pub(crate) struct Located {
    /// Its key in this replica's session table.
    pub(crate) key: String,
    /// The way into it.
    pub(crate) handle: SessionHandle,
}

/// The session `id` names for `caller`, rebuilt here when it lives on another replica.
pub(crate) async fn locate(
    app: &App,
    id: &str,
    caller: Option<&Identity>,
    ip: Option<IpAddr>,
) -> Result<Located, McpError> {
    let Some(cluster) = &app.service.cluster else {
        return app
            .sessions
            .get(id)
            .filter(|s| s.opened_by(caller))
            .map(|handle| Located {
                key: id.to_owned(),
                handle,
            })
            .ok_or(McpError::SessionNotFound);
    };
    let claims = open(app, cluster, id, caller)?;
    let idle = app.config.session_idle;
    let sid = claims.sid.clone();
    if let Some(handle) = app.sessions.get(&sid).filter(|s| s.opened_by(caller)) {
        if app.sessions.due_for_check(&sid, cluster.recheck()) {
            match cluster.revive(&sid, idle, false).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    tracing::debug!(session = %sid, "session ended elsewhere; ending it here");
                    app.sessions.remove(&sid);
                    return Err(McpError::SessionNotFound);
                }
                Err(e) => {
                    observe::store_error("session");
                    tracing::warn!(session = %sid, error = %e, "could not refresh a session's record; serving it from this replica");
                }
            }
        }
        return Ok(Located { key: sid, handle });
    }
    let caps = match cluster.revive(&sid, idle, claims.caps.is_none()).await {
        Ok(Some(caps)) => caps,
        Ok(None) => return Err(McpError::SessionNotFound),
        Err(e) => return Err(unavailable(&e)),
    };
    let Some(state) = claims.handshake(caps) else {
        tracing::debug!(session = %sid, revision = %claims.rev, "sealed with a revision this replica does not know");
        return Err(McpError::SessionNotFound);
    };
    let handle = app
        .sessions
        .resume(&app.service, idle, &sid, state, caller.cloned(), ip)
        .map_err(|_| McpError::Unavailable("every session is busy; try again later".into()))?;
    // Its resource subscriptions, wherever they were made.
    match cluster.subscriptions(&sid).await {
        Ok(uris) if uris.is_empty() => {}
        Ok(uris) => {
            let _ = handle.share_subscriptions(uris).await;
        }
        Err(e) => {
            observe::store_error("session");
            tracing::warn!(session = %sid, error = %e, "could not read a session's subscriptions; updates for them go to the replicas that took them");
        }
    }
    tracing::debug!(session = %sid, "session continued on this replica");
    observe::cluster_session("resumed");
    Ok(Located { key: sid, handle })
}

/// The id a new session `sid` is known by: itself in one process; in a replica set its
/// handshake sealed (bound to `owner`), once its record is in the store.
pub(crate) async fn mint(
    app: &App,
    sid: &str,
    session: &SessionHandle,
    owner: Option<&Identity>,
) -> Result<String, McpError> {
    let Some(cluster) = &app.service.cluster else {
        return Ok(sid.to_owned());
    };
    let Some(state) = session.handshake().await else {
        return Err(McpError::Internal(
            "the session ended during its handshake".into(),
        ));
    };
    let (id, spilled) =
        SessionClaims::new(sid, &state, owner).seal(cluster.keys(), &app.config.path);
    cluster
        .register(sid, spilled.as_ref(), app.config.session_idle)
        .await
        .map_err(|e| unavailable(&e))?;
    observe::cluster_session("started");
    Ok(id)
}

/// Ends the session `id` names for `caller` (`DELETE`): here and, in a replica set, for
/// every replica. `SessionNotFound` when there was none.
pub(crate) async fn end(app: &App, id: &str, caller: Option<&Identity>) -> Result<(), McpError> {
    let Some(cluster) = &app.service.cluster else {
        let owned = app.sessions.get(id).is_some_and(|s| s.opened_by(caller));
        return if owned && app.sessions.remove(id) {
            Ok(())
        } else {
            Err(McpError::SessionNotFound)
        };
    };
    let claims = open(app, cluster, id, caller)?;
    let here = app.sessions.remove(&claims.sid);
    let ended = cluster.end(&claims.sid).await;
    if ended.is_ok()
        && let Some(me) = app.sessions.relay_name()
        && let Err(e) = cluster.relay().publish_end(me, &claims.sid).await
    {
        // The others end it at their next record check instead.
        tracing::debug!(error = %e, "could not tell the other replicas a session ended");
    }
    match ended {
        Ok(true) => {
            observe::cluster_session("ended");
            Ok(())
        }
        Ok(false) if here => {
            observe::cluster_session("ended");
            Ok(())
        }
        Ok(false) => Err(McpError::SessionNotFound),
        Err(e) => Err(unavailable(&e)),
    }
}

/// The claims sealed in `id` if they open (for this listener's endpoint) and bind
/// `caller`; otherwise the session does not exist for this request.
fn open(
    app: &App,
    cluster: &Cluster,
    id: &str,
    caller: Option<&Identity>,
) -> Result<SessionClaims, McpError> {
    let claims = SessionClaims::open(cluster.keys(), &app.config.path, id).map_err(|e| {
        tracing::debug!(error = %e, "session id refused");
        observe::cluster_session("refused");
        McpError::SessionNotFound
    })?;
    if !claims.allows(caller) {
        tracing::debug!(session = %claims.sid, "session id presented by another caller; refused");
        observe::cluster_session("refused");
        return Err(McpError::SessionNotFound);
    }
    Ok(claims)
}

fn unavailable(e: &StoreError) -> McpError {
    tracing::warn!(error = %e, "cluster store unavailable");
    observe::store_error("session");
    // The store's address and error stay in the log: the client learns only to retry.
    McpError::Unavailable("shared session state is unavailable; try again shortly".into())
}
