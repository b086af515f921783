//! The wire × backend matrix: one set of standard assertions over every pair of a wire
//! {stdio, Streamable HTTP stateful, HTTP stateless 2026-07-28, WebSocket, gRPC, MCPB} and
//! a backend kind {a native server, a tool process, an upstream MCP server over stdio and
//! over HTTP, a federation of two}, all in this process but the tool process and the stdio
//! upstream, each pair a test of its own (`cargo test --test matrix native::grpc`).
//!
//! The assertions (see [`run`]): the server introduces itself (`initialize`; stateless:
//! `server/discover`; gRPC: the `Initialize` RPC), `tools/list` holds the backend's tools,
//! a `tools/call` answers text, another structured content, a failing tool is an `isError`
//! result, an unknown tool is −32602, a call reports progress before its answer, a call
//! cancelled the wire's way (`notifications/cancelled`; a dropped stateless request or gRPC
//! call) reaches the tool as a cancellation and is never answered while the connection
//! goes on, and `ping` is answered. A wire skips only what it cannot carry, saying why
//! ([`WireKind::cannot`]).
//!
//! `wires.rs`: how each wire is served and spoken to; `backends.rs`: the backends and what
//! each offers the assertions.
//!
//! Adding a wire or a backend is one line in the `matrix!` invocation at the end (plus, for
//! a new wire, how to serve it and talk to it; for a new backend, what it offers).

mod backends;
mod wires;

use backends::Backend;
use serde_json::{Value, json};
use wires::{Answer, Client, WireKind};

/// The text of a tool result's first content block.
fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Runs the standard assertions over `wire` in front of `backend` (`None`: a peer it needs
/// is missing, skipped).
async fn run(wire: WireKind, backend: Option<Backend>) {
    let Some(backend) = backend else { return };
    let started = std::time::Instant::now();
    let mut served = mcpwire_testkit::serve::serve(backend.service.clone(), wire.listener()).await;
    let mut c: Box<dyn Client> = wire.connect(&mut served).await;
    let skip = |check: &str| {
        let why = wire.cannot(check).expect("a reason");
        eprintln!("SKIPPED {wire:?} × {}: {check}: {why}", backend.kind);
    };

    // The server introduces itself.
    assert_eq!(c.open().await, backend.name, "the server's name");

    // tools/list holds every tool the assertions call.
    let tools = c.tools().await;
    for t in backend.tools() {
        assert!(tools.iter().any(|n| n == t), "{t} is not listed: {tools:?}");
    }

    // A call answers text.
    let r = c
        .call(backend.echo, json!({"text": "across the matrix"}))
        .await
        .expect("echo answers");
    assert_eq!(text(&r), "across the matrix", "{r}");
    assert_ne!(r["isError"], true, "{r}");

    // A call answers structured content.
    let (tool, args, want) = &backend.structured;
    let r = c
        .call(tool, args.clone())
        .await
        .expect("a structured result");
    if c.carries_structured(tool) {
        assert_eq!(&r["structuredContent"], want, "{r}");
    } else {
        skip("structured content");
        assert!(!text(&r).is_empty(), "its text instead: {r}");
    }

    // A failing tool is a result with isError, not a protocol error.
    let (tool, args) = &backend.failing;
    let r = c
        .call(tool, args.clone())
        .await
        .expect("a tool error is a result");
    assert_eq!(r["isError"], true, "{r}");

    // An unknown tool is a protocol error: invalid params.
    let e: Answer = c.call("no_such_tool", json!({})).await;
    assert_eq!(e.expect_err("an unknown tool is refused"), -32602);

    // Progress notifications come before the answer.
    let (tool, args) = &backend.progress;
    match c.call_with_progress(tool, args.clone()).await {
        None => skip("progress"),
        Some((progress, answer)) => {
            let r = answer.expect("the progress tool answers");
            assert_ne!(r["isError"], true, "{r}");
            assert!(!progress.is_empty(), "no progress before the answer");
            for p in &progress {
                assert_eq!(p["params"]["progressToken"], wires::PROGRESS_TOKEN, "{p}");
            }
        }
    }

    // A cancelled call reaches the tool as a cancellation, is never answered, and the
    // connection goes on.
    let (tool, args) = &backend.blocking;
    backend.witness.arm();
    c.start(tool, args.clone()).await;
    backend.witness.started().await;
    c.cancel().await;
    backend.witness.cancelled().await;
    c.still_serving_unanswered().await;

    // ping.
    match c.ping().await {
        None => skip("ping"),
        Some(r) => assert_eq!(r, json!({})),
    }

    // The end: stdio once its client closed the input and every accepted call was
    // answered (the cancelled one no longer running); the others on shutdown, drained.
    drop(c);
    let ended = match wire {
        WireKind::Stdio => served.ended().await,
        _ => served.shutdown().await,
    };
    ended.expect("a clean end, no call left running");
    eprintln!("{wire:?} × {}: {:?}", backend.kind, started.elapsed());
}

/// A cancellation that overtakes a call relayed to a stdio upstream (one that answered a
/// call before) reaches it: the call does not run to its end, and the downstream connection
/// ends. The matrix waits for each blocking call to reach its tool before cancelling it, so it
/// does not race; this does, a few times. (Found by the matrix: a call and its cancellation
/// read in one burst used to run the call.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_overtaking_a_relayed_call_reaches_the_stdio_upstream() {
    use mcpwire_testkit::raw::{Conversation, Peer};
    for attempt in 0..5 {
        let backend = backends::upstream_stdio().await.expect("the demo upstream");
        let mut served =
            mcpwire_testkit::serve::serve(backend.service.clone(), WireKind::Stdio.listener())
                .await;
        let mut c = Conversation::new(served.stdio());
        c.initialize("2025-11-25", json!({})).await;
        let echo = json!({"name": "echo", "arguments": {"text": "first"}});
        assert_eq!(
            text(&c.request(1, "tools/call", echo).await["result"]),
            "first"
        );
        let slow = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                          "params": {"name": "test_slow", "arguments": {"seconds": 30}}});
        c.peer.send(slow).await;
        c.notify("notifications/cancelled", json!({"requestId": 2}))
            .await;
        assert_eq!(c.request(3, "ping", json!({})).await["result"], json!({}));
        drop(c);
        served.ended().await.unwrap_or_else(|e| {
            panic!("attempt {attempt}: the cancelled call still runs upstream: {e}")
        });
    }
}

/// A test per (backend, wire): `backends: [...]` are functions of [`backends`],
/// `wires: [test name: WireKind variant, ...]`.
macro_rules! matrix {
    (backends: [$($b:ident),* $(,)?], wires: $wires:tt) => {
        $( matrix!(@backend $b $wires); )*
    };
    (@backend $b:ident [$($w:ident: $kind:ident),* $(,)?]) => {
        mod $b {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $w() {
                    super::run(super::WireKind::$kind, super::backends::$b().await).await;
                }
            )*
        }
    };
}

matrix! {
    backends: [native, tool_process, upstream_stdio, upstream_http, federation],
    wires: [
        stdio: Stdio,
        http_stateful: HttpStateful,
        http_stateless: HttpStateless,
        websocket: WebSocket,
        grpc: Grpc,
        mcpb: Mcpb,
    ]
}
