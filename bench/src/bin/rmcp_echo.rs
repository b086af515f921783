//! The rmcp baseline for the load driver: an rmcp stdio server with one `echo` tool.
//!
//! Uses rmcp's fastest stdio transport (`stdio_pipes()`, non-blocking FIFOs on Linux) and a
//! `ToolRouter` stored in the handler (`#[tool_handler(router = self.tool_router)]`), so the
//! router is built once rather than on every call.

use rmcp::{
    ServerHandler, ServiceExt,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
    transport::stdio_pipes,
};

/// Arguments of `echo`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct EchoArgs {
    /// Text to echo back.
    pub text: String,
}

/// The server: a single `echo` tool.
#[derive(Debug, Clone)]
pub struct Echo {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Echo {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echo the input text")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Echo {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Echo::new().serve(stdio_pipes()).await?;
    service.waiting().await?;
    Ok(())
}
