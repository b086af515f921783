//! What a wire asks before relaying a `tools/call` as a raw frame (the gateway's relay,
//! `docs/design/gateway.md` § The relay), and what the backends answer: the call's route,
//! a refusal a layer decided (a rate limit), or the general path.

use std::net::IpAddr;
use std::sync::Arc;

use mcpwire_model::McpError;
use mcpwire_relay::{NotRelayed, Relay};
use mcpwire_wire::json_frame::PlainCall;

use crate::{Identity, SessionScope};

/// Where a wire may send a tool's calls as raw frames, bypassing the router: the upstream
/// connection's [`Relay`], the federation member serving the tool (its `request` span
/// names it), and the tool's name upstream when the gateway exposes it under another.
#[derive(Clone)]
pub struct RelayRoute {
    relay: Arc<Relay>,
    member: Option<Arc<str>>,
    sent_as: Option<Arc<str>>,
}

/// A [`RelayRoute`] taken apart by the wire relaying a call.
pub struct RouteParts {
    /// The upstream connection's relay.
    pub relay: Arc<Relay>,
    /// The federation member serving the call, when there is one.
    pub member: Option<Arc<str>>,
    /// The tool's name upstream, written into the frame in place of the exposed one
    /// (`PlainCall::sent_as`), when they differ.
    pub sent_as: Option<Arc<str>>,
}

impl RouteParts {
    /// `call` as it goes upstream on this route: `None` when it goes as it came, the call
    /// with the tool's name upstream in its frame when the route renames it; `Err` when
    /// that name cannot be written as it is (the call then goes the general way).
    pub fn renamed<'b>(
        &'b self,
        call: &PlainCall<'b>,
    ) -> Result<Option<PlainCall<'b>>, NotRelayed> {
        match &self.sent_as {
            None => Ok(None),
            Some(name) => call.sent_as(name).map(Some).ok_or(NotRelayed),
        }
    }
}

impl RelayRoute {
    /// A route to `relay` (the upstream connection's).
    pub fn new(relay: Arc<Relay>) -> RelayRoute {
        RelayRoute {
            relay,
            member: None,
            sent_as: None,
        }
    }

    /// The route, going through federation member `member`.
    pub fn through(mut self, member: &Arc<str>) -> RelayRoute {
        self.member = Some(member.clone());
        self
    }

    /// The route, calling the tool `name` upstream (a federation member's own name for a
    /// tool it exposes renamed or prefixed). The name must be written in JSON as it is
    /// (`json_frame::writes_as_is`); a wire relaying a call whose frame cannot take it
    /// sends the call the general way.
    pub fn sent_as(mut self, name: &Arc<str>) -> RelayRoute {
        self.sent_as = Some(name.clone());
        self
    }

    /// The federation member serving the call, when there is one.
    pub fn member(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The relay, the member serving the call and the tool's name upstream.
    pub fn into_parts(self) -> RouteParts {
        RouteParts {
            relay: self.relay,
            member: self.member,
            sent_as: self.sent_as,
        }
    }
}

/// Who a call that could be relayed comes from: what the layers that act on calls read
/// (policy and views the identity, rate limits the identity and the address), as they
/// read a [`CallCtx`](crate::CallCtx) on the general path.
#[derive(Clone, Copy)]
pub struct RelayCaller<'a> {
    /// The downstream session the call came in on.
    pub scope: &'a SessionScope,
    /// Who the session authenticated as (`None`: anonymous, or a wire without
    /// authentication such as stdio).
    pub identity: Option<&'a Identity>,
    /// The client's address (`None` on stdio).
    pub client_ip: Option<IpAddr>,
}

/// What the backends decide for a call that could be relayed.
pub enum RelayDecision {
    /// Not relayed: the general path runs the call (and decides everything again).
    General,
    /// Relayed on this route: every layer let it through.
    Relay(RelayRoute),
    /// Answered with this error without reaching a backend, as the general path would
    /// answer it (a layer refused it: a rate limit).
    Refuse(McpError),
}

impl From<Option<RelayRoute>> for RelayDecision {
    fn from(route: Option<RelayRoute>) -> RelayDecision {
        match route {
            Some(route) => RelayDecision::Relay(route),
            None => RelayDecision::General,
        }
    }
}

impl std::fmt::Debug for RelayDecision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RelayDecision::General => f.write_str("General"),
            RelayDecision::Relay(_) => f.write_str("Relay(..)"),
            RelayDecision::Refuse(e) => f.debug_tuple("Refuse").field(e).finish(),
        }
    }
}
