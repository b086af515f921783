//! [`Link`]: one upstream MCP session (a [`Client`]) and the downstream calls it is
//! answering, with the task that routes what the upstream sends unasked to them.
//!
//! Attribution of what the upstream sends: a progress update names its request; a server
//! request or a log names the request it came with when the wire knows (an HTTP POST's
//! stream), else it goes to the oldest call in flight on this link — on a link of its own
//! downstream session that is always the right session; on a shared link a server request
//! with no related request is given to the oldest call (documented in gateway.md § 3), and
//! a log with none goes to the only call in flight, or — on a shared link — is a backend
//! event for every session when there are several or none; on a link of one downstream
//! session, a log with no call in flight goes to that session
//! ([`SessionScope::notify`]), at its own log level.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use futures::FutureExt;
use futures::stream::{AbortHandle, Abortable};
use mcpwire_model::{BackendEvent, ClientAsk, McpError};
use mcpwire_router::{CallCtx, SessionScope};
use tokio::sync::{broadcast, mpsc, oneshot};

use mcpwire_client::{
    Client, ClientEvent, ClientEvents, ClientRequestId, ListKind, ServerRequest, ServerRequestId,
};

/// Server requests a call holds before further ones are refused (plus one: a `futures`
/// channel gives its one sender a slot of its own).
pub(crate) const CALL_QUEUE: usize = 16;

/// Server requests without a known owner yet (their related request is still being
/// registered) held before further ones are refused.
const MAX_ORPHANS: usize = 16;

/// Flushes asked for and not yet done before a flushing call waits for room.
const FLUSH_QUEUE: usize = 64;

/// Progress and logs of requests not registered yet held before further ones are dropped.
const MAX_EARLY: usize = 64;

/// What the link tells a running call.
pub(crate) enum ToCall {
    /// The upstream asks something; answer it through the call's context.
    Ask(ServerRequest),
    /// The upstream withdrew the server request.
    Withdrawn(ServerRequestId),
}

/// What a call receives from the link (a `futures` channel: it allocates per message,
/// not a block of slots per call as tokio's does — most calls receive nothing).
pub(crate) type CallInbox = futures::channel::mpsc::Receiver<ToCall>;

/// A downstream call waiting on the link.
struct Slot {
    ctx: CallCtx,
    to: Inbox,
}

/// Where a call's asks go.
enum Inbox {
    /// To the call's round ([`Link::register`]), which answers them.
    Round(futures::channel::mpsc::Sender<ToCall>),
    /// A call on the fast path has no round ([`Link::register_fast`]): each ask is put to
    /// the downstream client through the call's context by a task of its own (its abort
    /// handle kept here, at most [`CALL_QUEUE`]).
    Fast(Vec<(ServerRequestId, AbortHandle)>),
}

/// What handing a server request to its call needs done outside the table's lock.
enum Delivery {
    /// In the call's inbox.
    Done,
    /// To be refused with this error.
    Refuse(ServerRequestId, McpError),
    /// To be asked through this call's context (a fast-path call).
    Ask(ClientRequestId, CallCtx, ServerRequest),
}

#[derive(Default)]
struct Table {
    calls: BTreeMap<ClientRequestId, Slot>,
    /// Which call each open server request went to.
    asked: HashMap<ServerRequestId, ClientRequestId>,
    /// Server requests naming a request not registered yet.
    orphans: Vec<ServerRequest>,
    /// Requests being sent, not registered yet: events naming an unknown request are
    /// parked meanwhile (the upstream may answer faster than the sender registers).
    sending: usize,
    /// Progress and logs naming a request not registered yet (while `sending > 0`).
    early: Vec<ClientEvent>,
    /// Server requests put to the link's downstream session itself (not to a call), with
    /// the tasks asking them; at most [`CALL_QUEUE`].
    session_asks: Vec<(ServerRequestId, AbortHandle)>,
}

