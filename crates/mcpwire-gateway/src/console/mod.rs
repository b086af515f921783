//! What the console on the admin listener asks the gateway ([`ConsoleSource`]): admin
//! logins (`[admin] console_keys`, or a token with `console_scope`), the catalog as a
//! caller lists it and why items are hidden, tool calls as that caller — all through the
//! federation's own dispatch, its policy included — and the running configuration
//! (masked), the last reload's outcome and what each backend is. What a reload changes
//! (keys, policy, views, the configuration) reaches it through [`GatewayConsole::reloaded`].

mod catalog;
mod mask;
mod peer;

use std::sync::{Arc, Mutex, PoisonError, Weak};

use futures::future::BoxFuture;
use mcpwire_federation::{Federation, Policy, View, ViewSpec};
use mcpwire_model::{RequestId, Revision};
use mcpwire_router::{Backend, BackendRequest, CallCtx, Credential, Identity, Peer};
use mcpwire_server::ListenerLoad;
use mcpwire_server::admin::ConsoleSource;
use mcpwire_server::admin::console::asks::PageLink;
use mcpwire_server::admin::console::calls::{CallLog, now_ms};
use mcpwire_server::identify::Authenticate;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::auth::{ApiKeys, AuthConfigError, Authenticator, KeyScopes, named_keys};
use crate::config::{BackendSource, GatewayConfig};
use crate::error::Origin;
use crate::recorded::Recorded;
use catalog::{Judge, list_tools, reply_json, seen};
use peer::ConsolePeer;

/// What each backend is, asked when the page polls: its `era` and `restarts`.
pub(crate) type BackendStatus = Arc<dyn Fn() -> Value + Send + Sync>;

/// What follows the configuration: rebuilt at every applied reload.
struct Live {
    admins: ApiKeys,
    /// A token granting this scope logs in too.
    admin_scope: Option<String>,
    /// Every configured API key's name and scopes (the "view as" callers).
    keys: Vec<KeyScopes>,
    policy: Policy,
    views: Vec<ViewSpec>,
    /// The configuration as the page shows it (masked).
    config: Value,
    /// The backends' kinds and what they speak when that does not change (`protomcp`,
    /// `grpc (reflection)`), by name.
    kinds: Vec<(String, &'static str, Option<&'static str>)>,
}

/// The gateway as the console sees it.
pub(crate) struct GatewayConsole {
    federation: Weak<Federation>,
    /// `[auth]`'s authenticator (replaced in place by reloads): checks admin tokens.
    auth: Option<Arc<Authenticator>>,
    live: Mutex<Live>,
    /// The last reload: when, whether applied, and what it did or why it was refused.
    reload: Mutex<Option<Value>>,
    /// Era and restarts of the backends that know them.
    status: Mutex<Vec<(String, BackendStatus)>>,
    /// Each listener's sessions, connections and stateless requests, in listener order.
    loads: Mutex<Vec<Option<Arc<ListenerLoad>>>>,
    /// The live calls, where the console's own calls are recorded too.
    calls: Arc<CallLog>,
}

/// The console's part of `config`: who logs in, who can be viewed as, what is shown.
fn live(config: &GatewayConfig) -> Result<Option<Live>, AuthConfigError> {
    let Some(admin) = config.admin.as_ref().filter(|a| a.console()) else {
        return Ok(None);
    };
    let Some(auth) = &config.auth else {
        return Err(AuthConfigError(
            "[admin] console_keys names API keys of [auth], and there is no [auth]".into(),
        ));
    };
    let (admins, keys) = named_keys(auth, &admin.console_keys)?;
    Ok(Some(Live {
        admins,
        admin_scope: admin.console_scope.clone(),
        keys,
        policy: config.policy.clone().unwrap_or_default(),
        views: config.views.clone(),
        config: config_json(config),
        kinds: config
            .backends
            .iter()
            .map(|b| (b.name.clone(), b.source.kind(), fixed_era(&b.source)))
            .collect(),
    }))
}

