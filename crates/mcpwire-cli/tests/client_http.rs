//! The library client (`mcpwire_client`) over Streamable HTTP against the demo, in both
//! eras: negotiation (fixed and discovered), server→client requests arriving on a call's SSE
//! stream and answered by POST, `input_required` rounds, tasks, progress, and a call whose
//! stream the server closes mid-call (resumed with `Last-Event-ID`). A scripted server
//! (`stub`) covers what the demo cannot show: a server without `server/discover` (the
//! fallback to `initialize`) and a stream that drops after an event, resumed from that
//! event's id after the server's `retry:`.

mod common;

use std::time::Duration;

use mcpwire_client::{
    Answer, Client, ClientEra, ClientEvent, ClientEvents, ClientOptions, EraChoice, RequestOptions,
    Target,
};
use mcpwire_model::{McpError, Raw, to_raw};
use mcpwire_testkit::serve::{self, Served, serve};
use serde_json::{Value, json};

/// Every test ends within this, whatever the client does.
const LIMIT: Duration = Duration::from_secs(30);

fn options(era: EraChoice) -> ClientOptions {
    let mut o = ClientOptions::with_handshake_timeout(Duration::from_secs(10));
    o.era = era;
    o.capabilities.elicitation = Some(json!({ "form": { "applyDefaults": true } }));
    o.capabilities.sampling = Some(json!({}));
    o.capabilities.roots = Some(json!({}));
    o
}

async fn connect(url: &str, era: EraChoice) -> (Client, ClientEvents) {
    let target = Target::parse(url).unwrap_or_else(|e| panic!("{e}"));
    Client::connect(&target, &options(era))
        .await
        .unwrap_or_else(|e| panic!("connect {url} ({era:?}): {e}"))
}

/// The demo served in-process over HTTP; its URL.
async fn demo() -> (Served, String) {
    let served = serve(common::demo_service(|_| {}).await, serve::http()).await;
    let url = served.url();
    (served, url)
}

fn raw(v: Value) -> Raw {
    to_raw(&v)
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// What a user who says yes to everything answers: `name`/`response`/`color` filled in,
/// a canned LLM reply, one root.
fn user_answer(
    method: &str,
    params: Option<&serde_json::value::RawValue>,
) -> Result<Value, McpError> {
    let params: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null);
    match method {
        "elicitation/create" => {
            let props = params.pointer("/requestedSchema/properties");
            let mut content = serde_json::Map::new();
            for (field, value) in [("name", "Ann"), ("response", "yes"), ("color", "blue")] {
                if props.and_then(|p| p.get(field)).is_some() {
                    content.insert(field.into(), json!(value));
                }
            }
            Ok(json!({ "action": "accept", "content": content }))
        }
        "sampling/createMessage" => Ok(json!({
            "role": "assistant",
            "content": { "type": "text", "text": "hello from the test LLM" },
            "model": "test-model",
            "stopReason": "endTurn"
        })),
        "roots/list" => Ok(json!({ "roots": [{ "uri": "file:///srv", "name": "srv" }] })),
        other => Err(McpError::MethodNotFound(other.to_owned())),
    }
}

/// Answers server requests as [`user_answer`] says; collects the other events.
fn answer_as_user(
    client: Client,
    mut events: ClientEvents,
) -> tokio::task::JoinHandle<Vec<String>> {
    tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(e) = events.recv().await {
            match e {
                ClientEvent::ServerRequest(r) => {
                    seen.push(format!("request {}", r.method));
                    let answer = user_answer(r.method.as_str(), r.params.as_deref()).map(raw);
                    let _ = client.answer(r.id, answer).await;
                }
                ClientEvent::Progress { update, .. } => {
                    seen.push(format!("progress {}", update.progress));
                }
                other => seen.push(format!("{other:?}")),
            }
        }
        seen
    })
}

