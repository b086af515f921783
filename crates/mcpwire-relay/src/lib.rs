//! The relay: a downstream session's `tools/call` sent to its upstream connection as
//! bytes, its answer brought back as bytes — no decoding, no router, no call future
//! (`docs/design/gateway.md` § The relay). What both ends share is here; the downstream
//! ends are the listeners' session drivers (`mcpwire_server`'s `driver::relayed`), the
//! upstream ends the stdio and Streamable HTTP clients (`mcpwire_client`), and the gateway's
//! upstream backend says when a tool's calls may take it, handing the router a
//! `RelayRoute` that carries the [`Relay`].
//!
//! - [`Relay`] (one per upstream connection): the frames the downstream end queued for
//!   the connection's task (stdio: written as lines), with their ids already rewritten to
//!   upstream ids — or, on a connection that sends each call on its own request (HTTP),
//!   handed to its [`RelayPost`] at once; the calls waiting for answers (upstream id → the
//!   downstream call and the client's id text); the cancellations to tell the upstream.
//! - [`RelayInbox`] (one per downstream session): what came back for that session's relayed
//!   calls, in the order the child wrote it — answers as bytes with the client's id restored,
//!   answers the general path must shape (errors, unusual frames, the connection's end) as
//!   outcomes, and the child's logs and server→client requests during relayed calls.
//! - [`CallSlot`] (one per call a listener's request handler relays itself, the seam):
//!   the same for one call, held for its handler until it hands the call to its session,
//!   then forwarded to the session's inbox.
//!
//! A relay made [`with a call timeout`](Relay::with_call_timeout) (the gateway's
//! `call_timeout_secs`) ends a call that waited that long as the general path's client
//! session ends a request: answered `Timeout`, the upstream told it "timed out"
//! ([`CancelReason::TimedOut`]); the connection's task asks when ([`Relay::next_expiry`])
//! and calls [`Relay::expire`].
//!
//! Bounds: a relay holds at most the connection's `max_in_flight` calls, and the
//! downstream session at most its own; their frames and answers are bounded by those
//! counts (a frame is at most the message limit). Logs queued in an inbox are capped at
//! [`MAX_QUEUED_LOGS`] (further ones are dropped, as a running call's events are under
//! pressure); asks come through the link, which bounds them.
//!
//! What the relay reads of a frame and how it rewrites an id is `mcpwire_wire::json_frame`'s:
//! a downstream line that is a [`PlainCall`] goes upstream with its id replaced, an upstream
//! line that is a [`PlainResult`] comes back with the client's [`IdText`]. Anything else is
//! decoded as usual.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use mcpwire_model::{ClientAsk, LogEntry, McpError, Raw, Reply};
use mcpwire_session::{DispatchId, IdMap};
use mcpwire_wire::json_frame::{IdText, PlainCall, PlainResult, plain_result};
use tokio::sync::Notify;

mod slot;

pub use slot::{CallSlot, SlotItem, Taken};

/// Logs of the upstream waiting in an inbox before further ones are dropped.
pub const MAX_QUEUED_LOGS: usize = 1024;

/// Answers a server→client request of the upstream (`Client::answer`, spawned).
pub type AnswerAsk = Box<dyn FnOnce(Result<Raw, McpError>) + Send + Sync>;

/// A relayed call waiting for its answer.
struct Waiting {
    /// The client's id, written into the answer.
    id: IdText,
    to: Target,
    /// When it has waited the connection's call timeout.
    deadline: Option<Instant>,
}

/// Why the upstream is told that a relayed call was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelReason {
    /// The call ended downstream without its answer: its client cancelled it, or the
    /// downstream session's request timeout ended it.
    Downstream,
    /// The call waited the connection's call timeout ([`Relay::with_call_timeout`]).
    TimedOut,
}

/// Where what comes back for a relayed call goes.
#[derive(Clone)]
enum Target {
    /// The session that relayed it, as this call of its.
    Session(DispatchId, Arc<RelayInbox>),
    /// The request handler that relayed it (the seam), until the session takes it.
    Slot(Arc<CallSlot>),
}

