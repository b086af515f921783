//! The seam (`docs/design/gateway.md` § The seam; the handler's side is `seamed.rs`, this
//! is the state it shares with the session's task): a stateful session's plain `tools/call`
//! relayed by its `POST` handler itself — the route resolved, the call sent to its
//! upstream and its plain answer written back — without a round trip through the session's
//! task, and on an upstream that takes each call on a request of its own (HTTP) without a
//! task of its own for that request either.
//!
//! The session's task and its handlers share a [`SessionSeam`]: the task publishes whether
//! its calls may be relayed (its revision) and how many requests it holds; the handlers keep
//! the calls they relay in its table, by the client's id, so that a cancellation, a
//! duplicate id, the in-flight bound, idle expiry and the session's end see them. A handler
//! uses the seam only while the session's task holds no request (so duplicate ids are
//! always caught) and the table has room under the session's in-flight bound; otherwise the
//! call goes to the session as before.
//!
//! Only a plain answer is written by the handler. When anything else comes back first — an
//! upstream's log, a server→client request, an answer the general path must shape, a call
//! the upstream did not run — the handler hands the call to its session
//! (`SessionHandle::adopt`), which from then on treats it as a call it relayed itself (its
//! stream, replay, asks and logs are the session's), and the handler answers from the
//! session's stream. A call a rate limit refused as its route was resolved is answered by
//! the session too (`SessionHandle::refused`), so its error has the general path's shape.
//!
//! Known narrow race: a client's cancellation that arrives while a call is being handed
//! over (out of the seam's table, its `Adopt` not yet taken by the session) reaches the
//! session before the call does and is not applied; the call then runs to its answer.

use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use mcpwire_model::{RequestId, Revision};
use mcpwire_relay::{CallSlot, Relay, RelayInbox};
use mcpwire_router::{Identity, RelayCaller, Router, SessionScope};
use mcpwire_session::IdMap;

use crate::driver::now;

/// What one session's task and its request handlers share (see the module docs).
pub(crate) struct SessionSeam {
    router: Router,
    scope: SessionScope,
    owner: Option<Identity>,
    ip: Option<IpAddr>,
    /// The session's relay inbox, where a handed-over call's slot forwards.
    inbox: Arc<RelayInbox>,
    max_in_flight: usize,
    request_timeout: Option<Duration>,
    /// The session's revision, once its calls may be relayed (set by its task).
    revision: OnceLock<Revision>,
    /// Requests the session's task holds (its routes), as it last said.
    session_requests: AtomicUsize,
    table: Mutex<Table>,
}

/// The calls the handlers relay.
struct Table {
    calls: IdMap<RequestId, Entry>,
    /// When a call of the seam last ended.
    last_end: Instant,
    /// The session ended: nothing more is relayed here.
    closed: bool,
}

/// One call in the table: where its answer arrives, and once sent, where it went.
struct Entry {
    slot: Arc<CallSlot>,
    sent: Option<(Arc<Relay>, u64)>,
}

impl Entry {
    /// The call ends without its answer: the upstream is told, the handler stops waiting.
    fn end(self) {
        if let Some((relay, up)) = self.sent {
            relay.cancel(up);
        }
        self.slot.end();
    }
}

/// Who the session is, for [`SessionSeam::new`].
pub(crate) struct SeamOwner {
    /// The router its calls are routed by.
    pub(crate) router: Router,
    /// The session's scope, as its calls carry it.
    pub(crate) scope: SessionScope,
    /// Who opened it.
    pub(crate) owner: Option<Identity>,
    /// The client's address.
    pub(crate) ip: Option<IpAddr>,
    /// The session's relay inbox.
    pub(crate) inbox: Arc<RelayInbox>,
}

impl SessionSeam {
    /// The seam of the session `owner` describes, holding at most `max_in_flight` calls
    /// with the session's own, each answered with a timeout after `request_timeout`.
    pub(crate) fn new(
        owner: SeamOwner,
        max_in_flight: usize,
        request_timeout: Option<Duration>,
    ) -> SessionSeam {
        SessionSeam {
            router: owner.router,
            scope: owner.scope,
            owner: owner.owner,
            ip: owner.ip,
            inbox: owner.inbox,
            max_in_flight,
            request_timeout,
            revision: OnceLock::new(),
            session_requests: AtomicUsize::new(0),
            table: Mutex::new(Table {
                calls: IdMap::default(),
                last_end: now(),
                closed: false,
            }),
        }
    }

