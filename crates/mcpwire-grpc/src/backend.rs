//! [`GrpcBackend`]: a gRPC service's methods as tools — descriptors from reflection or a
//! file, each call's arguments checked against the input schema and made a dynamic
//! message, sent with the backend's metadata and the call's deadline; a status that is
//! not OK is a tool error naming its code; a server stream's messages are progress
//! notifications and, all together (bounded), the result.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::{Implementation, ListChangedCapability, ServerCapabilities};
use mcpwire_model::{McpError, Raw, Reply, to_raw};
use mcpwire_openapi::response::error;
use mcpwire_openapi::{Credentials, Skipped};
use mcpwire_router::{Backend, BackendInfo, BackendRequest, BoxFuture, CallCtx};
use mcpwire_server::tls::ClientTls;
use prost_reflect::{DeserializeOptions, DynamicMessage, SerializeOptions};
use serde_json::{Map, Value, json};
use tonic::metadata::{MetadataKey, MetadataValue};
use tonic::transport::Channel;

use crate::codec::DynamicCodec;
use crate::plan::{MethodPlan, Shape, plan};
use crate::{GrpcError, connect, pool};

/// Where the service's descriptors come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Descriptors {
    /// Server reflection (v1, else v1alpha).
    Reflection,
    /// A `FileDescriptorSet` file (with its imports).
    File(PathBuf),
}

/// How a gRPC backend is set up.
#[derive(Clone)]
pub struct GrpcConfig {
    /// The backend's name.
    pub name: String,
    /// `http://host:port` or `https://host:port`.
    pub url: String,
    /// Where the descriptors come from.
    pub descriptors: Descriptors,
    /// Only these services (full names; empty: all).
    pub services: Vec<String>,
    /// `https`: trust and client certificate.
    pub tls: ClientTls,
    /// Metadata sent with every call (credentials).
    pub credentials: Option<Arc<dyn Credentials>>,
    /// One call's deadline (sent as `grpc-timeout` too).
    pub call_timeout: Duration,
    /// How long connecting (and reflection) may take.
    pub connect_timeout: Duration,
    /// Most messages a server stream may send before the call is cut with an error.
    pub max_stream_messages: usize,
    /// Most methods made tools.
    pub max_methods: usize,
}

impl std::fmt::Debug for GrpcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConfig")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("descriptors", &self.descriptors)
            .finish_non_exhaustive()
    }
}

impl GrpcConfig {
    /// Defaults: reflection, 30 s calls, 10 s connects, 1,000 stream messages, 2,000
    /// methods.
    pub fn new(name: impl Into<String>, url: impl Into<String>) -> GrpcConfig {
        GrpcConfig {
            name: name.into(),
            url: url.into(),
            descriptors: Descriptors::Reflection,
            services: Vec::new(),
            tls: ClientTls::default(),
            credentials: None,
            call_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_stream_messages: 1000,
            max_methods: 2000,
        }
    }
}

struct Tool {
    plan: MethodPlan,
    input: Option<jsonschema::Validator>,
    path: tonic::codegen::http::uri::PathAndQuery,
}

/// A gRPC service as a backend.
pub struct GrpcBackend {
    info: BackendInfo,
    config: GrpcConfig,
    channel: Channel,
    list: Raw,
    tools: HashMap<String, Arc<Tool>>,
    skipped: Vec<Skipped>,
}

