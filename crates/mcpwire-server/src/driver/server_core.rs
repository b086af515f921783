//! [`ServerCore`]: one client's [`ServerSession`] and the [`Calls`] it started — everything a
//! server-side connection loop does that is not I/O.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mcpwire_model::types::{CallToolParams, RequestMeta};
use mcpwire_model::{Dialect, Malformed, McpError, Message, Request, RequestId};
use mcpwire_session::{Era, ServerSession, Transmit};
use mcpwire_wire::json_frame;

use super::calls::{Calls, PEER_QUEUE, Wake, sleep_until};
use super::now;

/// What [`ServerCore::take_relayed_routed`] hands on, in order.
pub(crate) enum RelayedOutput<'a> {
    /// A message of the session.
    Sent(Transmit),
    /// A relayed call's answer: the client's id of its request, and its line.
    Answer(&'a RequestId, &'a [u8]),
}

/// How long accepted calls may keep running after the client closed its input.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_secs(10);

/// A session and its calls.
pub(crate) struct ServerCore {
    /// The protocol state (wires read it: era, in-flight count, request ids).
    pub(crate) session: ServerSession,
    calls: Calls,
    /// Set when the peer's input ended: accepted calls may run until then.
    drain_by: Option<Instant>,
    /// Counts this session among its listener's while it lives.
    _counted: Option<crate::serve::Counted>,
    /// Counts its connection among its listener's, where the session is one (stdio,
    /// MCPB, WebSocket).
    _connection: Option<crate::serve::Counted>,
}

impl ServerCore {
    /// `session` running its dispatches with `calls`.
    pub(crate) fn new(session: ServerSession, calls: Calls) -> ServerCore {
        ServerCore {
            session,
            calls,
            drain_by: None,
            _counted: None,
            _connection: None,
        }
    }

    /// This session counted among the open sessions of `load`'s listener until it ends,
    /// its calls carrying that listener's name (set once, in the session's scope).
    pub(crate) fn counted(mut self, load: Option<&Arc<crate::serve::ListenerLoad>>) -> ServerCore {
        if let Some(load) = load {
            self.calls.set_listener(load.listener().clone());
            self._counted = Some(load.open());
        }
        self
    }

    /// [`ServerCore::counted`] for a session that is its own connection (stdio, MCPB,
    /// WebSocket): counted among `load`'s listener's sessions and connections.
    pub(crate) fn counted_connection(
        mut self,
        load: Option<&Arc<crate::serve::ListenerLoad>>,
    ) -> ServerCore {
        self._connection = load.map(crate::serve::ListenerLoad::connected);
        self.counted(load)
    }

    /// This stateless request counted among `load`'s listener's, its call carrying that
    /// listener's name.
    pub(crate) fn count_request(&mut self, load: Option<&Arc<crate::serve::ListenerLoad>>) {
        if let Some(load) = load {
            load.stateless_request();
            self.calls.set_listener(load.listener().clone());
        }
    }

    /// From now on, calls are made by `identity` (see [`Calls::set_identity`]).
    pub(crate) fn set_identity(&mut self, identity: Option<mcpwire_router::Identity>) {
        self.calls.set_identity(identity);
    }

    /// The next request `id` runs in a span that is a child of `parent` (see
    /// [`Calls::set_request_parent`]).
    pub(crate) fn set_request_parent(
        &mut self,
        id: mcpwire_model::RequestId,
        parent: crate::observe::TraceParent,
    ) {
        self.calls.set_request_parent(id, parent);
    }

    /// Hands one decoded message (or a codec's refusal) to the session.
    pub(crate) fn inbound(&mut self, msg: Result<Message, Malformed>) {
        self.session.handle_inbound(now(), msg);
    }

    /// Hands a request whose `_meta` the driver read already to the session
    /// (`ServerSession::handle_request`); `tool_call`: its `tools/call` params, when the
    /// driver read those too (the router takes them when its call starts).
    pub(crate) fn inbound_request(
        &mut self,
        req: Request,
        meta: Result<Option<RequestMeta>, String>,
        tool_call: Option<Box<CallToolParams>>,
    ) {
        if tool_call.is_some() {
            self.calls.set_read_call(req.id.clone(), tool_call);
        }
        self.session.handle_request(now(), req, meta);
    }

