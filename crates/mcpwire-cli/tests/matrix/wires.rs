//! The matrix's wires: how each is served (a testkit listener) and spoken to (a testkit raw
//! client behind [`Client`]). The JSON-RPC wires share one driver ([`Rpc`]) over a
//! [`Peer`]; Streamable HTTP becomes a peer by POSTing each message (a request's answer, SSE
//! events included, read on a task of its own); gRPC speaks proto-mcp unary calls.

use std::collections::HashMap;

use futures::future::BoxFuture;
use mcpwire_server::Wire;
use mcpwire_testkit::raw::grpc::{self, GrpcError};
use mcpwire_testkit::raw::http::{Exchange, HttpClient};
use mcpwire_testkit::raw::mcpb::Mcpb;
use mcpwire_testkit::raw::ws::Ws;
use mcpwire_testkit::raw::{Conversation, Peer, RECV_WITHIN};
use mcpwire_testkit::serve::{self, Served};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A tool call's outcome: the result (an `isError` one included), or the JSON-RPC error
/// code it was refused with.
pub type Answer = Result<Value, i64>;

/// The progress token the assertions' progress call carries.
pub const PROGRESS_TOKEN: &str = "matrix-progress";

/// A wire of the matrix.
#[derive(Clone, Copy, Debug)]
pub enum WireKind {
    /// JSON-RPC lines over an in-process pipe.
    Stdio,
    /// Streamable HTTP, a 2025-11-25 session.
    HttpStateful,
    /// Streamable HTTP, stateless 2026-07-28 requests.
    HttpStateless,
    /// JSON-RPC in WebSocket text messages.
    WebSocket,
    /// proto-mcp unary gRPC calls.
    Grpc,
    /// JSON-RPC in MCPB frames.
    Mcpb,
}

impl WireKind {
    /// The listener serving this wire.
    pub fn listener(self) -> Wire {
        match self {
            WireKind::Stdio => serve::stdio(),
            WireKind::HttpStateful | WireKind::HttpStateless => serve::http(),
            WireKind::WebSocket => serve::ws(),
            WireKind::Grpc => serve::grpc(),
            WireKind::Mcpb => serve::mcpb(),
        }
    }

    /// Why this wire cannot carry `check`, if it cannot.
    pub fn cannot(self, check: &str) -> Option<&'static str> {
        match (self, check) {
            (WireKind::Grpc, "progress") => {
                Some("a unary RPC carries its one answer and no notification")
            }
            (WireKind::Grpc, "ping") => Some("MCPService has no ping RPC"),
            (WireKind::HttpStateless, "ping") => Some("2026-07-28 has no ping (−32601)"),
            (WireKind::Grpc, "structured content") => Some(
                "proto-mcp packs structured content as the tool's output message, and this \
                 tool declares no output schema (its text is answered)",
            ),
            _ => None,
        }
    }

    /// A client of `served`.
    pub async fn connect(self, served: &mut Served) -> Box<dyn Client> {
        match self {
            WireKind::Stdio => Box::new(Rpc::new(served.stdio(), false)),
            WireKind::HttpStateful => {
                Box::new(Rpc::new(HttpPeer::new(served.http(), false), false))
            }
            WireKind::HttpStateless => Box::new(Rpc::new(HttpPeer::new(served.http(), true), true)),
            WireKind::WebSocket => Box::new(Rpc::new(Ws::connect(&served.url()).await, false)),
            WireKind::Mcpb => Box::new(Rpc::new(Mcpb::connect(&served.host_port()).await, false)),
            WireKind::Grpc => Box::new(GrpcClient::new(served.host_port())),
        }
    }
}

