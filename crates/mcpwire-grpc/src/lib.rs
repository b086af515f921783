//! gRPC services as MCP tools.
//!
//! Descriptors come from server reflection (v1, else v1alpha) or a descriptor-set file
//! ([`pool`]); [`plan`] makes unary and server-streaming methods tools whose schemas are
//! `mcpwire-schema`'s proto3 JSON shape of their messages (64-bit integers also as
//! strings); [`GrpcBackend`] calls them with dynamic messages over a tonic channel built on
//! the project's TLS client settings. Shared with the OpenAPI backends: the credentials
//! seam, tool-name rules and error results (`mcpwire-openapi`). Decisions:
//! `docs/design/backends-openapi-grpc.md`.

mod backend;
mod codec;
pub mod connect;
mod error;
pub mod plan;
pub mod pool;
mod schema;

pub use backend::{Descriptors, GrpcBackend, GrpcConfig};
pub use codec::DynamicCodec;
pub use error::GrpcError;
pub use plan::{MethodPlan, Shape};
pub use schema::{input_schema, output_schema};
