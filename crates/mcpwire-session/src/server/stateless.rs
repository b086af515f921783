//! The 2026-07-28 era: per-request `_meta` envelopes, `server/discover` and
//! `subscriptions/listen`.

use std::sync::Arc;

use mcpwire_model::{McpError, Request, Revision, to_raw};
use serde_json::json;

use super::*;

impl ServerSession {
    pub(super) fn on_modern_request(&mut self, now: Instant, req: Request, mut meta: RequestMeta) {
        let version = match &meta.protocol_version {
            Some(serde_json::Value::String(v)) => v.as_str(),
            Some(_) => {
                return self.error(
                    req.id,
                    McpError::InvalidParams("_meta protocolVersion must be a string".into()),
                );
            }
            None => {
                return self.error(
                    req.id,
                    McpError::InvalidParams(
                        "2026-07-28 requests need _meta[\"io.modelcontextprotocol/protocolVersion\"]"
                            .into(),
                    ),
                );
            }
        };
        if Revision::parse(version) != Some(Revision::STATELESS) {
            let e = McpError::UnsupportedVersion {
                requested: version.to_owned(),
                supported: vec![Revision::STATELESS.as_str().to_owned()],
            };
            return self.error(req.id, e);
        }
        if meta.client_capabilities.is_none() {
            return self.error(
                req.id,
                McpError::InvalidParams(
                    "2026-07-28 requests need _meta[\"io.modelcontextprotocol/clientCapabilities\"]"
                        .into(),
                ),
            );
        }
        match req.method {
            Method::ServerDiscover => {
                let mut caps = serde_json::to_value(&self.config.capabilities).unwrap_or_default();
                if let Some(obj) = caps.as_object_mut() {
                    obj.remove("tasks");
                }
                let mut r = json!({
                    "supportedVersions": [Revision::STATELESS.as_str()],
                    "capabilities": caps,
                });
                if let Some(i) = &self.config.instructions {
                    r["instructions"] = json!(i);
                }
                let raw = decorate_modern(to_raw(&r), &req.method, &self.decorations);
                self.respond(req.id, raw);
            }
            Method::Other(ref m) if &**m == "subscriptions/listen" => self.on_listen(req),
            // As the Python SDK's server answers `initialize` on a connection locked to
            // 2026-07-28: the version it asks for is not spoken here.
            Method::Initialize => {
                let requested = parse::<InitializeParams>(req.params.as_deref())
                    .map(|p| p.protocol_version)
                    .unwrap_or_default();
                let e = McpError::UnsupportedVersion {
                    requested,
                    supported: vec![Revision::STATELESS.as_str().to_owned()],
                };
                self.error(req.id, e)
            }
            Method::Ping
            | Method::LoggingSetLevel
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe => {
                let m = req.method.to_string();
                self.error(
                    req.id,
                    McpError::MethodNotFound(format!("{m} (not in 2026-07-28)")),
                )
            }
            _ => {
                let caps = match meta.client_capabilities.take() {
                    Some(caps) if caps != ClientCapabilities::default() => Arc::new(caps),
                    _ => no_capabilities(),
                };
                self.dispatch_with(now, Revision::STATELESS, req, &meta, caps, None)
            }
        }
    }

    fn on_listen(&mut self, req: Request) {
        #[derive(serde::Deserialize, Default)]
        #[serde(rename_all = "camelCase")]
        struct Filter {
            #[serde(default)]
            tools_list_changed: bool,
            #[serde(default)]
            prompts_list_changed: bool,
            #[serde(default)]
            resources_list_changed: bool,
            #[serde(default)]
            resource_subscriptions: Vec<String>,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(default)]
            notifications: Filter,
        }
        let p: Params = match parse(req.params.as_deref()) {
            Ok(p) => p,
            Err(e) => return self.error(req.id, McpError::InvalidParams(e)),
        };
        if self.listens.len() >= self.config.limits.max_subscriptions {
            return self.error(
                req.id,
                McpError::LimitExceeded("too many subscriptions/listen streams".into()),
            );
        }
        let caps = &self.config.capabilities;
        let lc = |c: Option<bool>| c.unwrap_or(false);
        let tools = p.notifications.tools_list_changed
            && lc(caps.tools.as_ref().and_then(|t| t.list_changed));
        let prompts = p.notifications.prompts_list_changed
            && lc(caps.prompts.as_ref().and_then(|t| t.list_changed));
        let res_caps = caps.resources.as_ref();
        let resources =
            p.notifications.resources_list_changed && lc(res_caps.and_then(|r| r.list_changed));
        let uris: Vec<String> = if lc(res_caps.and_then(|r| r.subscribe)) {
            p.notifications.resource_subscriptions
        } else {
            Vec::new()
        };
        if uris.len() > self.config.limits.max_subscriptions {
            return self.error(
                req.id,
                McpError::LimitExceeded(format!(
                    "more than {} resourceSubscriptions in one subscriptions/listen",
                    self.config.limits.max_subscriptions
                )),
            );
        }
        let mut honored = serde_json::Map::new();
        for (k, v) in [
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ] {
            if v {
                honored.insert(k.into(), json!(true));
            }
        }
        if !uris.is_empty() {
            honored.insert("resourceSubscriptions".into(), json!(uris));
        }
        let meta = json!({ mcpwire_model::types::META_SUBSCRIPTION_ID: req.id });
        self.notify(
            "notifications/subscriptions/acknowledged",
            Some(to_raw(&json!({ "notifications": honored, "_meta": meta }))),
            Some(req.id.clone()),
        );
        let uris: std::collections::HashSet<String> = uris.into_iter().collect();
        if !uris.is_empty() {
            self.events.push_back(SessionEvent::Listening {
                uris: uris.iter().cloned().collect(),
                on: true,
            });
        }
        self.listens.push(Listen {
            request_id: req.id,
            tools,
            prompts,
            resources,
            uris,
        });
    }

    pub(super) fn listen_event(&mut self, event: &BackendEvent) {
        let mut out = Vec::new();
        for l in &self.listens {
            let (method, params) = match event {
                BackendEvent::ToolsListChanged if l.tools => {
                    ("notifications/tools/list_changed", json!({}))
                }
                BackendEvent::PromptsListChanged if l.prompts => {
                    ("notifications/prompts/list_changed", json!({}))
                }
                BackendEvent::ResourcesListChanged if l.resources => {
                    ("notifications/resources/list_changed", json!({}))
                }
                BackendEvent::ResourceUpdated { uri } if l.uris.contains(uri) => {
                    ("notifications/resources/updated", json!({ "uri": uri }))
                }
                _ => continue,
            };
            let mut params = params;
            params["_meta"] = json!({ mcpwire_model::types::META_SUBSCRIPTION_ID: l.request_id });
            out.push((method, to_raw(&params), l.request_id.clone()));
        }
        for (method, params, related) in out {
            self.notify(method, Some(params), Some(related));
        }
    }
}
