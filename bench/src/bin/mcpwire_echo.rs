//! mcpwire's side of the load driver: the same single `echo` tool as `rmcp_echo`, written
//! with mcpwire's native API and served over stdio exactly as `mcpwire demo` serves, or with
//! `--http PORT` over Streamable HTTP on 127.0.0.1 (the multi-threaded runtime, as
//! `mcpwire demo --transport http`), or with `--mcpb PORT` over MCPB on 127.0.0.1 (token
//! `bench`, on this thread like stdio). Both print `listening on ADDR` to stderr.
//! `--macro` (first) serves the same tool written with `#[tool]` instead of the closure
//! builder, for an A/B of the macro's per-call cost in one run:
//! `loadgen --server "builder=mcpwire_echo" --server "macro=mcpwire_echo --macro"`.

use mcpwire::Service;
use mcpwire::http::{HttpConfig, HttpServer};
use mcpwire_router::model::types::Implementation;
use mcpwire_router::{CallCtx, Server, ToolError, tool};

/// Arguments of `echo`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Text to echo back.
    text: String,
}

/// Echo the input text
#[mcpwire::prelude::tool]
fn echo(
    /// Text to echo back.
    text: String,
) -> String {
    text
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1).peekable();
    let with_macro = args.next_if(|a| a == "--macro").is_some();
    let echo = if with_macro {
        echo_tool()
    } else {
        tool("echo", |_ctx: CallCtx, args: EchoArgs| async move {
            Ok::<_, ToolError>(args.text)
        })
        .description("Echo the input text")
    };
    let server = Server::builder(Implementation::new(
        "mcpwire-echo",
        env!("CARGO_PKG_VERSION"),
    ))
    .tool(echo)
    .build();
    let service = Service::from_server(server);
    let (flag, port) = (args.next(), args.next());
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .map_err(|e| std::io::Error::other(format!("bad port: {e}")))?,
        None => 0,
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    match flag.as_deref() {
        Some("--http") => {
            let config = HttpConfig {
                bind: addr,
                // The load driver opens many sessions over a run.
                max_sessions: 100_000,
                ..HttpConfig::default()
            };
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?
                .block_on(async move {
                    let server = HttpServer::bind(service, config).await?;
                    eprintln!("listening on {}", server.local_addr()?);
                    server.serve().await
                })
        }
        Some("--mcpb") => {
            let config = mcpwire::mcpb::McpbConfig {
                tokens: vec!["bench".into()],
                ..Default::default()
            };
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(async move {
                    let shutdown = tokio_util::sync::CancellationToken::new();
                    let server =
                        mcpwire::mcpb::McpbServer::bind(service, addr, config, shutdown).await?;
                    eprintln!("listening on {}", server.local_addr()?);
                    server.serve().await
                })
        }
        _ => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(service.serve_stdio()),
    }
}
