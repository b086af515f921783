//! Distributed tracing: the `[telemetry]` settings, and W3C trace context (`traceparent`,
//! `tracestate`) read from what clients send and written on what the gateway sends to its
//! HTTP upstreams (`docs/design/operations.md`).
//!
//! Everything here costs one relaxed load while no exporter is installed: the headers are
//! not read, spans get no parent, nothing is injected. The exporter itself (OTLP over HTTP)
//! is the gateway crate's `otel` module (cargo feature `otel`): it installs a
//! [`Propagation`]; until one is installed [`active`] stays false.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;
use tracing::Span;

/// The W3C trace context header naming the caller's trace and span.
pub const TRACEPARENT: &str = "traceparent";
/// The W3C trace context header with vendor-specific state.
pub const TRACESTATE: &str = "tracestate";

/// Longest `tracestate` kept (the W3C limit is 32 members of at most 256 bytes; longer
/// values are dropped rather than truncated, as the spec allows).
const MAX_TRACESTATE: usize = 8192;

/// The `[telemetry]` section: where traces go. Every field may also come from the
/// standard environment (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_SERVICE_NAME`), which wins over the file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The OTLP/HTTP collector's base URL (`http://collector:4318`); spans are POSTed to
    /// its `/v1/traces`. `None` (and no environment): no traces.
    pub otlp_endpoint: Option<String>,
    /// `service.name` of the exported spans (default `mcpwire`).
    pub service_name: Option<String>,
    /// The share of new traces recorded, 0.0 to 1.0 (default 1.0); a trace the caller
    /// started follows the caller's sampling decision.
    pub sample_ratio: Option<f64>,
}

impl TelemetryConfig {
    /// Checks the values; the error names the key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if let Some(url) = &self.otlp_endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err((
                "otlp_endpoint",
                format!("`{url}`: expected an http:// or https:// URL (OTLP over HTTP)"),
            ));
        }
        if let Some(name) = &self.service_name
            && name.trim().is_empty()
        {
            return Err(("service_name", "the service name cannot be empty".into()));
        }
        if let Some(r) = self.sample_ratio
            && !(0.0..=1.0).contains(&r)
        {
            return Err((
                "sample_ratio",
                format!("{r} is not a ratio: expected 0.0 to 1.0"),
            ));
        }
        Ok(())
    }
}

static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether an exporter is installed (trace context is read and propagated only then).
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Turns propagation on or off (the exporter's installer and its shutdown call it).
pub fn set_active(on: bool) {
    ACTIVE.store(on, Ordering::Relaxed);
}

/// How trace context becomes a span's parent and is written for an outgoing request: what
/// an exporter installs ([`install_propagation`]). The wires only see this trait, so the
/// exporter and its dependencies live outside this crate (the gateway's `otel` feature).
pub trait Propagation: Send + Sync {
    /// Makes `parent` the parent of `span` (a request span just opened); nothing when
    /// `parent` is malformed.
    fn adopt(&self, span: &Span, parent: &TraceParent);
    /// `traceparent` (and `tracestate`) naming `span`; empty when it is not recorded.
    fn inject(&self, span: &Span) -> Vec<(String, String)>;
}

static PROPAGATION: OnceLock<Box<dyn Propagation>> = OnceLock::new();

/// Installs `propagation` for the process and turns propagation on; `false` when one was
/// installed before (the first stays).
pub fn install_propagation(propagation: Box<dyn Propagation>) -> bool {
    let installed = PROPAGATION.set(propagation).is_ok();
    if installed {
        set_active(true);
    }
    installed
}

/// A caller's trace context as it arrived: the parent of the request spans it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    /// `traceparent`, as sent (validated when it is used).
    pub traceparent: String,
    /// `tracestate`, if sent.
    pub tracestate: Option<String>,
}

impl TraceParent {
    /// The context in HTTP headers (a POST, a WebSocket upgrade); `None` when none was sent
    /// or no exporter is installed.
    #[cfg(feature = "http")]
    pub(crate) fn from_headers(headers: &hyper::HeaderMap) -> Option<TraceParent> {
        if !active() {
            return None;
        }
        let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        TraceParent::from_values(value(TRACEPARENT), value(TRACESTATE))
    }

    /// The context in gRPC request metadata; `None` as for [`TraceParent::from_headers`].
    #[cfg(feature = "proto-mcp")]
    pub(crate) fn from_metadata(metadata: &tonic::metadata::MetadataMap) -> Option<TraceParent> {
        if !active() {
            return None;
        }
        let value = |name: &str| metadata.get(name).and_then(|v| v.to_str().ok());
        TraceParent::from_values(value(TRACEPARENT), value(TRACESTATE))
    }

    fn from_values(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<TraceParent> {
        // `version-traceid-parentid-flags`: 55 characters in version 00; later versions
        // may append fields.
        let traceparent = traceparent.filter(|t| (55..=512).contains(&t.len()))?;
        Some(TraceParent {
            traceparent: traceparent.to_owned(),
            tracestate: tracestate
                .filter(|s| s.len() <= MAX_TRACESTATE)
                .map(str::to_owned),
        })
    }
}

/// Makes `parent` the parent of `span` (a request span just opened); nothing without an
/// exporter or with a malformed `traceparent` (the span then starts a trace of its own).
pub(crate) fn adopt(span: &Span, parent: Option<&TraceParent>) {
    if let Some(parent) = parent
        && active()
        && !span.is_disabled()
        && let Some(p) = PROPAGATION.get()
    {
        p.adopt(span, parent);
    }
}

/// The trace context headers naming the current span, for a request to an HTTP upstream;
/// empty without an exporter or outside a recorded span.
pub fn outgoing() -> Vec<(String, String)> {
    match PROPAGATION.get() {
        Some(p) if active() => p.inject(&Span::current()),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_checks_its_values() {
        let ok = TelemetryConfig {
            otlp_endpoint: Some("http://127.0.0.1:4318".into()),
            service_name: Some("gw".into()),
            sample_ratio: Some(0.5),
        };
        assert_eq!(ok.check(), Ok(()));
        let grpc = TelemetryConfig {
            otlp_endpoint: Some("grpc://collector:4317".into()),
            ..ok.clone()
        };
        assert_eq!(grpc.check().map_err(|e| e.0), Err("otlp_endpoint"));
        let ratio = TelemetryConfig {
            sample_ratio: Some(1.5),
            ..ok.clone()
        };
        assert_eq!(ratio.check().map_err(|e| e.0), Err("sample_ratio"));
        let name = TelemetryConfig {
            service_name: Some(" ".into()),
            ..ok
        };
        assert_eq!(name.check().map_err(|e| e.0), Err("service_name"));
    }

    #[test]
    fn a_traceparent_is_taken_only_when_it_can_be_one() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let p = TraceParent::from_values(Some(tp), Some("k=v")).expect("a traceparent");
        assert_eq!(p.traceparent, tp);
        assert_eq!(p.tracestate.as_deref(), Some("k=v"));
        assert!(TraceParent::from_values(Some("00-short"), None).is_none());
        assert!(TraceParent::from_values(None, Some("k=v")).is_none());
        let huge = "k=v,".repeat(4000);
        let p = TraceParent::from_values(Some(tp), Some(&huge)).expect("a traceparent");
        assert_eq!(p.tracestate, None);
    }
}
