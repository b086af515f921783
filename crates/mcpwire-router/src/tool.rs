//! Native tools: typed arguments in, anything result-like out.

use crate::validate::Validator;
use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use mcpwire_model::McpError;
use mcpwire_model::types::{CallToolResult, Content, Icon, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{BoxFuture, CallCtx, TaskSupport, ToolRouting};

/// Why a tool failed. Any error converts into it with `?`; an [`McpError`] (such as
/// [`McpError::InputRequired`] from [`CallCtx::ask`]) keeps its meaning.
pub struct ToolError(ToolErrorRepr);

enum ToolErrorRepr {
    Failed(String),
    Mcp(McpError),
}

impl ToolError {
    /// A failure with this message (reported as a tool result with `isError: true`).
    pub fn new(message: impl Into<String>) -> ToolError {
        ToolError(ToolErrorRepr::Failed(message.into()))
    }

    pub(crate) fn into_mcp(self, tool: &str) -> McpError {
        match self.0 {
            ToolErrorRepr::Failed(message) => McpError::ToolFailed {
                tool: tool.to_owned(),
                message,
            },
            ToolErrorRepr::Mcp(e) => e,
        }
    }

    /// The [`McpError`] inside, or `otherwise(message)` for a plain failure.
    pub(crate) fn into_mcp_or(self, otherwise: impl FnOnce(String) -> McpError) -> McpError {
        match self.0 {
            ToolErrorRepr::Failed(message) => otherwise(message),
            ToolErrorRepr::Mcp(e) => e,
        }
    }
}

impl<E: Into<Box<dyn StdError + Send + Sync>>> From<E> for ToolError {
    fn from(e: E) -> ToolError {
        let boxed: Box<dyn StdError + Send + Sync> = e.into();
        match boxed.downcast::<McpError>() {
            Ok(m) => ToolError(ToolErrorRepr::Mcp(*m)),
            Err(other) => ToolError(ToolErrorRepr::Failed(other.to_string())),
        }
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            ToolErrorRepr::Failed(m) => f.write_str(m),
            ToolErrorRepr::Mcp(e) => fmt::Display::fmt(e, f),
        }
    }
}

/// What a tool handler may return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "return a String, Content, Vec<Content>, CallToolResult or Json<T>",
    note = "wrap serializable data in `mcpwire_router::Json(..)` to return structured content"
)]
pub trait IntoToolResult {
    /// Converts into a `tools/call` result.
    fn into_tool_result(self) -> CallToolResult;
    /// The `outputSchema` this type implies, if any.
    fn output_schema() -> Option<Value> {
        None
    }
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

/// A tool that only acts: an empty content list.
impl IntoToolResult for () {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(Vec::new())
    }
}

impl IntoToolResult for Content {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(vec![self])
    }
}

impl IntoToolResult for Vec<Content> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::new(self)
    }
}

/// Structured output: serialized into `structuredContent` (and as JSON text for older
/// clients), with `outputSchema` derived from `T`.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize + JsonSchema> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(v) => CallToolResult {
                content: vec![Content::text(v.to_string())],
                structured_content: Some(v),
                ..CallToolResult::default()
            },
            Err(e) => CallToolResult::error(format!("could not serialize the result: {e}")),
        }
    }
    fn output_schema() -> Option<Value> {
        Some(schema_of::<T>())
    }
}

/// Arguments of a tool that takes none.
#[derive(Debug, Clone, Copy, Default, serde::Deserialize, JsonSchema)]
pub struct NoArgs {}

/// The JSON Schema (2020-12) of `T`, without `$schema` and `title` noise.
pub(crate) fn schema_of<T: JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
        if !o.contains_key("type") && !o.contains_key("$ref") && !o.contains_key("oneOf") {
            o.insert("type".into(), "object".into());
        }
        if o.get("type") == Some(&Value::from("object")) && !o.contains_key("properties") {
            o.insert("properties".into(), Value::Object(Default::default()));
        }
    }
    v
}