#[tokio::test]
async fn both_eras_list_and_call_against_the_demo() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        for (choice, want) in [
            (EraChoice::Handshake, "2025-11-25"),
            (EraChoice::Stateless, "2026-07-28"),
            // The demo takes server/discover: discovery settles on 2026-07-28.
            (EraChoice::Auto, "2026-07-28"),
        ] {
            let (client, _events) = connect(&url, choice).await;
            assert_eq!(
                client.negotiated().era.revision().as_str(),
                want,
                "{choice:?}"
            );
            assert_eq!(client.negotiated().server_info.name, "mcpwire-everything");
            let tools = client.list_tools().await.unwrap();
            assert!(tools.iter().any(|t| t["name"] == "add"), "{choice:?}");
            let sum = client
                .call_tool("add", json!({"a": 2, "b": 3}), false)
                .await
                .unwrap();
            assert_eq!(sum["structuredContent"]["sum"], 5.0, "{choice:?}: {sum}");
            client.close().await.unwrap();
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn server_requests_on_the_call_stream_are_answered_by_post() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        let (client, events) = connect(&url, EraChoice::Handshake).await;
        let seen = answer_as_user(client.clone(), events);
        let r = client
            .call_tool("test_elicitation", json!({"message": "ok?"}), false)
            .await
            .unwrap();
        assert_eq!(
            text_of(&r),
            r#"User response: action=accept, content={"response":"yes"}"#
        );
        let r = client
            .call_tool("test_sampling", json!({"prompt": "hi"}), false)
            .await
            .unwrap();
        assert_eq!(text_of(&r), "LLM response: hello from the test LLM");
        // SEP-1034: the user gives only a name; the client fills in the other defaults and
        // keeps the user's own value.
        let r = client
            .call_tool("test_elicitation_sep1034_defaults", json!({}), false)
            .await
            .unwrap();
        let text = text_of(&r);
        for field in [
            r#""name":"Ann""#,
            r#""age":30"#,
            r#""status":"active""#,
            r#""verified":true"#,
        ] {
            assert!(text.contains(field), "{field} in {r}");
        }
        client.close().await.unwrap();
        let seen = seen.await.unwrap();
        assert!(
            seen.contains(&"request elicitation/create".to_owned()),
            "{seen:?}"
        );
        assert!(
            seen.contains(&"request sampling/createMessage".to_owned()),
            "{seen:?}"
        );
    })
    .await
    .expect("bounded");
}

/// Sends `tools/call` with `params` through the raw surface and waits for its answer.
async fn call(client: &Client, params: Raw, opts: RequestOptions) -> Answer {
    let pending = client.send("tools/call", Some(params), opts).await.unwrap();
    pending.await.unwrap()
}

/// Sends `tools/call name` and answers `input_required` rounds as the user would, until the
/// result; the result and the number of rounds.
async fn call_with_input(client: &Client, name: &str) -> (Value, usize) {
    let original = raw(json!({ "name": name, "arguments": {} }));
    let mut params = original.clone();
    for round in 0..8 {
        match call(client, params, RequestOptions::default()).await {
            Answer::Complete(r) => return (serde_json::from_str(r.get()).unwrap(), round),
            Answer::InputRequired(ir) => {
                let responses: Vec<(String, Raw)> = ir
                    .input_requests
                    .iter()
                    .map(|q| {
                        let a = user_answer(q.method.as_str(), q.params.as_deref()).unwrap();
                        (q.key.clone(), raw(a))
                    })
                    .collect();
                params = ir.retry_params(Some(&original), responses).unwrap();
            }
        }
    }
    panic!("{name}: more than 8 input_required rounds");
}

