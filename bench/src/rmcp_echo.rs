//! The rmcp baseline's server: one `echo` tool, with a `ToolRouter` stored in the handler
//! (`#[tool_handler(router = self.tool_router)]`), so the router is built once rather than on
//! every call. Served over stdio by `rmcp_echo` and over Streamable HTTP by `rmcp_http_echo`.

use rmcp::{
    ServerHandler,
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    schemars, tool, tool_handler, tool_router,
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

impl Default for Echo {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_router]
impl Echo {
    /// A new server.
    pub fn new() -> Self {
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