/// What the assertions ask of a wire's client.
pub trait Client: Send {
    /// Opens the conversation; the server's name.
    fn open(&mut self) -> BoxFuture<'_, String>;
    /// Every listed tool's name.
    fn tools(&mut self) -> BoxFuture<'_, Vec<String>>;
    /// Calls `name` with `args`.
    fn call<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, Answer>;
    /// Calls `name` asking for progress ([`PROGRESS_TOKEN`]): the progress notifications
    /// before the answer, and the answer (`None`: the wire cannot carry progress).
    fn call_with_progress<'a>(
        &'a mut self,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Option<(Vec<Value>, Answer)>>;
    /// Starts calling `name` (a tool that runs until cancelled), not waiting for it.
    fn start<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, ()>;
    /// Cancels the started call, the wire's way.
    fn cancel(&mut self) -> BoxFuture<'_, ()>;
    /// Checks that the connection still serves and that the cancelled call was not
    /// answered.
    fn still_serving_unanswered(&mut self) -> BoxFuture<'_, ()>;
    /// `ping`'s result (`None`: the wire has no ping).
    fn ping(&mut self) -> BoxFuture<'_, Option<Value>>;
    /// Whether the wire carries `tool`'s structured content (listed already).
    fn carries_structured(&self, _tool: &str) -> bool {
        true
    }
}

/// A JSON-RPC response as an [`Answer`].
fn answer(r: Value) -> Answer {
    match r.get("error") {
        Some(e) => Err(e["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("an error code: {r}"))),
        None => Ok(r["result"].clone()),
    }
}

/// The JSON-RPC driver of every message wire.
struct Rpc {
    c: Conversation<Box<dyn Peer>>,
    stateless: bool,
    next: i64,
    started: Option<i64>,
}

impl Rpc {
    fn new(peer: impl Peer + 'static, stateless: bool) -> Rpc {
        Rpc {
            c: Conversation::new(Box::new(peer)),
            stateless,
            next: 0,
            started: None,
        }
    }

    fn id(&mut self) -> i64 {
        self.next += 1;
        self.next
    }

    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        self.c.request(id, method, params).await
    }
}

impl Client for Rpc {
    fn open(&mut self) -> BoxFuture<'_, String> {
        Box::pin(async move {
            let r = if self.stateless {
                self.request("server/discover", json!({})).await
            } else {
                self.c.initialize("2025-11-25", json!({})).await
            };
            // 2026-07-28 names the server in the result's `_meta`.
            let info = match self.stateless {
                true => &r["result"]["_meta"]["io.modelcontextprotocol/serverInfo"],
                false => &r["result"]["serverInfo"],
            };
            let name = &info["name"];
            name.as_str()
                .unwrap_or_else(|| panic!("no server name: {r}"))
                .to_owned()
        })
    }

    fn tools(&mut self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let mut names = Vec::new();
            let mut params = json!({});
            for _ in 0..100 {
                let page = answer(self.request("tools/list", params).await).expect("tools/list");
                for t in page["tools"].as_array().expect("tools") {
                    names.push(t["name"].as_str().expect("a name").to_owned());
                }
                match page.get("nextCursor") {
                    Some(c) => params = json!({ "cursor": c }),
                    None => return names,
                }
            }
            panic!("more than 100 pages");
        })
    }

    fn call<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let params = json!({"name": name, "arguments": args});
            answer(self.request("tools/call", params).await)
        })
    }

    fn call_with_progress<'a>(
        &'a mut self,
        name: &'a str,
        args: Value,
    ) -> BoxFuture<'a, Option<(Vec<Value>, Answer)>> {
        Box::pin(async move {
            let params = json!({"name": name, "arguments": args,
                                "_meta": {"progressToken": PROGRESS_TOKEN}});
            let id = self.id();
            let r = self.c.request(id, "tools/call", params).await;
            let (progress, other): (Vec<Value>, Vec<Value>) = std::mem::take(&mut self.c.seen)
                .into_iter()
                .partition(|m| m["method"] == "notifications/progress");
            self.c.seen = other;
            Some((progress, answer(r)))
        })
    }

    fn start<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let id = self.id();
            self.started = Some(id);
            let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": name, "arguments": args}});
            self.c.peer.send(msg).await;
        })
    }

    fn cancel(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let id = self.started.expect("a started call");
            let params = json!({"requestId": id, "reason": "the matrix cancels it"});
            self.c.notify("notifications/cancelled", params).await;
        })
    }

    fn still_serving_unanswered(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // 2026-07-28 has no ping: discovery instead.
            let probe = if self.stateless {
                "server/discover"
            } else {
                "ping"
            };
            let r = self.request(probe, json!({})).await;
            assert!(r["result"].is_object(), "{r}");
            let id = json!(self.started.expect("a started call"));
            let answered = self
                .c
                .seen
                .iter()
                .find(|m| m["id"] == id && m.get("method").is_none());
            assert!(
                answered.is_none(),
                "a cancelled call was answered: {answered:?}"
            );
        })
    }

    fn ping(&mut self) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async move {
            if self.stateless {
                let r = self.request("ping", json!({})).await;
                assert_eq!(answer(r), Err(-32601), "2026-07-28 refuses ping");
                return None;
            }
            Some(answer(self.request("ping", json!({})).await).expect("ping"))
        })
    }
}

