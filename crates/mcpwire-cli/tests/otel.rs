//! OpenTelemetry traces through the binary: a gateway (`mcpwire serve`, `[telemetry]`) in
//! front of an HTTP upstream (a second `mcpwire serve`, configured by the standard
//! `OTEL_*` environment), both exporting to an OTLP/HTTP receiver started here that decodes
//! `ExportTraceServiceRequest`s with the `opentelemetry-proto` types. A client's
//! `traceparent` becomes the parent of the gateway's request span, the gateway's span the
//! parent of the upstream's (so the upstream received a `traceparent` naming it), and the
//! spans reach the receiver when SIGTERM drains the servers.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::http::HttpServer;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use mcpwire_testkit::wait::wait_for;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use prost::Message;
use serde_json::json;

/// The trace and span the client says it is in.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

/// One exported span as the receiver decoded it.
#[derive(Debug, Clone)]
struct Got {
    service: String,
    name: String,
    kind: i32,
    trace_id: String,
    span_id: String,
    parent: String,
    attributes: HashMap<String, String>,
}

/// An OTLP/HTTP receiver on 127.0.0.1: every span POSTed to `/v1/traces` arrives on `spans`.
struct Receiver {
    addr: String,
    spans: mpsc::Receiver<Got>,
    /// Request paths and content types seen.
    requests: mpsc::Receiver<(String, String)>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let addr = listener.local_addr().expect("addr").to_string();
        let (tx, spans) = mpsc::channel();
        let (req_tx, requests) = mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                // Bounded: the test's two servers export a few batches each.
                for _ in 0..64 {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    let tx = tx.clone();
                    let req_tx = req_tx.clone();
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req| {
                            let tx = tx.clone();
                            let req_tx = req_tx.clone();
                            async move { receive(req, &tx, &req_tx).await }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tcp), service)
                            .await;
                    });
                }
            });
        });
        Receiver {
            addr,
            spans,
            requests,
        }
    }

    /// Spans received until one matches `want` (at most 30 s).
    fn until(&self, seen: &mut Vec<Got>, want: impl Fn(&[Got]) -> bool) {
        let until = Instant::now() + Duration::from_secs(30);
        while !want(seen) {
            let left = until.saturating_duration_since(Instant::now());
            match self.spans.recv_timeout(left) {
                Ok(s) => seen.push(s),
                Err(_) => panic!("the spans did not arrive; got {seen:#?}"),
            }
        }
    }
}

async fn receive(
    req: hyper::Request<hyper::body::Incoming>,
    tx: &mpsc::Sender<Got>,
    req_tx: &mpsc::Sender<(String, String)>,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    let path = req.uri().path().to_owned();
    let content_type = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let _ = req_tx.send((path, content_type));
    let body = req.into_body().collect().await?.to_bytes();
    let Ok(export) = ExportTraceServiceRequest::decode(body) else {
        let mut r = hyper::Response::new(Full::new(Bytes::from_static(b"not OTLP")));
        *r.status_mut() = hyper::StatusCode::BAD_REQUEST;
        return Ok(r);
    };
    for rs in export.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| r.attributes.iter())
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| text(kv.value.as_ref()?.value.as_ref()?))
            .unwrap_or_default();
        for span in rs.scope_spans.into_iter().flat_map(|s| s.spans) {
            let attributes = span
                .attributes
                .iter()
                .filter_map(|kv| Some((kv.key.clone(), text(kv.value.as_ref()?.value.as_ref()?)?)))
                .collect();
            let _ = tx.send(Got {
                service: service.clone(),
                name: span.name,
                kind: span.kind,
                trace_id: hex(&span.trace_id),
                span_id: hex(&span.span_id),
                parent: hex(&span.parent_span_id),
                attributes,
            });
        }
    }
    let answer = ExportTraceServiceResponse::default().encode_to_vec();
    let mut r = hyper::Response::new(Full::new(Bytes::from(answer)));
    r.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/x-protobuf"),
    );
    Ok(r)
}

