//! The handshake era: `initialize` (standard revisions and bb-1.0) and what may follow it.

use std::sync::Arc;

use mcpwire_model::{McpError, Request, Revision, to_raw};
use serde_json::json;

use super::*;

impl ServerSession {
    pub(super) fn on_initialize(&mut self, req: Request) {
        let params: InitializeParams = match parse(req.params.as_deref()) {
            Ok(p) => p,
            Err(e) => return self.error(req.id, McpError::InvalidParams(e)),
        };
        let rev = match Revision::negotiate(&params.protocol_version) {
            Ok(rev) => rev,
            Err(e) => {
                // Refused in the dialect the client asked for; the session stays
                // uninitialized so it may retry.
                // (`negotiate` refuses proto-mcp versions only.)
                let asked = Revision::ProtoMcp1;
                let e = McpError::from(e);
                let error = e.to_wire(asked);
                tracing::debug!(error = %e, "initialize refused");
                return self.send(
                    Outbound::Error {
                        id: Some(req.id.clone()),
                        error,
                    },
                    Some(req.id),
                );
            }
        };
        if rev == Revision::Bb1_0 && params.client_info.is_none() {
            // Refused: the session stays uninitialized, so the client may retry.
            return self.error(
                req.id,
                McpError::InvalidParams("clientInfo is required".into()),
            );
        }
        self.era = Era::Handshake(rev);
        self.client_capabilities = Arc::new(params.capabilities);
        self.client_info = params.client_info;
        let result = if rev.dialect() == Dialect::Proto {
            // The translator turns this into an InitializeResponse.
            json!({
                "protocolVersion": mcpwire_model::PROTO_MCP_VERSION,
                "capabilities": self.config.capabilities,
                "serverInfo": self.config.server_info,
            })
        } else if rev == Revision::Bb1_0 {
            let tools = self.config.capabilities.tools.as_ref();
            json!({
                "protocolVersion": rev.as_str(),
                "serverInfo": {
                    "name": self.config.server_info.name,
                    "version": self.config.server_info.version,
                },
                "capabilities": {
                    "tools": tools.is_some(),
                    "dynamicToolRegistration": tools.and_then(|t| t.list_changed).unwrap_or(false),
                },
            })
        } else {
            let mut r = json!({
                "protocolVersion": rev.as_str(),
                "capabilities": self.config.capabilities,
                "serverInfo": self.config.server_info,
            });
            if let Some(i) = &self.config.instructions {
                r["instructions"] = json!(i);
            }
            r
        };
        tracing::debug!(revision = %rev, client = ?self.client_info.as_ref().map(|c| &c.name), "initialized");
        self.respond(req.id, to_raw(&result));
    }

    pub(super) fn on_handshake_request(
        &mut self,
        now: Instant,
        rev: Revision,
        req: Request,
        meta: Option<RequestMeta>,
    ) {
        let bb = rev.dialect() == Dialect::Bb;
        let proto = rev.dialect() == Dialect::Proto;
        match req.method {
            Method::Initialize => self.error(req.id, McpError::AlreadyInitialized),
            Method::Ping if !bb && !proto => self.respond(req.id, raw_empty()),
            Method::LoggingSetLevel if !bb && !proto => {
                match parse::<SetLevelParams>(req.params.as_deref()) {
                    Ok(p) => {
                        self.log_level = Some(p.level);
                        self.respond(req.id, raw_empty());
                    }
                    Err(e) => self.error(req.id, McpError::InvalidParams(e)),
                }
            }
            Method::ServerDiscover => self.error(
                req.id,
                McpError::MethodNotFound(
                    "server/discover (this connection used initialize)".into(),
                ),
            ),
            Method::ToolsList | Method::ToolsCall => self.dispatch(now, rev, req, meta, None),
            Method::ResourcesList | Method::ResourcesRead if proto => {
                self.dispatch(now, rev, req, meta, None)
            }
            _ if bb || proto => {
                self.error(req.id, McpError::MethodNotFound(req.method.to_string()))
            }
            Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
                let uri = match parse::<UriParams>(req.params.as_deref()) {
                    Ok(p) => p.uri,
                    Err(e) => return self.error(req.id, McpError::InvalidParams(e)),
                };
                if req.method == Method::ResourcesSubscribe {
                    // Counted with the subscribes still being answered; recorded only once
                    // the backend accepts (`handle_reply`), so a refused one never stays.
                    let pending = self
                        .inflight
                        .values()
                        .filter(|f| f.subscribe_uri.is_some())
                        .count();
                    if self.subscriptions.len() + pending >= self.config.limits.max_subscriptions {
                        return self.error(
                            req.id,
                            McpError::LimitExceeded("too many resource subscriptions".into()),
                        );
                    }
                    self.dispatch(now, rev, req, meta, Some(uri));
                } else {
                    self.subscriptions.remove(&uri);
                    self.dispatch(now, rev, req, meta, None);
                }
            }
            _ => self.dispatch(now, rev, req, meta, None),
        }
    }
}
