//! OpenAPI 3.0 and 3.1 services as MCP tools.
//!
//! The conversion is sans-IO and made of pure functions: [`Document::parse`] reads a
//! document (JSON or YAML, bounded by [`Limits`]), [`plan`] turns its operations into
//! [`ToolPlan`]s (name, description, input and output schemas, the request to make),
//! [`request::build`] turns a call's arguments into an HTTP request and
//! [`response::result`] an HTTP answer into a tool result. [`OpenApiBackend`] does the
//! I/O: reading the document, keep-alive HTTP to the service, credentials, reload.
//! Decisions: `docs/design/backends-openapi-grpc.md`.

mod backend;
mod document;
mod error;
pub mod http;
mod names;
mod operation;
pub mod request;
pub mod response;
mod schema;

pub use backend::{Credentials, OpenApiBackend, OpenApiConfig, Select, Source};
pub use document::{Document, Limits, Version};
pub use error::OpenApiError;
pub use names::{MAX_NAME, Unique, base_name};
pub use operation::{
    Body, Catalog, Location, OpInfo, Operation, Output, Param, Skipped, Style, ToolPlan, is_json,
    plan,
};
pub use schema::Resolver;