fn text(v: &AnyValue) -> Option<String> {
    match v {
        AnyValue::StringValue(s) => Some(s.clone()),
        AnyValue::IntValue(i) => Some(i.to_string()),
        AnyValue::BoolValue(b) => Some(b.to_string()),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl ChildGuard {
    /// SIGTERM, then waits (at most 20 s) for the drain to end the process.
    fn terminate(&mut self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        wait_for(
            Duration::from_secs(20),
            "mcpwire exits after SIGTERM",
            || self.0.try_wait().ok().flatten(),
        );
    }
}

/// `mcpwire serve --config CONFIG` with `env`, the standard OTEL variables otherwise unset;
/// returns it and the URL after `listening on http://`.
fn serve(config: &str, name: &str, env: &[(&str, &str)]) -> (ChildGuard, String) {
    let (child, mut urls) = serve_on(config, name, env, &["http"]);
    (child, urls.remove(0))
}

/// [`serve`] on several listeners: the addresses after `listening on {scheme}://`, in the
/// order of `schemes`.
fn serve_on(
    config: &str,
    name: &str,
    env: &[(&str, &str)],
    schemes: &[&str],
) -> (ChildGuard, Vec<String>) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("otel");
    std::fs::create_dir_all(&dir).expect("dir");
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, config).expect("config");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mcpwire"));
    cmd.args(["serve", "--config", path.to_str().expect("path")])
        .env("MCPWIRE_LOG", "warn")
        .env_remove("MCPWIRE_LOG_FORMAT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for var in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_SERVICE_NAME",
        "OTEL_SDK_DISABLED",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn mcpwire");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut exporting = false;
    let mut urls: Vec<Option<String>> = vec![None; schemes.len()];
    while urls.iter().any(Option::is_none) {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("stderr") == 0 {
            panic!("{name} exited before listening");
        }
        exporting |= line.contains("exporting traces to");
        for (scheme, url) in schemes.iter().zip(urls.iter_mut()) {
            let prefix = format!("mcpwire: listening on {scheme}://");
            if let Some(rest) = line.trim().strip_prefix(prefix.as_str()) {
                *url = Some(rest.to_owned());
            }
        }
    }
    assert!(exporting, "{name} did not say where traces go");
    std::thread::spawn(move || for _ in stderr.lines() {});
    (ChildGuard(child), urls.into_iter().flatten().collect())
}

fn span<'a>(seen: &'a [Got], service: &str, name: &str) -> Option<&'a Got> {
    seen.iter().find(|s| s.service == service && s.name == name)
}

#[test]
fn a_call_is_traced_from_the_client_through_the_gateway_to_its_http_upstream() {
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let upstream_config = r#"
[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.demo]
native = "demo"
"#;
    let (mut upstream, upstream_url) = serve(
        upstream_config,
        "upstream",
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_SERVICE_NAME", "upstream"),
        ],
    );
    let gateway_config = format!(
        r#"
[telemetry]
otlp_endpoint = "{endpoint}"
service_name = "gateway"

[[listen]]
url = "http://127.0.0.1:0/mcp"

[backends.up]
url = "http://{upstream_url}"
"#
    );
    let (mut gateway, gateway_url) = serve(&gateway_config, "gateway", &[]);

    let client = HttpServer::at(&gateway_url);
    let sid = client.initialize();
    let traceparent = format!("00-{TRACE_ID}-{CLIENT_SPAN}-01");
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "echo", "arguments": {"text": "traced"}}});
    let r = client.send(
        "POST",
        &[
            ("content-type", "application/json"),
            ("accept", common::http::ACCEPT_BOTH),
            ("mcp-session-id", &sid),
            ("mcp-protocol-version", "2025-11-25"),
            ("traceparent", &traceparent),
            ("tracestate", "vendor=1"),
        ],
        call.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200);
    let body = r.text();
    assert!(body.contains("traced"), "{body}");

    // The batch exporter waits seconds between exports: these spans leave on the drain.
    gateway.terminate();
    upstream.terminate();

    let mut seen = Vec::new();
    receiver.until(&mut seen, |s| {
        span(s, "gateway", "tools/call echo").is_some()
            && span(s, "upstream", "tools/call echo").is_some()
            && span(s, "upstream", "tools/list").is_some()
    });
    let g = span(&seen, "gateway", "tools/call echo").expect("the gateway's span");
    assert_eq!(g.trace_id, TRACE_ID, "{g:?}");
    assert_eq!(
        g.parent, CLIENT_SPAN,
        "the client's span is the parent: {g:?}"
    );
    assert_eq!(g.kind, SpanKind::Server as i32, "{g:?}");
    for (key, value) in [
        ("wire", "http"),
        ("method", "tools/call"),
        ("tool", "echo"),
        ("backend", "up"),
        ("outcome", "ok"),
    ] {
        assert_eq!(
            g.attributes.get(key).map(String::as_str),
            Some(value),
            "{key}: {g:?}"
        );
    }
    // The upstream's span is the gateway span's child: the upstream POST carried a
    // `traceparent` with the client's trace and the gateway's span.
    let u = span(&seen, "upstream", "tools/call echo").expect("the upstream's span");
    assert_eq!(u.trace_id, TRACE_ID, "{u:?}");
    assert_eq!(u.parent, g.span_id, "{u:?}");
    assert_eq!(
        u.attributes.get("backend").map(String::as_str),
        Some("demo")
    );
    // What the gateway asks outside any request (listing the upstream's catalog at start)
    // carries no `traceparent`: the upstream's span starts a trace of its own.
    let list = span(&seen, "upstream", "tools/list").expect("the catalog listing's span");
    assert_ne!(list.trace_id, TRACE_ID);
    assert!(list.parent.is_empty(), "{list:?}");

    let (path, content_type) = receiver.requests.try_recv().expect("an export");
    assert_eq!(path, "/v1/traces");
    assert_eq!(content_type, "application/x-protobuf");
}

