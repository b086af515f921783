//! The pending-request table of one process generation: pure bookkeeping (no I/O, no
//! tokio), generic over what a call is (`C`, its context), who waits for an answer (`W`)
//! and how a followed task is told of pushed updates (`P`).
//!
//! It holds every request sent to the process and not yet answered, the tool-call FIFO and
//! the process-side tasks being followed, and it decides **attribution**: a message the
//! process sends without a call id (a log, a sampling or roots request) belongs to the head
//! of the tool-call FIFO (the SDK runs tool calls one at a time, in order), skipping calls
//! parked by `input_required`; with no tool call queued, to the only process task being
//! followed; otherwise — including when the head was cancelled by its client, since nothing
//! proves it stopped running — to nobody.
//!
//! Bounded: requests and followed tasks together are at most `limit`; a cancelled tool call
//! counts until the process answers it or a later result retires it.

use std::collections::{HashMap, VecDeque};

struct Entry<C, W> {
    /// Who waits for the answer; `None` once the caller went away.
    waiter: Option<W>,
    ctx: Option<C>,
    tool: bool,
    /// Ended by `input_required` (its ask was answered with an error and it was cancelled),
    /// so later asks are not attributed to it.
    parked: bool,
}

struct Followed<C, P> {
    /// The call the process answered with `create_task`.
    call_id: String,
    ctx: C,
    push: P,
}

/// Why a request could not be added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The connection ended, for this reason.
    Closed(String),
    /// The table holds `limit` requests and tasks.
    Full(usize),
}

/// What answering a request id found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answered<W> {
    /// No request has this id (never sent, already answered or retired, or forgotten).
    Unknown,
    /// The request's caller went away.
    Cancelled,
    /// Hand the answer to this waiter.
    Waiting(W),
}

/// What `create_task` for a call leads to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Follow<W> {
    /// Nobody waits for the call any more: cancel the task.
    NobodyWaits,
    /// The task id is empty or already followed: fail the call.
    BadTaskId(W),
    /// The task is followed: tell the waiter.
    Following(W),
}

/// What parking a call (for `input_required`) found.
pub(crate) enum Parked<'a, W, P> {
    /// A pending call: its waiter (if still there) gets `input_required`; cancel it.
    Call(Option<W>),
    /// The call of a followed task: tell the follower through its push handle.
    Task(&'a P),
    /// Nothing by that id.
    Unknown,
}

/// The table. See the module docs.
pub(crate) struct PendingTable<C, W, P> {
    entries: HashMap<String, Entry<C, W>>,
    /// Tool-call ids in send order; every id here is in `entries`.
    fifo: VecDeque<String>,
    /// Process-side tasks being followed, by the process's task id.
    tasks: HashMap<String, Followed<C, P>>,
    closed: Option<String>,
    limit: usize,
}

impl<C: Clone, W, P> PendingTable<C, W, P> {
    /// An empty table holding at most `limit` requests and tasks.
    pub(crate) fn new(limit: usize) -> Self {
        PendingTable {
            entries: HashMap::new(),
            fifo: VecDeque::new(),
            tasks: HashMap::new(),
            closed: None,
            limit,
        }
    }

    /// Adds request `id` (a tool call when `tool`) awaited by `waiter`.
    pub(crate) fn insert(
        &mut self,
        id: String,
        tool: bool,
        ctx: Option<C>,
        waiter: W,
    ) -> Result<(), Refused> {
        if let Some(reason) = &self.closed {
            return Err(Refused::Closed(reason.clone()));
        }
        if self.len() >= self.limit {
            return Err(Refused::Full(self.limit));
        }
        if tool {
            self.fifo.push_back(id.clone());
        }
        let entry = Entry {
            waiter: Some(waiter),
            ctx,
            tool,
            parked: false,
        };
        self.entries.insert(id, entry);
        Ok(())
    }

    /// The caller of `id` went away. A tool call stays (without waiter or context) until the
    /// process answers it or a later result retires it — the process may still be running
    /// it — and `true` says to send it a `CancelRequest`; anything else is forgotten.
    pub(crate) fn forget(&mut self, id: &str) -> bool {
        match self.entries.get_mut(id) {
            Some(e) if e.tool => {
                e.waiter = None;
                e.ctx = None;
                self.closed.is_none()
            }
            Some(_) => {
                self.entries.remove(id);
                false
            }
            None => false,
        }
    }

