//! Negotiation: the `server/discover` probe, the fallback to `initialize`, and what ends it.

use std::sync::Arc;
use std::time::Instant;

use mcpwire_model::{ErrorObject, McpError, Method, Outbound, Raw, Revision, to_raw};
use serde_json::json;

use super::results::{
    lists_handshake, lists_stateless, read_discover, read_initialize, refused_versions,
};
use super::{
    ClientEvent, ClientRequestId, ClientSession, ClientTransmit, EraChoice, MAX_NEGOTIATION_ROUNDS,
    Negotiated, Phase, TransmitKind,
};
use crate::timers::TimerKey;

impl ClientSession {
    pub(super) fn negotiating(&self) -> Option<Method> {
        match self.phase {
            Phase::Probing { .. } => Some(Method::ServerDiscover),
            Phase::Initializing { .. } => Some(Method::Initialize),
            _ => None,
        }
    }

    pub(super) fn negotiation_id(&self) -> ClientRequestId {
        match self.phase {
            Phase::Probing { id, .. } | Phase::Initializing { id } => ClientRequestId(id),
            _ => ClientRequestId(0),
        }
    }

    pub(super) fn send_probe(&mut self, now: Instant, attempt: u8) {
        self.rounds += 1;
        let id = self.mint();
        self.phase = Phase::Probing { id, attempt };
        if self.config.era == EraChoice::Auto {
            let limits = &self.config.limits;
            let wait = limits.discover_timeout.min(limits.handshake_timeout / 2);
            let at = now + wait;
            self.probe_deadline = Some(at);
            self.timers.insert(at, TimerKey::Probe(id));
        }
        let params = to_raw(&json!({ "_meta": self.envelope }));
        self.transmits.push_back(ClientTransmit {
            msg: Outbound::Request {
                id: ClientRequestId(id).wire_id(),
                method: Method::ServerDiscover.as_str().to_owned().into(),
                params: Some(params),
            },
            kind: TransmitKind::Request(ClientRequestId(id)),
            version: Some(Revision::STATELESS),
        });
    }

    pub(super) fn send_initialize(&mut self) {
        self.rounds += 1;
        let id = self.mint();
        self.phase = Phase::Initializing { id };
        let params = to_raw(&json!({
            "protocolVersion": Revision::LATEST_STATEFUL.as_str(),
            "capabilities": self.config.capabilities,
            "clientInfo": self.config.client_info,
        }));
        self.transmits.push_back(ClientTransmit {
            msg: Outbound::Request {
                id: ClientRequestId(id).wire_id(),
                method: Method::Initialize.as_str().to_owned().into(),
                params: Some(params),
            },
            kind: TransmitKind::Request(ClientRequestId(id)),
            version: None,
        });
    }

    pub(super) fn clear_probe_timer(&mut self) {
        if let (Phase::Probing { id, .. }, Some(at)) = (&self.phase, self.probe_deadline.take()) {
            self.timers.remove(at, TimerKey::Probe(*id));
        }
    }

    pub(super) fn on_probe_answer(
        &mut self,
        now: Instant,
        attempt: u8,
        outcome: Result<Raw, ErrorObject>,
    ) {
        self.clear_probe_timer();
        match outcome {
            Ok(raw) => match read_discover(&raw) {
                Some(n) => self.ready(n),
                None => self.after_probe(McpError::BadPeerMessage(
                    "the server/discover result offers no revision this client speaks".into(),
                )),
            },
            Err(obj) => {
                if let Some(supported) = refused_versions(&obj) {
                    if lists_stateless(&supported) && attempt == 0 {
                        return self.send_probe(now, 1);
                    }
                    if !lists_handshake(&supported) {
                        return self.fail_negotiation(
                            Method::ServerDiscover,
                            McpError::UnsupportedVersion {
                                requested: Revision::STATELESS.as_str().to_owned(),
                                supported,
                            },
                        );
                    }
                }
                self.after_probe(McpError::Wire(obj))
            }
        }
    }

    /// The probe failed with `error`: fall back to `initialize` (`Auto`), or fail.
    pub(super) fn after_probe(&mut self, error: McpError) {
        self.clear_probe_timer();
        if self.config.era == EraChoice::Auto && self.rounds < MAX_NEGOTIATION_ROUNDS {
            self.send_initialize();
        } else {
            self.fail_negotiation(Method::ServerDiscover, error);
        }
    }

    pub(super) fn on_initialize_answer(&mut self, now: Instant, outcome: Result<Raw, ErrorObject>) {
        match outcome {
            Ok(raw) => match read_initialize(&raw) {
                Ok(n) => {
                    self.transmits.push_back(ClientTransmit {
                        msg: Outbound::Notification {
                            method: Method::NotificationsInitialized.as_str().to_owned().into(),
                            params: None,
                        },
                        kind: TransmitKind::Notification,
                        version: Some(n.era.revision()),
                    });
                    self.ready(n);
                }
                Err(e) => self.fail_negotiation(Method::Initialize, e),
            },
            Err(obj) => {
                // A server locked to 2026-07-28 (it saw our probe late) refuses the fallback
                // with −32022: probe again, once.
                let stateless = refused_versions(&obj).is_some_and(|s| lists_stateless(&s));
                if stateless
                    && self.config.era == EraChoice::Auto
                    && self.rounds < MAX_NEGOTIATION_ROUNDS
                {
                    return self.send_probe(now, 1);
                }
                self.fail_negotiation(Method::Initialize, McpError::Wire(obj))
            }
        }
    }

    /// Starts already negotiated, from the `initialize` result `result` a session the server
    /// still holds was negotiated with (an HTTP session re-attached by another process):
    /// nothing is sent, and requests go out at once. Instead of [`ClientSession::start`];
    /// only before anything was sent.
    pub fn start_negotiated(
        &mut self,
        result: &serde_json::value::RawValue,
    ) -> Result<(), McpError> {
        if !matches!(self.phase, Phase::Idle) || self.closed {
            return Err(McpError::InvalidRequest(
                "the session has started already".into(),
            ));
        }
        let n = read_initialize(result)?;
        self.rounds = MAX_NEGOTIATION_ROUNDS;
        self.ready(n);
        Ok(())
    }

    pub(super) fn ready(&mut self, negotiated: Negotiated) {
        if let Some(at) = self.handshake_deadline.take() {
            self.timers.remove(at, TimerKey::Handshake);
        }
        let n = Arc::new(negotiated);
        tracing::debug!(era = ?n.era, server = %n.server_info.name, "negotiated");
        self.phase = Phase::Ready(n.clone());
        self.push(ClientEvent::Ready(n));
        while let Some(id) = self.queued.pop_front() {
            self.send_request(id);
        }
    }

    pub(super) fn fail_negotiation(&mut self, method: Method, error: McpError) {
        self.clear_probe_timer();
        if let Some(at) = self.handshake_deadline.take() {
            self.timers.remove(at, TimerKey::Handshake);
        }
        tracing::debug!(%method, %error, "negotiation failed");
        let id = self.negotiation_id();
        self.phase = Phase::Failed;
        self.push(ClientEvent::NegotiationFailed {
            id,
            method,
            error: error.clone(),
        });
        let ids: Vec<u64> = self.inflight.keys().copied().collect();
        for id in ids {
            self.end(id, Err(error.clone()));
        }
        self.queued.clear();
    }
}
