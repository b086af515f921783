//! The merged catalog through the router: names, prefixes, collisions, routing of calls,
//! reads, completions and tasks to their owner, pages, filters, renames and views.

mod common;

use std::sync::Arc;

use common::*;
use mcpwire_federation::{
    FailMode, Federation, FederationConfig, FederationError, Glob, Member, NameOrigin, PrefixMode,
    ViewSpec,
};
use mcpwire_model::McpError;
use mcpwire_model::types::Implementation;
use mcpwire_router::{Backend, Router};
use serde_json::json;

fn config() -> FederationConfig {
    FederationConfig::new(Implementation::new("gateway", "1"))
}

fn g(p: &str) -> Glob {
    Glob::new(p).unwrap()
}

async fn three(prefix: PrefixMode) -> Arc<Federation> {
    let cfg = config()
        .prefix(prefix)
        .member(Member::new("fs", server("fs", &["read", "search"])))
        .member(Member::new("gh", server("gh", &["search", "issue"])))
        .member(Member::new("calc", server("calc", &["add"])));
    Federation::new(cfg).await.unwrap()
}

#[tokio::test]
async fn conditional_prefixes_with_several_members_and_routes_each_call_to_its_owner() {
    let fed = three(PrefixMode::Conditional).await;
    let r = Router::new(fed.clone());
    assert_eq!(
        tool_names(&r).await,
        ["fs_read", "fs_search", "gh_search", "gh_issue", "calc_add"]
    );
    for (name, want) in [
        ("fs_search", "fs:search:x"),
        ("gh_search", "gh:search:x"),
        ("calc_add", "calc:add:x"),
    ] {
        let r = call(
            &r,
            "tools/call",
            json!({"name": name, "arguments": {"text": "x"}}),
        )
        .await
        .unwrap();
        assert_eq!(text(&r), want);
    }
    // Unknown names answer as the router would for a single server.
    let e = call(
        &r,
        "tools/call",
        json!({"name": "search", "arguments": {"text": "x"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(e, McpError::ToolNotFound("search".into()));
    // Prompts are merged the same way.
    let prompts = list_all(&r, "prompts/list", "prompts", "name").await;
    assert_eq!(prompts, ["fs_summarize", "gh_summarize", "calc_summarize"]);
    let p = call(
        &r,
        "prompts/get",
        json!({"name": "gh_summarize", "arguments": {"topic": "t"}}),
    )
    .await
    .unwrap();
    assert_eq!(p["messages"][0]["content"]["text"], "gh summarizes t");
    // Invalid arguments name the exposed tool.
    let e = call(
        &r,
        "tools/call",
        json!({"name": "fs_read", "arguments": {"text": 1}}),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e, McpError::InvalidToolParams { ref tool, .. } if tool == "fs_read"),
        "{e:?}"
    );
}

#[tokio::test]
async fn one_member_is_unprefixed_in_conditional_and_prefixed_in_always() {
    let one = |prefix| {
        Federation::new(
            config()
                .prefix(prefix)
                .member(Member::new("fs", server("fs", &["read"]))),
        )
    };
    let fed = one(PrefixMode::Conditional).await.unwrap();
    assert_eq!(tool_names(&Router::new(fed)).await, ["read"]);
    let fed = one(PrefixMode::Always).await.unwrap();
    assert_eq!(tool_names(&Router::new(fed)).await, ["fs_read"]);
}

#[tokio::test]
async fn never_mode_resolves_collisions_in_member_order_and_reports_them() {
    let fed = three(PrefixMode::Never).await;
    let r = Router::new(fed.clone());
    assert_eq!(
        tool_names(&r).await,
        ["read", "search", "gh_search", "issue", "add"]
    );
    // The owner index routes without asking anyone else.
    let r2 = call(
        &r,
        "tools/call",
        json!({"name": "gh_search", "arguments": {"text": "q"}}),
    )
    .await
    .unwrap();
    assert_eq!(text(&r2), "gh:search:q");
    let report = fed.report();
    let c = &report.collisions[0];
    assert_eq!((c.kind, c.collision.name.as_str()), ("tool", "search"));
    assert_eq!(c.collision.kept_by, "fs");
    assert_eq!(c.collision.member, "gh");
    assert_eq!(c.collision.exposed_as.as_deref(), Some("gh_search"));
    let moved = report
        .tools
        .iter()
        .find(|t| t.exposed == "gh_search")
        .unwrap();
    assert_eq!(
        (moved.member.as_str(), moved.original.as_str()),
        ("gh", "search")
    );
    assert_eq!(moved.origin, NameOrigin::Collision);
    // Prompts collide too (every member has `summarize`).
    assert_eq!(
        list_all(&r, "prompts/list", "prompts", "name").await,
        ["summarize", "gh_summarize", "calc_summarize"]
    );
    let text_report = report.to_string();
    assert!(text_report.contains("kept by fs"), "{text_report}");
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["collisions"][0]["kept_by"], "fs");
    assert_eq!(json["members"][0]["health"]["status"], "ok");
}

#[tokio::test]
async fn calls_never_fan_out() {
    let a = Probe::new(server("a", &["one"]));
    let b = Probe::new(server("b", &["two"]));
    let fed = Federation::new(
        config()
            .prefix(PrefixMode::Never)
            .member(Member::new("a", a.clone()))
            .member(Member::new("b", b.clone())),
    )
    .await
    .unwrap();
    let r = Router::new(fed);
    for _ in 0..3 {
        call(
            &r,
            "tools/call",
            json!({"name": "two", "arguments": {"text": "x"}}),
        )
        .await
        .unwrap();
    }
    call(&r, "tools/call", json!({"name": "nobody", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!((a.calls(), b.calls()), (0, 3));
    assert!(b.seen.lock().unwrap().iter().all(|s| s.contains("\"two\"")));
}

#[tokio::test]
async fn long_and_odd_names_are_valid_and_still_callable() {
    let long = "a_very_long_tool_name_that_goes_on_and_on_well_past_the_sixty_four_limit";
    let fed = Federation::new(
        config()
            .prefix(PrefixMode::Always)
            .member(Member::new("m", server("m", &[long, "v1.add"]))),
    )
    .await
    .unwrap();
    let r = Router::new(fed.clone());
    let names = tool_names(&r).await;
    assert!(
        names.iter().all(|n| mcpwire_federation::is_valid_name(n)),
        "{names:?}"
    );
    assert_eq!(names[0].len(), 64);
    assert_eq!(names[1], "m_v1_add");
    for (exposed, original) in names.iter().zip([long, "v1.add"]) {
        let res = call(
            &r,
            "tools/call",
            json!({"name": exposed, "arguments": {"text": "t"}}),
        )
        .await
        .unwrap();
        assert_eq!(text(&res), format!("m:{original}:t"));
    }
    let origins: Vec<_> = fed.report().tools.iter().map(|t| t.origin).collect();
    assert_eq!(origins, [NameOrigin::Shortened, NameOrigin::Sanitized]);
    // Stable across builds: the same catalog gives the same names.
    let again = Federation::new(
        config()
            .prefix(PrefixMode::Always)
            .member(Member::new("m", server("m", &[long, "v1.add"]))),
    )
    .await
    .unwrap();
    assert_eq!(tool_names(&Router::new(again)).await, names);
}

#[tokio::test]
async fn contested_resource_uris_are_rewritten_reversibly() {
    let fed = three(PrefixMode::Conditional).await;
    let r = Router::new(fed.clone());
    let uris = list_all(&r, "resources/list", "resources", "uri").await;
    assert_eq!(
        uris,
        [
            "file:///readme",
            "mcpwire+gh:file:///readme",
            "mcpwire+calc:file:///readme"
        ]
    );
    let read = call(&r, "resources/read", json!({"uri": "file:///readme"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "fs readme");
    let read = call(
        &r,
        "resources/read",
        json!({"uri": "mcpwire+gh:file:///readme"}),
    )
    .await
    .unwrap();
    assert_eq!(read["contents"][0]["text"], "gh readme");
    // The contents carry the URI the client asked for.
    assert_eq!(read["contents"][0]["uri"], "mcpwire+gh:file:///readme");
    // Templates are each member's own (no collision): reads route by expansion.
    let templates = list_all(
        &r,
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
    )
    .await;
    assert_eq!(
        templates,
        ["fs://items/{id}", "gh://items/{id}", "calc://items/{id}"]
    );
    let read = call(&r, "resources/read", json!({"uri": "gh://items/42"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "gh item 42");
    let e = call(&r, "resources/read", json!({"uri": "nobody://x"}))
        .await
        .unwrap_err();
    assert_eq!(e, McpError::ResourceNotFound("nobody://x".into()));
    // Subscriptions go to the owner under its own URI.
    call(
        &r,
        "resources/subscribe",
        json!({"uri": "mcpwire+calc:file:///readme"}),
    )
    .await
    .unwrap();
    let e = call(&r, "resources/subscribe", json!({"uri": "nobody://x"}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::ResourceNotFound(_)));
    let report = fed.report();
    assert_eq!(
        report
            .collisions
            .iter()
            .filter(|c| c.kind == "resource")
            .count(),
        2
    );
}

#[tokio::test]
async fn contested_templates_are_rewritten_and_their_expansions_route_back() {
    // Two members with the same template text.
    let fed = Federation::new(
        config()
            .member(Member::new("one", server("x", &["t"])))
            .member(Member::new("two", server("x", &["t"]))),
    )
    .await
    .unwrap();
    let r = Router::new(fed);
    let templates = list_all(
        &r,
        "resources/templates/list",
        "resourceTemplates",
        "uriTemplate",
    )
    .await;
    assert_eq!(templates, ["x://items/{id}", "mcpwire+two:x://items/{id}"]);
    let read = call(
        &r,
        "resources/read",
        json!({"uri": "mcpwire+two:x://items/7"}),
    )
    .await
    .unwrap();
    assert_eq!(read["contents"][0]["uri"], "mcpwire+two:x://items/7");
    // Completions route by the template they refer to, under its own text.
    let c = call(
        &r,
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "mcpwire+two:x://items/{id}"},
               "argument": {"name": "id", "value": "a"}}),
    )
    .await
    .unwrap();
    assert_eq!(c["completion"]["values"], json!(["a1", "a2"]));
}

#[tokio::test]
async fn completions_route_by_prompt() {
    let fed = three(PrefixMode::Conditional).await;
    let r = Router::new(fed);
    let c = call(
        &r,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "gh_summarize"},
               "argument": {"name": "topic", "value": "g"}}),
    )
    .await
    .unwrap();
    assert_eq!(c["completion"]["values"], json!(["gh-topic"]));
    let e = call(
        &r,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "summarize"},
               "argument": {"name": "topic", "value": ""}}),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, McpError::InvalidParams(_)), "{e:?}");
}

