//! The OpenTelemetry exporter (cargo feature `otel`): request spans become OTLP trace spans
//! POSTed as protobuf to `{endpoint}/v1/traces` in batches, and W3C trace context is read
//! into them and written from them (installed as the server's
//! [`Propagation`](mcpwire_server::observe::Propagation)).
//!
//! The layer sees request spans (`mcpwire::request`) only, whatever `MCPWIRE_LOG` lets
//! through to stderr. Spans wait in the SDK's batch queue (bounded: 2048, the excess is
//! dropped and counted by the SDK) and are exported from its own thread; [`Telemetry::shutdown`]
//! exports what is left.

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

use mcpwire_server::observe::{
    Propagation, REQUEST_TARGET, TRACEPARENT, TRACESTATE, TelemetryConfig, TraceParent,
    install_propagation, set_tracing_active,
};

/// How long one export may take.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest collector answer read (an `ExportTraceServiceResponse` is a few bytes).
const MAX_ANSWER: usize = 64 * 1024;

/// The service name when neither the file nor `OTEL_SERVICE_NAME` gives one.
const DEFAULT_SERVICE: &str = "mcpwire";

/// An exporter that could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OpenTelemetry: {0}")]
pub struct TelemetryError(String);

/// The running exporter; [`Telemetry::shutdown`] exports the spans still queued.
#[derive(Debug)]
pub struct Telemetry {
    provider: SdkTracerProvider,
    endpoint: String,
}

impl Telemetry {
    /// Where spans go (`…/v1/traces`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Exports what is queued and stops (blocks up to the export timeout; call it outside
    /// the async runtime, e.g. once serving returned).
    pub fn shutdown(&self) {
        set_tracing_active(false);
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "the last spans were not exported");
        }
    }
}

/// Where spans go: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as is, else
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or the file's `otlp_endpoint` with `/v1/traces` appended;
/// `None` when none is set or `OTEL_SDK_DISABLED=true`.
fn endpoint(config: &TelemetryConfig) -> Option<String> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    if env("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return None;
    }
    if let Some(url) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        return Some(url);
    }
    let base = env("OTEL_EXPORTER_OTLP_ENDPOINT").or_else(|| config.otlp_endpoint.clone())?;
    Some(format!("{}/v1/traces", base.trim_end_matches('/')))
}

/// The exporter `config` (and the environment) asks for, as a layer for the process's
/// subscriber and the handle that flushes it; `None` when no endpoint is configured (then
/// nothing is installed and propagation stays off).
#[allow(clippy::type_complexity)]
pub fn install<S>(
    config: &TelemetryConfig,
) -> Result<Option<(Box<dyn Layer<S> + Send + Sync>, Telemetry)>, TelemetryError>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
{
    let Some(endpoint) = endpoint(config) else {
        return Ok(None);
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(OtlpClient::new()?)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(endpoint.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| TelemetryError(format!("`{endpoint}`: {e}")))?;
    let service = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .or_else(|| config.service_name.clone())
        .unwrap_or_else(|| DEFAULT_SERVICE.into());
    let ratio = config.sample_ratio.unwrap_or(1.0);
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
            ratio,
        ))))
        .with_resource(Resource::builder().with_service_name(service).build())
        .build();
    let tracer = provider.tracer("mcpwire");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(Targets::new().with_target(REQUEST_TARGET, tracing::Level::INFO));
    if !install_propagation(Box::new(W3c)) {
        set_tracing_active(true);
    }
    Ok(Some((Box::new(layer), Telemetry { provider, endpoint })))
}

/// W3C trace context through the OpenTelemetry SDK.
struct W3c;

impl Propagation for W3c {
    fn adopt(&self, span: &Span, parent: &TraceParent) {
        adopt(span, parent)
    }

    fn inject(&self, span: &Span) -> Vec<(String, String)> {
        inject(span)
    }
}

/// Makes `parent` the OpenTelemetry parent of `span`.
fn adopt(span: &Span, parent: &TraceParent) {
    let mut carrier = HashMap::with_capacity(2);
    carrier.insert(TRACEPARENT.to_owned(), parent.traceparent.clone());
    if let Some(state) = &parent.tracestate {
        carrier.insert(TRACESTATE.to_owned(), state.clone());
    }
    let cx = TraceContextPropagator::new().extract(&carrier);
    if cx.span().span_context().is_valid() {
        let _ = span.set_parent(cx);
    }
}

/// `traceparent` (and `tracestate`) naming `span`; empty when it is not recorded.
fn inject(span: &Span) -> Vec<(String, String)> {
    if span.is_disabled() {
        return Vec::new();
    }
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return Vec::new();
    }
    let mut carrier: HashMap<String, String> = HashMap::with_capacity(2);
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.into_iter().collect()
}

/// The exporter's HTTP client: `mcpwire_client::fetch` on a small runtime of its own, since the
/// SDK's batch thread runs exports outside the server's runtime.
#[derive(Debug)]
struct OtlpClient {
    runtime: tokio::runtime::Runtime,
}

impl OtlpClient {
    fn new() -> Result<OtlpClient, TelemetryError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| TelemetryError(format!("starting the exporter's runtime: {e}")))?;
        Ok(OtlpClient { runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let url = parts.uri.to_string();
        let headers = parts
            .headers
            .iter()
            .filter(|(k, _)| *k != hyper::header::CONTENT_TYPE)
            .filter_map(|(k, v)| Some((k.clone(), v.to_str().ok()?.to_owned())))
            .collect();
        let out = mcpwire_client::fetch::Outgoing {
            method: parts.method,
            url: &url,
            headers,
            body: Some(("application/x-protobuf", body)),
        };
        let fetched =
            self.runtime
                .block_on(mcpwire_client::fetch::send(out, EXPORT_TIMEOUT, MAX_ANSWER))?;
        let mut response = Response::builder().status(fetched.status);
        if let Some(h) = response.headers_mut() {
            *h = fetched.headers;
        }
        Ok(response.body(fetched.body)?)
    }
}