/// One upstream session and the calls in flight on it.
pub(crate) struct Link {
    client: Client,
    /// Whether this link serves one downstream session only.
    scoped: bool,
    /// That session, which gets the upstream's logs sent between its calls.
    session: Option<SessionScope>,
    table: Mutex<Table>,
    /// Backend events (list changes, resource updates, logs without a call).
    events: broadcast::Sender<BackendEvent>,
    /// Cancelled when the upstream connection ended.
    down: tokio_util::sync::CancellationToken,
    /// Set just before `down` is cancelled: what every call reads (a token's
    /// `is_cancelled` takes its lock, which calls on every core would share).
    is_down: Arc<AtomicBool>,
    /// Asks the routing task to route everything queued so far, then to say so.
    flush: mpsc::Sender<oneshot::Sender<()>>,
    /// Calls registered so far (the idle reaper's sign of use: `super::sessions`).
    uses: std::sync::atomic::AtomicU64,
}

impl Link {
    /// A link over a connected client; spawns the task routing its events.
    /// `session`: the downstream session it serves alone (`None`: every session's).
    pub(crate) fn start(
        client: Client,
        events: ClientEvents,
        session: Option<SessionScope>,
        backend_events: broadcast::Sender<BackendEvent>,
    ) -> Arc<Link> {
        let (flush, flushes) = mpsc::channel(FLUSH_QUEUE);
        let link = Arc::new(Link {
            client,
            scoped: session.is_some(),
            session,
            table: Mutex::new(Table::default()),
            events: backend_events,
            down: tokio_util::sync::CancellationToken::new(),
            is_down: Arc::new(AtomicBool::new(false)),
            flush,
            uses: std::sync::atomic::AtomicU64::new(0),
        });
        let (down, is_down) = (link.down.clone(), link.is_down.clone());
        let weak = Arc::downgrade(&link);
        tokio::spawn(async move {
            route(weak, events, flushes).await;
            is_down.store(true, Ordering::Release);
            down.cancel();
        });
        if let Some(session) = &link.session
            && matches!(
                link.client.negotiated().era,
                mcpwire_client::ClientEra::Handshake(_)
            )
        {
            tokio::spawn(forward_roots_changes(
                session.roots_watch(),
                link.client.clone(),
                link.down.clone(),
            ));
        }
        link
    }

    /// Waits until every event the upstream sent so far is routed (call it once a
    /// request's answer came, before handing the answer on: progress and logs sent before
    /// it go first).
    pub(crate) async fn flush(&self) {
        if self.client.events_done() {
            // Nothing the upstream sent is waiting to be routed (the usual case).
            return;
        }
        let (done, routed) = oneshot::channel();
        if self.flush.send(done).await.is_ok() {
            let _ = routed.await;
        }
    }

    /// The client.
    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    /// Whether the upstream connection ended (or the server no longer holds its session).
    /// The client says so before it fails the requests in flight, so a call that saw its
    /// request fail finds the link down and the next call opens a new one (the routing
    /// task notices a little later).
    pub(crate) fn is_down(&self) -> bool {
        self.client.is_closed()
            || self.is_down.load(Ordering::Acquire)
            || self.client.wire_session_gone()
    }

    /// Completes when the upstream connection ended.
    pub(crate) async fn closed(&self) {
        self.down.cancelled().await
    }

    /// How much the link was used so far (calls registered, calls relayed), and whether
    /// anything is in flight on it now (calls, asks of its session, relayed calls).
    pub(crate) fn activity(&self) -> (u64, bool) {
        let relay = self.client.relay();
        let used =
            self.uses.load(std::sync::atomic::Ordering::Relaxed) + relay.map_or(0, |r| r.sent());
        let busy = relay.is_some_and(|r| r.waiting() > 0)
            || self.table.lock().map_or(true, |t| {
                !t.calls.is_empty() || t.sending > 0 || !t.session_asks.is_empty()
            });
        (used, busy)
    }

