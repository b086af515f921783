//! The span every request runs in, opened by the driver core's call runner for every wire:
//! `request{wire, method, tool, backend, outcome}` (`backend`: the federation member that
//! answered, recorded by `mcpwire-federation`) under the target [`REQUEST_TARGET`]. Log
//! events while a request runs carry its fields (JSON logs show them as `span`/`spans`), and
//! the OpenTelemetry exporter, when configured, sends it as a trace span.

use mcpwire_model::{Method, Raw};
use mcpwire_router::McpReply;
use tracing::Span;
use tracing::field::Empty;

use super::handles::Outcome;
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
    let span = empty_span(wire, method);
    if span.is_disabled() {
        return span;
    }
    let tool = super::calls::tool_name(method, params);
    named(span, method, tool.as_deref(), parent)
}

/// The span of a `tools/call` of `tool` relayed as a raw frame (`mcpwire_relay`): what
/// [`request_span`] gives the same call (a relayed frame has no `_meta`, so its `parent`
/// is the wire's: the session's, or an HTTP request's `traceparent` header).
pub(crate) fn relayed_span(wire: WireLabel, tool: &str, parent: Option<&TraceParent>) -> Span {
    let method = &Method::ToolsCall;
    let span = empty_span(wire, method);
    if span.is_disabled() {
        return span;
    }
    named(span, method, Some(tool), parent)
}

fn empty_span(wire: WireLabel, method: &Method) -> Span {
    tracing::info_span!(
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
    )
}

/// `span` with its tool and, under an OpenTelemetry exporter, its trace fields.
fn named(span: Span, method: &Method, tool: Option<&str>, parent: Option<&TraceParent>) -> Span {
    if let Some(tool) = tool {
        span.record("tool", tool);
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
    finish_span_as(span, super::calls::outcome(reply));
}

/// [`finish_span`] for an outcome known without a reply (a relayed call's answer).
pub(crate) fn finish_span_as(span: &Span, outcome: Outcome) {
    if !span.is_disabled() {
        let outcome = outcome.as_str();
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