/// Streamable HTTP as a message peer: each message a POST (in the session, or stateless
/// with the 2026-07-28 envelope); a request's answer — a JSON body or its SSE events —
/// read on a task of its own into the queue [`Peer::recv`] reads. Stateless, a cancellation
/// drops the request's connection (2026-07-28 has no `notifications/cancelled`).
struct HttpPeer {
    client: HttpClient,
    stateless: bool,
    session: Option<String>,
    tx: mpsc::UnboundedSender<Value>,
    rx: mpsc::UnboundedReceiver<Value>,
    calls: HashMap<String, JoinHandle<()>>,
}

impl HttpPeer {
    fn new(client: HttpClient, stateless: bool) -> HttpPeer {
        let (tx, rx) = mpsc::unbounded_channel();
        HttpPeer {
            client,
            stateless,
            session: None,
            tx,
            rx,
            calls: HashMap::new(),
        }
    }

    async fn post(&mut self, msg: Value) {
        let is_request = msg.get("id").is_some() && msg.get("method").is_some();
        if self.stateless && msg["method"] == "notifications/cancelled" {
            let id = msg["params"]["requestId"].to_string();
            self.calls
                .remove(&id)
                .expect("the cancelled request")
                .abort();
            return;
        }
        if is_request && !self.stateless && msg["method"] == "initialize" {
            let r = self.client.post(None, &msg).await;
            self.session = r.session().map(str::to_owned);
            forward(r, &self.tx).await;
            return;
        }
        if is_request {
            let (client, tx, session) =
                (self.client.clone(), self.tx.clone(), self.session.clone());
            let stateless = self.stateless;
            let id = msg["id"].to_string();
            let task = tokio::spawn(async move {
                let r = if stateless {
                    client.post_stateless_request(&msg, json!({}), &[]).await
                } else {
                    client.post(session.as_deref(), &msg).await
                };
                forward(r, &tx).await;
            });
            self.calls.insert(id, task);
            return;
        }
        assert!(
            !self.stateless,
            "stateless HTTP carries requests only: {msg}"
        );
        let r = self.client.post(self.session.as_deref(), &msg).await;
        assert_eq!(r.status, 202, "{msg}");
    }
}

/// Puts the JSON-RPC messages of `r` — its JSON body or its SSE events — in the queue.
async fn forward(mut r: Exchange, tx: &mpsc::UnboundedSender<Value>) {
    if r.is_sse() {
        while let Some((_, m)) = r.next_event().await {
            let _ = tx.send(m);
        }
        return;
    }
    let status = r.status;
    let body = r.text().await;
    if body.is_empty() {
        assert_eq!(status, 202, "an empty answer");
        return;
    }
    let m = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{status} {body}: {e}"));
    let _ = tx.send(m);
}

impl Peer for HttpPeer {
    fn send(&mut self, msg: Value) -> BoxFuture<'_, ()> {
        Box::pin(self.post(msg))
    }

    fn recv(&mut self) -> BoxFuture<'_, Value> {
        Box::pin(async move {
            tokio::time::timeout(RECV_WITHIN, self.rx.recv())
                .await
                .unwrap_or_else(|_| panic!("no HTTP message within {RECV_WITHIN:?}"))
                .expect("the queue is open")
        })
    }
}

impl Drop for HttpPeer {
    fn drop(&mut self) {
        for (_, task) in self.calls.drain() {
            task.abort();
        }
    }
}

/// proto-mcp over unary gRPC calls: the tools' inline schemas build their arguments and
/// read their structured results; a cancellation drops the call.
struct GrpcClient {
    addr: String,
    tools: Vec<pb::Tool>,
    started: Option<JoinHandle<()>>,
}