    /// Declares the upstream gone (a health check failed: an HTTP server has no connection
    /// whose end says so): calls see the link down, its supervisor opens a new one.
    pub(crate) fn fail(&self) {
        self.is_down.store(true, Ordering::Release);
        self.down.cancel();
    }

    /// Registers a call in flight under its upstream request id; returns what the link
    /// will send it.
    pub(crate) fn register(self: &Arc<Self>, id: ClientRequestId, ctx: CallCtx) -> CallInbox {
        let (tx, rx) = futures::channel::mpsc::channel(CALL_QUEUE);
        self.insert(id, ctx, Inbox::Round(tx));
        rx
    }

    /// Registers a call on the fast path (`super::fast`), which has no round: the upstream's
    /// asks for it are put to the downstream client through `ctx` directly.
    pub(crate) fn register_fast(self: &Arc<Self>, id: ClientRequestId, ctx: CallCtx) {
        self.insert(id, ctx, Inbox::Fast(Vec::new()));
    }

    fn insert(self: &Arc<Self>, id: ClientRequestId, ctx: CallCtx, to: Inbox) {
        self.uses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut refused = Vec::new();
        let mut early = Vec::new();
        if let Ok(mut t) = self.table.lock() {
            t.calls.insert(id, Slot { ctx, to });
            t.sending = t.sending.saturating_sub(1);
            let parked = std::mem::take(&mut t.early);
            let (mine, others): (Vec<_>, Vec<_>) = parked.into_iter().partition(|e| {
                matches!(names(e), Some(Some(r)) if r == id) || names(e) == Some(None)
            });
            early = mine;
            if t.sending > 0 {
                t.early = others;
            }
            let orphans = std::mem::take(&mut t.orphans);
            for req in orphans {
                if req.related == Some(id) || req.related.is_none() {
                    refused.push(t.deliver(req));
                } else {
                    t.orphans.push(req);
                }
            }
        }
        for d in refused {
            self.act(d);
        }
        for event in early {
            self.on_event(event);
        }
    }

    /// Gives the call under `id` a new context (a held call resumed by the downstream
    /// client's retry). Its inbox stays: server requests the upstream sent while the call
    /// was held wait there for it (a new inbox would strand them, unanswered, with the old
    /// one).
    pub(crate) fn reattach(&self, id: ClientRequestId, ctx: CallCtx) {
        if let Ok(mut t) = self.table.lock()
            && let Some(slot) = t.calls.get_mut(&id)
        {
            slot.ctx = ctx;
        }
    }

    /// A request is about to be sent (call [`Link::register`] or [`Link::send_failed`]
    /// after).
    pub(crate) fn sending(&self) {
        if let Ok(mut t) = self.table.lock() {
            t.sending += 1;
        }
    }

    /// A request announced by [`Link::sending`] did not go out.
    pub(crate) fn send_failed(&self) {
        if let Ok(mut t) = self.table.lock() {
            t.sending = t.sending.saturating_sub(1);
            if t.sending == 0 {
                t.early.clear();
            }
        }
    }

    /// Parks `event` when it names a request that is still being registered; gives it
    /// back otherwise.
    fn park(&self, event: ClientEvent) -> Option<ClientEvent> {
        let Some(related) = names(&event) else {
            return Some(event);
        };
        let Ok(mut t) = self.table.lock() else {
            return Some(event);
        };
        let known = match related {
            Some(id) => t.calls.contains_key(&id),
            // Goes to the only (or oldest) call: none may be registered yet.
            None => !t.calls.is_empty(),
        };
        if t.sending == 0 || known || t.early.len() >= MAX_EARLY {
            return Some(event);
        }
        t.early.push(event);
        None
    }

    /// The call under `id` ended: forget it and its open server requests.
    pub(crate) fn unregister(&self, id: ClientRequestId) {
        if let Ok(mut t) = self.table.lock() {
            if let Some(Slot {
                to: Inbox::Fast(asks),
                ..
            }) = t.calls.remove(&id)
            {
                // As a round's asks end with it.
                for (_, ask) in asks {
                    ask.abort();
                }
            }
            t.asked.retain(|_, owner| *owner != id);
        }
    }

