//! `GET` (the standalone SSE stream of a session) and `DELETE` (ending a session).
//!
//! Both need a session: without `Mcp-Session-Id` they get 405 (a stateless server has no
//! stream to open and nothing to end), with an unknown one — or one another caller opened —
//! 404. Before that, both are admitted by the [`Caller`] extractor: the `Origin`/`Host`
//! guard (403), and the credential when the service authenticates (401/403).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header::ALLOW;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use mcpwire_model::McpError;

use futures::StreamExt;

use super::auth::Caller;
use super::headers::{self, Accept, LAST_EVENT_ID, SESSION_ID};
use super::locate::{end, locate};
use super::replay::{EventId, StreamItem, StreamKind};
use super::session::{ResumeError, SessionHandle};
use super::{App, reply};
use crate::directory::{FollowError, Followed, SessionDirectory};

/// Opens the standalone SSE stream of a session (server notifications and requests that
/// relate to no open `POST`; a newer stream replaces an older one), or, with
/// `Last-Event-ID`, resumes the stream that event belongs to (a request's or the standalone
/// one).
pub(crate) async fn open(
    State(app): State<Arc<App>>,
    Caller { identity, addr, .. }: Caller,
    headers: HeaderMap,
) -> Response {
    let sid = match headers::text(&headers, SESSION_ID) {
        Ok(Some(sid)) => sid,
        Ok(None) => return not_allowed(),
        Err(()) => return bad("invalid Mcp-Session-Id header"),
    };
    if !Accept::of(&headers).sse {
        let e = McpError::NotAcceptable("Accept must list text/event-stream".into());
        return reply::refuse(None, e);
    }
    let (key, session) = match locate(&app, sid, identity.as_ref(), Some(addr.ip())).await {
        Ok(found) => (found.key, found.handle),
        Err(e) => return reply::refuse(None, e),
    };
    let last = match headers::text(&headers, LAST_EVENT_ID) {
        Ok(None) => None,
        Ok(Some(v)) => match EventId::parse(v) {
            Some(id) => Some(id),
            None => return bad("unrecognized Last-Event-ID"),
        },
        Err(()) => return bad("invalid Last-Event-ID header"),
    };
    match last {
        // Resume a stream: what the client missed, then the rest of it.
        Some(id) => match session.resume(id).await {
            Ok(rx) => reply::sse_items(receiver_stream(rx), id.kind.prefix(id.stream), false),
            Err(ResumeError::Unknown) => match &app.directory {
                // Another replica's stream (or one this replica no longer holds).
                Some(shared) => from_directory(&*shared.directory, &session, &key, id).await,
                None => bad("this session cannot resume that stream"),
            },
            Err(ResumeError::Gone) => not_found(),
        },
        None => match session.standalone().await {
            Ok((n, rx)) => {
                reply::sse_items(receiver_stream(rx), StreamKind::Standalone.prefix(n), true)
            }
            Err(_) => not_found(),
        },
    }
}

/// Resumes a stream from the copy of its replay log another replica left in the session
/// directory ([`SessionDirectory::follow`]): a request's stream is followed until its
/// response (or an error saying its replica stopped); for the standalone stream, the events
/// the client missed are replayed, then this replica's own standalone stream goes on in the
/// same response (its events carry its own ids).
/// `sid`: the session's name in the directory (its ticket's `sid`).
async fn from_directory(
    directory: &dyn SessionDirectory,
    session: &SessionHandle,
    sid: &str,
    id: EventId,
) -> Response {
    let stream = id.kind.name(id.stream);
    let refused = |e: FollowError| match e {
        FollowError::Unknown => bad("this session cannot resume that stream"),
        FollowError::Unavailable(e) => {
            tracing::warn!(error = %e, "could not resume a stream from the session directory");
            reply::refuse(
                None,
                McpError::Unavailable(
                    "shared stream state is unavailable; try again shortly".into(),
                ),
            )
        }
    };
    match id.kind {
        StreamKind::Request => match directory.follow(sid, &stream, id.seq).await {
            Ok(followed) => {
                let items = followed.map(|f| match f {
                    Followed::Event(seq, data) | Followed::Lost(seq, data) => {
                        StreamItem::Event(seq, data)
                    }
                });
                crate::observe::replica_relayed("resumed");
                reply::sse_items(items, id.kind.prefix(id.stream), false)
            }
            Err(e) => refused(e),
        },
        StreamKind::Standalone => {
            let missed = match directory.replay(sid, &stream, id.seq).await {
                Ok(missed) => missed,
                Err(e) => return refused(e),
            };
            let Ok((n, rx)) = session.standalone().await else {
                return not_found();
            };
            let prefix = id.kind.prefix(id.stream);
            let replayed = missed
                .into_iter()
                .map(move |(seq, data)| StreamItem::Replayed(format!("{prefix}{seq}"), data));
            crate::observe::replica_relayed("resumed");
            let items = futures::stream::iter(replayed).chain(receiver_stream(rx));
            reply::sse_items(items, StreamKind::Standalone.prefix(n), false)
        }
    }
}

/// Ends a session: its calls are dropped and its id answers 404 from now on.
pub(crate) async fn delete(
    State(app): State<Arc<App>>,
    Caller { identity, .. }: Caller,
    headers: HeaderMap,
) -> Response {
    match headers::text(&headers, SESSION_ID) {
        Ok(Some(sid)) => match end(&app, sid, identity.as_ref()).await {
            Ok(()) => {
                tracing::debug!("session deleted by the client");
                StatusCode::OK.into_response()
            }
            Err(e) => reply::refuse(None, e),
        },
        Ok(None) => not_allowed(),
        Err(()) => bad("invalid Mcp-Session-Id header"),
    }
}

fn receiver_stream(
    mut rx: tokio::sync::mpsc::Receiver<StreamItem>,
) -> impl futures::Stream<Item = StreamItem> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn not_allowed() -> Response {
    let e = McpError::MethodNotAllowed("no session (stateless requests use POST only)".into());
    let mut r = reply::refuse(None, e);
    r.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST"));
    r
}

fn not_found() -> Response {
    reply::refuse(None, McpError::SessionNotFound)
}

fn bad(message: &str) -> Response {
    reply::refuse(None, McpError::BadHeader(message.to_owned()))
}
