//! Events and change: list changes re-list only their member and are forwarded once,
//! resource updates and logs come back mapped, unavailable members are retried with
//! backoff (on tokio's paused clock), members are replaced at run time, views filter
//! events, and every channel stays bounded.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use mcpwire_federation::{
    FailMode, Federation, FederationConfig, FederationError, Glob, Member, MemberHealth, ViewSpec,
};
use mcpwire_model::types::{Implementation, LoggingLevel};
use mcpwire_model::{BackendEvent, LogEntry, McpError, to_raw};
use mcpwire_router::{Backend, CallCtx, Router, Server, ToolError, tool};
use serde_json::json;
use tokio::sync::broadcast::error::TryRecvError;

fn config() -> FederationConfig {
    FederationConfig::new(Implementation::new("gateway", "1"))
}

fn extra(name: &str) -> mcpwire_router::ToolDef {
    tool(name.to_owned(), |_: CallCtx, a: Text| async move {
        Ok::<_, ToolError>(a.text)
    })
}

/// Lets spawned tasks run until `done` holds (bounded).
async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..1000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("condition not reached");
}

/// Lets spawned tasks run what they can (bounded).
async fn settle() {
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
}

fn log(logger: Option<&str>) -> LogEntry {
    LogEntry {
        level: LoggingLevel::Info,
        logger: logger.map(str::to_owned),
        data: to_raw(&"hello"),
    }
}

struct Pair {
    a: Arc<Server>,
    b: Arc<Server>,
    pa: Arc<Probe>,
    pb: Arc<Probe>,
    fed: Arc<Federation>,
}

async fn pair(cfg: FederationConfig) -> Pair {
    let a = server("a", &["one"]);
    let b = server("b", &["two"]);
    let pa = Probe::new(a.clone());
    let pb = Probe::new(b.clone());
    let fed = Federation::new(
        cfg.member(Member::new("a", pa.clone()))
            .member(Member::new("b", pb.clone())),
    )
    .await
    .unwrap();
    Pair { a, b, pa, pb, fed }
}

#[tokio::test]
async fn a_list_change_relists_only_its_member_and_is_forwarded_once() {
    let p = pair(config()).await;
    let mut rx = p.fed.events().unwrap();
    let (a_lists, b_lists) = (p.pa.lists(), p.pb.lists());
    // A burst of changes is taken in one go: one re-list of a's tools, one event.
    for i in 0..50 {
        p.a.add_tool(extra(&format!("new{i}")));
    }
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::ToolsListChanged
    ));
    // A marker from the same member arrives next: nothing else was forwarded between.
    p.a.notify_resource_updated("file:///readme");
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::ResourceUpdated { .. }
    ));
    assert_eq!(p.pa.lists(), a_lists + 1, "one page of a's tools, once");
    assert_eq!(p.pb.lists(), b_lists, "b is not asked");
    let names = tool_names(&Router::new(p.fed.clone())).await;
    assert_eq!(names.len(), 52);
    assert_eq!(names[..2], ["a_one".to_owned(), "a_new0".to_owned()]);
    assert_eq!(names.last().unwrap(), "b_two");
}

#[tokio::test]
async fn a_change_that_does_not_show_is_not_announced() {
    let a = server("a", &["one"]);
    let fed = Federation::new(
        config()
            .member(Member::new("a", a.clone()).exclude(Glob::new("hidden*").unwrap()))
            .member(Member::new("b", server("b", &["two"]))),
    )
    .await
    .unwrap();
    let mut rx = fed.events().unwrap();
    a.add_tool(extra("hidden_tool"));
    a.log(log(None));
    // The log (sent after the change) is the first event: the change was not forwarded.
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::Log(_)
    ));
}

#[tokio::test]
async fn resource_updates_and_logs_come_back_mapped() {
    let p = pair(config()).await;
    let mut rx = p.fed.events().unwrap();
    p.a.notify_resource_updated("file:///readme");
    p.b.notify_resource_updated("file:///readme");
    p.b.notify_resource_updated("b://items/3");
    p.b.log(log(Some("db")));
    p.a.log(log(None));
    let mut uris = Vec::new();
    let mut loggers = Vec::new();
    for _ in 0..5 {
        match next_event(&mut rx, 10).await {
            BackendEvent::ResourceUpdated { uri } => uris.push(uri),
            BackendEvent::Log(e) => loggers.push(e.logger.unwrap()),
            other => panic!("{other:?}"),
        }
    }
    uris.sort();
    assert_eq!(
        uris,
        ["b://items/3", "file:///readme", "mcpwire+b:file:///readme"]
    );
    // Members' events keep their own order; between members there is none.
    loggers.sort();
    assert_eq!(loggers, ["a", "b.db"]);
}

