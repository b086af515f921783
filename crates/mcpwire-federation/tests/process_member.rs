//! A tool process (a protomcp SDK tool file, `tests/python/protomcp_tools/kitchen.py`) as a
//! member next to a native server: its tools, resources and templates in the catalog, its
//! calls routed to it, its own list change (a hidden tool unlocked) re-listed and forwarded.

mod common;

use common::*;
use mcpwire_federation::{Federation, FederationConfig, Member};
use mcpwire_model::BackendEvent;
use mcpwire_model::types::Implementation;
use mcpwire_process::{Launch, ProcessBackend, ProcessConfig};
use mcpwire_router::{Backend, Router};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_process_is_a_member_like_any_other() {
    let Some(python) = venv_python() else { return };
    let launch = Launch {
        file: root().join("tests/python/protomcp_tools/kitchen.py"),
        runtime: Some(python.to_string_lossy().into_owned()),
    };
    let kitchen = ProcessBackend::start(ProcessConfig::new(launch))
        .await
        .expect("the tool process starts");
    let fed = Federation::new(
        FederationConfig::new(Implementation::new("gateway", "1"))
            .member(Member::new("kitchen", kitchen))
            .member(Member::new("native", server("native", &["echo"]))),
    )
    .await
    .expect("federation");
    let r = Router::new(fed.clone());
    let names = tool_names(&r).await;
    for want in ["kitchen_add", "kitchen_echo", "native_echo"] {
        assert!(names.contains(&want.to_owned()), "{want} in {names:?}");
    }
    assert!(
        !names.contains(&"kitchen_admin".to_owned()),
        "hidden until unlocked"
    );
    let sum = call(
        &r,
        "tools/call",
        json!({"name": "kitchen_add", "arguments": {"a": 2, "b": 3}}),
    )
    .await
    .unwrap();
    assert_eq!(text(&sum), "5");
    let echo = call(
        &r,
        "tools/call",
        json!({"name": "native_echo", "arguments": {"text": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(text(&echo), "native:echo:x");
    let menu = call(&r, "resources/read", json!({"uri": "kitchen://menu"}))
        .await
        .unwrap();
    assert!(menu["contents"][0]["text"].as_str().is_some(), "{menu}");
    let dish = call(&r, "resources/read", json!({"uri": "kitchen://dish/soup"}))
        .await
        .unwrap();
    assert!(
        dish["contents"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("soup"),
        "{dish}"
    );
    // The process changes its own tool list: re-listed, forwarded, callable.
    let mut rx = fed.events().unwrap();
    call(
        &r,
        "tools/call",
        json!({"name": "kitchen_unlock", "arguments": {}}),
    )
    .await
    .unwrap();
    loop {
        if let BackendEvent::ToolsListChanged = next_event(&mut rx, 30).await {
            break;
        }
    }
    assert!(tool_names(&r).await.contains(&"kitchen_admin".to_owned()));
    let report = fed.report();
    assert!(report.members.iter().all(|m| m.health.is_ok()), "{report}");
}
