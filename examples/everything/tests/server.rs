//! Calls the fixture server through the router, as a session would.

use std::sync::Arc;

use mcpwire::model::types::ClientCapabilities;
use mcpwire::model::{McpError, Method, Reply, Revision, codes, to_raw};
use mcpwire::router::{CallCtx, McpCall, McpReply, Router};
use mcpwire_example_everything::{IMG, server};
use serde_json::{Value, json};

fn router() -> Router {
    Router::new(server())
}

async fn call_with(router: &Router, method: &str, params: Value, ctx: CallCtx) -> McpReply {
    router
        .call(McpCall::new(
            Method::parse(method),
            Some(to_raw(&params)),
            ctx,
        ))
        .await
}

async fn call(router: &Router, method: &str, params: Value) -> McpReply {
    call_with(router, method, params, CallCtx::detached()).await
}

/// The final result of a successful request.
async fn ok(router: &Router, method: &str, params: Value) -> Value {
    match call(router, method, params).await {
        Ok(Reply::Complete(raw)) => serde_json::from_str(raw.get()).unwrap(),
        other => panic!("{method}: expected a complete result, got {other:?}"),
    }
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap()
}

/// A 2026-07-28 context whose client declares `caps`.
fn stateless_ctx(caps: Value) -> CallCtx {
    let caps: ClientCapabilities = serde_json::from_value(caps).unwrap();
    let cancel = CallCtx::detached().cancellation_token().clone();
    CallCtx::new(Revision::V2026_07_28, Arc::new(caps), cancel, None)
}

fn all_caps() -> Value {
    json!({ "sampling": {}, "elicitation": {}, "roots": { "listChanged": true } })
}

enum Round {
    Complete(Value),
    InputRequired(Value),
}

async fn stateless(router: &Router, method: &str, params: Value, caps: Value) -> Round {
    match call_with(router, method, params, stateless_ctx(caps)).await {
        Ok(Reply::Complete(raw)) => Round::Complete(serde_json::from_str(raw.get()).unwrap()),
        Ok(Reply::InputRequired(raw)) => {
            Round::InputRequired(serde_json::from_str(raw.get()).unwrap())
        }
        Err(e) => panic!("{method}: unexpected error {e:?}"),
    }
}

fn input_required(r: Round) -> Value {
    match r {
        Round::InputRequired(v) => v,
        Round::Complete(v) => panic!("expected input_required, got {v}"),
    }
}

fn complete(r: Round) -> Value {
    match r {
        Round::Complete(v) => v,
        Round::InputRequired(v) => panic!("expected a complete result, got {v}"),
    }
}

#[test]
fn builds_outside_a_runtime() {
    let s = server();
    assert_eq!(s.server_info().name, "mcpwire-everything");
    assert_eq!(s.server_info().version, env!("CARGO_PKG_VERSION"));
    let names = s.tool_names();
    for name in [
        "echo",
        "add",
        "test_simple_text",
        "test_error_handling",
        "json_schema_2020_12_tool",
        "test_missing_capability",
        "test_input_required_result_multiple_inputs",
        "test_trigger_tool_change",
        "test_trigger_prompt_change",
    ] {
        assert!(names.iter().any(|n| n == name), "missing tool {name}");
    }
}

#[tokio::test]
async fn simple_text_without_arguments() {
    let r = router();
    let result = ok(&r, "tools/call", json!({ "name": "test_simple_text" })).await;
    assert_eq!(
        text_of(&result),
        "This is a simple text response for testing."
    );
    assert!(result.get("isError").is_none());
}

#[tokio::test]
async fn echo_returns_its_text() {
    let r = router();
    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "echo", "arguments": { "text": "hello" } }),
    )
    .await;
    assert_eq!(
        result["content"],
        json!([{ "type": "text", "text": "hello" }])
    );
}

#[tokio::test]
async fn add_returns_structured_content() {
    let r = router();
    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "add", "arguments": { "a": 1.5, "b": 2 } }),
    )
    .await;
    assert_eq!(result["structuredContent"], json!({ "sum": 3.5 }));

    let list = ok(&r, "tools/list", json!({})).await;
    let add = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "add")
        .unwrap();
    assert_eq!(add["annotations"]["readOnlyHint"], true);
    assert_eq!(add["annotations"]["idempotentHint"], true);
    assert!(add["outputSchema"]["properties"]["sum"].is_object());
}