    // ----- the session's task -----

    /// The session's task says whether its calls may be relayed (`revision`, once its
    /// handshake is done) and how many requests it holds.
    pub(crate) fn publish(&self, revision: Option<Revision>, requests: usize) {
        if let Some(r) = revision
            && self.revision.get().is_none()
        {
            let _ = self.revision.set(r);
        }
        self.session_requests.store(requests, Ordering::Release);
    }

    /// Whether a call with client id `id` is running in the seam (the session refuses a
    /// request of its own with the same id).
    pub(crate) fn holds(&self, id: &RequestId) -> bool {
        self.table.lock().is_ok_and(|t| t.calls.contains_key(id))
    }

    /// Whether calls are running in the seam (the session is not idle).
    pub(crate) fn busy(&self) -> bool {
        self.table.lock().is_ok_and(|t| !t.calls.is_empty())
    }

    /// When a call of the seam last ended.
    pub(crate) fn last_end(&self) -> Instant {
        self.table
            .lock()
            .map(|t| t.last_end)
            .unwrap_or_else(|_| now())
    }

    /// The session ended: every call of the seam ends (the upstream told), and nothing
    /// more is relayed here.
    pub(crate) fn close(&self) {
        let calls = self.table.lock().map(|mut t| {
            t.closed = true;
            std::mem::take(&mut t.calls)
        });
        for (_, entry) in calls.into_iter().flatten() {
            entry.end();
        }
    }

    // ----- the handlers -----

    /// The client cancelled request `id`: when it is a call of the seam, it ends (the
    /// upstream told); whether it was one.
    pub(crate) fn cancel(&self, id: &RequestId) -> bool {
        let entry = self.table.lock().ok().and_then(|mut t| t.calls.remove(id));
        match entry {
            Some(entry) => {
                entry.end();
                true
            }
            None => false,
        }
    }

    /// The router the session's calls are routed by.
    pub(super) fn router(&self) -> &Router {
        &self.router
    }

    /// Who calls, as the router's relay decision reads it.
    pub(super) fn caller(&self) -> RelayCaller<'_> {
        RelayCaller {
            scope: &self.scope,
            identity: self.owner.as_ref(),
            client_ip: self.ip,
        }
    }

    /// How long a call may run before it is answered with a timeout.
    pub(super) fn request_timeout(&self) -> Option<Duration> {
        self.request_timeout
    }

    /// Puts call `id` in the table, its answer to arrive in a new slot, when the seam may
    /// take it now (the session's handshake done, no request of its own held, room under
    /// the bound, no call with its id): the revision the session answers in, and the slot.
    /// Taken before its route is decided, so that a same-id request arriving meanwhile is
    /// the session's duplicate, and a rate limit counts the call once.
    pub(super) fn admit(&self, id: &RequestId) -> Option<(Revision, Arc<CallSlot>)> {
        let revision = *self.revision.get()?;
        if self.session_requests.load(Ordering::Acquire) > 0 {
            return None;
        }
        let mut t = self.table.lock().ok()?;
        if t.closed || t.calls.len() >= self.max_in_flight || t.calls.contains_key(id) {
            return None;
        }
        let slot = Arc::new(CallSlot::new(self.inbox.clone()));
        let entry = Entry {
            slot: slot.clone(),
            sent: None,
        };
        t.calls.insert(id.clone(), entry);
        Some((revision, slot))
    }

    /// Takes call `id` out of the table before it was sent anywhere (the session takes it,
    /// or answers its refusal): not an end of a call of the seam.
    pub(super) fn withdraw(&self, id: &RequestId) {
        if let Ok(mut t) = self.table.lock() {
            t.calls.remove(id);
        }
    }

    /// Records where call `id` went; false when it ended meanwhile (cancelled, or the
    /// session ended).
    pub(super) fn sent(&self, id: &RequestId, relay: &Arc<Relay>, up: u64) -> bool {
        let Ok(mut t) = self.table.lock() else {
            return false;
        };
        match t.calls.get_mut(id) {
            Some(entry) => {
                entry.sent = Some((relay.clone(), up));
                true
            }
            None => false,
        }
    }

    /// Takes call `id` out of the table; whether it was still there.
    pub(super) fn finish(&self, id: &RequestId) -> bool {
        let Ok(mut t) = self.table.lock() else {
            return false;
        };
        let found = t.calls.remove(id).is_some();
        t.last_end = now();
        found
    }
}