impl Target {
    /// The inbox of the call's session (which session a call is of).
    fn session(&self) -> &Arc<RelayInbox> {
        match self {
            Target::Session(_, inbox) => inbox,
            Target::Slot(slot) => slot.session(),
        }
    }

    fn answer(&self, result: &PlainResult<'_>, id: &IdText) {
        match self {
            Target::Session(dispatch, inbox) => inbox.push_answer(*dispatch, result, id),
            Target::Slot(slot) => slot.deliver_answer(result, id),
        }
    }

    fn outcome(&self, outcome: Result<Reply, McpError>) {
        match self {
            Target::Session(dispatch, inbox) => inbox.push(Arrived::Outcome(*dispatch, outcome)),
            Target::Slot(slot) => slot.deliver(SlotItem::Outcome(outcome)),
        }
    }

    fn not_run(&self, frame: Bytes) {
        match self {
            Target::Session(dispatch, inbox) => inbox.push(Arrived::NotRun(*dispatch, frame)),
            Target::Slot(slot) => slot.deliver(SlotItem::NotRun(frame)),
        }
    }

    fn log(&self, entry: LogEntry) {
        match self {
            Target::Session(dispatch, inbox) => inbox.push_log(Some(*dispatch), entry),
            Target::Slot(slot) => slot.deliver(SlotItem::Log(entry)),
        }
    }

    fn ask(&self, ask: ClientAsk, answer: AnswerAsk) {
        match self {
            Target::Session(dispatch, inbox) => inbox.push(Arrived::Ask(*dispatch, ask, answer)),
            Target::Slot(slot) => slot.deliver(SlotItem::Ask(ask, answer)),
        }
    }
}

/// A relayed call's request to its upstream, run by whoever relayed the call (the seam)
/// instead of a task of its own; its answer comes back through the relay as any other's.
pub type RelayExchange = Pin<Box<dyn Future<Output = ()> + Send>>;

#[derive(Default)]
struct RelayState {
    /// The connection ended: nothing more is relayed.
    closed: bool,
    /// Frames for the child, ids rewritten.
    out: BytesMut,
    /// Upstream ids of relayed calls cancelled, and why, to tell the child.
    cancels: Vec<(u64, CancelReason)>,
    waiting: IdMap<u64, Waiting>,
    /// When [`Relay::expire`] is due: no later than the earliest deadline of the calls
    /// waiting (it may be a deadline of a call answered since: `expire` then finds the
    /// next one). `None` when none waits with a deadline.
    next_expiry: Option<Instant>,
}

/// How a relay's frames leave on a connection that sends each call on a request of its own
/// (Streamable HTTP: a POST per call), started by the downstream end as it relays the
/// call rather than queued for the connection's task.
pub trait RelayPost: Send + Sync {
    /// Sends `frame` (one JSON-RPC request ending in a newline, upstream id `id`) with the
    /// trace context headers `trace` (empty without an exporter); its answer comes back
    /// through `relay` ([`Relay::answer_raw`], [`Relay::claim`]).
    fn post(&self, relay: &Arc<Relay>, id: u64, frame: Bytes, trace: Vec<(String, String)>);
    /// As [`RelayPost::post`], but the request is the returned future, for the caller to
    /// run (dropping it abandons the request).
    fn exchange(
        &self,
        relay: &Arc<Relay>,
        id: u64,
        frame: Bytes,
        trace: Vec<(String, String)>,
    ) -> RelayExchange;
    /// The call relayed as `id` ended downstream without its answer: its request may be
    /// abandoned (the upstream is also told, as [`Relay::take`] hands the id over).
    fn abandon(&self, id: u64);
    /// The connection ended: every request still running is abandoned.
    fn close(&self);
}

