//! [`CallSlot`]: where what comes back for one call relayed by a listener's request
//! handler itself arrives (the seam: `docs/design/gateway.md` § The seam), rather than in
//! its session's [`RelayInbox`]. The handler takes a plain answer from it and writes it;
//! anything else (a log, a server→client request, an outcome to shape, a call the upstream
//! did not run) is the session's to handle: the handler hands the call over and the slot
//! [forwards](CallSlot::forward) what it holds, and all that comes later, to the
//! session's inbox under the call's dispatch id.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use mcpwire_model::{ClientAsk, LogEntry, McpError, Reply};
use mcpwire_session::DispatchId;
use mcpwire_wire::json_frame::{IdText, PlainResult};
use tokio::sync::Notify;

use crate::{AnswerAsk, Arrived, MAX_QUEUED_LOGS, RelayInbox};

/// What came back for a call held in a [`CallSlot`].
pub enum SlotItem {
    /// The answer: the upstream's line with the client's id restored.
    Answer(Bytes),
    /// An outcome the session must shape as the general path does.
    Outcome(Result<Reply, McpError>),
    /// A log the upstream sent during the call.
    Log(LogEntry),
    /// A server→client request of the upstream, on behalf of the call.
    Ask(ClientAsk, AnswerAsk),
    /// The upstream did not run the call, sent as this frame.
    NotRun(Bytes),
}

/// What [`CallSlot::take_answer`] found.
pub enum Taken {
    /// Nothing yet.
    Nothing,
    /// The call's answer, first of all that came.
    Answer(Bytes),
    /// Something other than a plain answer came first: the session must take the call.
    Other,
    /// The slot was ended ([`CallSlot::end`]): the call was cancelled, or its session
    /// ended.
    Ended,
}

enum SlotState {
    /// Kept for the handler.
    Held {
        items: VecDeque<SlotItem>,
        logs: usize,
        ended: bool,
    },
    /// Handed to the session: everything goes to its inbox as this call's.
    Forwarded(DispatchId),
}

/// One call's slot (see the module docs).
pub struct CallSlot {
    state: Mutex<SlotState>,
    wake: Notify,
    /// The inbox of the call's session, where a handed-over call's items go.
    session: Arc<RelayInbox>,
}

impl CallSlot {
    /// An empty slot for a call of the session reading `session`.
    pub fn new(session: Arc<RelayInbox>) -> CallSlot {
        CallSlot {
            state: Mutex::new(SlotState::Held {
                items: VecDeque::new(),
                logs: 0,
                ended: false,
            }),
            wake: Notify::new(),
            session,
        }
    }

    /// The inbox of the call's session (a relay compares it to tell sessions apart).
    pub(crate) fn session(&self) -> &Arc<RelayInbox> {
        &self.session
    }

    /// Completes when something arrived (or had already) or the slot was ended.
    pub async fn arrived(&self) {
        self.wake.notified().await
    }

    /// Takes the call's answer when it is what came first; leaves everything else.
    pub fn take_answer(&self) -> Taken {
        let Ok(mut s) = self.state.lock() else {
            return Taken::Ended;
        };
        let SlotState::Held { items, ended, .. } = &mut *s else {
            return Taken::Other;
        };
        match items.front() {
            Some(SlotItem::Answer(_)) => match items.pop_front() {
                Some(SlotItem::Answer(line)) => Taken::Answer(line),
                _ => Taken::Nothing,
            },
            Some(_) => Taken::Other,
            None if *ended => Taken::Ended,
            None => Taken::Nothing,
        }
    }

    /// Whether what came first is the call's outcome (an error the session shapes: the
    /// call timed out, its request failed, the connection ended): the call is over
    /// upstream, and a request still running for it may be dropped.
    pub fn settled(&self) -> bool {
        self.state.lock().is_ok_and(|s| match &*s {
            SlotState::Held { items, .. } => matches!(items.front(), Some(SlotItem::Outcome(_))),
            SlotState::Forwarded(_) => false,
        })
    }

