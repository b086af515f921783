//! What the console on the admin listener asks the gateway ([`ConsoleSource`]): admin
//! logins against `[admin] console_keys`, the catalog as a caller lists it, and tool calls
//! as that caller, all through the federation's own dispatch (its policy included).

use std::sync::{Arc, Weak};

use futures::future::BoxFuture;
use mcpwire_federation::{CatalogReport, ExposedItem, Federation};
use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{CallEvent, ClientAsk, McpError, Raw, Reply, RequestId, Revision};
use mcpwire_router::{Backend, BackendRequest, CallCtx, Identity, Peer};
use mcpwire_server::admin::ConsoleSource;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::{ApiKeys, AuthConfigError, KeyScopes, named_keys};
use crate::config::GatewayConfig;
use crate::recorded::Recorded;
use mcpwire_server::admin::console::calls::CallLog;

/// Pages of `tools/list` read at most for one catalog.
const MAX_PAGES: usize = 64;

/// The gateway as the console sees it.
pub(crate) struct GatewayConsole {
    federation: Weak<Federation>,
    admins: ApiKeys,
    /// Every configured API key's name and scopes (the "view as" callers).
    keys: Vec<KeyScopes>,
    /// The live calls, where the console's own calls are recorded too.
    calls: Arc<CallLog>,
}

impl GatewayConsole {
    /// The console for `config`, or `None` when `[admin] console_keys` is empty.
    pub(crate) fn new(
        config: &GatewayConfig,
        federation: Option<&Arc<Federation>>,
        calls: Arc<CallLog>,
    ) -> Result<Option<GatewayConsole>, AuthConfigError> {
        let Some(admin) = config.admin.as_ref().filter(|a| !a.console_keys.is_empty()) else {
            return Ok(None);
        };
        let Some(auth) = &config.auth else {
            return Err(AuthConfigError(
                "[admin] console_keys names API keys of [auth], and there is no [auth]".into(),
            ));
        };
        let (admins, keys) = named_keys(auth, &admin.console_keys)?;
        Ok(Some(GatewayConsole {
            federation: federation.map(Arc::downgrade).unwrap_or_default(),
            admins,
            keys,
            calls,
        }))
    }

    /// The identity a caller named by the page has: `anonymous`, `key:NAME`, `sub:SUBJECT`.
    fn identity(&self, caller: &str) -> Result<Option<Identity>, String> {
        if caller == "anonymous" {
            return Ok(None);
        }
        if let Some(name) = caller.strip_prefix("key:") {
            let (_, scopes) = self
                .keys
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| format!("no API key is named `{name}`"))?;
            return Ok(Some(Identity::api_key(name, scopes.clone())));
        }
        if let Some(sub) = caller.strip_prefix("sub:") {
            let mut claims = serde_json::Map::new();
            claims.insert("sub".into(), sub.into());
            return Ok(Some(Identity::bearer(sub, None, Vec::new(), claims)));
        }
        Err(format!("unknown caller `{caller}`"))
    }

    fn federation(&self) -> Result<Arc<Federation>, String> {
        self.federation
            .upgrade()
            .ok_or_else(|| "no merged catalog (a backend served alone)".to_owned())
    }
}

/// A console call's client: progress and logs go to the page; questions (sampling,
/// elicitation, roots) are refused — the page does not answer them yet.
struct ConsolePeer {
    events: mpsc::Sender<Value>,
}

impl Peer for ConsolePeer {
    fn event(&self, event: CallEvent) {
        let v = match event {
            CallEvent::Progress(p) => json!({
                "kind": "progress",
                "progress": p.progress,
                "total": p.total,
                "message": p.message,
            }),
            CallEvent::Log(l) => json!({
                "kind": "log",
                "level": l.level,
                "logger": l.logger,
                "data": serde_json::from_str::<Value>(l.data.get()).unwrap_or(Value::Null),
            }),
        };
        // A page that lags loses events rather than growing a queue.
        let _ = self.events.try_send(v);
    }

    fn ask(&self, _ask: ClientAsk) -> mcpwire_router::BoxFuture<'static, Result<Raw, McpError>> {
        Box::pin(std::future::ready(Err(McpError::InvalidRequest(
            "the console does not answer sampling, elicitation or roots requests".into(),
        ))))
    }
}