/// The upstream end: one connection's relayed calls.
pub struct Relay {
    /// The next upstream request id (shared with the client's other requests).
    next_id: Box<dyn Fn() -> u64 + Send + Sync>,
    /// Calls in flight on the connection at most.
    max_in_flight: usize,
    /// How long a relayed call waits for its answer (None: as long as it takes).
    call_timeout: Option<Duration>,
    /// Relayed calls waiting, readable without the lock.
    waiting: AtomicUsize,
    /// Calls relayed so far.
    sent: AtomicU64,
    state: Mutex<RelayState>,
    /// Wakes the connection's task: frames or cancellations to write.
    wake: Notify,
    /// Sends each frame on its own request instead of queueing it (HTTP).
    post: Option<Box<dyn RelayPost>>,
}

/// Why a call was not relayed (the general path takes it).
#[derive(Debug)]
pub struct NotRelayed;

/// A call [`Relay::enqueue`] recorded.
enum Enqueued<'a> {
    /// Its frame is queued for the connection's task; its upstream id.
    Queued(u64),
    /// Its upstream id and frame, for the connection's [`RelayPost`].
    ToPost(u64, Bytes, &'a dyn RelayPost),
}

impl Relay {
    /// A relay numbering its requests with `next_id`, holding at most `max_in_flight`.
    pub fn new(next_id: Box<dyn Fn() -> u64 + Send + Sync>, max_in_flight: usize) -> Relay {
        Relay {
            next_id,
            max_in_flight,
            call_timeout: None,
            waiting: AtomicUsize::new(0),
            sent: AtomicU64::new(0),
            state: Mutex::default(),
            wake: Notify::new(),
            post: None,
        }
    }

    /// The relay, sending each frame with `post` as it is relayed (HTTP) rather than
    /// queueing it for the connection's task; cancellations are still queued.
    pub fn with_post(mut self, post: Box<dyn RelayPost>) -> Relay {
        self.post = Some(post);
        self
    }

    /// The relay, ending a call that waited `timeout` for its answer (`None`: no limit) as
    /// the general path's client session ends a request past its timeout: answered
    /// `Timeout`, and the upstream told it "timed out". A relayed call carries no progress
    /// token, so nothing restarts its timeout.
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Relay {
        self.call_timeout = timeout;
        self
    }

    /// Calls relayed so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Relayed calls waiting for their answers.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    /// Whether the connection holds fewer relayed calls than its bound now (a call sent
    /// next may still find it full when other sessions relay on it too).
    pub fn has_room(&self) -> bool {
        self.waiting() < self.max_in_flight
    }

    // ----- the downstream end -----

    /// Queues `call` for the upstream under a new upstream id (or posts it at once, with
    /// the trace context headers `trace` gives, on a connection with a [`RelayPost`]), its
    /// answer for `dispatch` of the session reading `inbox`; the upstream id. Refused when
    /// the connection ended or holds its bound (and `trace` is not called).
    pub fn send(
        self: &Arc<Self>,
        call: &PlainCall<'_>,
        dispatch: DispatchId,
        inbox: &Arc<RelayInbox>,
        trace: impl FnOnce() -> Vec<(String, String)>,
    ) -> Result<u64, NotRelayed> {
        let to = Target::Session(dispatch, inbox.clone());
        match self.enqueue(call, to)? {
            Enqueued::Queued(id) => Ok(id),
            Enqueued::ToPost(id, frame, post) => {
                post.post(self, id, frame, trace());
                Ok(id)
            }
        }
    }

    /// As [`Relay::send`] for a call relayed by a request handler itself (the seam): what
    /// comes back goes to `slot`. On a connection with a [`RelayPost`] the request is
    /// returned for the caller to run (with the trace context headers `trace` gives);
    /// otherwise the frame is queued for the connection's task.
    pub fn send_to_slot(
        self: &Arc<Self>,
        call: &PlainCall<'_>,
        slot: &Arc<CallSlot>,
        trace: impl FnOnce() -> Vec<(String, String)>,
    ) -> Result<(u64, Option<RelayExchange>), NotRelayed> {
        match self.enqueue(call, Target::Slot(slot.clone()))? {
            Enqueued::Queued(id) => Ok((id, None)),
            Enqueued::ToPost(id, frame, post) => {
                Ok((id, Some(post.exchange(self, id, frame, trace()))))
            }
        }
    }

