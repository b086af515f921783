//! `OpenApiBackend` against a small HTTP/1.1 server written here: keep-alive, redirects
//! within the origin only, the answer size limit, the call timeout, argument checks before
//! any request, and a reload that changes the list.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcpwire_model::{BackendEvent, McpError, Reply, to_raw};
use mcpwire_openapi::{OpenApiBackend, OpenApiConfig, Source};
use mcpwire_router::{Backend, BackendRequest, CallCtx};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    requests: AtomicUsize,
}

/// Answers by path; counts connections and requests.
async fn server(seen: Arc<Seen>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            seen.connections.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            tokio::spawn(async move {
                let mut r = BufReader::new(tcp);
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
                    let mut length = 0;
                    loop {
                        let mut h = String::new();
                        r.read_line(&mut h).await.unwrap_or(0);
                        if h.trim().is_empty() {
                            break;
                        }
                        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    let _ = r.read_exact(&mut body).await;
                    seen.requests.fetch_add(1, Ordering::SeqCst);
                    let (status, extra, answer) = match path.as_str() {
                        "/v1/pets/7?verbose=true" => {
                            ("200 OK", "", r#"{"id":7,"name":"rex"}"#.to_owned())
                        }
                        "/v1/moved" => (
                            "307 Temporary Redirect",
                            "location: /v1/pets/7?verbose=true\r\n",
                            String::new(),
                        ),
                        "/v1/away" => (
                            "302 Found",
                            "location: http://elsewhere.invalid/x\r\n",
                            String::new(),
                        ),
                        "/v1/big" => ("200 OK", "", format!("{{\"a\":\"{}\"}}", "x".repeat(5000))),
                        "/v1/slow" => {
                            tokio::time::sleep(Duration::from_secs(3)).await;
                            ("200 OK", "", "{}".to_owned())
                        }
                        _ => (
                            "404 Not Found",
                            "",
                            r#"{"detail":"nothing here"}"#.to_owned(),
                        ),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{extra}\r\n",
                        answer.len()
                    );
                    let tcp = r.get_mut();
                    if tcp.write_all(head.as_bytes()).await.is_err()
                        || tcp.write_all(answer.as_bytes()).await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}/v1")
}

const DOC: &str = r#"
openapi: 3.0.3
info: {title: pets, version: '2'}
paths:
  /pets/{id}:
    get:
      operationId: getPet
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: verbose, in: query, schema: {type: boolean}}
      responses:
        '200':
          description: ok
          content: {application/json: {schema: {type: object, properties: {id: {type: integer}, name: {type: string}}}}}
  /moved: {get: {operationId: moved, responses: {'200': {description: ok}}}}
  /away: {get: {operationId: away, responses: {'200': {description: ok}}}}
  /big: {get: {operationId: big, responses: {'200': {description: ok}}}}
  /slow: {get: {operationId: slow, responses: {'200': {description: ok}}}}
"#;

async fn call(b: &OpenApiBackend, name: &str, args: Value) -> Result<Value, McpError> {
    let req = BackendRequest::CallTool {
        name: name.into(),
        arguments: Some(to_raw(&args)),
    };
    match b.call(CallCtx::detached(), req).await? {
        Reply::Complete(raw) => Ok(serde_json::from_str(raw.get()).expect("json")),
        Reply::InputRequired(_) => panic!("no input is asked"),
    }
}

#[tokio::test]
async fn calls_over_keep_alive_with_limits() {
    let seen = Arc::new(Seen::default());
    let base = server(seen.clone()).await;
    let dir = std::env::temp_dir().join(format!("mcpwire-openapi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("pets.yaml");
    std::fs::write(&file, DOC).expect("written");
    let mut config = OpenApiConfig::new("pets", Source::File(file.clone()));
    config.base_url = Some(base);
    config.max_response_bytes = 1024;
    config.call_timeout = Duration::from_millis(500);
    let b = OpenApiBackend::load(config).await.expect("loaded");
    assert_eq!(
        b.openapi_version(),
        "3.0.3",
        "what the console shows as its era"
    );

    let r = call(&b, "getPet", json!({"id": 7, "verbose": true}))
        .await
        .expect("called");
    assert_eq!(r["structuredContent"], json!({"id": 7, "name": "rex"}));
    // A redirect within the origin is followed, on the same connection.
    let r = call(&b, "moved", json!({})).await.expect("called");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("rex"),
        "{r}"
    );
    assert_eq!(seen.connections.load(Ordering::SeqCst), 1, "keep-alive");
    // One to another origin is the answer, an error.
    let r = call(&b, "away", json!({})).await.expect("called");
    assert_eq!(r["isError"], json!(true), "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("302")
    );
    // Over the size limit: an error, not the body.
    let r = call(&b, "big", json!({})).await.expect("called");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("over the limit"),
        "{r}"
    );
    // The timeout.
    let r = call(&b, "slow", json!({})).await.expect("called");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("no answer within"),
        "{r}"
    );
    // Bad arguments: refused before any request.
    let before = seen.requests.load(Ordering::SeqCst);
    let e = call(&b, "getPet", json!({"id": "seven"}))
        .await
        .expect_err("refused");
    assert!(matches!(e, McpError::InvalidToolParams { .. }), "{e:?}");
    assert!(matches!(
        call(&b, "nope", json!({})).await,
        Err(McpError::ToolNotFound(_))
    ));
    assert_eq!(seen.requests.load(Ordering::SeqCst), before);

    // Reload: an edited document changes the list, and says so.
    let mut events = b.events().expect("events");
    assert!(!b.reload().await.expect("read"), "nothing changed yet");
    std::fs::write(
        &file,
        DOC.replace("operationId: slow", "operationId: slower"),
    )
    .expect("written");
    assert!(b.reload().await.expect("read"));
    assert!(matches!(
        events.try_recv(),
        Ok(BackendEvent::ToolsListChanged)
    ));
    assert!(b.tool_names().contains(&"slower".to_owned()));
    let _ = std::fs::remove_dir_all(&dir);
}