    /// A server request was answered.
    pub(crate) fn answered(&self, id: ServerRequestId) {
        if let Ok(mut t) = self.table.lock() {
            t.asked.remove(&id);
        }
    }

    /// Does what delivering a server request left to do.
    fn act(self: &Arc<Self>, d: Delivery) {
        match d {
            Delivery::Done => {}
            Delivery::Refuse(id, e) => self.refuse(id, e),
            Delivery::Ask(owner, ctx, req) => self.ask_for_fast_call(owner, ctx, req),
        }
    }

    /// Puts the upstream's ask for a fast-path call to the downstream client, as the
    /// call's round would (`super::call`): through the call's context, the answer sent
    /// back; aborted when the upstream withdraws it or the call ends.
    fn ask_for_fast_call(
        self: &Arc<Self>,
        owner: ClientRequestId,
        ctx: CallCtx,
        req: ServerRequest,
    ) {
        let id = req.id;
        let (handle, reg) = AbortHandle::new_pair();
        let Ok(mut t) = self.table.lock() else { return };
        let Some(Slot {
            to: Inbox::Fast(asks),
            ..
        }) = t.calls.get_mut(&owner)
        else {
            return;
        };
        asks.push((id, handle));
        drop(t);
        let (link, client) = (Arc::downgrade(self), self.client.clone());
        let ask = ClientAsk {
            method: req.method.as_str().to_owned().into(),
            params: req.params,
        };
        let asked = async move {
            let result = ctx.ask_as(None, ask).await;
            if let Some(link) = link.upgrade() {
                link.answered_fast(owner, id);
            }
            let _ = client.answer(id, result).await;
        };
        tokio::spawn(Abortable::new(asked, reg));
    }

    /// A fast-path call's ask was answered.
    fn answered_fast(&self, owner: ClientRequestId, id: ServerRequestId) {
        if let Ok(mut t) = self.table.lock() {
            t.asked.remove(&id);
            if let Some(Slot {
                to: Inbox::Fast(asks),
                ..
            }) = t.calls.get_mut(&owner)
            {
                asks.retain(|(s, _)| *s != id);
            }
        }
    }

    fn refuse(&self, id: ServerRequestId, error: McpError) {
        let client = self.client.clone();
        tokio::spawn(async move {
            let _ = client.answer(id, Err(error)).await;
        });
    }

    /// Routes one event from the upstream.
    fn on_event(self: &Arc<Self>, event: ClientEvent) {
        let Some(event) = self.park(event) else {
            return;
        };
        match event {
            ClientEvent::ServerRequest(req) => self.on_server_request(req),
            ClientEvent::ServerRequestCancelled(id) => {
                let Ok(mut t) = self.table.lock() else { return };
                t.orphans.retain(|r| r.id != id);
                if let Some(i) = t.session_asks.iter().position(|(s, _)| *s == id) {
                    t.session_asks.swap_remove(i).1.abort();
                }
                if let Some(owner) = t.asked.remove(&id)
                    && let Some(slot) = t.calls.get_mut(&owner)
                {
                    match &mut slot.to {
                        Inbox::Round(tx) => {
                            let _ = tx.try_send(ToCall::Withdrawn(id));
                        }
                        Inbox::Fast(asks) => {
                            if let Some(i) = asks.iter().position(|(s, _)| *s == id) {
                                asks.swap_remove(i).1.abort();
                            }
                        }
                    }
                }
            }
            ClientEvent::Progress { request, update } => {
                if let Some(ctx) = self.ctx_of(Some(request), false) {
                    ctx.progress(update.progress, update.total, update.message);
                }
            }
            ClientEvent::Log { entry, related } => match self.ctx_of(related, self.scoped) {
                Some(ctx) => ctx.log_entry(entry),
                None if !self.scoped => {
                    let _ = self.events.send(BackendEvent::Log(entry));
                }
                None => self.log_to_session(entry),
            },
            ClientEvent::ListChanged(kind) => {
                let ev = match kind {
                    ListKind::Tools => BackendEvent::ToolsListChanged,
                    ListKind::Prompts => BackendEvent::PromptsListChanged,
                    ListKind::Resources => BackendEvent::ResourcesListChanged,
                };
                let _ = self.events.send(ev);
            }
            ClientEvent::ResourceUpdated { uri } => {
                let _ = self.events.send(BackendEvent::ResourceUpdated { uri });
            }
            ClientEvent::Notification { method, .. } => {
                tracing::debug!(upstream = %self.client.peer(), %method, "upstream notification not forwarded");
            }
            _ => {}
        }
    }

