//! The harness itself: a small native server served in-process on every wire, each driven
//! by its raw client (async on the test's runtime, blocking against a `Host`), and shut
//! down explicitly or by dropping its handle.

use std::sync::Arc;

use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, Server, ToolError, tool};
use mcpwire_testkit::blocking::Peer as _;
use mcpwire_testkit::raw::grpc::{self, arguments};
use mcpwire_testkit::raw::http::HttpClient;
use mcpwire_testkit::raw::mcpb::Mcpb;
use mcpwire_testkit::raw::ws::Ws;
use mcpwire_testkit::raw::{Conversation, Peer};
use mcpwire_testkit::serve::{self, Host, serve};
use mcpwire_testkit::{blocking, raw};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

fn server() -> Arc<Server> {
    Server::builder(Implementation::new("harness", "1"))
        .tool(tool("echo", |_: CallCtx, a: Text| async move {
            Ok::<_, ToolError>(a.text)
        }))
        .build()
}

fn echo(id: i64, text: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
           "params":{"name":"echo","arguments":{"text":text}}})
}

/// `initialize`, then `echo` over any message wire.
async fn handshake_and_echo(peer: impl Peer) {
    let mut c = Conversation::new(peer);
    let init = c.initialize("2025-11-25", json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "harness", "{init}");
    c.peer.send(echo(1, "hi")).await;
    let r = c.response(1).await;
    assert_eq!(r["result"]["content"][0]["text"], "hi", "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_wire_is_served_in_process_and_spoken_to_raw() {
    let mut stdio = serve(server(), serve::stdio()).await;
    assert_eq!(stdio.url(), "stdio");
    handshake_and_echo(stdio.stdio()).await;

    let ws = serve(server(), serve::ws()).await;
    assert!(ws.url().starts_with("ws://127.0.0.1:"), "{}", ws.url());
    handshake_and_echo(Ws::connect(&ws.url()).await).await;

    let mcpb = serve(server(), serve::mcpb()).await;
    handshake_and_echo(Mcpb::connect(&mcpb.host_port()).await).await;

    let http = serve(server(), serve::http()).await;
    let client = http.http();
    assert_eq!(client.url(), http.url());
    let sid = client.initialize().await;
    let r = client.post(Some(&sid), &echo(1, "over http")).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.message().await["result"]["content"][0]["text"],
        "over http"
    );
    let r = client
        .post_stateless(
            2,
            "tools/call",
            json!({"name":"echo","arguments":{"text":"alone"}}),
        )
        .await;
    assert_eq!(r.json().await["result"]["content"][0]["text"], "alone");
    // Any bytes: a request line that is not HTTP is refused, and the server goes on.
    let r = client.send_raw(b"NOT HTTP AT ALL\r\n\r\n").await;
    assert_eq!(r.status, 400);
    assert_eq!(client.delete(&sid).await.status, 200);

    let grpc = serve(server(), serve::grpc()).await;
    let list = pb::ListToolsRequest {
        include_schemas: true,
        ..Default::default()
    };
    let tools: pb::ListToolsResponse = grpc::call(&grpc.host_port(), "ListTools", &list)
        .await
        .expect("ListTools");
    let echo_tool = tools.tools.iter().find(|t| t.name == "echo").expect("echo");
    let call = pb::CallToolRequest {
        name: "echo".into(),
        arguments: Some(arguments(echo_tool, &json!({"text": "over grpc"}))),
        ..Default::default()
    };
    let r: pb::CallToolResponse = grpc::call(&grpc.host_port(), "CallTool", &call)
        .await
        .expect("CallTool");
    let Some(pb::call_tool_response::Result::Success(result)) = r.result else {
        panic!("{r:?}")
    };
    assert!(
        matches!(&result.content[0].content, Some(pb::tool_content::Content::Text(t)) if t == "over grpc"),
        "{result:?}"
    );
    let unknown = pb::CallToolRequest {
        name: "nope".into(),
        ..Default::default()
    };
    let e = grpc::call::<pb::CallToolResponse>(&grpc.host_port(), "CallTool", &unknown)
        .await
        .expect_err("an unknown tool");
    assert!(e.details.is_some(), "{e:?}");

    for served in [ws, mcpb, http, grpc] {
        served.shutdown().await.expect("a clean shutdown");
    }
    drop(stdio);
}

#[tokio::test]
async fn a_dropped_handle_stops_accepting() {
    let served = serve(server(), serve::http()).await;
    let addr = served.host_port();
    drop(served);
    mcpwire_testkit::wait::wait_until_async(
        std::time::Duration::from_secs(10),
        "the port refuses connections",
        async || tokio::net::TcpStream::connect(&addr).await.is_err(),
    )
    .await;
}

#[test]
fn blocking_clients_drive_a_hosted_server() {
    let host = Host::new();
    let mut stdio = host.serve(server(), serve::stdio());
    let mut c = blocking::Conversation::new(blocking::Stdio::over(stdio.take_pipe()));
    let init = c.initialize("2025-06-18", json!({}));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(
        c.request(1, "tools/call", echo(1, "x")["params"].clone())["result"]["content"][0]["text"],
        "x"
    );

    let ws = host.serve(server(), serve::ws());
    let mut c = blocking::Conversation::new(blocking::Ws::connect(&ws.url()));
    c.initialize("2025-11-25", json!({}));
    assert_eq!(c.request(2, "ping", json!({}))["result"], json!({}));

    let mcpb = host.serve(server(), serve::mcpb());
    let mut m = blocking::Mcpb::connect(&mcpb.host_port());
    m.send(json!({"jsonrpc":"2.0","id":1,"method":"initialize",
                  "params": raw::initialize_params("2025-11-25", json!({}))}));
    assert!(m.recv()["result"]["serverInfo"].is_object());

    let http = host.serve(server(), serve::http());
    let client = blocking::http::HttpClient::from(HttpClient::new(&http.url()));
    let sid = client.initialize();
    let mut r = client.post(Some(&sid), &echo(3, "sse?"));
    assert_eq!(r.status, 200);
    let body = if r.is_sse() {
        r.next_event().expect("an event").1
    } else {
        r.json()
    };
    assert_eq!(body["result"]["content"][0]["text"], "sse?");

    let grpc = host.serve(server(), serve::grpc());
    let e = blocking::grpc::call::<pb::CallToolResponse>(
        &grpc.url(),
        "CallTool",
        &pb::CallToolRequest {
            name: "nope".into(),
            ..Default::default()
        },
    )
    .expect_err("an unknown tool");
    assert_ne!(e.status, 0);
}
