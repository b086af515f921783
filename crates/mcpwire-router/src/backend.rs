//! The one trait every source of tools implements.

use std::collections::BTreeMap;
use std::pin::Pin;

use mcpwire_model::types::{CompleteParams, ServerCapabilities};
use mcpwire_model::{BackendEvent, McpError, Method, Raw, Reply};
use tokio::sync::broadcast;

use crate::{CallCtx, TaskSupport};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A backend's name and what it offers.
#[derive(Debug, Clone)]
pub struct BackendInfo {
    /// A short name (used in logs and federation prefixes).
    pub name: String,
    /// The capabilities the backend really has; the router refuses the rest.
    pub capabilities: ServerCapabilities,
}

/// A request parsed by the router; arguments stay raw.
#[derive(Debug)]
#[non_exhaustive]
pub enum BackendRequest {
    /// `tools/list`.
    ListTools {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `tools/call`.
    CallTool {
        /// Tool name.
        name: String,
        /// Raw arguments.
        arguments: Option<Raw>,
    },
    /// `resources/list`.
    ListResources {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `resources/templates/list`.
    ListResourceTemplates {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `resources/read`.
    ReadResource {
        /// URI.
        uri: String,
    },
    /// `resources/subscribe`.
    Subscribe {
        /// URI.
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        /// URI.
        uri: String,
    },
    /// `prompts/list`.
    ListPrompts {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `prompts/get`.
    GetPrompt {
        /// Prompt name.
        name: String,
        /// Argument values.
        arguments: BTreeMap<String, String>,
    },
    /// `completion/complete`.
    Complete(CompleteParams),
    /// Any other method, passed through.
    Other {
        /// Method.
        method: Method,
        /// Raw params.
        params: Option<Raw>,
    },
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

    /// Whether the tool `name` may run as a task (consulted by the router's tasks layer).
    fn task_support(&self, name: &str) -> TaskSupport {
        let _ = name;
        TaskSupport::Forbidden
    }

    /// A stream of events for every session (list changes, resource updates, logs).
    fn events(&self) -> Option<broadcast::Receiver<BackendEvent>> {
        None
    }
}
