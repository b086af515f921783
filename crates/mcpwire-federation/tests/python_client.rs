//! The official Python `mcp` client in front of a federation served over Streamable HTTP
//! (the real `Service` and listener, no binary): three native members — the conformance
//! fixture set, the notes example and a small server whose names collide with theirs — seen
//! as one catalog, in legacy (initialize) and auto (2026-07-28) modes, plus a view on a
//! listener of its own. The client side is `tests/python/federation_client.py`.

mod common;

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use common::{Text, root, venv_python};
use mcpwire::Service;
use mcpwire_federation::{Federation, FederationConfig, Glob, Member, PrefixMode, ViewSpec};
use mcpwire_model::types::{GetPromptResult, Implementation, PromptMessage};
use mcpwire_router::{
    Backend, CallCtx, PromptDef, ResourceDef, Router, Server, TaskConfig, ToolError, tool,
};
use mcpwire_testkit::serve::{http, serve};

/// A member whose `echo`, `add` and `test://static-text` collide with the fixture set's.
fn extra() -> Arc<Server> {
    Server::builder(Implementation::new("extra", "1"))
        .tool(
            tool("echo", |_: CallCtx, a: Text| async move {
                Ok::<_, ToolError>(format!("extra:{}", a.text))
            })
            .description("Echoes with a prefix"),
        )
        .resource(ResourceDef::text(
            "test://static-text",
            "static-text",
            "text/plain",
            "extra's static text",
        ))
        .prompt(
            PromptDef::new("greet", |_, args| async move {
                let who = args.get("who").cloned().unwrap_or_default();
                Ok(GetPromptResult {
                    description: None,
                    messages: vec![PromptMessage::user(format!("Hello, {who}"))],
                })
            })
            .argument("who", "who to greet", true)
            .complete("who", |typed, _| {
                ["Ada", "Alan", "Grace"]
                    .iter()
                    .filter(|n| n.starts_with(typed))
                    .map(|n| n.to_string())
                    .collect()
            }),
        )
        .build()
}

fn service(backend: Arc<dyn Backend>, info: Implementation, instructions: String) -> Service {
    let router = Router::new(backend).with_tasks(TaskConfig::default());
    Service::new(router, info, Some(instructions))
}

#[test]
fn python_client_sees_one_catalog_a_collision_and_a_view() {
    let Some(python) = venv_python() else { return };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let config = FederationConfig::new(Implementation::new("mcpwire-gateway", "1"))
            .prefix(PrefixMode::Never)
            .member(
                Member::new("everything", mcpwire_example_everything::server())
                    .instructions("The conformance fixtures."),
            )
            .member(Member::new("notes", mcpwire_example_notes::server()))
            .member(Member::new("extra", extra()));
        let fed = Federation::new(config).await.expect("federation");
        let all = serve(
            service(fed.clone(), fed.server_info(), fed.instructions()),
            http(),
        )
        .await;
        let spec = ViewSpec::new("notes-view")
            .member("notes")
            .tools(Glob::new("echo").expect("glob"));
        let view = fed.view(&spec);
        let view = serve(
            service(view.clone(), view.server_info(), view.instructions()),
            http(),
        )
        .await;
        let script = root().join("tests/python/federation_client.py");
        let run = tokio::process::Command::new(&python)
            .arg(&script)
            .arg(all.url())
            .arg(view.url())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(180), run)
            .await
            .expect("the Python client finishes within 180 s")
            .expect("python runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "python client failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
        assert!(stdout.contains("federation ok"), "{stdout}");
    });
}