#[tokio::test]
async fn error_handling_is_a_tool_error() {
    let r = router();
    let reply = call(&r, "tools/call", json!({ "name": "test_error_handling" })).await;
    match reply {
        Err(McpError::ToolFailed { tool, message }) => {
            assert_eq!(tool, "test_error_handling");
            assert_eq!(
                message,
                "This tool intentionally returns an error for testing"
            );
        }
        other => panic!("expected ToolFailed, got {other:?}"),
    }
}

#[tokio::test]
async fn every_tool_and_prompt_has_a_description() {
    let r = router();
    let tools = ok(&r, "tools/list", json!({})).await;
    for t in tools["tools"].as_array().unwrap() {
        assert!(
            t["description"].is_string(),
            "tool without description: {t}"
        );
        assert!(
            t["inputSchema"].is_object(),
            "tool without inputSchema: {t}"
        );
    }
    let prompts = ok(&r, "prompts/list", json!({})).await;
    for p in prompts["prompts"].as_array().unwrap() {
        assert!(
            p["description"].is_string(),
            "prompt without description: {p}"
        );
    }
}

#[tokio::test]
async fn json_schema_2020_12_is_listed_verbatim_and_validates() {
    let r = router();
    let tools = ok(&r, "tools/list", json!({})).await;
    let t = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap();
    let s = &t["inputSchema"];
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert_eq!(s["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(s["additionalProperties"], false);
    assert!(s["allOf"].is_array() && s["if"].is_object());

    let good = json!({ "name": "Ann", "contactMethod": "email", "email": "a@example.com" });
    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "json_schema_2020_12_tool", "arguments": good }),
    )
    .await;
    assert!(text_of(&result).starts_with("JSON Schema 2020-12 tool called with: "));

    let bad = json!({ "name": "Ann", "contactMethod": "phone", "email": "a@example.com" });
    let reply = call(
        &r,
        "tools/call",
        json!({ "name": "json_schema_2020_12_tool", "arguments": bad }),
    )
    .await;
    assert!(
        matches!(reply, Err(McpError::InvalidToolParams { .. })),
        "{reply:?}"
    );
}

#[tokio::test]
async fn sampling_without_a_client_is_reported_as_text() {
    let r = router();
    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "test_sampling", "arguments": { "prompt": "hi" } }),
    )
    .await;
    assert!(text_of(&result).starts_with("Sampling not supported or error: "));
}

#[tokio::test]
async fn resources_read() {
    let r = router();
    let text = ok(&r, "resources/read", json!({ "uri": "test://static-text" })).await;
    assert_eq!(
        text["contents"][0],
        json!({
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        })
    );
    let blob = ok(
        &r,
        "resources/read",
        json!({ "uri": "test://static-binary" }),
    )
    .await;
    assert_eq!(blob["contents"][0]["blob"], IMG);
    assert_eq!(blob["contents"][0]["mimeType"], "image/png");
}

#[tokio::test]
async fn template_read() {
    let r = router();
    let result = ok(
        &r,
        "resources/read",
        json!({ "uri": "test://template/123/data" }),
    )
    .await;
    let c = &result["contents"][0];
    assert_eq!(c["uri"], "test://template/123/data");
    assert_eq!(c["mimeType"], "application/json");
    assert_eq!(
        c["text"],
        r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#
    );
    let templates = ok(&r, "resources/templates/list", json!({})).await;
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "test://template/{id}/data"
    );
}

#[tokio::test]
async fn prompt_with_arguments() {
    let r = router();
    let result = ok(
        &r,
        "prompts/get",
        json!({
            "name": "test_prompt_with_arguments",
            "arguments": { "arg1": "testValue1", "arg2": "testValue2" },
        }),
    )
    .await;
    assert_eq!(
        result["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
    );
    let missing = call(
        &r,
        "prompts/get",
        json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "x" } }),
    )
    .await;
    assert!(matches!(missing, Err(McpError::InvalidParams(_))));
}

#[tokio::test]
async fn completion() {
    let r = router();
    let prompt = ok(
        &r,
        "completion/complete",
        json!({
            "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" },
            "argument": { "name": "arg1", "value": "testi" },
        }),
    )
    .await;
    assert_eq!(prompt["completion"]["values"], json!(["testing"]));

    let template = ok(
        &r,
        "completion/complete",
        json!({
            "ref": { "type": "ref/resource", "uri": "test://template/{id}/data" },
            "argument": { "name": "id", "value": "" },
        }),
    )
    .await;
    assert_eq!(template["completion"]["values"], json!(["1", "2", "3"]));
}

