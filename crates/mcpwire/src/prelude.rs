//! One import for writing an MCP server: `use mcpwire::prelude::*;`.
//!
//! Brings the attribute macros ([`server`], [`tool`](macro@tool), [`prompt`], [`resource`]), the call
//! context ([`CallCtx`]), the result and error types, the [`Server`] builder and
//! [`Service`] to serve it. Your own argument and result types still derive
//! `serde::Deserialize`/`Serialize` and `schemars::JsonSchema`, so add `serde` and
//! `schemars` to your dependencies when you define such types.
//!
//! ```no_run
//! use mcpwire::prelude::*;
//!
//! struct Greeter;
//!
//! #[server]
//! impl Greeter {
//!     /// Greets someone by name.
//!     #[tool(read_only)]
//!     fn greet(&self, /** Who to greet. */ name: String) -> String {
//!         format!("Hello, {name}!")
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> std::io::Result<()> {
//!     let server = Server::builder(Implementation::new("greeter", "1.0"))
//!         .handlers(Greeter)
//!         .build();
//!     server.serve_stdio().await
//! }
//! ```

pub use mcpwire_model::McpError;
pub use mcpwire_model::types::{
    CallToolResult, Content, GetPromptResult, Implementation, LoggingLevel, PromptMessage,
    ResourceContents, Role,
};
pub use mcpwire_router::{
    CallCtx, Elicited, Handlers, Json, NoArgs, PromptDef, ResourceDef, Server, ServerBuilder,
    TaskSupport, TemplateDef, ToolDef, ToolError, prompt, resource, server, tool,
};

pub use mcpwire_server::{Serve, ServeConfig, Service};
