//! The one trait every source of tools implements.

use mcpwire_model::types::ServerCapabilities;
use mcpwire_model::{BackendEvent, McpError, Raw, Reply};
use tokio::sync::broadcast;

use std::sync::Arc;

use crate::future::BoxFuture;
use crate::relaying::{RelayCaller, RelayDecision};
use crate::request::BackendRequest;
use crate::{CallCtx, ForwardedCall, TaskSupport};

/// A backend's name and what it offers.
#[derive(Debug, Clone)]
pub struct BackendInfo {
    /// A short name (used in logs and federation prefixes).
    pub name: String,
    /// The capabilities the backend really has; the router refuses the rest.
    pub capabilities: ServerCapabilities,
}

/// What the router and the wires need to know about a tool before calling it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolRouting {
    /// Whether the tool may run as a task.
    pub task_support: TaskSupport,
    /// The backend runs the tool's tasks itself (an upstream server that offers the tasks
    /// extension): the router makes no task of its own around the call — the client's
    /// opt-in goes to the backend with the call, the backend's `CreateTaskResult` comes
    /// back as it is, and `tasks/*` for task ids the router does not hold go to the
    /// backend. `false` (the default): the router runs the tool's tasks.
    pub backend_runs_tasks: bool,
    /// Arguments mirrored in `Mcp-Param-{header}` HTTP headers (2026-07-28, SEP-2243).
    pub header_params: Vec<HeaderParam>,
}

/// An argument whose schema carries `"x-mcp-header": "{header}"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The argument (a top-level property of the input schema).
    pub property: String,
    /// The header suffix: the value travels in `Mcp-Param-{header}`.
    pub header: String,
}

impl ToolRouting {
    /// What a tool definition as another server lists it (`tools/list`) declares: its
    /// `execution.taskSupport` (absent or unknown: forbidden) and the header parameters of
    /// its `inputSchema`. For backends that forward to such a server.
    pub fn of_listed_tool(tool: &serde_json::Value) -> ToolRouting {
        let task_support = match tool
            .pointer("/execution/taskSupport")
            .and_then(|v| v.as_str())
        {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        };
        let header_params = tool
            .get("inputSchema")
            .map(ToolRouting::header_params_of)
            .unwrap_or_default();
        ToolRouting {
            task_support,
            backend_runs_tasks: false,
            header_params,
        }
    }

    /// The header parameters declared by an input schema's top-level properties.
    pub fn header_params_of(input_schema: &serde_json::Value) -> Vec<HeaderParam> {
        let Some(props) = input_schema.get("properties").and_then(|p| p.as_object()) else {
            return Vec::new();
        };
        props
            .iter()
            .filter_map(|(property, schema)| {
                let header = schema.get("x-mcp-header")?.as_str()?;
                let valid = !header.is_empty()
                    && header
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
                valid.then(|| HeaderParam {
                    property: property.clone(),
                    header: header.to_ascii_lowercase(),
                })
            })
            .collect()
    }
}

/// A source of tools, resources and prompts: native, a tool process, an upstream server or
/// a federation of them. Object-safe; stored as `Arc<dyn Backend>`.
pub trait Backend: Send + Sync + 'static {
    /// Name and capabilities.
    fn info(&self) -> &BackendInfo;

    /// Answers one request. The future must honour `ctx`'s cancellation.
    fn call(
        &self,
        ctx: CallCtx,
        req: BackendRequest,
    ) -> BoxFuture<'static, Result<Reply, McpError>>;

    /// What the router and the wires need to know about tool `name` before calling it
    /// (task support, argument headers); `None` for an unknown tool or a backend that
    /// declares nothing.
    fn tool_routing(&self, name: &str) -> Option<Arc<ToolRouting>> {
        let _ = name;
        None
    }

    /// The routing of what a `tools/call` of `name` with `arguments` runs: a tool that
    /// calls another one by its arguments (a gateway's `call_tool`) answers the inner
    /// tool's, so a task-supporting tool called through it runs as a task as a direct call
    /// would. Default: [`Backend::tool_routing`] of `name`; a layer that wraps a backend
    /// passes it through.
    fn call_routing(&self, name: &str, arguments: Option<&Raw>) -> Option<Arc<ToolRouting>> {
        let _ = arguments;
        self.tool_routing(name)
    }

    /// Sessions this backend holds open for downstream sessions now (an upstream's
    /// per-session children or sessions), for the metrics; `None` when it keeps none.
    fn open_sessions(&self) -> Option<usize> {
        None
    }

    /// A stream of events for every session (list changes, resource updates, logs).
    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        None
    }

    /// Whether [`Backend::forward_tool_call`] may take calls now: the router reads a call's
    /// params for it only then, so backends that never forward (the default) cost nothing.
    fn forwards_tool_calls(&self) -> bool {
        false
    }

    /// Answers a handshake-era `tools/call` by sending its params on exactly as they came,
    /// when this backend forwards such calls (the gateway's fast path: nothing parsed,
    /// nothing written again); gives the call back otherwise, and the router answers it
    /// the general way ([`Backend::call`]). The answer must be what [`Backend::call`]
    /// would give. By default, every call is given back.
    fn forward_tool_call(
        &self,
        call: ForwardedCall,
    ) -> Result<BoxFuture<'static, Result<Reply, McpError>>, ForwardedCall> {
        Err(call)
    }

    /// Where a handshake-era `tools/call` of tool `name` by `caller` may go as a raw
    /// frame, with its params as they came ([`ForwardedCall`]'s conditions), its answer
    /// coming back as the upstream wrote it — only when that is what
    /// [`Backend::forward_tool_call`] would do and answer (no rename, no mapping). A layer
    /// that acts on calls decides for the caller here as it would in [`Backend::call`]:
    /// policy lets the call through or leaves it to the general path, a rate limit counts
    /// it or refuses it. [`RelayDecision::General`] (the default): the call goes the
    /// general way.
    fn relay_route(&self, name: &str, caller: &RelayCaller<'_>) -> RelayDecision {
        let _ = (name, caller);
        RelayDecision::General
    }
}