    /// A log the upstream sent with no call in flight, on a link of one downstream session:
    /// to that session (at its own log level) as the upstream wrote it, as the logs sent
    /// during its calls go.
    fn log_to_session(&self, entry: mcpwire_model::LogEntry) {
        let Some(session) = &self.session else { return };
        if !session.notify(BackendEvent::Log(entry)) {
            tracing::debug!(upstream = %self.client.peer(), "a log between calls found its session gone or busy; dropped");
        }
    }

    fn on_server_request(self: &Arc<Self>, req: ServerRequest) {
        let Some(req) = self.ask_session(req) else {
            return;
        };
        let Some(req) = self.ask_for_relayed_call(req) else {
            return;
        };
        let delivery = {
            let Ok(mut t) = self.table.lock() else { return };
            let unknown = match req.related {
                Some(id) => !t.calls.contains_key(&id),
                // Without a related request the oldest call gets it; none may be
                // registered yet while one is being sent.
                None => t.calls.is_empty() && t.sending > 0,
            };
            match req.related {
                _ if unknown => {
                    if t.orphans.len() < MAX_ORPHANS {
                        t.orphans.push(req);
                        Delivery::Done
                    } else {
                        Delivery::Refuse(req.id, busy())
                    }
                }
                _ => t.deliver(req),
            }
        };
        self.act(delivery);
    }

    /// On a link of one downstream session, puts a server request to that session itself
    /// rather than to a call: `roots/list` always (roots are the session's, and a call may
    /// end before its client answers), any other request naming no call when no call is in
    /// flight, being sent or relayed. Gives it back otherwise.
    ///
    /// On the shared link, a `roots/list` with no call to put it to, or only a catalog
    /// listing (the catalog session as it opens, asked by an upstream like
    /// server-filesystem), is answered with no roots: no client stands behind it then, and an error would be logged upstream as a
    /// failure. Asked during a call (a stateless client's), it goes to that call.
    fn ask_session(self: &Arc<Self>, req: ServerRequest) -> Option<ServerRequest> {
        let Some(session) = &self.session else {
            // No call to put it to, or only one that cannot ask (a catalog listing).
            let idle = req.related.is_none()
                && self.table.lock().is_ok_and(|t| {
                    t.sending == 0 && t.calls.values().next().is_none_or(|c| !c.ctx.can_ask())
                })
                && self.client.relay().is_none_or(|r| r.waiting() == 0);
            if idle && req.method.as_str() == "roots/list" {
                let client = self.client.clone();
                let none = mcpwire_model::to_raw(&serde_json::json!({ "roots": [] }));
                tokio::spawn(async move {
                    let _ = client.answer(req.id, Ok(none)).await;
                });
                return None;
            }
            return Some(req);
        };
        let roots = req.method.as_str() == "roots/list";
        let mut t = self.table.lock().ok()?;
        let relaying = self.client.relay().is_some_and(|r| r.waiting() > 0);
        let idle = req.related.is_none() && t.calls.is_empty() && t.sending == 0 && !relaying;
        if !(roots || idle) {
            return Some(req);
        }
        let id = req.id;
        if t.session_asks.len() >= CALL_QUEUE {
            drop(t);
            self.refuse(id, busy());
            return None;
        }
        let (handle, reg) = AbortHandle::new_pair();
        t.session_asks.push((id, handle));
        drop(t);
        let (link, client, session) = (Arc::downgrade(self), self.client.clone(), session.clone());
        let ask = ClientAsk {
            method: req.method.as_str().to_owned().into(),
            params: req.params,
        };
        let asked = async move {
            let result = session.ask(ask).await;
            if let Some(link) = link.upgrade()
                && let Ok(mut t) = link.table.lock()
            {
                t.session_asks.retain(|(s, _)| *s != id);
            }
            let _ = client.answer(id, result).await;
        };
        tokio::spawn(Abortable::new(asked, reg));
        None
    }