    /// The process answered `id`. A tool call's answer also retires every tool call sent
    /// before it (the process runs them in order, so they are over).
    pub(crate) fn answer(&mut self, id: &str) -> Answered<W> {
        let Some(entry) = self.entries.remove(id) else {
            return Answered::Unknown;
        };
        if entry.tool
            && let Some(pos) = self.fifo.iter().position(|f| f == id)
        {
            for old in self.fifo.drain(..=pos) {
                self.entries.remove(&old);
            }
        }
        match entry.waiter {
            Some(w) => Answered::Waiting(w),
            None => Answered::Cancelled,
        }
    }

    /// Ends the table: nothing more can be added; every waiter is returned, to be failed.
    pub(crate) fn close(&mut self, reason: &str) -> Vec<W> {
        if self.closed.is_none() {
            self.closed = Some(reason.to_owned());
        }
        self.fifo.clear();
        self.tasks.clear();
        self.entries.drain().filter_map(|(_, e)| e.waiter).collect()
    }

    /// Why the table was closed, once it has been.
    pub(crate) fn closed(&self) -> Option<&str> {
        self.closed.as_deref()
    }

    /// Whether `id` is a request still waiting for its answer.
    pub(crate) fn is_pending(&self, id: &str) -> bool {
        self.entries.contains_key(id)
    }

    /// The context of a pending request, or of a call now followed as a process task (its
    /// progress token stays the call's id).
    pub(crate) fn ctx_of(&self, id: &str) -> Option<C> {
        match self.entries.get(id) {
            Some(e) => e.ctx.clone(),
            None => self
                .tasks
                .values()
                .find(|t| t.call_id == id)
                .map(|t| t.ctx.clone()),
        }
    }

    /// The process answered tool call `call_id` with `create_task{task_id}`. That answers the
    /// call (retiring earlier ones); the task is followed from now on with `push`.
    pub(crate) fn follow_task(&mut self, call_id: &str, task_id: &str, push: P) -> Follow<W> {
        let ctx = self
            .entries
            .get(call_id)
            .filter(|e| e.waiter.is_some())
            .and_then(|e| e.ctx.clone());
        let answered = self.answer(call_id);
        let (Some(ctx), Answered::Waiting(waiter)) = (ctx, answered) else {
            return Follow::NobodyWaits;
        };
        if task_id.is_empty() || self.tasks.contains_key(task_id) {
            return Follow::BadTaskId(waiter);
        }
        let followed = Followed {
            call_id: call_id.to_owned(),
            ctx,
            push,
        };
        self.tasks.insert(task_id.to_owned(), followed);
        Follow::Following(waiter)
    }

    /// Stops following `task_id`.
    pub(crate) fn unfollow(&mut self, task_id: &str) {
        self.tasks.remove(task_id);
    }

    /// The push handle of followed task `task_id`.
    pub(crate) fn task_push(&self, task_id: &str) -> Option<&P> {
        self.tasks.get(task_id).map(|t| &t.push)
    }

    /// Who a message without a call id belongs to (id and context); see the module docs.
    pub(crate) fn attributed(&self) -> Option<(String, C)> {
        let head = self
            .fifo
            .iter()
            .find(|id| self.entries.get(*id).is_some_and(|e| !e.parked));
        match head {
            Some(head) => self
                .entries
                .get(head)
                .and_then(|e| e.ctx.clone())
                .map(|c| (head.clone(), c)),
            None if self.fifo.is_empty() && self.tasks.len() == 1 => self
                .tasks
                .values()
                .next()
                .map(|t| (t.call_id.clone(), t.ctx.clone())),
            None => None,
        }
    }

    /// Parks call `id` after an `input_required` answer: it keeps its place in the FIFO
    /// (the process may still be running it) but no longer gets messages attributed.
    pub(crate) fn park(&mut self, id: &str) -> Parked<'_, W, P> {
        if let Some(e) = self.entries.get_mut(id) {
            e.ctx = None;
            e.parked = true;
            return Parked::Call(e.waiter.take());
        }
        match self.tasks.values().find(|t| t.call_id == id) {
            Some(t) => Parked::Task(&t.push),
            None => Parked::Unknown,
        }
    }

    /// Requests whose caller still waits.
    pub(crate) fn waiting(&self) -> usize {
        self.entries.values().filter(|e| e.waiter.is_some()).count()
    }

    /// Whether any tool call is queued in the process (cancelled ones included).
    pub(crate) fn tool_call_queued(&self) -> bool {
        !self.fifo.is_empty()
    }

    /// Requests and followed tasks held (what `limit` bounds).
    pub(crate) fn len(&self) -> usize {
        self.entries.len() + self.tasks.len()
    }
}

#[cfg(test)]
mod tests;
