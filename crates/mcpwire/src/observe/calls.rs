//! Requests and tool calls, recorded once for every wire by the driver core's call runner.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use mcpwire_model::{McpError, Method, Raw, Reply};
use mcpwire_router::McpReply;
use serde::Deserialize;

use super::{
    REQUEST_DURATION, REQUESTS_IN_FLIGHT, REQUESTS_TOTAL, TOOL_CALL_DURATION, TOOL_CALLS_TOTAL,
};

/// Set once the Prometheus recorder is installed; until then nothing is measured.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Starts measuring calls (the recorder is installed).
pub(crate) fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// The wire a call came in on: the `wire` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    Stdio,
    Http,
    WebSocket,
    Grpc,
    Mcpb,
}

impl Wire {
    /// The label value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Wire::Stdio => "stdio",
            Wire::Http => "http",
            Wire::WebSocket => "websocket",
            Wire::Grpc => "grpc",
            Wire::Mcpb => "mcpb",
        }
    }
}

/// One request being measured, from its dispatch to its answer. Dropped unanswered (its
/// connection went away), it counts as `cancelled`.
pub(crate) struct CallMetrics {
    /// Whether the answer was recorded.
    finished: bool,
    wire: Wire,
    started: Instant,
    /// The method's wire name; `other` for methods the model does not name (a client's
    /// made-up names must not make new series).
    method: String,
    /// `tools/call`: the tool's name as requested.
    tool: Option<String>,
}

#[derive(Deserialize)]
struct ToolName {
    name: String,
}

#[derive(Deserialize)]
struct IsError {
    #[serde(rename = "isError", default)]
    is_error: bool,
}

impl CallMetrics {
    /// Starts measuring a request (`None` while metrics are off).
    pub(crate) fn start(wire: Wire, method: &Method, params: Option<&Raw>) -> Option<Self> {
        if !ENABLED.load(Ordering::Relaxed) {
            return None;
        }
        let tool = tool_name(method, params);
        let method = match method {
            Method::Other(_) => "other".to_owned(),
            m => m.as_str().to_owned(),
        };
        metrics::gauge!(REQUESTS_IN_FLIGHT, "wire" => wire.as_str()).increment(1.0);
        Some(CallMetrics {
            finished: false,
            wire,
            started: Instant::now(),
            method,
            tool,
        })
    }

    /// Records the answer (`None`: the call was cancelled).
    pub(crate) fn finish(mut self, reply: Option<&McpReply>) {
        self.record(reply);
    }

    fn record(&mut self, reply: Option<&McpReply>) {
        self.finished = true;
        let seconds = self.started.elapsed().as_secs_f64();
        let outcome = outcome(reply);
        let wire = self.wire.as_str();
        let method = std::mem::take(&mut self.method);
        metrics::counter!(REQUESTS_TOTAL, "wire" => wire, "method" => method.clone(), "outcome" => outcome)
            .increment(1);
        metrics::histogram!(REQUEST_DURATION, "wire" => wire, "method" => method).record(seconds);
        if let Some(Err(McpError::RateLimited { limit, .. })) = reply {
            super::rate_limited(self.wire, limit);
        }
        let Some(tool) = self.tool.take() else { return };
        // Unknown (or hidden) tools share one series: names a client makes up must not
        // grow the registry.
        let tool = match reply {
            Some(Err(
                McpError::ToolNotFound(_)
                | McpError::InvalidParams(_)
                | McpError::MethodNotFound(_),
            )) => "(unknown)".to_owned(),
            _ => tool,
        };
        metrics::counter!(TOOL_CALLS_TOTAL, "wire" => wire, "tool" => tool.clone(), "outcome" => outcome)
            .increment(1);
        metrics::histogram!(TOOL_CALL_DURATION, "wire" => wire, "tool" => tool).record(seconds);
    }
}

impl Drop for CallMetrics {
    fn drop(&mut self) {
        if !self.finished {
            self.record(None);
        }
        metrics::gauge!(REQUESTS_IN_FLIGHT, "wire" => self.wire.as_str()).decrement(1.0);
    }
}

/// The tool a `tools/call` names (`None` for other methods or unreadable params).
pub(super) fn tool_name(method: &Method, params: Option<&Raw>) -> Option<String> {
    match method {
        Method::ToolsCall => params
            .and_then(|p| serde_json::from_str::<ToolName>(p.get()).ok())
            .map(|t| t.name),
        _ => None,
    }
}

/// `ok`, `tool_error` (a result with `isError: true`), `input_required`, `error` (a
/// JSON-RPC error) or `cancelled`.
pub(super) fn outcome(reply: Option<&McpReply>) -> &'static str {
    match reply {
        None => "cancelled",
        Some(Err(_)) => "error",
        Some(Ok(Reply::InputRequired(_))) => "input_required",
        Some(Ok(Reply::Complete(raw))) => match serde_json::from_str::<IsError>(raw.get()) {
            Ok(IsError { is_error: true }) => "tool_error",
            _ => "ok",
        },
    }
}