#[tokio::test(start_paused = true)]
async fn an_unavailable_member_is_retried_with_backoff_and_comes_back() {
    let down = Probe::new(server("down", &["t"]));
    down.fail(true);
    let mut cfg = config();
    cfg.retry_initial = Duration::from_secs(1);
    cfg.retry_max = Duration::from_secs(4);
    let fed = Federation::new(
        cfg.member(Member::new("ok", server("ok", &["t"])))
            .member(Member::new("down", down.clone())),
    )
    .await
    .unwrap();
    let r = Router::new(fed.clone());
    assert_eq!(tool_names(&r).await, ["ok_t"]);
    let failures = || match fed.report().members[1].health {
        MemberHealth::Unavailable { failures, .. } => failures,
        MemberHealth::Ok => 0,
    };
    settle().await;
    // After n failures the next attempt comes 1 s, 2 s, 4 s, then 4 s (the cap) later.
    for (n, wait) in [(1, 1), (2, 2), (3, 4), (4, 4)] {
        assert_eq!(failures(), n);
        tokio::time::advance(Duration::from_millis(wait * 1000 - 1)).await;
        settle().await;
        assert_eq!(failures(), n, "no attempt before {wait} s");
        tokio::time::advance(Duration::from_millis(1)).await;
        until(|| failures() == n + 1).await;
        settle().await;
    }
    match &fed.report().members[1].health {
        MemberHealth::Unavailable { failures, reason } => {
            assert_eq!(*failures, 5);
            assert!(reason.contains("probe is down"), "{reason}");
        }
        MemberHealth::Ok => panic!("still down"),
    }
    let mut rx = fed.events().unwrap();
    down.fail(false);
    tokio::time::advance(Duration::from_secs(4)).await;
    assert!(matches!(
        next_event(&mut rx, 1).await,
        BackendEvent::ToolsListChanged
    ));
    assert_eq!(tool_names(&r).await, ["ok_t", "down_t"]);
    assert!(fed.report().members[1].health.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_member_failing_later_is_dropped_under_fail_open_and_refuses_lists_under_fail_closed() {
    for mode in [FailMode::FailOpen, FailMode::FailClosed] {
        let a = server("a", &["one"]);
        let pa = Probe::new(a.clone());
        let fed = Federation::new(
            config()
                .member(Member::new("a", pa.clone()).fail_mode(mode))
                .member(Member::new("b", server("b", &["two"]))),
        )
        .await
        .unwrap();
        let r = Router::new(fed.clone());
        let mut rx = fed.events().unwrap();
        pa.fail(true);
        a.add_tool(extra("late"));
        assert!(matches!(
            next_event(&mut rx, 1).await,
            BackendEvent::ToolsListChanged
        ));
        match mode {
            FailMode::FailOpen => assert_eq!(tool_names(&r).await, ["b_two"]),
            FailMode::FailClosed => {
                let e = call(&r, "tools/list", json!({})).await.unwrap_err();
                assert!(
                    matches!(e, McpError::Unavailable(ref m) if m.contains("member a")),
                    "{e:?}"
                );
                // The other member's calls go on.
                let ok = call(
                    &r,
                    "tools/call",
                    json!({"name": "b_two", "arguments": {"text": "x"}}),
                )
                .await
                .unwrap();
                assert_eq!(text(&ok), "b:two:x");
            }
        }
        pa.fail(false);
        tokio::time::advance(Duration::from_secs(1)).await;
        until(|| fed.report().members[0].health.is_ok()).await;
        assert_eq!(tool_names(&r).await, ["a_one", "a_late", "b_two"]);
    }
}

#[tokio::test]
async fn members_are_replaced_added_and_removed_at_run_time() {
    let p = pair(config()).await;
    let r = Router::new(p.fed.clone());
    let mut rx = p.fed.events().unwrap();
    // Replace b: only the tool list changes (b's prompt and resources are the same).
    p.fed
        .replace_member("b", Some(Member::new("b", server("b", &["three"]))))
        .await
        .unwrap();
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::ToolsListChanged
    ));
    assert_eq!(tool_names(&r).await, ["a_one", "b_three"]);
    let res = call(
        &r,
        "tools/call",
        json!({"name": "b_three", "arguments": {"text": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(text(&res), "b:three:x");
    // The old b is no longer followed: its changes are not announced.
    p.b.add_tool(extra("ghost"));
    p.a.log(log(None));
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::Log(_)
    ));
    // Add c at the end.
    p.fed
        .replace_member("c", Some(Member::new("c", server("c", &["four"]))))
        .await
        .unwrap();
    assert_eq!(tool_names(&r).await, ["a_one", "b_three", "c_four"]);
    // Remove b and c: one member left, so names lose their prefix (conditional).
    p.fed.replace_member("b", None).await.unwrap();
    p.fed.replace_member("c", None).await.unwrap();
    assert_eq!(tool_names(&r).await, ["one"]);
    assert_eq!(p.fed.member_names(), ["a"]);
    // Refused edits keep what serves.
    let down = Probe::new(server("d", &["t"]));
    down.fail(true);
    let e = p
        .fed
        .replace_member(
            "a",
            Some(Member::new("a", down).fail_mode(FailMode::FailClosed)),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(e, FederationError::MemberUnavailable { .. }),
        "{e}"
    );
    assert_eq!(
        p.fed.replace_member("zz", None).await.unwrap_err(),
        FederationError::UnknownMember("zz".into())
    );
    let e = p
        .fed
        .replace_member("x", Some(Member::new("a", server("x", &["t"]))))
        .await
        .unwrap_err();
    assert_eq!(e, FederationError::DuplicateMember("a".into()));
    assert_eq!(tool_names(&r).await, ["one"]);
    assert_eq!(p.pa.lists(), 4, "a was listed once, at the start");
}

#[tokio::test]
async fn views_announce_only_their_own_changes() {
    let p = pair(config()).await;
    let view = p.fed.view(
        &ViewSpec::new("only-a")
            .tools(Glob::new("a_*").unwrap())
            .prompts(Glob::new("a_*").unwrap()),
    );
    let mut rx = view.events().unwrap();
    // b's tools are not in the view: no event; then a prompt change (visible) is the first.
    p.b.add_tool(extra("hidden"));
    p.a.add_prompt(mcpwire_router::PromptDef::new("fresh", |_, _| async {
        Ok(mcpwire_model::types::GetPromptResult {
            description: None,
            messages: Vec::new(),
        })
    }));
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::PromptsListChanged
    ));
    p.a.add_tool(extra("seen"));
    assert!(matches!(
        next_event(&mut rx, 10).await,
        BackendEvent::ToolsListChanged
    ));
    // Updates and logs of members outside the view stay outside.
    p.b.notify_resource_updated("b://items/1");
    p.b.log(log(None));
    p.a.log(log(Some("x")));
    match next_event(&mut rx, 10).await {
        BackendEvent::Log(e) => assert_eq!(e.logger.as_deref(), Some("a.x")),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        tool_names(&Router::new(view.clone())).await,
        ["a_one", "a_seen"]
    );
}

#[tokio::test]
async fn a_flood_of_member_events_stays_bounded_for_a_subscriber_that_never_reads() {
    let p = pair(config()).await;
    let mut idle = p.fed.events().unwrap();
    let mut reader = p.fed.events().unwrap();
    for i in 0..10_000 {
        p.a.notify_resource_updated(format!("a://items/{i}"));
        // Keep the pump and the reader going, as a running server would.
        if i % 64 == 0 {
            tokio::task::yield_now().await;
            while !matches!(reader.try_recv(), Err(TryRecvError::Empty)) {}
        }
    }
    p.a.log(log(Some("last")));
    // The reader keeps up and sees the last event.
    loop {
        match next_event(&mut reader, 10).await {
            BackendEvent::Log(e) if e.logger.as_deref() == Some("a.last") => break,
            _ => {}
        }
    }
    // The idle subscriber holds at most the channel's capacity: it lagged.
    let mut held = 0;
    loop {
        match idle.try_recv() {
            Ok(_) => held += 1,
            Err(TryRecvError::Lagged(_)) => {}
            Err(TryRecvError::Empty) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(held <= 256, "{held} events held");
    assert!(p.fed.info().capabilities.resources.is_some());
}