    /// Records `call` as waiting under a new upstream id; queues its frame, or gives it
    /// back for the connection's [`RelayPost`].
    fn enqueue(&self, call: &PlainCall<'_>, to: Target) -> Result<Enqueued<'_>, NotRelayed> {
        let mut s = self.state.lock().map_err(|_| NotRelayed)?;
        if s.closed || s.waiting.len() >= self.max_in_flight {
            return Err(NotRelayed);
        }
        let id = (self.next_id)();
        let deadline = self.call_timeout.map(|t| Instant::now() + t);
        let waiting = Waiting {
            id: call.id_text(),
            to,
            deadline,
        };
        s.waiting.insert(id, waiting);
        self.waiting.store(s.waiting.len(), Ordering::Release);
        // The first deadline while none is armed: the connection's task waits for it.
        let arm = deadline.is_some() && s.next_expiry.is_none();
        if arm {
            s.next_expiry = deadline;
        }
        if let Some(post) = &self.post {
            drop(s);
            if arm {
                self.wake.notify_one();
            }
            let mut frame = BytesMut::new();
            call.write_line_with_id(id, &mut frame);
            self.sent.fetch_add(1, Ordering::Relaxed);
            return Ok(Enqueued::ToPost(id, frame.freeze(), post.as_ref()));
        }
        let wake = arm || (s.out.is_empty() && s.cancels.is_empty());
        call.write_line_with_id(id, &mut s.out);
        drop(s);
        self.sent.fetch_add(1, Ordering::Relaxed);
        if wake {
            self.wake.notify_one();
        }
        Ok(Enqueued::Queued(id))
    }

    /// The downstream call relayed as `id` ended without its answer (the client cancelled
    /// it, or it timed out): the child is told, its answer will not be relayed.
    pub fn cancel(&self, id: u64) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.waiting.remove(&id).is_none() || s.closed {
            return;
        }
        self.waiting.store(s.waiting.len(), Ordering::Release);
        let wake = s.out.is_empty() && s.cancels.is_empty();
        s.cancels.push((id, CancelReason::Downstream));
        drop(s);
        if let Some(post) = &self.post {
            post.abandon(id);
        }
        if wake {
            self.wake.notify_one();
        }
    }

    /// The downstream end let go of the call relayed as `id` without cancelling it (its
    /// client went away: a disconnection is not a cancellation): the call is forgotten
    /// here, and its answer, if it comes, is not relayed. The upstream is not told.
    pub fn forget(&self, id: u64) {
        if self.remove(id).is_some()
            && let Some(post) = &self.post
        {
            post.abandon(id);
        }
    }

    // ----- the upstream end -----

    /// Completes when frames or cancellations were queued (or were already).
    pub async fn queued(&self) {
        self.wake.notified().await
    }