    /// Puts a server request naming no call to the downstream client on behalf of the
    /// oldest relayed call (`mcpwire_relay`) when no call of this link's own is in flight
    /// or being sent — where [`Table::deliver`] would give it to the oldest call; gives it
    /// back otherwise.
    fn ask_for_relayed_call(&self, req: ServerRequest) -> Option<ServerRequest> {
        let Some(relay) = self.client.relay().filter(|r| r.waiting() > 0) else {
            return Some(req);
        };
        let idle = req.related.is_none()
            && self
                .table
                .lock()
                .is_ok_and(|t| t.calls.is_empty() && t.sending == 0);
        if !idle {
            return Some(req);
        }
        let ServerRequest {
            id, method, params, ..
        } = req;
        let ask = ClientAsk {
            method: method.as_str().to_owned().into(),
            params,
        };
        let client = self.client.clone();
        let answer: mcpwire_relay::AnswerAsk = Box::new(move |result| {
            tokio::spawn(async move {
                let _ = client.answer(id, result).await;
            });
        });
        match relay.ask(ask, answer) {
            Ok(()) => None,
            Err((ask, _)) => Some(ServerRequest {
                id,
                method: mcpwire_model::Method::parse(&ask.method),
                params: ask.params,
                related: None,
            }),
        }
    }

    /// The context of the call `related` names; without one, of the only call in flight,
    /// or (when `oldest`) of the oldest call.
    fn ctx_of(&self, related: Option<ClientRequestId>, oldest: bool) -> Option<CallCtx> {
        let t = self.table.lock().ok()?;
        match related {
            Some(id) => t.calls.get(&id).map(|s| s.ctx.clone()),
            None if oldest || t.calls.len() == 1 => t.calls.values().next().map(|s| s.ctx.clone()),
            None => None,
        }
    }
}

impl Table {
    /// Hands a server request to its call (by related request, else the oldest call);
    /// says what is left to do: nothing, a refusal (no call, or its queue is full), or
    /// asking through a fast-path call's context.
    fn deliver(&mut self, req: ServerRequest) -> Delivery {
        let owner = match req.related {
            Some(id) => Some(id),
            None => self.calls.keys().next().copied(),
        };
        let Some((owner, slot)) = owner.and_then(|o| self.calls.get_mut(&o).map(|s| (o, s))) else {
            return Delivery::Refuse(
                req.id,
                McpError::Unavailable(format!(
                    "the gateway has no downstream call to ask `{}` for",
                    req.method
                )),
            );
        };
        let id = req.id;
        let delivery = match &mut slot.to {
            Inbox::Round(tx) => match tx.try_send(ToCall::Ask(req)) {
                Ok(()) => Delivery::Done,
                Err(_) => return Delivery::Refuse(id, busy()),
            },
            Inbox::Fast(asks) if asks.len() >= CALL_QUEUE => return Delivery::Refuse(id, busy()),
            Inbox::Fast(_) => Delivery::Ask(owner, slot.ctx.clone(), req),
        };
        self.asked.insert(id, owner);
        delivery
    }
}

