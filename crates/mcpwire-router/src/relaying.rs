//! What a wire asks before relaying a `tools/call` as a raw frame (the gateway's relay,
//! `docs/design/gateway.md` § The relay), and what the backends answer: the call's route,
//! a refusal a layer decided (a rate limit), or the general path.

use std::net::IpAddr;
use std::sync::Arc;

use mcpwire_model::McpError;
use mcpwire_relay::Relay;

use crate::{Identity, SessionScope};

/// Where a wire may send a tool's calls as raw frames, bypassing the router: the upstream
/// connection's [`Relay`], and the federation member serving the tool (its `request` span
/// names it).
#[derive(Clone)]
pub struct RelayRoute {
    relay: Arc<Relay>,
    member: Option<Arc<str>>,
}

impl RelayRoute {
    /// A route to `relay` (the upstream connection's).
    pub fn new(relay: Arc<Relay>) -> RelayRoute {
        RelayRoute {
            relay,
            member: None,
        }
    }

    /// The route, going through federation member `member`.
    pub fn through(mut self, member: &Arc<str>) -> RelayRoute {
        self.member = Some(member.clone());
        self
    }

    /// The federation member serving the call, when there is one.
    pub fn member(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The relay, and the member serving the call.
    pub fn into_parts(self) -> (Arc<Relay>, Option<Arc<str>>) {
        (self.relay, self.member)
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