    /// Moves the queued frames to `out` and hands each cancelled upstream id, and why, to
    /// `cancel`; whether there was anything.
    pub fn take(&self, out: &mut BytesMut, mut cancel: impl FnMut(u64, CancelReason)) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        if s.out.is_empty() && s.cancels.is_empty() {
            return false;
        }
        if out.is_empty() {
            std::mem::swap(out, &mut s.out);
        } else {
            out.extend_from_slice(&s.out);
            s.out.clear();
        }
        let cancels = std::mem::take(&mut s.cancels);
        drop(s);
        for (id, why) in cancels {
            cancel(id, why);
        }
        true
    }

    /// When [`Relay::expire`] is due next (`None`: no call waits with a deadline). A call
    /// relayed while none did wakes the connection's task ([`Relay::queued`]), which then
    /// asks again.
    pub fn next_expiry(&self) -> Option<Instant> {
        self.call_timeout?;
        self.state.lock().ok()?.next_expiry
    }

    /// Ends the calls that have waited the call timeout by `now`: each is answered
    /// `Timeout` (an outcome its downstream session shapes as the general path's), its
    /// request abandoned, and the upstream told ([`CancelReason::TimedOut`]). Looks at the
    /// calls waiting (at most the connection's bound) only when [`Relay::next_expiry`] is
    /// due.
    pub fn expire(&self, now: Instant) {
        if self.call_timeout.is_none() {
            return;
        }
        let Ok(mut s) = self.state.lock() else { return };
        if s.next_expiry.is_none_or(|at| at > now) {
            return;
        }
        let due: Vec<u64> = s
            .waiting
            .iter()
            .filter(|(_, w)| w.deadline.is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        let mut ended = Vec::with_capacity(due.len());
        for id in due {
            if let Some(w) = s.waiting.remove(&id) {
                ended.push((id, w));
            }
        }
        s.next_expiry = s.waiting.values().filter_map(|w| w.deadline).min();
        self.waiting.store(s.waiting.len(), Ordering::Release);
        let wake = !ended.is_empty() && !s.closed && s.out.is_empty() && s.cancels.is_empty();
        if !s.closed {
            s.cancels
                .extend(ended.iter().map(|(id, _)| (*id, CancelReason::TimedOut)));
        }
        drop(s);
        for (id, w) in ended {
            if let Some(post) = &self.post {
                post.abandon(id);
            }
            w.to.outcome(Err(McpError::Timeout));
        }
        if wake {
            self.wake.notify_one();
        }
    }

    /// Hands `line` back to its downstream call when it is a plain result
    /// ([`plain_result`], nesting at most `max_depth`) for a relayed call, the client's id
    /// restored; whether it did.
    pub fn answer_raw(&self, line: &[u8], max_depth: usize) -> bool {
        if self.waiting() == 0 {
            return false;
        }
        let Some(result) = plain_result(line, max_depth) else {
            return false;
        };
        let Some(w) = self.remove(result.id()) else {
            return false;
        };
        w.to.answer(&result, &w.id);
        true
    }

    /// The upstream did not run relayed call `id` (it no longer holds the session the
    /// call went to): the downstream session runs `frame` (the call as sent upstream) on
    /// the general path, which opens a new upstream session as it would for its own call;
    /// whether the call was still waiting.
    pub fn not_run(&self, id: u64, frame: Bytes) -> bool {
        match self.remove(id) {
            Some(w) => {
                w.to.not_run(frame);
                true
            }
            None => false,
        }
    }

    /// The relayed call waiting under upstream request `id`, taken to be answered
    /// ([`Claimed::answer`]); `None` when it is not one.
    pub fn claim(&self, id: u64) -> Option<Claimed> {
        self.remove(id).map(Claimed)
    }

    fn remove(&self, id: u64) -> Option<Waiting> {
        let mut s = self.state.lock().ok()?;
        let w = s.waiting.remove(&id)?;
        self.waiting.store(s.waiting.len(), Ordering::Release);
        Some(w)
    }

    /// The connection ended: nothing more is relayed, and every call waiting ends with
    /// the error `error` gives it.
    pub fn close(&self, error: impl Fn() -> McpError) {
        let Ok(mut s) = self.state.lock() else { return };
        s.closed = true;
        s.out.clear();
        s.cancels.clear();
        let waiting = std::mem::take(&mut s.waiting);
        s.next_expiry = None;
        self.waiting.store(0, Ordering::Release);
        drop(s);
        if let Some(post) = &self.post {
            post.close();
        }
        for (_, w) in waiting {
            w.to.outcome(Err(error()));
        }
    }

    /// The connection ended because the upstream no longer holds its session: nothing
    /// more is relayed, but on a connection with a [`RelayPost`] the calls waiting are left
    /// to their requests, still running — each comes back answered, or not run
    /// ([`Relay::not_run`]: its downstream session runs it again, in a new upstream
    /// session), or with its own error; the other requests of a lost session get the
    /// same 404 its first one got. Without a `RelayPost` (frames on the connection
    /// itself), as [`Relay::close`].
    pub fn close_leaving_posts(&self, error: impl Fn() -> McpError) {
        if self.post.is_none() {
            return self.close(error);
        }
        let Ok(mut s) = self.state.lock() else { return };
        s.closed = true;
        s.out.clear();
        s.cancels.clear();
    }

    /// Hands a log of the upstream to the downstream session of the relayed calls waiting
    /// (in order with their answers), as the oldest call's log — as the general path
    /// gives an upstream's log to the oldest call (on HTTP it then goes on that call's
    /// stream); gives it back when none waits, or when calls of several sessions wait (a
    /// shared upstream: the log is not one session's, and goes as the link sends a log it
    /// cannot attribute).
    pub fn log(&self, entry: LogEntry) -> Result<(), LogEntry> {
        match self.oldest_of_one_session() {
            Some(to) => {
                to.log(entry);
                Ok(())
            }
            None => Err(entry),
        }
    }

    /// Hands a log the upstream sent on relayed call `id`'s own answer stream (HTTP) to
    /// that call's session, in order with its answer; gives it back when `id` no longer
    /// waits.
    pub fn log_of(&self, id: u64, entry: LogEntry) -> Result<(), LogEntry> {
        let found = self
            .state
            .lock()
            .ok()
            .and_then(|s| s.waiting.get(&id).map(|w| w.to.clone()));
        match found {
            Some(to) => {
                to.log(entry);
                Ok(())
            }
            None => Err(entry),
        }
    }

    /// Puts a server→client request of the upstream to the downstream client on behalf
    /// of the oldest relayed call waiting (as the general path gives it to the oldest
    /// call); gives it back when none waits.
    pub fn ask(&self, ask: ClientAsk, answer: AnswerAsk) -> Result<(), (ClientAsk, AnswerAsk)> {
        let oldest = self.state.lock().ok().and_then(|s| {
            let (_, w) = s.waiting.iter().min_by_key(|(id, _)| **id)?;
            Some(w.to.clone())
        });
        match oldest {
            Some(to) => {
                to.ask(ask, answer);
                Ok(())
            }
            None => Err((ask, answer)),
        }
    }

    /// Where the oldest relayed call waiting goes, when every call waiting is of its
    /// session (they are one downstream session's).
    fn oldest_of_one_session(&self) -> Option<Target> {
        if self.waiting() == 0 {
            return None;
        }
        let s = self.state.lock().ok()?;
        let (_, oldest) = s.waiting.iter().min_by_key(|(id, _)| **id)?;
        let session = oldest.to.session();
        s.waiting
            .values()
            .all(|w| Arc::ptr_eq(w.to.session(), session))
            .then(|| oldest.to.clone())
    }
}

