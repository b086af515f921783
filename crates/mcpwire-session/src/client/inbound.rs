//! What the server sends unasked: its requests (answered by the owner, or refused here) and
//! notifications (progress, logs, list changes, …), turned into events.

use std::time::Instant;

use mcpwire_model::types::{CancelledParams, ProgressParams, UriParams};
use mcpwire_model::{
    LogEntry, McpError, Method, Notification, Outbound, ProgressUpdate, Raw, Request, RequestId,
};
use serde_json::json;
use serde_json::value::RawValue;

use super::defaults;
use super::{
    ClientEra, ClientEvent, ClientRequestId, ClientSession, ClientTransmit, ListKind,
    PendingServerRequest, ServerRequest, ServerRequestId, TransmitKind,
};
use crate::timers::TimerKey;

impl ClientSession {
    pub(super) fn on_server_request(
        &mut self,
        now: Instant,
        req: Request,
        related: Option<ClientRequestId>,
    ) {
        let stateless = self
            .negotiated()
            .is_some_and(|n| n.era == ClientEra::Stateless);
        if stateless {
            // 2026-07-28 has no server→client requests (the Python client answers the same).
            let e = McpError::MethodNotFound(format!(
                "{} (2026-07-28 has no server-to-client requests)",
                req.method
            ));
            return self.reply(req.id, Err(e));
        }
        let caps = &self.config.capabilities;
        let needs = match req.method {
            Method::Ping => return self.reply(req.id, Ok(mcpwire_model::raw_empty_object())),
            Method::SamplingCreateMessage => ("sampling", caps.sampling.is_some()),
            Method::ElicitationCreate => ("elicitation", caps.elicitation.is_some()),
            Method::RootsList => ("roots", caps.roots.is_some()),
            _ => {
                let e = McpError::MethodNotFound(req.method.to_string());
                return self.reply(req.id, Err(e));
            }
        };
        if !needs.1 {
            let e = McpError::MissingCapability {
                capability: needs.0.to_owned(),
                required: json!({ needs.0: {} }),
            };
            return self.reply(req.id, Err(e));
        }
        if self.server_by_wire.contains_key(&req.id) {
            return self.reply(req.id, Err(McpError::DuplicateRequestId));
        }
        if self.server_requests.len() >= self.config.limits.max_server_requests {
            let e = McpError::LimitExceeded(format!(
                "more than {} requests to the client outstanding",
                self.config.limits.max_server_requests
            ));
            return self.reply(req.id, Err(e));
        }
        if self.notices >= self.config.limits.max_events {
            let e = McpError::LimitExceeded("the client's event queue is full".into());
            return self.reply(req.id, Err(e));
        }
        let n = self.next_server_request;
        self.next_server_request += 1;
        let deadline = now + self.config.limits.server_request_timeout;
        self.timers.insert(deadline, TimerKey::ServerRequest(n));
        self.server_by_wire.insert(req.id.clone(), n);
        let defaults = match req.method {
            Method::ElicitationCreate if defaults::promised(&self.config.capabilities) => {
                defaults::of_request(req.params.as_deref())
            }
            _ => None,
        };
        self.server_requests.insert(
            n,
            PendingServerRequest {
                wire_id: req.id,
                deadline,
                defaults,
            },
        );
        self.push(ClientEvent::ServerRequest(ServerRequest {
            id: ServerRequestId(n),
            method: req.method,
            params: req.params,
            related,
        }));
    }

    pub(super) fn reply(&mut self, id: RequestId, result: Result<Raw, McpError>) {
        let msg = match result {
            Ok(result) => Outbound::Response { id, result },
            Err(e) => Outbound::Error {
                id: Some(id),
                error: e.to_wire(self.revision()),
            },
        };
        self.transmits.push_back(ClientTransmit {
            msg,
            kind: TransmitKind::Answer,
            version: self.negotiated().map(|n| n.era.revision()),
        });
    }

    pub(super) fn on_notification(
        &mut self,
        now: Instant,
        n: Notification,
        related: Option<ClientRequestId>,
    ) {
        let params = n.params.as_deref();
        match n.method {
            Method::NotificationsProgress => {
                let Ok(p) = parse::<ProgressParams>(params) else {
                    return;
                };
                let RequestId::Int(k) = p.progress_token else {
                    return;
                };
                let Ok(k) = u64::try_from(k) else { return };
                let Some(pending) = self.inflight.get_mut(&k) else {
                    return;
                };
                if !pending.opts.progress {
                    return;
                }
                if pending.opts.reset_timeout_on_progress
                    && let Some(old) = pending.deadline
                    && let Some(t) = pending.opts.timeout.or(self.config.limits.request_timeout)
                {
                    let at = now + t;
                    pending.deadline = Some(at);
                    self.timers.remove(old, TimerKey::Request(k));
                    self.timers.insert(at, TimerKey::Request(k));
                }
                self.push(ClientEvent::Progress {
                    request: ClientRequestId(k),
                    update: ProgressUpdate {
                        progress: p.progress,
                        total: p.total,
                        message: p.message,
                    },
                });
            }
            Method::NotificationsMessage => {
                let Ok(entry) = parse::<LogEntry>(params) else {
                    return;
                };
                self.push(ClientEvent::Log { entry, related });
            }
            Method::NotificationsToolsListChanged => {
                self.push(ClientEvent::ListChanged(ListKind::Tools))
            }
            Method::NotificationsPromptsListChanged => {
                self.push(ClientEvent::ListChanged(ListKind::Prompts))
            }
            Method::NotificationsResourcesListChanged => {
                self.push(ClientEvent::ListChanged(ListKind::Resources))
            }
            Method::NotificationsResourcesUpdated => {
                if let Ok(p) = parse::<UriParams>(params) {
                    self.push(ClientEvent::ResourceUpdated { uri: p.uri });
                }
            }
            Method::NotificationsCancelled => {
                let Ok(CancelledParams {
                    request_id: Some(rid),
                    ..
                }) = parse::<CancelledParams>(params)
                else {
                    return;
                };
                if let Some(k) = self.server_by_wire.remove(&rid) {
                    if let Some(p) = self.server_requests.remove(&k) {
                        self.timers.remove(p.deadline, TimerKey::ServerRequest(k));
                    }
                    self.push(ClientEvent::ServerRequestCancelled(ServerRequestId(k)));
                } else if let RequestId::Int(k) = rid
                    && let Ok(k) = u64::try_from(k)
                    && self.inflight.get(&k).is_some_and(|p| p.sent)
                {
                    // The server ended a request of ours (a `subscriptions/listen`, say).
                    self.end(k, Err(McpError::Cancelled));
                }
            }
            method => {
                let params = n.params;
                self.push(ClientEvent::Notification {
                    method,
                    params,
                    related,
                })
            }
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(params: Option<&RawValue>) -> Result<T, String> {
    serde_json::from_str(params.map_or("{}", RawValue::get)).map_err(|e| e.to_string())
}