/// A trace id of the test's own, numbered.
fn trace_id(n: u8) -> String {
    format!("{n:02x}{}", &TRACE_ID[2..])
}

#[test]
fn traceparent_is_read_on_stateless_http_websocket_upgrades_and_grpc_metadata() {
    let receiver = Receiver::start();
    let endpoint = format!("http://{}", receiver.addr);
    let config = r#"
[[listen]]
url = "http://127.0.0.1:0/mcp"

[[listen]]
url = "ws://127.0.0.1:0/mcp"

[[listen]]
url = "grpc://127.0.0.1:0"

[backends.demo]
native = "demo"
"#;
    let (mut server, urls) = serve_on(
        config,
        "wires",
        &[
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                &format!("{endpoint}/v1/traces"),
            ),
            ("OTEL_SERVICE_NAME", "wires"),
        ],
        &["http", "ws", "grpc"],
    );
    let parent = |n: u8| format!("00-{}-{CLIENT_SPAN}-01", trace_id(n));

    // Stateless 2026-07-28 HTTP: each POST's headers.
    let http = HttpServer::at(&urls[0]);
    let r = http.post_stateless_extra(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "stateless"}}),
        json!({}),
        &[("traceparent", &parent(1))],
    );
    assert_eq!(r.status, 200);

    // WebSocket: the upgrade request's context is every call's parent.
    let ws = common::wires::Ws::connect_with(&urls[1], &[("traceparent", &parent(2))])
        .expect("upgraded");
    let mut c = common::wires::Conversation::new(ws);
    let init = c.request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert!(init["result"].is_object(), "{init}");
    c.notify("notifications/initialized", json!({}));
    let r = c.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "ws"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "ws", "{r}");

    // gRPC: the call's metadata.
    let tools: mcpwire_wire::proto_mcp::pb::ListToolsResponse = common::wires::grpc_call_with(
        &urls[2],
        "ListTools",
        &mcpwire_wire::proto_mcp::pb::ListToolsRequest::default(),
        &[("traceparent", &parent(3))],
    )
    .expect("ListTools");
    assert!(!tools.tools.is_empty());

    server.terminate();
    let mut seen = Vec::new();
    let wanted = |s: &[Got]| {
        [
            (1, "http", "tools/call echo"),
            (2, "websocket", "tools/call echo"),
            (3, "grpc", "tools/list"),
        ]
        .iter()
        .all(|(n, wire, name)| {
            s.iter().any(|g| {
                g.trace_id == trace_id(*n)
                    && g.parent == CLIENT_SPAN
                    && g.name == *name
                    && g.attributes.get("wire").map(String::as_str) == Some(*wire)
            })
        })
    };
    receiver.until(&mut seen, wanted);
}
