//! Backends, the router, and the native Rust tool API.
//!
//! **Is:** the [`Backend`] trait every tool source implements (native tools, tool
//! processes, upstream servers, federations); the [`Router`] that parses requests into
//! [`BackendRequest`]s, checks capabilities and turns 2026-07-28 asks into `input_required`
//! results; and [`Server`], the in-process backend tool authors build with [`tool()`],
//! [`ResourceDef`], [`TemplateDef`] and [`PromptDef`].
//!
//! **Is not:** a transport or a session. Nothing here reads bytes or knows which wire a
//! request came from; sessions hand requests in as [`McpCall`]s.
//!
//! # A tool in five lines
//! ```
//! use mcpwire_router::{Server, tool, CallCtx, ToolError};
//! use mcpwire_model::types::Implementation;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: f64, b: f64 }
//!
//! let server = Server::builder(Implementation::new("calc", "1.0"))
//!     .tool(tool("add", |_ctx: CallCtx, args: Add| async move {
//!         Ok::<_, ToolError>((args.a + args.b).to_string())
//!     }).description("Adds two numbers"))
//!     .build();
//! assert_eq!(server.tool_names(), vec!["add".to_string()]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// What the code `#[tool]`, `#[server]`, `#[prompt]` and `#[resource]` generate calls.
#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __private;
mod ask;
mod backend;
mod ctx;
mod forwarded;
mod future;
mod handlers;
mod identity;
mod input;
mod output;
mod prompt;
mod relaying;
mod request;
mod resource;
mod router;
mod server;
mod session_scope;
mod state_key;
mod task_entry;
mod tasks;
mod tool;
mod uri_template;
mod validate;

pub use ask::{ElicitRequest, Elicited, SampleRequest, Sampled, elicitation_schema};
pub use backend::{Backend, BackendInfo, HeaderParam, ToolRouting};
pub use ctx::{CallCtx, Peer};
pub use forwarded::ForwardedCall;
pub use future::BoxFuture;
pub use handlers::Handlers;
pub use identity::{Credential, Identity};
pub use mcpwire_macros::{prompt, resource, server, tool};
pub use output::{
    IntoPromptOutput, IntoPromptResult, IntoResourceContents, IntoResourceOutput, IntoToolOutput,
    tool_error,
};
pub use prompt::PromptDef;
pub use relaying::{RelayCaller, RelayDecision, RelayRoute, RouteParts};
pub use request::BackendRequest;
pub use resource::{ResourceDef, TemplateDef};
pub use router::{McpCall, McpReply, Router};
pub use server::{CatalogEdit, Server, ServerBuilder};
pub use session_scope::{SessionNotice, SessionRecords, SessionScope, SharedSession};
pub use state_key::StateKey;
pub use tasks::{
    RemoteTask, TASKS_EXTENSION, TaskCommand, TaskConfig, TaskShare, TaskSnapshot, TaskSupport,
    offers_tasks_extension,
};
pub use tool::{IntoToolResult, Json, NoArgs, ToolDef, ToolError, tool};
pub use uri_template::UriTemplate;

pub use mcpwire_model as model;
pub use schemars;
pub use serde;