#[tokio::test]
async fn trigger_tool_change_toggles_the_dynamic_tool() {
    let s = server();
    let r = Router::new(s.clone());
    let mut events = r.events().unwrap();
    let has = |s: &mcpwire::router::Server| s.tool_names().iter().any(|n| n == "test_dynamic_tool");
    assert!(!has(&s));
    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "test_trigger_tool_change" }),
    )
    .await;
    assert_eq!(text_of(&result), "Mutation triggered");
    assert!(has(&s));
    assert!(events.try_recv().is_ok(), "no list_changed event");
    ok(
        &r,
        "tools/call",
        json!({ "name": "test_trigger_tool_change" }),
    )
    .await;
    assert!(!has(&s));

    let result = ok(
        &r,
        "tools/call",
        json!({ "name": "test_trigger_prompt_change" }),
    )
    .await;
    assert_eq!(text_of(&result), "Mutation triggered");
    let prompts = ok(&r, "prompts/list", json!({})).await;
    assert!(
        prompts["prompts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "test_dynamic_prompt")
    );
}

#[tokio::test]
async fn slow_tool_stops_when_cancelled() {
    let r = router();
    let done = ok(
        &r,
        "tools/call",
        json!({ "name": "test_slow", "arguments": { "seconds": 0.01 } }),
    )
    .await;
    assert_eq!(text_of(&done), "done");

    let ctx = CallCtx::detached();
    let token = ctx.cancellation_token().clone();
    let fut = call_with(
        &r,
        "tools/call",
        json!({ "name": "test_slow", "arguments": { "seconds": 60 } }),
        ctx,
    );
    token.cancel();
    let reply = tokio::time::timeout(std::time::Duration::from_secs(5), fut)
        .await
        .expect("test_slow ignored cancellation");
    assert!(matches!(reply, Err(McpError::Cancelled)), "{reply:?}");
}

// ---- 2026-07-28 ----

#[tokio::test]
async fn missing_capability_is_refused_with_32021() {
    let r = router();
    let reply = call_with(
        &r,
        "tools/call",
        json!({ "name": "test_missing_capability", "arguments": {} }),
        stateless_ctx(json!({ "elicitation": {} })),
    )
    .await;
    let Err(err @ McpError::MissingCapability { .. }) = reply else {
        panic!("expected a missing capability, got {reply:?}")
    };
    let e = err.to_wire(Revision::V2026_07_28);
    assert_eq!(e.code, codes::MISSING_REQUIRED_CLIENT_CAPABILITY);
    let data: Value = serde_json::from_str(e.data.unwrap().get()).unwrap();
    assert_eq!(data, json!({ "requiredCapabilities": { "sampling": {} } }));
}

