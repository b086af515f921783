//! The gateway's hot reload, driven through the library: a configuration file rewritten
//! while a gateway serves it. Added, changed and removed backends apply without rebuilding
//! the gateway (its services, hence its sessions, stay) and are announced as list changes;
//! a refused edit changes nothing.

mod common;
use common::native;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcpwire_gateway::{Gateway, GatewayConfig, GatewayError, Natives};
use mcpwire_model::BackendEvent;
use mcpwire_router::Backend;

/// Natives `alpha`, `beta` and `gamma`, counting how many servers were made.
fn natives(made: &Arc<AtomicUsize>) -> Natives {
    let mut n = Natives::new();
    for name in ["alpha", "beta", "gamma"] {
        let made = made.clone();
        n = n.with(name, move || {
            made.fetch_add(1, Ordering::Relaxed);
            native(name)
        });
    }
    n
}

struct Conf(PathBuf);

impl Conf {
    fn new(test: &str, text: &str) -> Conf {
        let dir = std::env::temp_dir().join(format!("mcpwire-gw-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let conf = Conf(dir.join("mcpwire.toml"));
        conf.write(text);
        conf
    }

    fn write(&self, text: &str) {
        std::fs::write(&self.0, text).expect("write the configuration");
    }
}

impl Drop for Conf {
    fn drop(&mut self) {
        if let Some(dir) = self.0.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

const LISTEN: &str = "[[listen]]\nurl = \"http://127.0.0.1:0/mcp\"\n";

fn tools(g: &Gateway) -> Vec<String> {
    let fed = g
        .federation()
        .expect("a configuration file is served through a federation");
    fed.report().tools.into_iter().map(|t| t.exposed).collect()
}

/// Takes every event waiting, and whether one was a tool list change.
fn tools_changed(rx: &mut tokio::sync::broadcast::Receiver<BackendEvent>) -> bool {
    let mut changed = false;
    while let Ok(ev) = rx.try_recv() {
        changed |= matches!(ev, BackendEvent::ToolsListChanged);
    }
    changed
}

#[tokio::test]
async fn reload_adds_changes_and_removes_backends_in_place() {
    let made = Arc::new(AtomicUsize::new(0));
    let conf = Conf::new(
        "apply",
        &format!("{LISTEN}[backends.a]\nnative = \"alpha\"\n[backends.b]\nnative = \"beta\"\n"),
    );
    let config = GatewayConfig::load(&conf.0).expect("valid");
    let mut g = Gateway::start(config, natives(&made))
        .await
        .expect("starts");
    assert_eq!(
        tools(&g),
        ["a_alpha_one", "a_alpha_two", "b_beta_one", "b_beta_two"]
    );
    let service = g.service(0).expect("one listener").clone();
    let fed = g.federation().expect("federated").clone();
    let mut events = fed.events().expect("a federation has events");
    let beta = fed.report();
    assert_eq!(made.load(Ordering::Relaxed), 2);

    // b re-filtered (same backend, not restarted), c added.
    conf.write(&format!(
        "{LISTEN}[backends.a]\nnative = \"alpha\"\n[backends.b]\nnative = \"beta\"\nexclude = [\"*_two\"]\n[backends.c]\nnative = \"gamma\"\n"
    ));
    let plan = g.reload().await.expect("applied");
    assert_eq!(plan.to_string(), "added c; re-filtered b");
    assert_eq!(
        tools(&g),
        [
            "a_alpha_one",
            "a_alpha_two",
            "b_beta_one",
            "c_gamma_one",
            "c_gamma_two"
        ]
    );
    assert_eq!(made.load(Ordering::Relaxed), 3, "b was not made again");
    assert!(
        tools_changed(&mut events),
        "sessions are told the tool list changed"
    );
    assert!(
        Arc::ptr_eq(g.federation().expect("federated"), &fed),
        "the same federation serves: sessions stay"
    );

    // a removed, b's source changed (restarted), c unchanged.
    conf.write(&format!(
        "{LISTEN}[backends.b]\nnative = \"alpha\"\n[backends.c]\nnative = \"gamma\"\n"
    ));
    let plan = g.reload().await.expect("applied");
    assert_eq!(plan.to_string(), "restarted b; removed a");
    assert_eq!(
        tools(&g),
        ["b_alpha_one", "b_alpha_two", "c_gamma_one", "c_gamma_two"]
    );
    assert!(tools_changed(&mut events));
    assert_ne!(fed.report(), beta);
    // The services built at start (held by the listeners) serve the federation's catalog.
    assert!(Arc::ptr_eq(
        &g.service(0).expect("one listener").config,
        &service.config
    ));
}

#[tokio::test]
async fn a_refused_edit_changes_nothing() {
    let made = Arc::new(AtomicUsize::new(0));
    let text =
        format!("{LISTEN}[backends.a]\nnative = \"alpha\"\n[backends.b]\nnative = \"beta\"\n");
    let conf = Conf::new("refuse", &text);
    let mut g = Gateway::start(GatewayConfig::load(&conf.0).expect("valid"), natives(&made))
        .await
        .expect("starts");
    let before = tools(&g);
    let mut events = g.federation().and_then(|f| f.events()).expect("events");
    let refusals = [
        // Not TOML.
        (format!("{text}[backends.c\n"), "mcpwire.toml:7:"),
        // Unknown key, with its line and key.
        (
            format!("{text}[backends.c]\nnative = \"gamma\"\nincude = [\"x\"]\n"),
            "backends.c.incude: unknown field",
        ),
        // A native server this program does not have.
        (
            format!("{text}[backends.c]\nnative = \"delta\"\n"),
            "no native server named `delta`",
        ),
        // A tool file that does not exist (a configuration error: it cannot start at all):
        // nothing is applied, not even the other edits.
        (
            format!(
                "{LISTEN}[backends.a]\nnative = \"alpha\"\nexclude = [\"*\"]\n[backends.c]\nprocess = \"/nonexistent/tools.py\"\n"
            ),
            "backends.c.process: the tool file /nonexistent/tools.py does not exist",
        ),
        // Nothing left to serve.
        (LISTEN.to_string(), "nothing to serve"),
    ];
    for (edit, says) in refusals {
        conf.write(&edit);
        let e: GatewayError = g.reload().await.expect_err("refused");
        assert!(
            e.to_string().contains(says),
            "{edit}\n  got: {e}\n want: {says}"
        );
        assert_eq!(
            tools(&g),
            before,
            "still serving the previous configuration"
        );
        assert!(!tools_changed(&mut events), "nothing announced");
    }
    assert_eq!(made.load(Ordering::Relaxed), 2);
    // A valid edit after refused ones still applies.
    conf.write(&format!("{text}[backends.c]\nnative = \"gamma\"\n"));
    assert_eq!(g.reload().await.expect("applied").to_string(), "added c");
}

#[tokio::test]
async fn changes_needing_a_restart_are_reported_not_applied() {
    let made = Arc::new(AtomicUsize::new(0));
    let text = format!("{LISTEN}[backends.a]\nnative = \"alpha\"\n");
    let conf = Conf::new("ignored", &text);
    let mut g = Gateway::start(GatewayConfig::load(&conf.0).expect("valid"), natives(&made))
        .await
        .expect("starts");
    conf.write(
        "[server]\nprefix = \"always\"\n[[listen]]\nurl = \"stdio\"\n[backends.a]\nnative = \"alpha\"\n",
    );
    let plan = g.reload().await.expect("applied");
    assert!(plan.is_empty());
    assert_eq!(plan.ignored, ["listeners", "[server] options"]);
    assert_eq!(
        tools(&g),
        ["alpha_one", "alpha_two"],
        "prefix unchanged until restart"
    );
}
