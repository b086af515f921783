//! mcpwire's side of the load driver: the same single `echo` tool as `rmcp_echo`, written
//! with mcpwire's native API and served over stdio exactly as `mcpwire demo` serves.

use mcpwire::Service;
use mcpwire_router::model::types::Implementation;
use mcpwire_router::{CallCtx, Server, ToolError, tool};

/// Arguments of `echo`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// Text to echo back.
    text: String,
}

fn main() -> std::io::Result<()> {
    let server = Server::builder(Implementation::new(
        "mcpwire-echo",
        env!("CARGO_PKG_VERSION"),
    ))
    .tool(
        tool("echo", |_ctx: CallCtx, args: EchoArgs| async move {
            Ok::<_, ToolError>(args.text)
        })
        .description("Echo the input text"),
    )
    .build();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(Service::from_server(server).serve_stdio())
}