#[tokio::test]
async fn elicitation_round_trip() {
    let r = router();
    let name = "test_input_required_result_elicitation";
    let r1 = input_required(stateless(&r, "tools/call", json!({ "name": name }), all_caps()).await);
    assert_eq!(r1["resultType"], "input_required");
    assert_eq!(
        r1["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = r1["requestState"].clone();

    // A wrong key or an unusable answer is asked for again.
    for responses in [json!({ "wrong_key": {} }), json!({ "user_name": 12345 })] {
        let again = stateless(
            &r,
            "tools/call",
            json!({ "name": name, "inputResponses": responses, "requestState": state }),
            all_caps(),
        )
        .await;
        assert!(input_required(again)["inputRequests"]["user_name"].is_object());
    }

    let answer = json!({ "action": "accept", "content": { "name": "Alice" } });
    let done = complete(
        stateless(
            &r,
            "tools/call",
            json!({
                "name": name,
                "inputResponses": { "user_name": answer, "unknown_extra_key": {} },
                "requestState": state,
            }),
            all_caps(),
        )
        .await,
    );
    assert_eq!(text_of(&done), "Hello, Alice!");
}

#[tokio::test]
async fn multiple_inputs_are_asked_in_one_round() {
    let r = router();
    let name = "test_input_required_result_multiple_inputs";
    let r1 = input_required(stateless(&r, "tools/call", json!({ "name": name }), all_caps()).await);
    let reqs = &r1["inputRequests"];
    assert_eq!(reqs["user_name"]["method"], "elicitation/create");
    assert_eq!(reqs["greeting"]["method"], "sampling/createMessage");
    assert_eq!(reqs["client_roots"]["method"], "roots/list");
    assert!(r1["requestState"].is_string());

    let done = complete(
        stateless(
            &r,
            "tools/call",
            json!({
                "name": name,
                "inputResponses": {
                    "user_name": { "action": "accept", "content": { "name": "Alice" } },
                    "greeting": {
                        "role": "assistant",
                        "content": { "type": "text", "text": "Hello there!" },
                        "model": "test-model",
                        "stopReason": "endTurn",
                    },
                    "client_roots": { "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] },
                },
                "requestState": r1["requestState"],
            }),
            all_caps(),
        )
        .await,
    );
    assert_eq!(
        text_of(&done),
        "Name: Alice; Greeting: Hello there!; Roots: 1"
    );
}

#[tokio::test]
async fn multi_round_carries_earlier_answers() {
    let r = router();
    let name = "test_input_required_result_multi_round";
    let r1 = input_required(stateless(&r, "tools/call", json!({ "name": name }), all_caps()).await);
    assert!(r1["inputRequests"]["step1"].is_object());
    let r2 = input_required(
        stateless(
            &r,
            "tools/call",
            json!({
                "name": name,
                "inputResponses": { "step1": { "action": "accept", "content": { "name": "Alice" } } },
                "requestState": r1["requestState"],
            }),
            all_caps(),
        )
        .await,
    );
    assert!(r2["inputRequests"]["step2"].is_object());
    assert!(r2["inputRequests"].get("step1").is_none());
    assert_ne!(r2["requestState"], r1["requestState"]);
    let done = complete(
        stateless(
            &r,
            "tools/call",
            json!({
                "name": name,
                "inputResponses": { "step2": { "action": "accept", "content": { "color": "blue" } } },
                "requestState": r2["requestState"],
            }),
            all_caps(),
        )
        .await,
    );
    assert_eq!(
        text_of(&done),
        "Multi-round complete for Alice who likes blue"
    );
}

#[tokio::test]
async fn request_state_and_tampering() {
    let r = router();
    for name in [
        "test_input_required_result_request_state",
        "test_input_required_result_tampered_state",
    ] {
        let r1 =
            input_required(stateless(&r, "tools/call", json!({ "name": name }), all_caps()).await);
        assert_eq!(
            r1["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        let state = r1["requestState"].as_str().unwrap().to_owned();
        let answer = json!({ "confirm": { "action": "accept", "content": { "ok": true } } });
        let done = complete(
            stateless(
                &r,
                "tools/call",
                json!({ "name": name, "inputResponses": answer, "requestState": state }),
                all_caps(),
            )
            .await,
        );
        assert!(text_of(&done).contains("state-ok"));

        let tampered = call_with(
            &r,
            "tools/call",
            json!({ "name": name, "inputResponses": answer, "requestState": format!("{state}-TAMPERED") }),
            stateless_ctx(all_caps()),
        )
        .await;
        assert!(
            matches!(tampered, Err(McpError::InvalidParams(_))),
            "{tampered:?}"
        );
    }
}

#[tokio::test]
async fn capabilities_tool_never_elicits_without_the_capability() {
    let r = router();
    let r1 = input_required(
        stateless(
            &r,
            "tools/call",
            json!({ "name": "test_input_required_result_capabilities" }),
            json!({ "sampling": {} }),
        )
        .await,
    );
    let methods: Vec<&Value> = r1["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| &v["method"])
        .collect();
    assert_eq!(methods, vec!["sampling/createMessage"]);
}

#[tokio::test]
async fn prompt_asks_for_context() {
    let r = router();
    let name = "test_input_required_result_prompt";
    let r1 =
        input_required(stateless(&r, "prompts/get", json!({ "name": name }), all_caps()).await);
    assert_eq!(
        r1["inputRequests"]["user_context"]["method"],
        "elicitation/create"
    );
    let done = complete(
        stateless(
            &r,
            "prompts/get",
            json!({
                "name": name,
                "inputResponses": { "user_context": { "action": "accept", "content": { "context": "testing" } } },
                "requestState": r1["requestState"],
            }),
            all_caps(),
        )
        .await,
    );
    assert!(
        done["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("testing")
    );
}