/// Arguments on their way to a handler: still JSON text (the fast path for typed tools whose
/// schema serde already enforces), or a value that was parsed for validation.
pub(crate) enum Args<'a> {
    Text(&'a str),
    Value(Value),
}

type ToolFuture = BoxFuture<'static, Result<CallToolResult, McpError>>;
type TypedHandler = dyn Fn(CallCtx, Args<'_>) -> ToolFuture + Send + Sync;
type RawHandler = dyn Fn(CallCtx, Value) -> ToolFuture + Send + Sync;

#[derive(Clone)]
enum Handler {
    Typed(Arc<TypedHandler>),
    Raw(Arc<RawHandler>),
}

/// Schema keywords serde's typed deserialization does not enforce by itself: a typed tool
/// whose schema uses none of them needs no separate JSON Schema validation pass.
const CONSTRAINT_KEYWORDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "const",
    "enum",
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalProperties",
    "allOf",
];

fn has_constraints(schema: &Value) -> bool {
    match schema {
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| CONSTRAINT_KEYWORDS.contains(&k.as_str()) || has_constraints(v)),
        Value::Array(a) => a.iter().any(has_constraints),
        _ => false,
    }
}

/// A tool: its definition, its compiled input validator and its handler.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    validator: Option<Arc<Validator>>,
    handler: Handler,
    routing: Arc<ToolRouting>,
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef").field("tool", &self.tool).finish()
    }
}

/// A typed tool: arguments are deserialized into `A` (schema derived from `A`), the result
/// converts through [`IntoToolResult`].
pub fn tool<A, O, F, Fut>(name: impl Into<String>, f: F) -> ToolDef
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: IntoToolResult + 'static,
    F: Fn(CallCtx, A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, ToolError>> + Send + 'static,
{
    let name = name.into();
    let tool_name: Arc<str> = name.clone().into();
    let handler = move |ctx: CallCtx, args: Args<'_>| -> ToolFuture {
        let parsed: Result<A, String> = match args {
            Args::Text(t) => serde_json::from_str(t).map_err(|e| e.to_string()),
            Args::Value(v) => serde_json::from_value(v).map_err(|e| e.to_string()),
        };
        let tool_name = tool_name.clone();
        match parsed {
            Err(message) => Box::pin(std::future::ready(Err(McpError::InvalidToolParams {
                tool: tool_name.to_string(),
                message,
            }))),
            Ok(args) => {
                let fut = f(ctx, args);
                Box::pin(async move {
                    fut.await
                        .map(IntoToolResult::into_tool_result)
                        .map_err(|e| e.into_mcp(&tool_name))
                })
            }
        }
    };
    let schema = schema_of::<A>();
    let validate = has_constraints(&schema);
    let mut def = ToolDef::with_handler(name, schema, Handler::Typed(Arc::new(handler)), validate);
    def.tool.output_schema = O::output_schema();
    def
}

impl ToolDef {
    fn with_handler(
        name: String,
        input_schema: Value,
        handler: Handler,
        validate: bool,
    ) -> ToolDef {
        let validator = if validate {
            Validator::compile(&input_schema).map(Arc::new)
        } else {
            None
        };
        let header_params = ToolRouting::header_params_of(&input_schema);
        ToolDef {
            tool: Tool {
                name,
                title: None,
                description: None,
                input_schema,
                output_schema: None,
                annotations: None,
                icons: None,
                execution: None,
                meta: None,
            },
            routing: Arc::new(ToolRouting {
                task_support: TaskSupport::Forbidden,
                backend_runs_tasks: false,
                header_params,
            }),
            validator,
            handler,
        }
    }

