//! Hot reload of `[auth]`, `[policy]` and `[limits]`, driven through the library: an edit
//! applies to the requests that start afterwards on the services built at start (so sessions
//! stay); the authenticator's verifiers are swapped, the federation's policy replaced, and a
//! rate limit whose rule is unchanged keeps its buckets. An edit that cannot be used is
//! refused with its file, line and key, and changes nothing.

mod common;
use common::native;

use std::path::PathBuf;
use std::sync::Arc;

use mcpwire_gateway::auth::AuthFailure;
use mcpwire_gateway::{Gateway, GatewayConfig, GatewayError, Natives};
use mcpwire_model::types::ClientCapabilities;
use mcpwire_model::{BackendEvent, CallEvent, ClientAsk, McpError, Method, Raw, Revision, to_raw};
use mcpwire_router::{Backend, BoxFuture, CallCtx, Identity, McpCall, McpReply, Peer};
use mcpwire_server::Service;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn natives() -> Natives {
    Natives::new()
        .with("alpha", || native("alpha"))
        .with("beta", || native("beta"))
}

struct Conf(PathBuf);

impl Conf {
    fn new(test: &str, text: &str) -> Conf {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("reload-{test}"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let conf = Conf(dir.join("mcpwire.toml"));
        conf.write(text);
        conf
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).expect("write the configuration");
    }
}

const CI_KEY: &str = "ci-key-0123456789abcdef";
const OPS_KEY: &str = "ops-key-0123456789abcdef";

/// The configuration with `keys` (name, key), a rule denying `denied` to `key:ci`, and
/// `limits` as the `[limits]` body.
fn config(keys: &[(&str, &str)], denied: &str, limits: &str) -> String {
    let mut text = String::from("[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n\n[auth]\n");
    for (name, key) in keys {
        text.push_str(&format!(
            "[[auth.api_keys]]\nname = \"{name}\"\nkey = \"{key}\"\n"
        ));
    }
    text.push_str(&format!(
        "\n[policy]\n[[policy.rules]]\neffect = \"deny\"\nsubjects = [\"key:ci\"]\ntools = [\"{denied}\"]\n\n[limits]\n{limits}\n\n[backends.a]\nnative = \"alpha\"\n[backends.b]\nnative = \"beta\"\n"
    ));
    text
}

struct Client;

impl Peer for Client {
    fn event(&self, _: CallEvent) {}
    fn ask(&self, _: ClientAsk) -> BoxFuture<'static, Result<Raw, McpError>> {
        Box::pin(async { Err(McpError::Internal("no asks here".into())) })
    }
}

/// Calls `tool` on `service` as `who`, from a client at 127.0.0.1.
async fn call(service: &Service, who: &Identity, tool: &str) -> McpReply {
    let ctx = CallCtx::new(
        Revision::LATEST_STATEFUL,
        Arc::new(ClientCapabilities::default()),
        CancellationToken::new(),
        Some(Arc::new(Client)),
    )
    .with_identity(Some(who.clone()))
    .with_client_ip(Some([127, 0, 0, 1].into()));
    service
        .router
        .call(McpCall::new(
            Method::ToolsCall,
            Some(to_raw(&json!({"name": tool, "arguments": {}}))),
            ctx,
        ))
        .await
}

fn refused_by(reply: &McpReply) -> Option<&str> {
    match reply {
        Err(McpError::RateLimited { limit, .. }) => Some(limit),
        _ => None,
    }
}

fn lists_changed(rx: &mut tokio::sync::broadcast::Receiver<BackendEvent>) -> bool {
    let mut changed = false;
    while let Ok(ev) = rx.try_recv() {
        changed |= matches!(ev, BackendEvent::ToolsListChanged);
    }
    changed
}