#[tokio::test]
async fn pages_run_across_members_in_a_stable_order() {
    let names: Vec<String> = (0..7).map(|i| format!("t{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut cfg = config()
        .member(Member::new("a", server("a", &refs[..3])))
        .member(Member::new("b", server("b", &refs[3..])));
    cfg.page_size = 2;
    let fed = Federation::new(cfg).await.unwrap();
    let r = Router::new(fed);
    let first = call(&r, "tools/list", json!({})).await.unwrap();
    assert_eq!(first["tools"].as_array().unwrap().len(), 2);
    assert_eq!(first["nextCursor"], "1");
    assert_eq!(
        tool_names(&r).await,
        ["a_t0", "a_t1", "a_t2", "b_t3", "b_t4", "b_t5", "b_t6"]
    );
    let e = call(&r, "tools/list", json!({"cursor": "99"}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::InvalidParams(_)));
    let mut bad = config();
    bad.page_size = 0;
    assert_eq!(
        Federation::new(bad).await.unwrap_err(),
        FederationError::InvalidPageSize(0)
    );
}

#[tokio::test]
async fn filters_and_renames() {
    let fed = Federation::new(
        config()
            .member(
                Member::new("fs", server("fs", &["read", "write", "delete"]))
                    .exclude(g("del*"))
                    .rename("read", "cat"),
            )
            .member(
                Member::new("gh", server("gh", &["search", "issue"]))
                    .include(g("search"))
                    .include(g("file:*")),
            ),
    )
    .await
    .unwrap();
    let r = Router::new(fed.clone());
    assert_eq!(tool_names(&r).await, ["cat", "fs_write", "gh_search"]);
    let res = call(
        &r,
        "tools/call",
        json!({"name": "cat", "arguments": {"text": "x"}}),
    )
    .await
    .unwrap();
    assert_eq!(text(&res), "fs:read:x");
    // gh's include list keeps its file: resource and drops its prompt and template.
    let prompts = list_all(&r, "prompts/list", "prompts", "name").await;
    assert_eq!(prompts, ["fs_summarize"]);
    let report = fed.report();
    assert_eq!(report.members[0].filtered_out, 1);
    assert_eq!(report.members[1].filtered_out, 3);
    let renamed: Vec<_> = report.renamed().map(|(_, i)| i.exposed.clone()).collect();
    assert!(renamed.contains(&"cat".to_owned()), "{renamed:?}");
}

#[tokio::test]
async fn bad_configurations_are_refused_with_reasons() {
    let s = || server("s", &["t"]);
    let cases = [
        (
            config().member(Member::new("a b", s())),
            FederationError::InvalidMemberName("a b".into()),
        ),
        (
            config()
                .member(Member::new("a", s()))
                .member(Member::new("a", s())),
            FederationError::DuplicateMember("a".into()),
        ),
        (
            config()
                .member(Member::new("a", s()).rename("t", "x"))
                .member(Member::new("b", s()).rename("t", "x")),
            FederationError::RenameConflict {
                exposed: "x".into(),
                first: "a/t".into(),
                second: "b/t".into(),
            },
        ),
    ];
    for (cfg, want) in cases {
        assert_eq!(Federation::new(cfg).await.unwrap_err(), want);
    }
    let bad = config().member(Member::new("a", s()).rename("t", "no spaces"));
    let e = Federation::new(bad).await.unwrap_err();
    assert!(e.to_string().contains("cannot rename"), "{e}");
}

#[tokio::test]
async fn views_serve_a_subset_and_hide_the_rest() {
    let fed = three(PrefixMode::Conditional).await;
    let spec = ViewSpec::new("coder")
        .tools(g("fs_*"))
        .tools(g("calc_add"))
        .member("gh")
        .resources(g("fs://*"));
    let view = fed.view(&spec);
    let r = Router::new(view.clone());
    assert_eq!(
        tool_names(&r).await,
        ["fs_read", "fs_search", "gh_search", "gh_issue", "calc_add"]
    );
    let narrow = fed.view(&ViewSpec::new("narrow").tools(g("fs_read")));
    let rn = Router::new(narrow.clone());
    assert_eq!(tool_names(&rn).await, ["fs_read"]);
    // Outside the view: the same answers as for names that do not exist.
    let hidden = call(
        &rn,
        "tools/call",
        json!({"name": "gh_search", "arguments": {"text": "x"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(hidden, McpError::ToolNotFound("gh_search".into()));
    assert!(narrow.tool_routing("gh_search").is_none());
    assert!(
        list_all(&rn, "prompts/list", "prompts", "name")
            .await
            .is_empty()
    );
    let e = call(
        &rn,
        "prompts/get",
        json!({"name": "fs_summarize", "arguments": {"topic": "t"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(e, McpError::PromptNotFound("fs_summarize".into()));
    let e = call(&rn, "resources/read", json!({"uri": "file:///readme"}))
        .await
        .unwrap_err();
    assert_eq!(e, McpError::ResourceNotFound("file:///readme".into()));
    // The wider view reads gh's resources and fs's template, not calc's.
    let read = call(&r, "resources/read", json!({"uri": "fs://items/1"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "fs item 1");
    let read = call(
        &r,
        "resources/read",
        json!({"uri": "mcpwire+gh:file:///readme"}),
    )
    .await
    .unwrap();
    assert_eq!(read["contents"][0]["text"], "gh readme");
    let e = call(&r, "resources/read", json!({"uri": "calc://items/1"}))
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::ResourceNotFound(_)));
    // Instructions and the report name only what the view shows.
    assert!(narrow.instructions().contains("`fs`"));
    assert!(!narrow.instructions().contains("`gh`"));
    assert_eq!(narrow.report().members.len(), 1);
    assert_eq!(narrow.server_info().name, "narrow");
}

#[tokio::test]
async fn task_ids_map_to_the_member_that_made_them() {
    let tasks = TaskMaker::new();
    let fed = Federation::new(
        config()
            .member(Member::new("fs", server("fs", &["read"])))
            .member(Member::new("up", tasks.clone())),
    )
    .await
    .unwrap();
    let r = Router::new(fed);
    let created = call(
        &r,
        "tools/call",
        json!({"name": "up_slow", "arguments": {}}),
    )
    .await
    .unwrap();
    assert_eq!(created["taskId"], "up.t-1");
    let got = call(&r, "tasks/get", json!({"taskId": "up.t-1"}))
        .await
        .unwrap();
    assert_eq!(got["taskId"], "up.t-1");
    assert_eq!(got["status"], "completed");
    assert_eq!(*tasks.asked.lock().unwrap(), ["t-1"]);
    for unknown in ["fs.t-1", "nobody.t-1", "t-1"] {
        let e = call(&r, "tasks/get", json!({"taskId": unknown}))
            .await
            .unwrap_err();
        assert!(
            matches!(e, McpError::InvalidParams(_) | McpError::MethodNotFound(_)),
            "{e:?}"
        );
    }
    assert_eq!(tasks.asked.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn capabilities_and_instructions_describe_the_members() {
    let fed = Federation::new(
        config()
            .member(Member::new("fs", server("fs", &["read"])).instructions("Use fs for files."))
            .member(Member::new("up", TaskMaker::new())),
    )
    .await
    .unwrap();
    let caps = &fed.info().capabilities;
    assert_eq!(caps.tools.as_ref().unwrap().list_changed, Some(true));
    assert!(caps.prompts.is_some() && caps.completions.is_some());
    assert_eq!(caps.resources.as_ref().unwrap().subscribe, Some(true));
    assert!(
        caps.extensions
            .as_ref()
            .unwrap()
            .get(mcpwire_router::TASKS_EXTENSION)
            .is_some()
    );
    let i = fed.instructions();
    assert!(
        i.contains("`fs`") && i.contains("`up`") && i.contains("## fs\nUse fs for files."),
        "{i}"
    );
    assert!(fed.server_info().description.unwrap().contains("fs, up"));
    // Tools only: no prompts or resources offered, unless asked to offer everything.
    let only_tools = || config().member(Member::new("up", TaskMaker::new()));
    let fed = Federation::new(only_tools()).await.unwrap();
    assert!(fed.info().capabilities.prompts.is_none());
    let mut all = only_tools();
    all.advertise_all = true;
    let fed = Federation::new(all).await.unwrap();
    assert!(fed.info().capabilities.prompts.is_some());
    // Natives alone run no tasks of their own; offering everything includes the tasks
    // extension (a member that runs its own may join), so a router passes ids it does not
    // hold to the federation.
    let natives = || config().member(Member::new("fs", server("fs", &["read"])));
    let fed_natives = Federation::new(natives()).await.unwrap();
    assert!(!mcpwire_router::offers_tasks_extension(
        &fed_natives.info().capabilities
    ));
    let mut all = natives();
    all.advertise_all = true;
    let fed_natives = Federation::new(all).await.unwrap();
    assert!(mcpwire_router::offers_tasks_extension(
        &fed_natives.info().capabilities
    ));
    let r = Router::new(fed);
    assert!(
        list_all(&r, "prompts/list", "prompts", "name")
            .await
            .is_empty()
    );
}

#[tokio::test]
async fn a_fail_closed_member_that_cannot_list_fails_the_build() {
    let down = Probe::new(server("down", &["t"]));
    down.fail(true);
    let e = Federation::new(
        config()
            .member(Member::new("ok", server("ok", &["t"])))
            .member(Member::new("down", down.clone()).fail_mode(FailMode::FailClosed)),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(e, FederationError::MemberUnavailable { ref member, .. } if member == "down"),
        "{e}"
    );
    // Fail-open: served without it.
    let fed = Federation::new(
        config()
            .member(Member::new("ok", server("ok", &["t"])))
            .member(Member::new("down", down)),
    )
    .await
    .unwrap();
    assert_eq!(tool_names(&Router::new(fed.clone())).await, ["ok_t"]);
    let report = fed.report();
    assert!(!report.members[1].health.is_ok());
    assert!(report.to_string().contains("UNAVAILABLE"), "{report}");
    assert!(fed.instructions().contains("`down` (unavailable)"));
}