    /// A tool taking raw JSON arguments validated against `input_schema` (for tools defined
    /// at run time: tool processes, upstream catalogs, configuration).
    pub fn raw<F, Fut>(name: impl Into<String>, input_schema: Value, f: F) -> ToolDef
    where
        F: Fn(CallCtx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CallToolResult, ToolError>> + Send + 'static,
    {
        let name = name.into();
        let tool_name: Arc<str> = name.clone().into();
        let handler = move |ctx: CallCtx,
                            args: Value|
              -> BoxFuture<'static, Result<CallToolResult, McpError>> {
            let fut = f(ctx, args);
            let tool_name = tool_name.clone();
            Box::pin(async move { fut.await.map_err(|e| e.into_mcp(&tool_name)) })
        };
        ToolDef::with_handler(name, input_schema, Handler::Raw(Arc::new(handler)), true)
    }

    /// The tool's definition as listed.
    pub fn definition(&self) -> &Tool {
        &self.tool
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.tool.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.tool.title = Some(t.into());
        self
    }

    /// Sets all annotations.
    pub fn annotations(mut self, a: ToolAnnotations) -> Self {
        self.tool.annotations = Some(a);
        self
    }

    pub(crate) fn annotate(mut self, f: impl FnOnce(&mut ToolAnnotations)) -> Self {
        f(self.tool.annotations.get_or_insert_with(Default::default));
        self
    }

    /// Marks the tool read-only.
    pub fn read_only(self) -> Self {
        self.annotate(|a| a.read_only_hint = Some(true))
    }

    /// Marks the tool destructive (or not).
    pub fn destructive(self, yes: bool) -> Self {
        self.annotate(|a| a.destructive_hint = Some(yes))
    }

    /// Marks the tool idempotent.
    pub fn idempotent(self) -> Self {
        self.annotate(|a| a.idempotent_hint = Some(true))
    }

    /// Marks whether the tool reaches an open world.
    pub fn open_world(self, yes: bool) -> Self {
        self.annotate(|a| a.open_world_hint = Some(yes))
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.tool.icons.get_or_insert_with(Vec::new).push(icon);
        self
    }

    /// Sets `_meta`.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.tool.meta = Some(meta);
        self
    }

    /// Overrides the output schema.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.tool.output_schema = Some(schema);
        self
    }

    /// Lets the tool run as a task (`execution.taskSupport`; see [`crate::TaskConfig`]).
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        Arc::make_mut(&mut self.routing).task_support = support;
        self.tool.execution = match support {
            TaskSupport::Forbidden => None,
            s => Some(serde_json::json!({ "taskSupport": s.as_str() })),
        };
        self
    }

    /// Whether calls deserialize the argument text straight into the typed arguments (a
    /// typed tool whose schema serde enforces by itself: no `Value`, no validation pass).
    #[cfg(test)]
    pub(crate) fn takes_typed_fast_path(&self) -> bool {
        matches!((&self.handler, &self.validator), (Handler::Typed(_), None))
    }

    /// What the router and the wires need to know before calling the tool.
    pub fn routing(&self) -> &Arc<ToolRouting> {
        &self.routing
    }

    /// Validates the raw `arguments` (absent or `null` means `{}`) and runs the handler.
    pub(crate) fn invoke(&self, ctx: CallCtx, arguments: Option<&str>) -> ToolFuture {
        let text = match arguments.map(str::trim) {
            None | Some("null") => "{}",
            Some(t) => t,
        };
        let tool = &self.tool.name;
        let invalid = |message: String| -> ToolFuture {
            Box::pin(std::future::ready(Err(McpError::InvalidToolParams {
                tool: tool.clone(),
                message,
            })))
        };
        if !text.starts_with('{') {
            return invalid("arguments must be an object".into());
        }
        if let (Handler::Typed(f), None) = (&self.handler, &self.validator) {
            return f(ctx, Args::Text(text));
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return invalid(e.to_string()),
        };
        if let Some(v) = &self.validator {
            let errors = v.errors(&value);
            if !errors.is_empty() {
                return invalid(errors.join("; "));
            }
        }
        match &self.handler {
            Handler::Typed(f) => f(ctx, Args::Value(value)),
            Handler::Raw(f) => f(ctx, value),
        }
    }
}
