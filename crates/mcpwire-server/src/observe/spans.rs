//! The span every request runs in, opened by the driver core's call runner for every wire:
//! `request{wire, method, tool, backend, outcome}` (`backend`: the federation member that
//! answered, recorded by `mcpwire-federation`) under the target [`REQUEST_TARGET`]. Log
//! events while a request runs carry its fields (JSON logs show them as `span`/`spans`), and
//! the OpenTelemetry exporter, when configured, sends it as a trace span.

use mcpwire_model::{Method, Raw};
use mcpwire_router::McpReply;
use tracing::Span;
use tracing::field::Empty;

use super::trace::{TraceParent, active, adopt};
use super::wire_label::WireLabel;

/// The `tracing` target of request spans (`MCPWIRE_LOG=mcpwire::request=info` enables
/// them without other info events).
pub const REQUEST_TARGET: &str = "mcpwire::request";

/// The span of one request (disabled, at the cost of one check, unless the subscriber wants
/// `info` spans of [`REQUEST_TARGET`]). `tool` is read from the params of `tools/call` only
/// when the span is on. With an OpenTelemetry exporter the span is a `server` span named
/// like the MCP semantic conventions (`tools/call echo`), child of the caller's
/// `traceparent` when it sent one.
pub(crate) fn request_span(
    wire: WireLabel,
    method: &Method,
    params: Option<&Raw>,
    parent: Option<&TraceParent>,
) -> Span {
    let span = tracing::info_span!(
        target: "mcpwire::request",
        "request",
        wire = wire.as_str(),
        method = method_label(method),
        tool = Empty,
        backend = Empty,
        outcome = Empty,
        otel.name = Empty,
        otel.kind = Empty,
        otel.status_code = Empty,
    );
    if span.is_disabled() {
        return span;
    }
    let tool = super::calls::tool_name(method, params);
    if let Some(tool) = &tool {
        span.record("tool", &**tool);
    }
    if active() {
        match &tool {
            Some(tool) => span.record("otel.name", format!("{} {tool}", method.as_str())),
            None => span.record("otel.name", method.as_str()),
        };
        span.record("otel.kind", "server");
        adopt(&span, parent);
    }
    span
}

/// Records the answer's outcome (`ok`, `tool_error`, `input_required`, `error`,
/// `cancelled`) on `span`, and logs `request answered` at `debug` inside it.
pub(crate) fn finish_span(span: &Span, reply: Option<&McpReply>) {
    if !span.is_disabled() {
        let outcome = super::calls::outcome(reply).as_str();
        span.record("outcome", outcome);
        if outcome == "error" && active() {
            span.record("otel.status_code", "error");
        }
        tracing::debug!(target: "mcpwire::request", outcome, "request answered");
    }
}

/// The method's wire name, `other` for names the model does not know.
fn method_label(method: &Method) -> &str {
    match method {
        Method::Other(_) => "other",
        m => m.as_str(),
    }
}
