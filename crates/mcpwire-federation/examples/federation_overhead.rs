//! What a federation adds to a call, in process: `tools/call` of a native echo tool and
//! `tools/list` through the router straight to the server, and through a federation whose
//! member is that server (next to two others with 100 tools each). Rounds alternate so
//! both sides see the same machine. A measurement, not a test:
//!
//! ```text
//! cargo run --release -p mcpwire-federation --example federation_overhead
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcpwire_federation::{Federation, FederationConfig, Member, PrefixMode};
use mcpwire_model::types::Implementation;
use mcpwire_model::{Method, to_raw};
use mcpwire_router::{CallCtx, McpCall, Router, Server, ToolError, tool};
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Text {
    text: String,
}

fn server(name: &str, tools: usize) -> Arc<Server> {
    let mut b = Server::builder(Implementation::new(name, "1"));
    for i in 0..tools {
        let t = if i == 0 {
            "echo".to_owned()
        } else {
            format!("tool{i}")
        };
        b = b.tool(tool(t, |_: CallCtx, a: Text| async move {
            Ok::<_, ToolError>(a.text)
        }));
    }
    b.build()
}

async fn round(
    router: &Router,
    method: &str,
    params: &serde_json::Value,
    n: usize,
) -> Vec<Duration> {
    let params = to_raw(params);
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let call = McpCall::new(
            Method::parse(method),
            Some(params.clone()),
            CallCtx::detached(),
        );
        let start = Instant::now();
        let reply = router.call(call).await;
        times.push(start.elapsed());
        assert!(reply.is_ok());
    }
    times
}

fn pct(times: &mut [Duration], p: f64) -> f64 {
    times.sort();
    let i = ((times.len() as f64 - 1.0) * p).round() as usize;
    times[i].as_nanos() as f64 / 1000.0
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let echo = server("echo", 100);
    let direct = Router::new(echo.clone());
    let fed = Federation::new(
        FederationConfig::new(Implementation::new("gateway", "1"))
            .prefix(PrefixMode::Never)
            .member(Member::new("a", server("a", 100)))
            .member(Member::new("b", server("b", 100)))
            .member(Member::new("echo", echo)),
    )
    .await
    .expect("federation");
    let exposed = fed
        .report()
        .tools
        .into_iter()
        .find(|t| t.member == "echo" && t.original == "echo")
        .expect("echo")
        .exposed;
    let through = Router::new(fed);
    let cases = [
        (
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
            json!({"name": exposed, "arguments": {"text": "hi"}}),
        ),
        ("tools/list", json!({}), json!({})),
    ];
    for (method, direct_params, fed_params) in cases {
        let (mut d, mut f) = (Vec::new(), Vec::new());
        round(&direct, method, &direct_params, 10_000).await;
        round(&through, method, &fed_params, 10_000).await;
        for _ in 0..10 {
            d.extend(round(&direct, method, &direct_params, 20_000).await);
            f.extend(round(&through, method, &fed_params, 20_000).await);
        }
        let (d50, f50) = (pct(&mut d, 0.5), pct(&mut f, 0.5));
        let (d99, f99) = (pct(&mut d, 0.99), pct(&mut f, 0.99));
        println!(
            "{method:<11} direct p50 {d50:7.2} µs p99 {d99:7.2} µs | federation p50 {f50:7.2} µs p99 {f99:7.2} µs | added p50 {:+.2} µs",
            f50 - d50
        );
    }
}