/// The JSON object of a reply.
fn reply_json(reply: Reply) -> Value {
    match reply {
        Reply::Complete(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
        Reply::InputRequired(raw) => serde_json::from_str(raw.get()).unwrap_or(Value::Null),
    }
}

/// Every tool definition `who` lists (at most [`MAX_PAGES`] pages).
async fn list_tools(fed: Arc<Federation>, who: Option<Identity>) -> Result<Vec<Value>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_PAGES {
        let ctx = CallCtx::detached().with_identity(who.clone());
        let req = BackendRequest::ListTools {
            cursor: cursor.take(),
            query: None,
        };
        let page = reply_json(fed.call(ctx, req).await.map_err(|e| e.to_string())?);
        if let Some(Value::Array(t)) = page.get("tools") {
            tools.extend(t.iter().cloned());
        }
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    Ok(tools)
}

/// Items of one kind: every exposed one, and whether `sees` has it.
fn items(all: &[ExposedItem], sees: &[ExposedItem]) -> Vec<Value> {
    all.iter()
        .map(|i| {
            let visible = sees.iter().any(|s| s.exposed == i.exposed);
            json!({
                "name": i.exposed,
                "backend": i.member,
                "upstream": i.original,
                "visible": visible,
                "hidden_by": (!visible).then_some("[policy]"),
            })
        })
        .collect()
}

fn catalog_json(all: &CatalogReport, sees: &CatalogReport, listed: &[Value]) -> Value {
    let tools: Vec<Value> = items(&all.tools, &sees.tools)
        .into_iter()
        .map(|mut t| {
            let def = listed
                .iter()
                .find(|d| d.get("name") == t.get("name"))
                .cloned();
            if let (Some(def), Value::Object(o)) = (def, &mut t) {
                o.insert("visible".into(), true.into());
                o.insert("hidden_by".into(), Value::Null);
                for k in ["description", "inputSchema", "title"] {
                    if let Some(v) = def.get(k) {
                        o.insert(k.into(), v.clone());
                    }
                }
            }
            t
        })
        .collect();
    json!({
        "tools": tools,
        "prompts": items(&all.prompts, &sees.prompts),
        "resources": items(&all.resources, &sees.resources),
        "templates": items(&all.templates, &sees.templates),
        "collisions": all.collisions,
    })
}

impl ConsoleSource for GatewayConsole {
    fn login(&self, secret: &str) -> Option<String> {
        self.admins.find(secret).map(|k| k.name.clone())
    }

    fn callers(&self) -> Vec<String> {
        let mut c = vec!["anonymous".to_owned()];
        c.extend(self.keys.iter().map(|(n, _)| format!("key:{n}")));
        c
    }

    fn catalog(&self, caller: &str) -> BoxFuture<'static, Result<Value, String>> {
        let got = self
            .identity(caller)
            .and_then(|who| Ok((who, self.federation()?)));
        Box::pin(async move {
            let (who, fed) = got?;
            let all = fed.report();
            let sees = fed.report_as(who.as_ref());
            let listed = list_tools(fed, who).await?;
            Ok(catalog_json(&all, &sees, &listed))
        })
    }

    fn call_tool(
        &self,
        caller: &str,
        name: String,
        arguments: Option<Value>,
        events: mpsc::Sender<Value>,
    ) -> BoxFuture<'static, Result<Value, String>> {
        let got = self
            .identity(caller)
            .and_then(|who| Ok((who, self.federation()?)));
        let calls = self.calls.clone();
        Box::pin(async move {
            let (who, fed) = got?;
            let fed = Recorded::new(fed, calls);
            let arguments = match arguments {
                Some(a) => Some(serde_json::value::to_raw_value(&a).map_err(|e| e.to_string())?),
                None => None,
            };
            let peer: Arc<dyn Peer> = Arc::new(ConsolePeer { events });
            let ctx = CallCtx::new(
                Revision::LATEST_STATEFUL,
                Arc::new(ClientCapabilities::default()),
                CancellationToken::new(),
                Some(peer),
            )
            .with_identity(who)
            .with_progress_token(Some(RequestId::Int(1)));
            let req = BackendRequest::CallTool { name, arguments };
            fed.call(ctx, req)
                .await
                .map(reply_json)
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "[admin]\nlisten = \"127.0.0.1:0\"\nconsole_keys = [\"ops\"]\n\
        [auth]\n[[auth.api_keys]]\nname = \"ops\"\nkey = \"s3cret-ops\"\n\
        [[auth.api_keys]]\nname = \"ci\"\nkey = \"s3cret-ci\"\n\
        [backends.d]\nnative = \"demo\"\n";

    fn console(text: &str) -> Result<Option<GatewayConsole>, AuthConfigError> {
        let path = std::path::Path::new("conf/mcpwire.toml");
        let config = GatewayConfig::from_toml(path, text).expect("a valid file");
        GatewayConsole::new(&config, None, Arc::default())
    }

    #[test]
    fn only_console_keys_log_in() {
        let c = console(FILE).expect("built").expect("a console");
        assert_eq!(c.login("s3cret-ops").as_deref(), Some("ops"));
        assert_eq!(c.login("s3cret-ci"), None, "a client key is no admin key");
        assert_eq!(c.login(""), None);
    }

    #[test]
    fn callers_show_names_never_secrets() {
        let c = console(FILE).expect("built").expect("a console");
        let shown = c.callers().join(" ");
        assert_eq!(shown, "anonymous key:ops key:ci");
        assert!(!shown.contains("s3cret"));
    }

    #[test]
    fn no_console_without_keys_and_unknown_keys_refused() {
        let off = FILE.replace("console_keys = [\"ops\"]\n", "");
        assert!(console(&off).expect("built").is_none());
        let unknown = FILE.replace("[\"ops\"]", "[\"root\"]");
        let e = console(&unknown).err().expect("refused");
        assert!(e.0.contains("no API key is named `root`"), "{}", e.0);
    }
}
