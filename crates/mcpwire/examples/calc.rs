//! The README's example: a one-tool MCP server over stdio (`cargo run -p mcpwire --example calc`).

use mcpwire::Service;
use mcpwire::model::types::Implementation;
use mcpwire::router::{CallCtx, Json, Server, ToolError, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: f64,
    b: f64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Sum {
    sum: f64,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let server = Server::builder(Implementation::new("calc", "1.0"))
        .tool(
            tool("add", |ctx: CallCtx, args: Add| async move {
                ctx.progress(1.0, Some(1.0), None);
                Ok::<_, ToolError>(Json(Sum {
                    sum: args.a + args.b,
                }))
            })
            .description("Adds two numbers")
            .read_only(),
        )
        .build();
    Service::from_server(server).serve_stdio().await
}