    /// Ends the slot (the call was cancelled, or its session ended): the handler stops
    /// waiting. Nothing is forwarded after this.
    pub fn end(&self) {
        if let Ok(mut s) = self.state.lock()
            && let SlotState::Held { ended, .. } = &mut *s
        {
            *ended = true;
        }
        self.wake.notify_one();
    }

    /// Hands the call to its session as `dispatch`: what the slot holds goes to the
    /// session's inbox now, in order, and everything arriving later goes there too.
    pub fn forward(&self, dispatch: DispatchId) {
        let Ok(mut s) = self.state.lock() else { return };
        let held = std::mem::replace(&mut *s, SlotState::Forwarded(dispatch));
        // Pushed under the slot's lock, so nothing arriving meanwhile overtakes them.
        if let SlotState::Held { items, .. } = held {
            for item in items {
                self.to_session(dispatch, item);
            }
        }
    }

    fn to_session(&self, dispatch: DispatchId, item: SlotItem) {
        let inbox = &self.session;
        match item {
            SlotItem::Answer(line) => inbox.push_answer_line(dispatch, &line),
            SlotItem::Outcome(o) => inbox.push(Arrived::Outcome(dispatch, o)),
            SlotItem::Log(entry) => inbox.push_log(Some(dispatch), entry),
            SlotItem::Ask(ask, answer) => inbox.push(Arrived::Ask(dispatch, ask, answer)),
            SlotItem::NotRun(frame) => inbox.push(Arrived::NotRun(dispatch, frame)),
        }
    }

    /// Delivers `item`: kept for the handler, or forwarded once the session has the call.
    pub(crate) fn deliver(&self, item: SlotItem) {
        let Ok(mut s) = self.state.lock() else { return };
        match &mut *s {
            SlotState::Forwarded(dispatch) => {
                let dispatch = *dispatch;
                self.to_session(dispatch, item);
            }
            SlotState::Held { items, logs, .. } => {
                if matches!(item, SlotItem::Log(_)) {
                    if *logs >= MAX_QUEUED_LOGS {
                        tracing::debug!("a relayed call's handler is not taking logs; one dropped");
                        return;
                    }
                    *logs += 1;
                }
                items.push_back(item);
                drop(s);
                self.wake.notify_one();
            }
        }
    }

    /// Delivers a plain answer: `result`'s line with the client's `id` written in.
    pub(crate) fn deliver_answer(&self, result: &PlainResult<'_>, id: &IdText) {
        let mut line = BytesMut::new();
        result.write_line_with_id(id, &mut line);
        self.deliver(SlotItem::Answer(line.freeze()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::log;

    #[test]
    fn an_answer_first_is_taken_anything_else_is_left_for_the_session() {
        let slot = CallSlot::new(Arc::default());
        assert!(matches!(slot.take_answer(), Taken::Nothing));
        slot.deliver(SlotItem::Answer(Bytes::from_static(b"{}\n")));
        assert!(matches!(slot.take_answer(), Taken::Answer(_)));

        let slot = CallSlot::new(Arc::default());
        slot.deliver(SlotItem::Log(log()));
        slot.deliver(SlotItem::Answer(Bytes::from_static(b"{}\n")));
        assert!(matches!(slot.take_answer(), Taken::Other));
        assert!(matches!(slot.take_answer(), Taken::Other), "left in place");
    }

    #[test]
    fn logs_held_for_a_handler_that_does_not_take_them_stay_bounded() {
        let slot = CallSlot::new(Arc::default());
        for _ in 0..MAX_QUEUED_LOGS * 3 {
            slot.deliver(SlotItem::Log(log()));
        }
        let SlotState::Held { items, .. } = &*slot.state.lock().unwrap() else {
            panic!("held");
        };
        assert_eq!(items.len(), MAX_QUEUED_LOGS);
    }
}