    /// The peer's input ended: the session fails what waits on the client (asks); accepted
    /// calls may finish within [`DRAIN_GRACE`].
    pub(crate) fn input_closed(&mut self) {
        if self.drain_by.is_none() {
            self.session.handle_peer_closed();
            self.drain_by = Some(now() + DRAIN_GRACE);
        }
    }

    /// Lets go of what a finished stateless request's core holds, keeping the room of its
    /// tables for the next one ([`ServerCore::renew`]; see [`Calls::release`]); `false`
    /// while anything of it is still running or counted (then drop it).
    pub(crate) fn release(&mut self, idle: &mcpwire_router::Router) -> bool {
        self.idle()
            && self.drain_by.is_none()
            && self._counted.is_none()
            && self._connection.is_none()
            && self.calls.release(idle)
    }

    /// A released core ([`ServerCore::release`]) made what `ServerCore::new(session,
    /// Calls::stateless(router, streams_events, wire))` would be, with the room the last
    /// request left.
    pub(crate) fn renew(
        &mut self,
        session: ServerSession,
        router: mcpwire_router::Router,
        streams_events: bool,
        wire: crate::observe::WireLabel,
    ) {
        let mut old = std::mem::replace(&mut self.session, session);
        self.session.take_room(&mut old);
        self.calls.renew(router, streams_events, wire);
        self.drain_by = None;
    }

    /// The calls, to set up a stateless request's ([`Calls`]' setters).
    pub(crate) fn calls_mut(&mut self) -> &mut Calls {
        &mut self.calls
    }

    /// No call is running and the session has nothing in flight.
    pub(crate) fn idle(&self) -> bool {
        self.calls.is_empty() && self.session.in_flight() == 0
    }

    /// The peer's input ended and every accepted call was answered — or the grace period
    /// is over (the calls left are abandoned).
    pub(crate) fn finished(&self) -> bool {
        let Some(by) = self.drain_by else {
            return false;
        };
        if self.calls.is_empty() {
            return true;
        }
        let over = now() >= by;
        if over {
            tracing::warn!(
                in_flight = self.calls.len(),
                "input closed; abandoning calls after the grace period"
            );
        }
        over
    }

    /// Takes the work that is ready without waiting — finished calls, then the call events
    /// queued now — and moves session output through `encode` into `out`, stopping early
    /// (the rest stays queued) once `full(out)`. Whether any work was taken. Bounded: a call
    /// that keeps emitting events without finishing cannot hold the loop here.
    pub(crate) fn poll_ready<O>(
        &mut self,
        out: &mut O,
        full: impl Fn(&O) -> bool,
        mut encode: impl FnMut(&mut O, Transmit),
    ) -> bool {
        let mut progressed = false;
        let mut peer_budget = PEER_QUEUE;
        loop {
            self.calls.drain(&mut self.session, |t| encode(out, t));
            if full(out) {
                return progressed;
            }
            if self.calls.take_done(&mut self.session) {
                progressed = true;
                continue;
            }
            if peer_budget == 0 || !self.calls.take_peer(&mut self.session) {
                return progressed;
            }
            peer_budget -= 1;
            progressed = true;
        }
    }

    /// Waits for the next finished call, call event, backend event or timer (the session's,
    /// or the end of the grace period). `paused`: the output is full, so wait only for timers
    /// (whose output is small) until it drains; calls are not polled meanwhile.
    pub(crate) async fn wait(&mut self, paused: bool) -> Wake {
        let timer = match (self.session.poll_timeout(), self.drain_by) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if paused {
            sleep_until(timer).await;
            return Wake::Timer;
        }
        self.calls.wait(timer).await
    }

    /// Hands what [`ServerCore::wait`] woke up for to the session.
    pub(crate) fn apply(&mut self, wake: Wake) {
        self.calls.apply(&mut self.session, wake);
    }

    /// Relays the `tools/call` frame `line` to its upstream as it came, when it may be
    /// (`mcpwire_relay`: a handshake-era MCP session, a frame the general path would read
    /// the same — `json_frame::plain_call`, nesting within `max_depth` — and a route for its
    /// tool); whether it went. When not, decode it as usual.
    pub(crate) fn try_relay(&mut self, line: &[u8], max_depth: usize) -> bool {
        if !self.may_relay() {
            return false;
        }
        let Some(call) = json_frame::plain_call(line, max_depth) else {
            return false;
        };
        self.calls.relay(&mut self.session, &call)
    }