/// What a backend speaks, when its kind alone says it: a native backend runs in process,
/// a tool process speaks protomcp, a gRPC service is read by reflection or from a
/// descriptor set. An upstream's revision and an OpenAPI document's version are known
/// once it started (its status tells them).
fn fixed_era(source: &BackendSource) -> Option<&'static str> {
    match source {
        BackendSource::Native { .. } => Some("in-process"),
        BackendSource::Process(_) => Some("protomcp"),
        BackendSource::Grpc(g) if g.descriptors.is_some() => Some("grpc (descriptor set)"),
        BackendSource::Grpc(_) => Some("grpc (reflection)"),
        BackendSource::OpenApi(_) => Some("openapi"),
        BackendSource::Upstream(_) => None,
    }
}

/// The configuration as the page shows it: the file (masked), the listeners and backends.
fn config_json(config: &GatewayConfig) -> Value {
    let (file, text) = match &config.origin {
        Origin::File { path, text, .. } => (
            Some(path.display().to_string()),
            mask::masked(text).unwrap_or_else(|| "(the file does not parse)".into()),
        ),
        Origin::Flags(_) => (None, "(configured by command-line flags)".into()),
    };
    let listeners: Vec<Value> = config
        .listeners
        .iter()
        .map(|l| {
            json!({
                "url": l.url(),
                "view": l.options.view,
                "auth": config.auth.is_some() && !l.is_stdio() && l.options.auth != Some(false),
            })
        })
        .collect();
    json!({ "file": file, "text": text, "listeners": listeners })
}

