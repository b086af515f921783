//! A descriptor pool's services → tool plans (sans-IO): unary and server-streaming
//! methods become tools (`Service_Method`), client- and bidi-streaming ones are left out
//! with the reason.

use mcpwire_openapi::{Skipped, Unique, base_name};
use prost_reflect::{DescriptorPool, MethodDescriptor};
use serde_json::Value;

use crate::GrpcError;
use crate::schema::{input_schema, output_schema, wrap};

/// How a method answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One answer.
    Unary,
    /// A stream of answers: progress per message, all of them as the result.
    ServerStreaming,
}

/// One tool made from one method.
#[derive(Debug, Clone)]
pub struct MethodPlan {
    /// The tool's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its `inputSchema`.
    pub input_schema: Value,
    /// Its `outputSchema`.
    pub output_schema: Value,
    /// Whether each answer message is wrapped in `result` (a non-object well-known type).
    pub wrapped: bool,
    /// The method.
    pub method: MethodDescriptor,
    /// How it answers.
    pub shape: Shape,
}

/// The tools of `services` (all of the pool's when empty), at most `max_methods`.
pub fn plan(
    pool: &DescriptorPool,
    services: &[String],
    max_methods: usize,
) -> Result<(Vec<MethodPlan>, Vec<Skipped>), GrpcError> {
    let mut tools = Vec::new();
    let mut skipped = Vec::new();
    let mut names = Unique::default();
    let mut count = 0;
    for service in pool.services() {
        if service.full_name().starts_with("grpc.reflection.")
            || (!services.is_empty() && !services.iter().any(|s| s == service.full_name()))
        {
            continue;
        }
        for method in service.methods() {
            count += 1;
            if count > max_methods {
                return Err(GrpcError::TooManyMethods(max_methods));
            }
            let what = format!("{}/{}", service.full_name(), method.name());
            let shape = match (method.is_client_streaming(), method.is_server_streaming()) {
                (false, false) => Shape::Unary,
                (false, true) => Shape::ServerStreaming,
                (true, _) => {
                    skipped.push(Skipped {
                        operation: what,
                        reason: "client-streaming and bidirectional methods take a stream of \
                                 requests, which one tool call cannot give"
                            .into(),
                    });
                    continue;
                }
            };
            let (mut output_schema, wrapped) = output_schema(&method.output());
            if shape == Shape::ServerStreaming {
                output_schema = wrap(output_schema, "messages", true);
            }
            let id = format!("{}_{}", service.name(), method.name());
            let name = names.take(&base_name(Some(&id), "", ""));
            let kind = match shape {
                Shape::Unary => "unary",
                Shape::ServerStreaming => {
                    "server-streaming (each message is a progress notification; all of them are the result)"
                }
            };
            tools.push(MethodPlan {
                name,
                description: format!(
                    "gRPC {what} ({kind}): {} → {}",
                    method.input().full_name(),
                    method.output().full_name()
                ),
                input_schema: input_schema(&method.input()),
                output_schema,
                wrapped,
                method,
                shape,
            });
        }
    }
    Ok((tools, skipped))
}
