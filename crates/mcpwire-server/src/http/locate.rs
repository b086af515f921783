//! Which session an `Mcp-Session-Id` names, for `POST`, `GET` and `DELETE`.
//!
//! One process (no session directory): the id is the key of the session table, random, and a
//! session answers only the caller that opened it. In a replica set the service's
//! [`SessionDirectory`] opens the id: it must open (else 404, as for any unknown session) and
//! bind the caller (else 404 too: to anyone else the session does not exist), and the session
//! must still be live there (ended or expired: 404). A replica that does not hold the
//! session rebuilds it from the handshake the id carries; one that does re-checks it every
//! [`SessionDirectory::recheck`], so a session ended on another replica ends here too. While
//! the directory cannot be reached, sessions this replica holds go on and everything else is
//! refused 503 (retryable).

use std::borrow::Cow;
use std::net::IpAddr;

use mcpwire_model::McpError;
use mcpwire_router::Identity;

use super::App;
use super::session::SessionHandle;
use crate::directory::{DirectoryUnavailable, SessionDirectory, SessionTicket};
use crate::observe;

/// A session found (or rebuilt) for a request.
pub(crate) struct Located<'a> {
    /// Its key in this replica's session table: the id the request gave, in one process.
    pub(crate) key: Cow<'a, str>,
    /// The way into it.
    pub(crate) handle: SessionHandle,
}

/// The session `id` names for `caller`, rebuilt here when it lives on another replica.
pub(crate) async fn locate<'a>(
    app: &App,
    id: &'a str,
    caller: Option<&Identity>,
    ip: Option<IpAddr>,
) -> Result<Located<'a>, McpError> {
    let Some(shared) = &app.directory else {
        return app
            .sessions
            .get(id)
            .filter(|s| s.opened_by(caller))
            .map(|handle| Located {
                key: Cow::Borrowed(id),
                handle,
            })
            .ok_or(McpError::SessionNotFound);
    };
    // Boxed: the directory's round trips are kilobytes of future, which every request's
    // future would otherwise carry (and move) in one process too.
    Box::pin(in_replica_set(app, shared, id, caller, ip)).await
}

/// [`locate`] in a replica set.
async fn in_replica_set<'a>(
    app: &App,
    shared: &super::Attached,
    id: &str,
    caller: Option<&Identity>,
    ip: Option<IpAddr>,
) -> Result<Located<'a>, McpError> {
    let directory = &*shared.directory;
    let ticket = open(app, directory, id, caller)?;
    let idle = app.config.session_idle;
    let sid = ticket.sid.clone();
    if let Some(handle) = app.sessions.get(&sid).filter(|s| s.opened_by(caller)) {
        if app.sessions.due_for_check(&sid, directory.recheck()) {
            match directory.refresh(&sid, idle).await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::debug!(session = %sid, "session ended elsewhere; ending it here");
                    app.sessions.remove(&sid);
                    return Err(McpError::SessionNotFound);
                }
                Err(e) => {
                    tracing::warn!(session = %sid, error = %e, "could not refresh a session's record; serving it from this replica");
                }
            }
        }
        return Ok(Located {
            key: Cow::Owned(sid),
            handle,
        });
    }
    let state = match directory.revive(&ticket, idle).await {
        Ok(Some(state)) => state,
        Ok(None) => return Err(McpError::SessionNotFound),
        Err(e) => return Err(unavailable(&e)),
    };
    let handle = app
        .sessions
        .resume(&app.service, idle, &sid, state, caller.cloned(), ip)
        .map_err(|_| McpError::Unavailable("every session is busy; try again later".into()))?;
    // Its resource subscriptions, wherever they were made.
    match directory.subscriptions(&sid).await {
        Ok(uris) if uris.is_empty() => {}
        Ok(uris) => {
            let _ = handle.share_subscriptions(uris).await;
        }
        Err(e) => {
            tracing::warn!(session = %sid, error = %e, "could not read a session's subscriptions; updates for them go to the replicas that took them");
        }
    }
    tracing::debug!(session = %sid, "session continued on this replica");
    observe::replica_session("resumed");
    Ok(Located {
        key: Cow::Owned(sid),
        handle,
    })
}

/// The id a new session `sid` is known by: itself in one process; in a replica set the one
/// the directory gives it (its handshake sealed, bound to `owner`), once it is recorded
/// there.
pub(crate) async fn mint(
    app: &App,
    sid: &str,
    session: &SessionHandle,
    owner: Option<&Identity>,
) -> Result<String, McpError> {
    let Some(shared) = &app.directory else {
        return Ok(sid.to_owned());
    };
    let Some(state) = session.handshake().await else {
        return Err(McpError::Internal(
            "the session ended during its handshake".into(),
        ));
    };
    let id = shared
        .directory
        .start(
            &app.config.path,
            sid,
            &state,
            owner,
            app.config.session_idle,
        )
        .await
        .map_err(|e| unavailable(&e))?;
    observe::replica_session("started");
    Ok(id)
}

/// Ends the session `id` names for `caller` (`DELETE`): here and, in a replica set, for
/// every replica. `SessionNotFound` when there was none.
pub(crate) async fn end(app: &App, id: &str, caller: Option<&Identity>) -> Result<(), McpError> {
    let Some(shared) = &app.directory else {
        let owned = app.sessions.get(id).is_some_and(|s| s.opened_by(caller));
        return if owned && app.sessions.remove(id) {
            Ok(())
        } else {
            Err(McpError::SessionNotFound)
        };
    };
    let ticket = open(app, &*shared.directory, id, caller)?;
    let here = app.sessions.remove(&ticket.sid);
    match shared.directory.end(&shared.endpoint, &ticket.sid).await {
        Ok(true) => {
            observe::replica_session("ended");
            Ok(())
        }
        Ok(false) if here => {
            observe::replica_session("ended");
            Ok(())
        }
        Ok(false) => Err(McpError::SessionNotFound),
        Err(e) => Err(unavailable(&e)),
    }
}

/// The session `id` names if the directory opens it (for this listener's path) for
/// `caller`; otherwise the session does not exist for this request.
fn open(
    app: &App,
    directory: &dyn SessionDirectory,
    id: &str,
    caller: Option<&Identity>,
) -> Result<SessionTicket, McpError> {
    directory.open(&app.config.path, id, caller).ok_or_else(|| {
        observe::replica_session("refused");
        McpError::SessionNotFound
    })
}

fn unavailable(e: &DirectoryUnavailable) -> McpError {
    tracing::warn!(error = %e, "shared session state unavailable");
    // Where it is kept and what failed stay in the log: the client learns only to retry.
    McpError::Unavailable("shared session state is unavailable; try again shortly".into())
}