impl GrpcClient {
    fn new(addr: String) -> GrpcClient {
        GrpcClient {
            addr,
            tools: Vec::new(),
            started: None,
        }
    }

    fn request(&self, name: &str, args: &Value) -> pb::CallToolRequest {
        let arguments = self
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| grpc::arguments(t, args));
        pb::CallToolRequest {
            name: name.to_owned(),
            arguments,
            ..Default::default()
        }
    }

    /// A `CallToolResponse` as the JSON-RPC result it stands for.
    fn result(&self, name: &str, r: Result<pb::CallToolResponse, GrpcError>) -> Answer {
        let code = |e: GrpcError| {
            i64::from(
                e.details
                    .unwrap_or_else(|| panic!("no details: {}", e.status))
                    .code,
            )
        };
        let r = r.map_err(code)?;
        let result = match r.result.expect("a result") {
            pb::call_tool_response::Result::Error(e) => return Err(i64::from(e.code)),
            pb::call_tool_response::Result::Success(result) => result,
        };
        let tool = self.tools.iter().find(|t| t.name == name).expect("listed");
        let mut out = json!({"content": [], "isError": result.is_error});
        for c in result.content {
            match c.content {
                Some(pb::tool_content::Content::Text(t)) => out["content"]
                    .as_array_mut()
                    .expect("content")
                    .push(json!({"type": "text", "text": t})),
                Some(pb::tool_content::Content::Data(any)) => {
                    out["structuredContent"] =
                        grpc::structured(tool, &any).expect("an output message")
                }
                other => panic!("unexpected content {other:?}"),
            }
        }
        Ok(out)
    }
}

impl Client for GrpcClient {
    fn open(&mut self) -> BoxFuture<'_, String> {
        Box::pin(async move {
            let init = pb::InitializeRequest {
                protocol_version: "1.0.0".into(),
                metadata: [("name".to_owned(), "matrix".to_owned())].into(),
                ..Default::default()
            };
            let r: pb::InitializeResponse = grpc::call(&self.addr, "Initialize", &init)
                .await
                .expect("Initialize");
            r.metadata.get("name").cloned().expect("a name")
        })
    }

    fn tools(&mut self) -> BoxFuture<'_, Vec<String>> {
        Box::pin(async move {
            let list = pb::ListToolsRequest {
                include_schemas: true,
                ..Default::default()
            };
            let r: pb::ListToolsResponse = grpc::call(&self.addr, "ListTools", &list)
                .await
                .expect("ListTools");
            assert!(r.next_cursor.is_empty(), "one page");
            self.tools = r.tools;
            self.tools.iter().map(|t| t.name.clone()).collect()
        })
    }

    fn call<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let req = self.request(name, &args);
            let r = grpc::call(&self.addr, "CallTool", &req).await;
            self.result(name, r)
        })
    }

    fn call_with_progress<'a>(
        &'a mut self,
        _name: &'a str,
        _args: Value,
    ) -> BoxFuture<'a, Option<(Vec<Value>, Answer)>> {
        Box::pin(async { None })
    }

    fn start<'a>(&'a mut self, name: &'a str, args: Value) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (addr, req) = (self.addr.clone(), self.request(name, &args));
            self.started = Some(tokio::spawn(async move {
                let r = grpc::call::<pb::CallToolResponse>(&addr, "CallTool", &req).await;
                panic!("a call that runs until cancelled answered: {r:?}");
            }));
        })
    }

    fn cancel(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.started.as_ref().expect("a started call").abort();
        })
    }

    fn still_serving_unanswered(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let call = self.started.take().expect("a started call");
            let ended = call.await.expect_err("the call was dropped, not answered");
            assert!(ended.is_cancelled(), "{ended}");
            assert!(!self.tools().await.is_empty(), "still serving");
        })
    }

    fn ping(&mut self) -> BoxFuture<'_, Option<Value>> {
        Box::pin(async { None })
    }

    fn carries_structured(&self, tool: &str) -> bool {
        let t = self.tools.iter().find(|t| t.name == tool).expect("listed");
        t.metadata.contains_key("output_type")
    }
}