#[tokio::test]
async fn auth_policy_and_limits_apply_to_new_requests_on_reload() {
    let conf = Conf::new(
        "sections",
        &config(&[("ci", CI_KEY)], "a_alpha_two", "per_identity = \"2/h\""),
    );
    let mut g = Gateway::start(GatewayConfig::load(&conf.0).expect("valid"), natives())
        .await
        .expect("starts");
    // What the listener holds: it is built once and stays across reloads.
    let service = g.service(0).expect("one listener").clone();
    let auth = service.auth.clone().expect("the listener authenticates");
    let fed = g.federation().expect("federated").clone();
    let mut events = fed.events().expect("events");

    let ci = auth.verify(Some(CI_KEY)).await.expect("ci's key");
    assert_eq!(
        auth.verify(Some(OPS_KEY)).await.expect_err("not yet a key"),
        AuthFailure::Unknown
    );
    // The policy hides a_alpha_two from ci: a hidden tool is an unknown one.
    assert!(matches!(
        call(&service, &ci, "a_alpha_two").await,
        Err(McpError::ToolNotFound(_))
    ));
    // That refused call used one of ci's two calls an hour; one is left.
    assert!(call(&service, &ci, "a_alpha_one").await.is_ok());
    assert_eq!(
        refused_by(&call(&service, &ci, "a_alpha_one").await),
        Some("identity")
    );

    // Edit: ops replaces ci's key, the rule hides a_alpha_one instead, and a per-tool limit
    // is added while the per-identity rule stays.
    conf.write(&config(
        &[("ops", OPS_KEY)],
        "a_alpha_one",
        "per_identity = \"2/h\"\nper_tool = \"100/h\"",
    ));
    let plan = g.reload().await.expect("applied");
    assert_eq!(
        plan.to_string(),
        "no backend changed; applied [auth], [policy], [limits]"
    );
    assert!(plan.ignored.is_empty(), "{:?}", plan.ignored);
    assert!(
        lists_changed(&mut events),
        "sessions are told to list again"
    );
    // Auth: the new key is accepted, the removed one refused, by the same authenticator.
    assert!(auth.verify(Some(OPS_KEY)).await.is_ok());
    assert_eq!(
        auth.verify(Some(CI_KEY)).await.expect_err("removed"),
        AuthFailure::Unknown
    );
    // Policy: what ci (a session authenticated before the edit) sees follows the new rule.
    let seen: Vec<String> = fed
        .report_as(Some(&ci))
        .tools
        .into_iter()
        .map(|t| t.exposed)
        .collect();
    assert!(seen.contains(&"a_alpha_two".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"a_alpha_one".to_owned()), "{seen:?}");
    // Limits: the unchanged per-identity rule kept ci's empty bucket.
    assert_eq!(
        refused_by(&call(&service, &ci, "a_alpha_two").await),
        Some("identity")
    );

    // Edit: the per-identity rule changes, so its buckets start full.
    conf.write(&config(
        &[("ops", OPS_KEY)],
        "a_alpha_one",
        "per_identity = \"3/h\"\nper_tool = \"100/h\"",
    ));
    assert_eq!(
        g.reload().await.expect("applied").to_string(),
        "no backend changed; applied [limits]"
    );
    for _ in 0..3 {
        assert!(call(&service, &ci, "a_alpha_two").await.is_ok());
    }
    assert_eq!(
        refused_by(&call(&service, &ci, "a_alpha_two").await),
        Some("identity")
    );
    assert!(Arc::ptr_eq(
        &g.service(0).expect("one listener").config,
        &service.config
    ));
}

#[tokio::test]
async fn an_unusable_auth_policy_or_limits_edit_is_refused_with_its_place() {
    let good = config(&[("ci", CI_KEY)], "a_alpha_two", "per_identity = \"2/h\"");
    let conf = Conf::new("sections-refused", &good);
    let mut g = Gateway::start(GatewayConfig::load(&conf.0).expect("valid"), natives())
        .await
        .expect("starts");
    let service = g.service(0).expect("one listener").clone();
    let auth = service.auth.clone().expect("auth");
    let refusals = [
        (
            good.replace("per_identity = \"2/h\"", "per_identity = \"2/week\""),
            "mcpwire.toml:16:16:",
            "limits.per_identity: `2/week`: unknown unit `week`",
        ),
        (
            good.replace(
                "[auth]\n",
                "[auth]\napi_key_files = [\"/nonexistent/mcpwire-keys\"]\n",
            ),
            "mcpwire.toml:4:2: auth:",
            "/nonexistent/mcpwire-keys",
        ),
        (
            good.replace("effect = \"deny\"", "effect = \"maybe\""),
            "mcpwire.toml:11:",
            "policy.rules[0].effect",
        ),
        (
            good.replace(
                "subjects = [\"key:ci\"]",
                "subjects = [\"key:ci\"]\nbackends = [\"zeta\"]",
            ),
            "mcpwire.toml:",
            "zeta",
        ),
    ];
    for (edit, at, says) in refusals {
        conf.write(&edit);
        let e: GatewayError = g.reload().await.expect_err("refused");
        let text = e.to_string();
        assert!(
            text.contains(at) && text.contains(says),
            "{edit}\n  got: {text}\n want: {at} … {says}"
        );
        // Nothing changed: ci's key still works and the limits are the old ones.
        assert!(auth.verify(Some(CI_KEY)).await.is_ok());
    }
    let ci = auth.verify(Some(CI_KEY)).await.expect("ci");
    assert!(call(&service, &ci, "a_alpha_one").await.is_ok());
    assert!(call(&service, &ci, "a_alpha_one").await.is_ok());
    assert_eq!(
        refused_by(&call(&service, &ci, "a_alpha_one").await),
        Some("identity")
    );
}