/// A relayed call taken off its relay ([`Relay::claim`]), to be answered.
pub struct Claimed(Waiting);

impl Claimed {
    /// Answers the call with `outcome`, which its downstream session shapes as the general
    /// path does.
    pub fn answer(self, outcome: Result<Reply, McpError>) {
        self.0.to.outcome(outcome);
    }
}

/// What came back for a downstream session's relayed calls.
pub enum Arrived {
    /// The answer of this call, as the next `len` bytes of the inbox's buffer.
    Answer(DispatchId, usize),
    /// The outcome of this call, for the session to answer as the general path does.
    Outcome(DispatchId, Result<Reply, McpError>),
    /// A log the upstream sent while relayed calls were waiting, as this (the oldest)
    /// call's when it names one.
    Log(Option<DispatchId>, LogEntry),
    /// A server→client request of the upstream, on behalf of this call.
    Ask(DispatchId, ClientAsk, AnswerAsk),
    /// The upstream did not run this call, sent as this frame (its upstream id in it):
    /// the session runs it on the general path.
    NotRun(DispatchId, Bytes),
}

#[derive(Default)]
struct InboxState {
    bytes: BytesMut,
    items: VecDeque<Arrived>,
    logs: usize,
}

/// The downstream end: what came back for one session's relayed calls.
#[derive(Default)]
pub struct RelayInbox {
    state: Mutex<InboxState>,
    wake: Notify,
}