impl GrpcBackend {
    /// Connects (lazily), reads the descriptors and plans the tools.
    pub async fn start(config: GrpcConfig) -> Result<Arc<GrpcBackend>, GrpcError> {
        let channel = connect::channel(&config.url, &config.tls, config.connect_timeout)?;
        let (pool, services) = match &config.descriptors {
            Descriptors::File(path) => {
                let bytes = std::fs::read(path)
                    .map_err(|e| GrpcError::Read(format!("{}: {e}", path.display())))?;
                (pool::from_file_set(&bytes)?, config.services.clone())
            }
            Descriptors::Reflection => {
                let (pool, offered) =
                    pool::from_reflection(channel.clone(), config.connect_timeout).await?;
                let services = if config.services.is_empty() {
                    offered
                } else {
                    config.services.clone()
                };
                (pool, services)
            }
        };
        let (plans, skipped) = plan(&pool, &services, config.max_methods)?;
        let mut tools = HashMap::new();
        let mut listed = Vec::new();
        for p in plans {
            listed.push(json!({
                "name": p.name,
                "description": p.description,
                "inputSchema": p.input_schema,
                "outputSchema": p.output_schema,
                "annotations": {"openWorldHint": true},
            }));
            let input = jsonschema::validator_for(&p.input_schema)
                .inspect_err(|e| tracing::warn!(tool = %p.name, "an input schema does not compile, so it is not checked: {e}"))
                .ok();
            let path = format!(
                "/{}/{}",
                p.method.parent_service().full_name(),
                p.method.name()
            )
            .parse()
            .map_err(|e| GrpcError::Descriptors(format!("method path: {e}")))?;
            tools.insert(
                p.name.clone(),
                Arc::new(Tool {
                    plan: p,
                    input,
                    path,
                }),
            );
        }
        tracing::info!(backend = %config.name, url = %config.url, tools = tools.len(), skipped = skipped.len(), "gRPC service described");
        Ok(Arc::new(GrpcBackend {
            info: BackendInfo {
                name: config.name.clone(),
                capabilities: ServerCapabilities {
                    tools: Some(ListChangedCapability {
                        list_changed: Some(false),
                    }),
                    ..ServerCapabilities::default()
                },
            },
            config,
            channel,
            list: to_raw(&json!({ "tools": listed })),
            tools,
            skipped,
        }))
    }

    /// The tools' names.
    pub fn tool_names(&self) -> Vec<String> {
        let mut n: Vec<String> = self.tools.keys().cloned().collect();
        n.sort();
        n
    }

    /// The methods that did not become tools, and why.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// `serverInfo` for the backend served alone.
    pub fn server_info(&self) -> Implementation {
        Implementation::new(self.config.name.clone(), "0")
    }
}

impl Backend for GrpcBackend {
    fn info(&self) -> &BackendInfo {
        &self.info
    }

    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>> {
        match req {
            BackendRequest::ListTools { .. } => ready(Ok(Reply::Complete(self.list.clone()))),
            BackendRequest::CallTool { name, arguments } => {
                let Some(tool) = self.tools.get(&name).cloned() else {
                    return ready(Err(McpError::ToolNotFound(name)));
                };
                let channel = self.channel.clone();
                let config = self.config.clone();
                Box::pin(async move {
                    let msg = request_message(&tool, arguments.as_deref())?;
                    let call = call(&config, channel, &tool, msg, &ctx);
                    tokio::select! {
                        r = call => r.map(|v| Reply::Complete(to_raw(&v))),
                        _ = ctx.cancelled() => Err(McpError::Cancelled),
                    }
                })
            }
            BackendRequest::ListResources { .. } => {
                ready(Ok(Reply::Complete(to_raw(&json!({"resources": []})))))
            }
            BackendRequest::ListResourceTemplates { .. } => ready(Ok(Reply::Complete(to_raw(
                &json!({"resourceTemplates": []}),
            )))),
            BackendRequest::ListPrompts { .. } => {
                ready(Ok(Reply::Complete(to_raw(&json!({"prompts": []})))))
            }
            _ => ready(Err(McpError::MethodNotFound(
                "not offered by a gRPC backend".into(),
            ))),
        }
    }
}

fn ready(r: Result<Reply, McpError>) -> BoxFuture<'static, Result<Reply, McpError>> {
    Box::pin(std::future::ready(r))
}

/// The arguments, checked against the input schema, as the request message.
fn request_message(
    tool: &Tool,
    raw: Option<&serde_json::value::RawValue>,
) -> Result<DynamicMessage, McpError> {
    let invalid = |message: String| McpError::InvalidToolParams {
        tool: tool.plan.name.clone(),
        message,
    };
    let value: Value = match raw {
        Some(r) => serde_json::from_str(r.get()).map_err(|e| invalid(e.to_string()))?,
        None => Value::Object(Map::new()),
    };
    if !value.is_object() {
        return Err(invalid("the arguments are not an object".into()));
    }
    if let Some(v) = &tool.input {
        let problems: Vec<String> = v
            .iter_errors(&value)
            .take(3)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if !problems.is_empty() {
            return Err(invalid(problems.join("; ")));
        }
    }
    DynamicMessage::deserialize_with_options(
        tool.plan.method.input(),
        value,
        &DeserializeOptions::new().deny_unknown_fields(true),
    )
    .map_err(|e| invalid(e.to_string()))
}