/// A token's claims as the page gives them: `sub`, `iss`, and scopes from `scope`
/// (space-separated) or `scp` (an array).
fn token_identity(claims: &str) -> Result<Identity, String> {
    let Ok(Value::Object(claims)) = serde_json::from_str::<Value>(claims) else {
        return Err("claims must be a JSON object".into());
    };
    let text = |k: &str| claims.get(k).and_then(Value::as_str).map(str::to_owned);
    let mut scopes: Vec<String> = text("scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(Value::Array(scp)) = claims.get("scp") {
        scopes.extend(scp.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    let sub = text("sub").unwrap_or_else(|| "token".into());
    Ok(Identity::bearer(sub, text("iss"), scopes, claims))
}

impl GatewayConsole {
    /// The console for `config`, or `None` when `[admin]` names no admin credential.
    pub(crate) fn new(
        config: &GatewayConfig,
        federation: Option<&Arc<Federation>>,
        auth: Option<Arc<Authenticator>>,
        calls: Arc<CallLog>,
    ) -> Result<Option<GatewayConsole>, AuthConfigError> {
        let Some(live) = live(config)? else {
            return Ok(None);
        };
        Ok(Some(GatewayConsole {
            federation: federation.map(Arc::downgrade).unwrap_or_default(),
            auth,
            live: Mutex::new(live),
            reload: Mutex::new(None),
            status: Mutex::new(Vec::new()),
            loads: Mutex::new(Vec::new()),
            calls,
        }))
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the console how a reload went: `Ok(what it did)` with `config` now applied
    /// (keys, scope, policy, views and the shown configuration follow it), or
    /// `Err(why it was refused)`.
    pub(crate) fn reloaded(&self, config: &GatewayConfig, outcome: Result<String, String>) {
        let mut outcome = outcome;
        if outcome.is_ok() {
            match live(config) {
                Ok(Some(next)) => *self.live() = next,
                Ok(None) => {
                    outcome = outcome.map(|o| {
                        o + "; the console stays on until the next start (no admin credential left)"
                    })
                }
                Err(e) => outcome = outcome.map(|o| format!("{o}; console keys kept: {}", e.0)),
            }
        }
        let v = match outcome {
            Ok(message) => json!({ "at_ms": now_ms(), "applied": true, "message": message }),
            Err(error) => json!({ "at_ms": now_ms(), "applied": false, "message": error }),
        };
        *self.reload.lock().unwrap_or_else(PoisonError::into_inner) = Some(v);
    }

    /// Shows the sessions, connections and stateless requests of the listeners with
    /// `loads` (in listener order).
    pub(crate) fn set_loads(&self, loads: Vec<Option<Arc<ListenerLoad>>>) {
        *self.loads.lock().unwrap_or_else(PoisonError::into_inner) = loads;
    }

    /// Shows `status` (era, restarts) for backend `name` from now on.
    pub(crate) fn set_status(&self, name: &str, status: BackendStatus) {
        let mut all = self.status.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|(n, _)| n != name);
        all.push((name.to_owned(), status));
    }

    /// The identity a caller named by the page has, and the view it looks through:
    /// `anonymous`, `key:NAME`, `sub:SUBJECT`, `jwt:{CLAIMS}`, `view:NAME`.
    fn identity(&self, caller: &str) -> Result<(Option<Identity>, Option<ViewSpec>), String> {
        if caller == "anonymous" {
            return Ok((None, None));
        }
        if let Some(name) = caller.strip_prefix("key:") {
            let live = self.live();
            let (_, scopes) = live
                .keys
                .iter()
                .find(|(n, _)| n == name)
                .ok_or_else(|| format!("no API key is named `{name}`"))?;
            return Ok((Some(Identity::api_key(name, scopes.clone())), None));
        }
        if let Some(sub) = caller.strip_prefix("sub:") {
            let mut claims = serde_json::Map::new();
            claims.insert("sub".into(), sub.into());
            return Ok((Some(Identity::bearer(sub, None, Vec::new(), claims)), None));
        }
        if let Some(claims) = caller.strip_prefix("jwt:") {
            return Ok((Some(token_identity(claims)?), None));
        }
        if let Some(name) = caller.strip_prefix("view:") {
            let live = self.live();
            let spec = live
                .views
                .iter()
                .find(|v| v.name == name)
                .ok_or_else(|| format!("no view is named `{name}`"))?;
            return Ok((None, Some(spec.clone())));
        }
        Err(format!("unknown caller `{caller}`"))
    }

    fn federation(&self) -> Result<Arc<Federation>, String> {
        self.federation
            .upgrade()
            .ok_or_else(|| "no merged catalog (a backend served alone)".to_owned())
    }
}

impl ConsoleSource for GatewayConsole {
    fn login(&self, secret: &str) -> BoxFuture<'static, Option<String>> {
        let (key, scope) = {
            let live = self.live();
            let key = live
                .admins
                .find(secret)
                .and_then(|id| match id.credential() {
                    Credential::ApiKey { name } => Some(name.clone()),
                    _ => None,
                });
            (key, live.admin_scope.clone())
        };
        let auth = self.auth.clone();
        let secret = secret.to_owned();
        Box::pin(async move {
            if key.is_some() {
                return key;
            }
            let (scope, auth) = (scope?, auth?);
            if secret.is_empty() {
                return None;
            }
            let auth: Arc<dyn Authenticate> = auth;
            let who = auth.verify(Some(&secret)).await.ok()?;
            let bearer = matches!(who.credential(), Credential::Bearer { .. });
            (bearer && who.has_scope(&scope)).then(|| format!("token:{}", who.subject()))
        })
    }

    fn callers(&self) -> Vec<String> {
        let live = self.live();
        let mut c = vec!["anonymous".to_owned()];
        c.extend(live.keys.iter().map(|(n, _)| format!("key:{n}")));
        c.extend(live.views.iter().map(|v| format!("view:{}", v.name)));
        c
    }

    fn config(&self) -> Value {
        let mut v = self.live().config.clone();
        let reload = self.reload.lock().map(|r| r.clone()).unwrap_or_default();
        let loads = self.loads.lock().map(|l| l.clone()).unwrap_or_default();
        if let Some(Value::Array(listeners)) = v.get_mut("listeners") {
            for (l, load) in listeners.iter_mut().zip(loads) {
                if let (Value::Object(o), Some(load)) = (l, load) {
                    o.insert("sessions".into(), load.sessions().into());
                    o.insert("connections".into(), load.connections().into());
                    o.insert("stateless".into(), load.stateless_requests().into());
                }
            }
        }
        if let Value::Object(o) = &mut v {
            o.insert("reload".into(), reload.unwrap_or(Value::Null));
            o.insert("masking".into(), mask::RULE.into());
        }
        v
    }

    fn backend_facts(&self) -> Value {
        let mut out = serde_json::Map::new();
        for (name, kind, era) in &self.live().kinds {
            out.insert(name.clone(), json!({ "kind": kind, "era": era }));
        }
        let status = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        for (name, f) in status {
            if let (Some(Value::Object(o)), Value::Object(more)) = (out.get_mut(&name), f()) {
                o.extend(more);
            }
        }
        Value::Object(out)
    }

    fn catalog(&self, caller: &str) -> BoxFuture<'static, Result<Value, String>> {
        let got = self
            .identity(caller)
            .and_then(|who| Ok((who, self.federation()?)));
        let policy = self.live().policy.clone();
        Box::pin(async move {
            let ((who, view), fed) = got?;
            let view: Option<Arc<View>> = view.map(|spec| fed.view(&spec));
            let all = fed.report();
            let sees = seen(&fed, view.as_deref(), who.as_ref());
            let shown: Arc<dyn Backend> = match &view {
                Some(v) => v.clone(),
                None => fed.clone(),
            };
            let listed = list_tools(shown, who.clone()).await?;
            let judge = Judge {
                policy: &policy,
                who: who.as_ref(),
                view: view.as_ref().map(|v| (v.spec().name.as_str(), v.report())),
            };
            Ok(judge.catalog(&all, &sees, &listed))
        })
    }

    fn call_tool(
        &self,
        caller: &str,
        name: String,
        arguments: Option<Value>,
        page: PageLink,
    ) -> BoxFuture<'static, Result<Value, String>> {
        let got = self
            .identity(caller)
            .and_then(|who| Ok((who, self.federation()?)));
        let calls = self.calls.clone();
        Box::pin(async move {
            let ((who, view), fed) = got?;
            let shown: Arc<dyn Backend> = match view {
                Some(spec) => fed.view(&spec),
                None => fed.clone(),
            };
            let fed = Recorded::new(
                shown,
                calls,
                Arc::from("console"),
                Arc::downgrade(&fed),
                Arc::from(""),
            );
            let arguments = match arguments {
                Some(a) => Some(serde_json::value::to_raw_value(&a).map_err(|e| e.to_string())?),
                None => None,
            };
            let peer: Arc<dyn Peer> = Arc::new(ConsolePeer { page });
            let ctx = CallCtx::new(
                Revision::LATEST_STATEFUL,
                Arc::new(peer::capabilities()),
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
        GatewayConsole::new(&config, None, None, Arc::default())
    }

    #[tokio::test]
    async fn only_console_keys_log_in() {
        let c = console(FILE).expect("built").expect("a console");
        assert_eq!(c.login("s3cret-ops").await.as_deref(), Some("ops"));
        assert_eq!(
            c.login("s3cret-ci").await,
            None,
            "a client key is no admin key"
        );
        assert_eq!(c.login("").await, None);
    }

    #[tokio::test]
    async fn console_keys_and_the_config_follow_a_reload() {
        let c = console(FILE).expect("built").expect("a console");
        let path = std::path::Path::new("conf/mcpwire.toml");
        let next = FILE.replace("[\"ops\"]", "[\"ci\"]");
        let config = GatewayConfig::from_toml(path, &next).expect("valid");
        c.reloaded(&config, Ok("no backend changed".into()));
        assert_eq!(c.login("s3cret-ops").await, None, "no longer an admin key");
        assert_eq!(c.login("s3cret-ci").await.as_deref(), Some("ci"));
        let shown = c.config();
        assert_eq!(shown["reload"]["applied"], true);
        let text = shown["text"].as_str().expect("the file");
        assert!(text.contains("console_keys = [\"ci\"]"), "{text}");
        assert!(!text.contains("s3cret"), "{text}");
        c.reloaded(&config, Err("bad edit".into()));
        assert_eq!(c.config()["reload"]["applied"], false);
        assert_eq!(c.config()["reload"]["message"], "bad edit");
    }

    #[test]
    fn a_token_callers_claims_give_its_scopes() {
        let who = token_identity(r#"{"sub":"alice","scope":"a b","scp":["c"],"team":"x"}"#)
            .expect("claims");
        assert_eq!(who.subject(), "alice");
        assert!(who.has_scope("a") && who.has_scope("b") && who.has_scope("c"));
        assert_eq!(who.claim("team"), Some(&json!("x")));
        assert!(token_identity("[1]").is_err());
    }

    #[test]
    fn a_backend_whose_kind_says_what_it_speaks_shows_it() {
        let c = console(FILE).expect("built").expect("a console");
        let facts = c.backend_facts();
        assert_eq!(facts["d"]["kind"], "native");
        assert_eq!(facts["d"]["era"], "in-process");
        let proc = BackendSource::Process(crate::config::ProcessSpec::new("tools.py"));
        assert_eq!(fixed_era(&proc), Some("protomcp"));
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