impl RelayInbox {
    /// Completes when something arrived (or had already).
    pub async fn arrived(&self) {
        self.wake.notified().await
    }

    /// Takes what arrived: the answers' bytes appended to `bytes`, the items to `items`.
    pub fn take(&self, bytes: &mut BytesMut, items: &mut VecDeque<Arrived>) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.items.is_empty() {
            return;
        }
        if bytes.is_empty() {
            std::mem::swap(bytes, &mut s.bytes);
        } else {
            bytes.extend_from_slice(&s.bytes);
            s.bytes.clear();
        }
        if items.is_empty() {
            std::mem::swap(items, &mut s.items);
        } else {
            items.append(&mut s.items);
        }
        s.logs = 0;
    }

    fn push_answer(&self, dispatch: DispatchId, result: &PlainResult<'_>, id: &IdText) {
        let Ok(mut s) = self.state.lock() else { return };
        let start = s.bytes.len();
        result.write_line_with_id(id, &mut s.bytes);
        let len = s.bytes.len() - start;
        let wake = s.items.is_empty();
        s.items.push_back(Arrived::Answer(dispatch, len));
        drop(s);
        if wake {
            self.wake.notify_one();
        }
    }

    /// Queues an answer line already carrying the client's id.
    fn push_answer_line(&self, dispatch: DispatchId, line: &[u8]) {
        let Ok(mut s) = self.state.lock() else { return };
        s.bytes.extend_from_slice(line);
        let wake = s.items.is_empty();
        s.items.push_back(Arrived::Answer(dispatch, line.len()));
        drop(s);
        if wake {
            self.wake.notify_one();
        }
    }

    fn push_log(&self, dispatch: Option<DispatchId>, entry: LogEntry) {
        let Ok(mut s) = self.state.lock() else { return };
        if s.logs >= MAX_QUEUED_LOGS {
            tracing::debug!("the downstream session is not taking relayed logs; one dropped");
            return;
        }
        s.logs += 1;
        let wake = s.items.is_empty();
        s.items.push_back(Arrived::Log(dispatch, entry));
        drop(s);
        if wake {
            self.wake.notify_one();
        }
    }

    fn push(&self, item: Arrived) {
        let Ok(mut s) = self.state.lock() else { return };
        let wake = s.items.is_empty();
        s.items.push_back(item);
        drop(s);
        if wake {
            self.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use mcpwire_model::types::LoggingLevel;

    use super::*;

    /// A log entry as an upstream sends one.
    pub(crate) fn log() -> LogEntry {
        LogEntry {
            level: LoggingLevel::Info,
            logger: None,
            data: mcpwire_model::to_raw(&"a line of an upstream's log"),
        }
    }

    const CALL: &[u8] =
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#;

    /// A relay numbering from 1, with `timeout`, and a session's inbox.
    fn relay_with(timeout: Option<Duration>) -> (Arc<Relay>, Arc<RelayInbox>) {
        let next = AtomicU64::new(1);
        let relay = Relay::new(Box::new(move || next.fetch_add(1, Ordering::Relaxed)), 64)
            .with_call_timeout(timeout);
        (Arc::new(relay), Arc::new(RelayInbox::default()))
    }

    /// Relays a call for a request handler of `inbox`'s session (the seam); its slot and
    /// upstream id.
    fn send(relay: &Arc<Relay>, inbox: &Arc<RelayInbox>) -> (Arc<CallSlot>, u64) {
        let call = mcpwire_wire::json_frame::plain_call(CALL, 64).expect("a plain call");
        let slot = Arc::new(CallSlot::new(inbox.clone()));
        let (up, _) = relay.send_to_slot(&call, &slot, Vec::new).expect("relayed");
        (slot, up)
    }

    fn answer(relay: &Relay, up: u64) {
        let line = format!(r#"{{"jsonrpc":"2.0","id":{up},"result":{{}}}}"#);
        assert!(relay.answer_raw(line.as_bytes(), 64));
    }

    fn cancels(relay: &Relay) -> Vec<(u64, CancelReason)> {
        let mut seen = Vec::new();
        relay.take(&mut BytesMut::new(), |id, why| seen.push((id, why)));
        seen
    }

    #[test]
    fn a_call_past_the_call_timeout_is_answered_timeout_and_the_upstream_told_why() {
        let (relay, inbox) = relay_with(Some(Duration::from_secs(5)));
        let t0 = Instant::now();
        let ((a_slot, a), (b_slot, b)) = (send(&relay, &inbox), send(&relay, &inbox));
        let due = relay.next_expiry().expect("armed by the first call");
        assert!(due >= t0 + Duration::from_secs(5));
        // `b` is answered; nothing is due before the deadline.
        answer(&relay, b);
        assert!(matches!(b_slot.take_answer(), Taken::Answer(_)));
        relay.expire(t0);
        assert_eq!(relay.waiting(), 1);
        assert!(!a_slot.settled());
        let _ = cancels(&relay);
        relay.expire(due + Duration::from_secs(1));
        assert_eq!(relay.waiting(), 0);
        assert_eq!(relay.next_expiry(), None, "nothing waits");
        assert_eq!(cancels(&relay), vec![(a, CancelReason::TimedOut)]);
        // The outcome is the session's to shape; the request may be dropped.
        assert!(a_slot.settled());
        assert!(matches!(a_slot.take_answer(), Taken::Other));
        // A downstream cancellation keeps its own reason.
        let (_, c) = send(&relay, &inbox);
        relay.cancel(c);
        assert_eq!(cancels(&relay), vec![(c, CancelReason::Downstream)]);
    }

    #[test]
    fn without_a_call_timeout_nothing_expires() {
        let (relay, inbox) = relay_with(None);
        let (slot, _) = send(&relay, &inbox);
        assert_eq!(relay.next_expiry(), None);
        relay.expire(Instant::now() + Duration::from_secs(86_400));
        assert_eq!(relay.waiting(), 1);
        assert!(!slot.settled());
    }

    #[test]
    fn answered_calls_leave_nothing_behind_for_the_timer() {
        // Calls answered as they come: the relay keeps one deadline, not one per call.
        let (relay, inbox) = relay_with(Some(Duration::from_secs(60)));
        for _ in 0..10_000 {
            let (slot, up) = send(&relay, &inbox);
            answer(&relay, up);
            assert!(matches!(slot.take_answer(), Taken::Answer(_)));
        }
        assert_eq!(relay.waiting(), 0);
        let s = relay.state.lock().expect("lock");
        assert!(s.waiting.capacity() < 64, "{}", s.waiting.capacity());
        assert!(
            s.next_expiry.is_some(),
            "the first deadline, found stale when due"
        );
        drop(s);
        relay.expire(Instant::now() + Duration::from_secs(61));
        assert_eq!(relay.next_expiry(), None);
    }

    #[test]
    fn logs_for_a_session_that_does_not_take_them_stay_bounded() {
        let inbox = RelayInbox::default();
        for _ in 0..MAX_QUEUED_LOGS * 3 {
            inbox.push_log(None, log());
        }
        let (mut bytes, mut items) = (BytesMut::new(), VecDeque::new());
        inbox.take(&mut bytes, &mut items);
        assert_eq!(items.len(), MAX_QUEUED_LOGS, "the rest were dropped");
        // Taken: the session keeps up again, and logs are queued again.
        items.clear();
        inbox.push_log(None, log());
        inbox.take(&mut bytes, &mut items);
        assert_eq!(items.len(), 1);
    }
}