/// For progress updates and logs, the request they name (`Some(None)`: a log naming
/// none); `None` for other events.
fn names(event: &ClientEvent) -> Option<Option<ClientRequestId>> {
    match event {
        ClientEvent::Progress { request, .. } => Some(Some(*request)),
        ClientEvent::Log { related, .. } => Some(*related),
        _ => None,
    }
}

fn busy() -> McpError {
    McpError::LimitExceeded("too many open requests from the upstream server for one call".into())
}

/// Tells the upstream each time the downstream client says its roots changed
/// (`notifications/roots/list_changed`), until the link is down.
async fn forward_roots_changes(
    mut roots: tokio::sync::watch::Receiver<u64>,
    client: Client,
    down: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            _ = down.cancelled() => return,
            changed = roots.changed() => {
                if changed.is_err() {
                    return;
                }
                if client.notify("notifications/roots/list_changed", None).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Routes the upstream's events until the connection ends or the link is dropped; on a
/// flush, routes everything already queued before saying it is done.
async fn route(
    link: Weak<Link>,
    mut events: ClientEvents,
    mut flushes: mpsc::Receiver<oneshot::Sender<()>>,
) {
    loop {
        tokio::select! {
            biased;
            Some(done) = flushes.recv() => {
                while let Some(Some(event)) = events.recv().now_or_never() {
                    let Some(link) = link.upgrade() else { return };
                    link.on_event(event);
                }
                let _ = done.send(());
            }
            event = events.recv() => {
                let Some(event) = event else { return };
                let Some(link) = link.upgrade() else { return };
                link.on_event(event);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::StreamExt;
    use mcpwire_model::Revision;
    use mcpwire_model::types::ClientCapabilities;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use mcpwire_client::{ClientOptions, EraChoice, RequestOptions, Target};

    /// Server requests the upstream floods one call with.
    const FLOOD: usize = 4 * CALL_QUEUE;

    /// A stdio server in `sh`: answers `initialize`; on the next request (a `tools/call`)
    /// sends `asks` `elicitation/create` requests at once, reads answers until `refused` of them
    /// are errors, then answers the call with those errors' codes.
    fn asking_server(asks: usize, refused: usize) -> Target {
        let id = r#"id=$(printf '%s' "$l" | sed 's/.*"id":\([0-9]*\).*/\1/')"#;
        let init = r#"{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n"#;
        // Not `roots/list`: that one goes to the session, not to a call (`ask_session`).
        let ask = r#"{"jsonrpc":"2.0","id":%s,"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object"}}}\n"#;
        let code = r#"code=$(printf '%s' "$l" | sed 's/.*"code":\(-*[0-9]*\).*/\1/')"#;
        let result =
            r#"{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}\n"#;
        let script = format!(
            "read l; {id}; printf '{init}' \"$id\"; read l; read l; {id}; call=$id; \
             i=1; while [ $i -le {asks} ]; do printf '{ask}' \"$i\"; i=$((i+1)); done; \
             n=0; codes=''; while [ $n -lt {refused} ] && read l; do \
               case \"$l\" in *'\"error\"'*) n=$((n+1)); {code}; codes=\"$codes $code\";; esac; \
             done; \
             printf '{result}' \"$call\" \"$codes\"; while read l; do :; done"
        );
        Target::Command {
            argv: vec!["sh".into(), "-c".into(), script],
        }
    }

    fn ctx(revision: Revision) -> CallCtx {
        CallCtx::new(
            revision,
            Arc::new(ClientCapabilities::default()),
            CancellationToken::new(),
            None,
        )
    }

    /// A link to `server` and a `tools/call` on it, registered as the gateway registers
    /// one (before the upstream can ask anything); the call's text answer once it came,
    /// every event the upstream sent before it routed.
    async fn call_on(server: Target) -> (Arc<Link>, ClientRequestId, CallInbox, String) {
        let mut opts = ClientOptions::with_handshake_timeout(Duration::from_secs(10));
        opts.era = EraChoice::Handshake;
        opts.capabilities.elicitation = Some(serde_json::json!({}));
        let (client, events) = Client::connect(&server, &opts).await.expect("connect");
        let (backend_events, _) = broadcast::channel(16);
        let link = Link::start(client, events, Some(SessionScope::new()), backend_events);
        link.sending();
        let params = serde_json::value::to_raw_value(&serde_json::json!({"name": "t"})).ok();
        let pending = link
            .client()
            .send("tools/call", params, RequestOptions::default())
            .await
            .expect("sent");
        let id = pending.id();
        let inbox = link.register(id, ctx(Revision::LATEST_STATEFUL));
        let mcpwire_client::Answer::Complete(raw) = pending.await.expect("answered") else {
            panic!("not a complete answer");
        };
        link.flush().await;
        let result: serde_json::Value = serde_json::from_str(raw.get()).expect("json");
        let text = result["content"][0]["text"]
            .as_str()
            .expect("text")
            .to_owned();
        (link, id, inbox, text)
    }

    /// Takes what waits in `inbox`: how many asks.
    fn asks_in(inbox: &mut CallInbox) -> usize {
        let mut asks = 0;
        while let Ok(msg) = inbox.try_recv() {
            assert!(matches!(msg, ToCall::Ask(_)));
            asks += 1;
        }
        asks
    }

    /// An upstream floods one call with server requests while the call takes none (as a
    /// held round does): its inbox keeps at most its bound (`CALL_QUEUE`, plus the one
    /// slot `futures` channels give each sender), the link remembers only those, and every
    /// request past the bound is refused at once with `LimitExceeded` — the upstream is
    /// answered, nothing piles up.
    #[tokio::test]
    async fn a_flood_of_server_requests_keeps_a_calls_inbox_at_its_bound() {
        let bound = CALL_QUEUE + 1;
        let (link, id, mut inbox, codes) = call_on(asking_server(FLOOD, FLOOD - bound)).await;
        let busy = busy().to_wire_unnegotiated().code.to_string();
        let codes: Vec<&str> = codes.split_whitespace().collect();
        assert_eq!(
            codes.len(),
            FLOOD - bound,
            "every request past the bound refused"
        );
        assert!(codes.iter().all(|c| *c == busy), "{codes:?}");

        assert_eq!(
            asks_in(&mut inbox),
            bound,
            "the inbox held exactly its bound"
        );
        {
            let t = link.table.lock().expect("table");
            assert_eq!(
                t.asked.len(),
                bound,
                "only delivered requests are remembered"
            );
            assert!(t.orphans.is_empty() && t.early.is_empty());
        }
        link.unregister(id);
        assert!(link.table.lock().expect("table").asked.is_empty());
        assert!(
            inbox.next().await.is_none(),
            "the call's inbox closed with it"
        );
    }

    /// A held call resumed with a new context (the downstream client's retry) keeps its
    /// inbox: the server requests the upstream sent while it was held still wait there,
    /// owned by it, what the link delivers next arrives there too, and what the link
    /// routes by context goes to the new one.
    #[tokio::test]
    async fn a_reattached_call_keeps_its_inbox() {
        let (link, id, mut inbox, _) = call_on(asking_server(3, 0)).await;
        let Ok(ToCall::Ask(first)) = inbox.try_recv() else {
            panic!("an ask waits");
        };
        link.reattach(id, ctx(Revision::STATELESS));
        let now = link.ctx_of(Some(id), false).expect("the call's context");
        assert!(now.revision().is_stateless(), "the new context");
        let delivery = link.table.lock().expect("table").deliver(first);
        assert!(matches!(delivery, Delivery::Done), "delivered again");
        assert_eq!(asks_in(&mut inbox), 3, "the two held back and the new one");
        let t = link.table.lock().expect("table");
        assert!(t.asked.values().all(|owner| *owner == id) && t.asked.len() == 3);
    }
}