#[tokio::test]
async fn input_required_rounds_are_answered_and_retried() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        let (client, _events) = connect(&url, EraChoice::Stateless).await;
        assert_eq!(client.negotiated().era, ClientEra::Stateless);
        let (r, rounds) = call_with_input(&client, "test_input_required_result_multi_round").await;
        assert_eq!(rounds, 2, "{r}");
        let text = text_of(&r);
        assert!(text.contains("Ann") && text.contains("blue"), "{r}");
        let (r, rounds) =
            call_with_input(&client, "test_input_required_result_multiple_inputs").await;
        assert_eq!(rounds, 1, "{r}");
        assert!(!r["isError"].as_bool().unwrap_or(false), "{r}");
        // A caller that does not answer gets a clear error from `request`.
        let e = client
            .request(
                "tools/call",
                json!({"name": "test_input_required_result_elicitation", "arguments": {}}),
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("elicitation/create"), "{e}");
        client.close().await.unwrap();
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn tasks_are_followed_to_their_result() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        // The demo offers tasks in 2026-07-28 (the `io.modelcontextprotocol/tasks`
        // extension, declared by the client); a call that waits becomes one.
        let target = Target::parse(&url).unwrap();
        let mut opts = options(EraChoice::Stateless);
        opts.capabilities.extensions = Some(json!({"io.modelcontextprotocol/tasks": {}}));
        let (client, _events) = Client::connect(&target, &opts).await.unwrap();
        let params =
            raw(json!({"name": "slow_compute", "arguments": {"seconds": 0.3, "label": "t"}}));
        let created = call(&client, params, RequestOptions::default()).await;
        let Answer::Complete(created) = created else {
            panic!("not a task")
        };
        let created: Value = serde_json::from_str(created.get()).unwrap();
        assert_eq!(created["resultType"], "task", "{created}");
        // call_tool follows the same kind of call through tasks/get (Mcp-Name: the task id).
        let r = client
            .call_tool("slow_compute", json!({"seconds": 0.3, "label": "t"}), false)
            .await
            .unwrap();
        assert_eq!(text_of(&r), "computed after 0.3 s t", "{r}");
        let failed = client
            .call_tool("failing_job", json!({}), false)
            .await
            .unwrap();
        assert_eq!(failed["isError"], true, "{failed}");
        let e = client
            .call_tool("protocol_error_job", json!({}), false)
            .await
            .unwrap_err();
        assert!(matches!(e, mcpwire_client::ClientError::Rpc { .. }), "{e}");
        client.close().await.unwrap();
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn progress_arrives_as_events_of_its_request() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        let (client, events) = connect(&url, EraChoice::Handshake).await;
        let seen = answer_as_user(client.clone(), events);
        let opts = RequestOptions {
            progress: true,
            ..RequestOptions::default()
        };
        let params = raw(json!({"name": "test_tool_with_progress", "arguments": {}}));
        let answer = call(&client, params, opts).await;
        assert!(matches!(answer, Answer::Complete(_)));
        client.close().await.unwrap();
        let seen = seen.await.unwrap();
        let progress: Vec<&String> = seen.iter().filter(|s| s.starts_with("progress")).collect();
        assert_eq!(
            progress,
            ["progress 0", "progress 50", "progress 100"],
            "{seen:?}"
        );
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_call_whose_stream_the_demo_closes_is_resumed() {
    let (_demo, url) = demo().await;
    tokio::time::timeout(LIMIT, async {
        for era in [EraChoice::Handshake, EraChoice::Stateless] {
            let (client, _events) = connect(&url, era).await;
            let r = client
                .call_tool("test_reconnection", json!({}), false)
                .await
                .unwrap_or_else(|e| panic!("{era:?}: {e}"));
            assert_eq!(text_of(&r), "Reconnection test completed", "{era:?}");
            client.close().await.unwrap();
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn a_server_without_discover_gets_initialize() {
    let stub = stub::Stub::start();
    tokio::time::timeout(LIMIT, async {
        let (client, _events) = connect(&stub.url, EraChoice::Auto).await;
        assert_eq!(client.negotiated().era.revision().as_str(), "2025-11-25");
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools[0]["name"], "drop");
        client.close().await.unwrap();
    })
    .await
    .expect("bounded");
    let seen = stub.seen();
    let methods: Vec<&str> = seen.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(
        &methods[..3],
        [
            "POST server/discover",
            "POST initialize",
            "POST notifications/initialized"
        ],
        "{methods:?}"
    );
    assert!(
        methods.contains(&"DELETE"),
        "the session is deleted on close: {methods:?}"
    );
}

#[tokio::test]
async fn a_dropped_stream_is_resumed_from_its_last_event() {
    let stub = stub::Stub::start();
    tokio::time::timeout(LIMIT, async {
        let (client, events) = connect(&stub.url, EraChoice::Handshake).await;
        let seen = answer_as_user(client.clone(), events);
        let r = client.call_tool("drop", json!({}), false).await.unwrap();
        assert_eq!(text_of(&r), "resumed");
        client.close().await.unwrap();
        // The log message sent before the drop arrived once.
        let seen = seen.await.unwrap();
        assert_eq!(
            seen.iter()
                .filter(|s| s.contains("before the drop"))
                .count(),
            1,
            "{seen:?}"
        );
    })
    .await
    .expect("bounded");
    let resumed: Vec<Option<String>> = stub
        .seen()
        .into_iter()
        .filter(|r| r.method == "GET" && r.last_event_id.is_some())
        .map(|r| r.last_event_id)
        .collect();
    assert_eq!(resumed, [Some("call-2".to_owned())]);
}

#[tokio::test]
async fn a_notification_flood_the_owner_does_not_read_stays_bounded() {
    let stub = stub::Stub::start();
    let target = Target::parse(&stub.url).unwrap();
    let mut opts = options(EraChoice::Handshake);
    opts.events_capacity = 4;
    opts.limits.max_events = 16;
    tokio::time::timeout(LIMIT, async {
        let (client, mut events) = Client::connect(&target, &opts).await.unwrap();
        // Nobody reads `events` while the server sends 20,000 log notifications: the call
        // still ends, and what waits for the owner is the channel plus the held events (the
        // rest were dropped and counted).
        let r = client.call_tool("flood", json!({}), false).await.unwrap();
        assert_eq!(r["content"], json!([]));
        client.close().await.unwrap();
        let mut waiting = 0;
        while let Some(e) = events.recv().await {
            assert!(matches!(e, ClientEvent::Log { .. }), "{e:?}");
            waiting += 1;
        }
        assert!(waiting > 0 && waiting <= 4 + 16, "{waiting} events waited");
    })
    .await
    .expect("bounded");
}

/// A scripted Streamable HTTP server on a thread: no `server/discover` (400, as servers of
/// the handshake era answer a request without a session), `initialize` with a session id, one
/// tool `drop` whose SSE answer stream sends a log event (`id: call-2`, `retry: 20`) and
/// ends; a GET with `Last-Event-ID` gets the result. The GET stream without one is refused
/// (405); `flood` streams [`stub::FLOOD`] log notifications, then its result. Records every
/// request.
mod stub {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    use serde_json::{Value, json};

    /// Log notifications the `flood` tool sends before its result.
    pub const FLOOD: usize = 20_000;

    /// One request as the stub saw it.
    #[derive(Debug, Clone)]
    pub struct Seen {
        /// `POST method`, `GET` or `DELETE`.
        pub method: String,
        pub last_event_id: Option<String>,
    }

    pub struct Stub {
        pub url: String,
        state: Arc<State>,
    }

    /// What the connections share: the requests seen, and the id of the `tools/call` whose
    /// answer the resumed stream carries.
    #[derive(Default)]
    struct State {
        seen: Mutex<Vec<Seen>>,
        call_id: Mutex<Value>,
    }

    impl Stub {
        pub fn start() -> Stub {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/mcp", listener.local_addr().unwrap());
            let state = Arc::new(State::default());
            let shared = state.clone();
            std::thread::spawn(move || {
                // Bounded: the tests make a few dozen connections at most.
                for stream in listener.incoming().take(200).flatten() {
                    let shared = shared.clone();
                    std::thread::spawn(move || serve(stream, &shared));
                }
            });
            Stub { url, state }
        }

        pub fn seen(&self) -> Vec<Seen> {
            self.state.seen.lock().unwrap().clone()
        }
    }

    /// Serves the requests of one connection (keep-alive) until it closes.
    fn serve(stream: TcpStream, state: &State) {
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut out = stream;
        for _ in 0..100 {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let verb = line.split(' ').next().unwrap_or("").to_owned();
            let (mut length, mut last_event_id) = (0usize, None);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 {
                    return;
                }
                let h = h.trim_end();
                if h.is_empty() {
                    break;
                }
                let (k, v) = h.split_once(':').unwrap_or((h, ""));
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "last-event-id" => last_event_id = Some(v.trim().to_owned()),
                    _ => {}
                }
            }
            let mut body = vec![0; length.min(1 << 20)];
            if reader.read_exact(&mut body).is_err() {
                return;
            }
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let method = match verb.as_str() {
                "POST" => format!("POST {}", msg["method"].as_str().unwrap_or("(answer)")),
                v => v.to_owned(),
            };
            state.seen.lock().unwrap().push(Seen {
                method: method.clone(),
                last_event_id: last_event_id.clone(),
            });
            let id = msg["id"].clone();
            let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
            let keep = match method.as_str() {
                "POST server/discover" => json_reply(
                    &mut out,
                    "400 Bad Request",
                    &json!({"jsonrpc": "2.0", "id": null,
                            "error": {"code": -32600, "message": "Bad Request: Missing session ID"}}),
                ),
                "POST initialize" => json_reply(
                    &mut out,
                    "200 OK",
                    &reply(
                        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                  "serverInfo": {"name": "stub", "version": "1"}}),
                    ),
                ),
                "POST tools/list" => json_reply(
                    &mut out,
                    "200 OK",
                    &reply(json!({"tools": [{"name": "drop", "inputSchema": {"type": "object"}}]})),
                ),
                "POST tools/call" if msg["params"]["name"] == "flood" => {
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
                    );
                    for i in 0..FLOOD {
                        let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                                         "params": {"level": "info", "data": i}});
                        if write!(out, "data: {log}\n\n").is_err() {
                            return;
                        }
                    }
                    let _ = write!(out, "data: {}\n\n", reply(json!({"content": []})));
                    false
                }
                "POST tools/call" => {
                    *state.call_id.lock().unwrap() = id.clone();
                    let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                                     "params": {"level": "info", "data": "before the drop"}});
                    // The answer stream ends after one event; the connection closes.
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                         id: call-1\nretry: 20\ndata: \n\nid: call-2\ndata: {log}\n\n"
                    );
                    false
                }
                "GET" if last_event_id.as_deref() == Some("call-2") => {
                    let call = state.call_id.lock().unwrap().clone();
                    let result = json!({"jsonrpc": "2.0", "id": call, "result":
                        {"content": [{"type": "text", "text": "resumed"}]}});
                    let _ = write!(
                        out,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                         id: call-3\ndata: {result}\n\n"
                    );
                    false
                }
                "GET" => status(&mut out, "405 Method Not Allowed"),
                "DELETE" => status(&mut out, "200 OK"),
                _ => status(&mut out, "202 Accepted"),
            };
            if !keep {
                return;
            }
        }
    }

    fn json_reply(out: &mut TcpStream, status: &str, body: &Value) -> bool {
        let body = body.to_string();
        write!(
            out,
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\nmcp-session-id: s1\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .is_ok()
    }

    fn status(out: &mut TcpStream, status: &str) -> bool {
        write!(out, "HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n").is_ok()
    }
}