fn to_json(msg: &DynamicMessage, wrapped: bool) -> Result<Value, String> {
    let options = SerializeOptions::new().use_proto_field_name(true);
    let v = msg
        .serialize_with_options(serde_json::value::Serializer, &options)
        .map_err(|e| e.to_string())?;
    Ok(if wrapped { json!({ "result": v }) } else { v })
}

async fn call(
    config: &GrpcConfig,
    channel: Channel,
    tool: &Tool,
    msg: DynamicMessage,
    ctx: &CallCtx,
) -> Result<Value, McpError> {
    let failed = |message: String| McpError::ToolFailed {
        tool: tool.plan.name.clone(),
        message,
    };
    let mut request = tonic::Request::new(msg);
    request.set_timeout(config.call_timeout);
    if let Some(c) = &config.credentials {
        let url = format!("{}{}", config.url.trim_end_matches('/'), tool.path);
        for (name, value) in c
            .headers("POST", &url)
            .await
            .map_err(|e| failed(format!("obtaining credentials: {e}")))?
        {
            let key = MetadataKey::from_bytes(name.as_str().as_bytes())
                .map_err(|e| failed(e.to_string()))?;
            let value =
                MetadataValue::try_from(value.as_bytes()).map_err(|e| failed(e.to_string()))?;
            request.metadata_mut().insert(key, value);
        }
    }
    let mut grpc = tonic::client::Grpc::new(channel);
    let work = async {
        grpc.ready().await.map_err(|e| {
            tonic::Status::unavailable(format!("connecting to {}: {e}", config.url))
        })?;
        let codec = DynamicCodec::new(tool.plan.method.output());
        match tool.plan.shape {
            Shape::Unary => {
                let answer = grpc
                    .unary(request, tool.path.clone(), codec)
                    .await?
                    .into_inner();
                let v = to_json(&answer, tool.plan.wrapped).map_err(tonic::Status::internal)?;
                Ok::<Value, tonic::Status>(
                    json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v}),
                )
            }
            Shape::ServerStreaming => {
                let mut stream = grpc
                    .server_streaming(request, tool.path.clone(), codec)
                    .await?
                    .into_inner();
                let mut messages = Vec::new();
                while let Some(m) = stream.message().await? {
                    if messages.len() >= config.max_stream_messages {
                        return Ok(error(format!(
                            "{}: the stream sent more than {} messages (the limit); cut",
                            tool.plan.name, config.max_stream_messages
                        )));
                    }
                    let v = to_json(&m, tool.plan.wrapped).map_err(tonic::Status::internal)?;
                    ctx.progress((messages.len() + 1) as f64, None, Some(v.to_string()));
                    messages.push(v);
                }
                let v = json!({ "messages": messages });
                Ok(
                    json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v}),
                )
            }
        }
    };
    let started = std::time::Instant::now();
    let deadline = config.call_timeout + Duration::from_secs(1);
    match tokio::time::timeout(deadline, work).await {
        Ok(Ok(v)) => Ok(v),
        // The channel ends a call whose deadline passed as Cancelled: it is the deadline.
        Ok(Err(status))
            if status.code() == tonic::Code::Cancelled
                && started.elapsed() >= config.call_timeout =>
        {
            Ok(error(format!(
                "gRPC {} answered DeadlineExceeded ({}): no answer within {:?}",
                tool.path,
                tonic::Code::DeadlineExceeded as i32,
                config.call_timeout
            )))
        }
        Ok(Err(status)) => Ok(error(format!(
            "gRPC {} answered {:?} ({}): {}",
            tool.path,
            status.code(),
            status.code() as i32,
            status.message()
        ))),
        Err(_) => Ok(error(format!(
            "gRPC {}: no answer within {:?} (DeadlineExceeded)",
            tool.path, config.call_timeout
        ))),
    }
}