    /// Whether the session's calls may be relayed at all: a handshake-era MCP session (not
    /// bb-1.0, not 2026-07-28, not before its handshake, not provisional).
    pub(crate) fn may_relay(&self) -> bool {
        self.relay_revision().is_some()
    }

    /// The revision the session's relayed calls are answered in, when its calls may be
    /// relayed at all ([`ServerCore::may_relay`]).
    pub(crate) fn relay_revision(&self) -> Option<mcpwire_model::Revision> {
        match self.session.era() {
            Era::Handshake(r) if r.dialect() == Dialect::Mcp && !self.session.is_provisional() => {
                Some(r)
            }
            _ => None,
        }
    }

    /// The inbox of the session's relayed calls (see [`Calls::relay_inbox`]).
    pub(crate) fn relay_inbox(&mut self) -> Arc<mcpwire_relay::RelayInbox> {
        self.calls.relay_inbox()
    }

    /// The downstream session's scope (see [`Calls::scope`]).
    pub(crate) fn scope(&self) -> Option<&mcpwire_router::SessionScope> {
        self.calls.scope()
    }

    /// Takes a call a request handler relayed itself (see [`Calls::adopt_relayed`]).
    pub(crate) fn adopt_relayed(
        &mut self,
        request: (RequestId, Instant),
        call: super::relayed::RelayedCall,
        slot: &mcpwire_relay::CallSlot,
    ) -> bool {
        self.calls
            .adopt_relayed(&mut self.session, request, call, slot)
    }

    /// Answers a call a request handler found refused (see [`Calls::refuse_relayed`]).
    pub(crate) fn refuse_relayed(&mut self, request_id: RequestId, error: McpError) -> bool {
        self.calls
            .refuse_relayed(&mut self.session, request_id, error)
    }

    /// Takes what came back for relayed calls: answers' bytes written to `out` as they
    /// are, the rest through the session (its output moved with `encode`). Whether
    /// anything came.
    pub(crate) fn take_relayed(
        &mut self,
        out: &mut BytesMut,
        encode: impl FnMut(&mut BytesMut, Transmit),
    ) -> bool {
        self.take_relayed_framed(out, encode, |out, line| out.extend_from_slice(line))
    }

    /// [`ServerCore::take_relayed`] for a wire that frames each answer itself: `frame`
    /// writes one answer's line (its newline included) to `out`.
    pub(crate) fn take_relayed_framed(
        &mut self,
        out: &mut BytesMut,
        mut encode: impl FnMut(&mut BytesMut, Transmit),
        mut frame: impl FnMut(&mut BytesMut, &[u8]),
    ) -> bool {
        self.calls
            .take_relayed(&mut self.session, out, |session, out, answer| {
                while let Some(t) = session.poll_transmit() {
                    encode(out, t);
                }
                if let Some((_, bytes)) = answer {
                    frame(out, bytes);
                }
            })
    }

    /// [`ServerCore::take_relayed`] for a wire that routes each answer by the request it
    /// answers (HTTP: the request's own response): the session's output and each answer's
    /// line (its newline included, with the client's id of its request) go through `each`,
    /// in order.
    pub(crate) fn take_relayed_routed(&mut self, mut each: impl FnMut(RelayedOutput<'_>)) -> bool {
        let mut unused = BytesMut::new();
        self.calls
            .take_relayed(&mut self.session, &mut unused, |session, _, relayed| {
                while let Some(t) = session.poll_transmit() {
                    each(RelayedOutput::Sent(t));
                }
                if let Some((request, line)) = relayed {
                    each(RelayedOutput::Answer(request, line));
                }
            })
    }

    /// Relays the `tools/call` `call`, read as plain by a wire that checked
    /// [`ServerCore::may_relay`], when the router offers a route; whether it was taken.
    pub(crate) fn relay_plain(&mut self, call: &json_frame::PlainCall<'_>) -> bool {
        self.calls.relay(&mut self.session, call)
    }

    /// Requests whose calls asked to close their stream's connection (HTTP SSE polling).
    pub(crate) fn take_detached(&mut self) -> Vec<RequestId> {
        self.calls.take_detached()
    }
}
