//! The service-wide proto-mcp tool schemas: each tool's input and output as protobuf
//! messages (through `mcpwire-schema`'s converter), kept current as the router's tool list
//! changes. What every proto-mcp connection (stdio's detected frames, WebSocket, gRPC)
//! reads arguments and writes results with. A leaf: the router and the schema crates only.

use std::sync::Arc;

use mcpwire_model::{BackendEvent, Method, Reply};
use mcpwire_proto_mcp::{ProtoToolSchemas, SchemaConverter, ToolProto};
use mcpwire_router::{CallCtx, McpCall, Router};
use serde_json::{Value, json};

/// Pages through the router's complete `tools/list` (bounded: 10 000 pages).
async fn all_tools(router: &Router) -> Result<Vec<Value>, mcpwire_model::McpError> {
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10_000 {
        let params = match &cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let call = McpCall::new(
            Method::ToolsList,
            Some(mcpwire_model::to_raw(&params)),
            CallCtx::detached(),
        );
        let (Reply::Complete(raw) | Reply::InputRequired(raw)) = router.call(call).await?;
        let mut page: Value = serde_json::from_str(raw.get())
            .map_err(|e| mcpwire_model::McpError::Internal(e.to_string()))?;
        if let Some(Value::Array(list)) = page.get_mut("tools").map(Value::take) {
            tools.extend(list);
        }
        cursor = page
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    Ok(tools)
}

/// Fills `schemas` from the router's tools now, then keeps it current on every
/// `ToolsListChanged` for as long as the runtime runs.
pub async fn keep_tool_schemas(router: Router, schemas: Arc<ProtoToolSchemas>) {
    refresh(&router, &schemas).await;
    let Some(mut events) = router.events() else {
        return;
    };
    tokio::spawn(async move {
        loop {
            match events.recv().await {
                Ok(BackendEvent::ToolsListChanged) => refresh(&router, &schemas).await,
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    refresh(&router, &schemas).await
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    });
}

async fn refresh(router: &Router, schemas: &ProtoToolSchemas) {
    match all_tools(router).await {
        Ok(tools) => schemas.replace(&tools),
        Err(e) => tracing::warn!(error = %e, "could not list tools for the proto-mcp tool schemas"),
    }
}

/// The JSON Schema → protobuf converter of `mcpwire-schema`, without a schema registry.
pub fn default_converter() -> Arc<dyn SchemaConverter> {
    Arc::new(SchemaCrate { registry: None })
}

/// The converter with the schema registry compiled from `dir` (a directory of `.proto`
/// modules, `{owner}/{repo}/{version}/`), which tools reference through
/// `_meta["io.mcpwire/bsrRef"]`.
pub fn converter_with_registry(
    dir: &std::path::Path,
) -> Result<Arc<dyn SchemaConverter>, mcpwire_schema::SchemaError> {
    let registry = mcpwire_schema::Registry::load(dir)?;
    Ok(Arc::new(SchemaCrate {
        registry: Some(registry),
    }))
}

/// Converts with [`mcpwire_schema::tool_schemas`]; resolves references in the registry.
struct SchemaCrate {
    registry: Option<mcpwire_schema::Registry>,
}

impl SchemaConverter for SchemaCrate {
    fn convert(
        &self,
        name: &str,
        input: &Value,
        output: Option<&Value>,
    ) -> Result<Arc<dyn ToolProto>, String> {
        mcpwire_schema::tool_schemas(name, input, output)
            .map(|s| Arc::new(Schemas(s)) as Arc<dyn ToolProto>)
            .map_err(|e| e.to_string())
    }

    fn convert_many(
        &self,
        tools: &[(&str, &Value, Option<&Value>)],
    ) -> Vec<Result<Arc<dyn ToolProto>, String>> {
        let specs: Vec<mcpwire_schema::ToolSpec<'_>> = tools
            .iter()
            .map(|&(name, input, output)| mcpwire_schema::ToolSpec {
                name,
                input,
                output,
            })
            .collect();
        mcpwire_schema::tool_schemas_many(&specs, &mcpwire_schema::Limits::default())
            .into_iter()
            .map(|r| {
                r.map(|s| Arc::new(Schemas(s)) as Arc<dyn ToolProto>)
                    .map_err(|e| e.to_string())
            })
            .collect()
    }

    fn resolve(&self, reference: &str) -> Result<Arc<dyn ToolProto>, String> {
        let Some(registry) = &self.registry else {
            return Err(format!(
                "no schema registry is configured to resolve {reference}"
            ));
        };
        registry
            .resolve(reference)
            .map(|s| Arc::new(Schemas(s)) as Arc<dyn ToolProto>)
            .map_err(|e| e.to_string())
    }

    fn has_registry(&self) -> bool {
        self.registry.is_some()
    }
}

#[derive(Debug)]
struct Schemas(mcpwire_schema::ToolSchemas);

impl ToolProto for Schemas {
    fn inline_schema(&self) -> mcpwire_wire::proto_mcp::RawFileSet {
        self.0.raw_file_set()
    }
    fn input(&self) -> &prost_reflect::MessageDescriptor {
        &self.0.input
    }
    fn output(&self) -> Option<&prost_reflect::MessageDescriptor> {
        self.0.output.as_ref()
    }
    fn arguments_to_json(&self, msg: &prost_reflect::DynamicMessage) -> Result<Value, String> {
        self.0.arguments_to_json(msg).map_err(|e| e.to_string())
    }
    fn structured_to_message(
        &self,
        value: &Value,
    ) -> Result<prost_reflect::DynamicMessage, String> {
        self.0
            .structured_to_message(value)
            .map_err(|e| e.to_string())
    }
}
