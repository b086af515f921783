//! The process's `tracing` subscriber: stderr in text or JSON (`--log-format`,
//! `MCPWIRE_LOG_FORMAT`, `[server] log_format`), filtered by `MCPWIRE_LOG`; and, with the
//! `otel` feature and an OTLP endpoint (`[telemetry]`, `OTEL_EXPORTER_OTLP_ENDPOINT`), the
//! OpenTelemetry exporter of request spans, whose own filter does not depend on
//! `MCPWIRE_LOG`.

use std::sync::OnceLock;

use anyhow::Result;
use mcpwire::observe::{ANNOUNCE_DIRECTIVE, LogFormat, TelemetryConfig};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer, Registry};

/// The default filter: warnings, and the telemetry summary.
const DEFAULT_FILTER: &str = "warn,mcpwire::telemetry=info";

/// What backends write on their stderr (one event per line with a `backend` field): shown
/// at `info` whatever `MCPWIRE_LOG` says, unless it names this target.
const CHILD_TARGET: &str = "mcpwire::child";

static INSTALLED: OnceLock<LogFormat> = OnceLock::new();

#[cfg(feature = "otel")]
static TELEMETRY: OnceLock<mcpwire_gateway::otel::Telemetry> = OnceLock::new();

type BoxedLayer = Box<dyn Layer<Registry> + Send + Sync>;

/// Installs the subscriber writing `format` (once per process; later calls keep the first
/// format) and tells the library, whose announcements follow it. Serving commands pass
/// their `telemetry` settings: traces are exported when an endpoint is configured.
pub fn init(format: LogFormat, telemetry: Option<&TelemetryConfig>) -> Result<()> {
    if INSTALLED.get().is_some() {
        return Ok(());
    }
    mcpwire::observe::set_log_format(format);
    let mut filter =
        EnvFilter::try_from_env("MCPWIRE_LOG").unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    if let Ok(announce) = ANNOUNCE_DIRECTIVE.parse() {
        filter = filter.add_directive(announce);
    }
    // Backends' stderr is shown as it always was, unless `MCPWIRE_LOG` says otherwise.
    if !std::env::var("MCPWIRE_LOG").is_ok_and(|v| v.contains(CHILD_TARGET))
        && let Ok(child) = format!("{CHILD_TARGET}=info").parse()
    {
        filter = filter.add_directive(child);
    }
    let stderr: BoxedLayer = match format {
        LogFormat::Text => Box::new(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false),
        ),
        LogFormat::Json => Box::new(
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .with_current_span(true)
                .with_span_list(true),
        ),
    };
    let mut layers = vec![stderr.with_filter(filter).boxed()];
    let mut exporting = None;
    if let Some(config) = telemetry {
        exporting = exporter(config, &mut layers)?;
    }
    // Another subscriber already set (tests embedding the CLI): keep it.
    let _ = tracing_subscriber::registry().with(layers).try_init();
    INSTALLED.get_or_init(|| format);
    if let Some(endpoint) = exporting {
        mcpwire::observe::announce(format_args!("mcpwire: exporting traces to {endpoint}"));
    }
    Ok(())
}

/// Adds the OpenTelemetry layer when `config` or the environment names an endpoint;
/// returns where spans go.
#[cfg(feature = "otel")]
fn exporter(config: &TelemetryConfig, layers: &mut Vec<BoxedLayer>) -> Result<Option<String>> {
    let Some((layer, telemetry)) = mcpwire_gateway::otel::install(config)? else {
        return Ok(None);
    };
    layers.push(layer);
    let endpoint = telemetry.endpoint().to_owned();
    let _ = TELEMETRY.set(telemetry);
    Ok(Some(endpoint))
}

/// Without the `otel` feature an endpoint is refused rather than silently ignored.
#[cfg(not(feature = "otel"))]
fn exporter(config: &TelemetryConfig, _: &mut Vec<BoxedLayer>) -> Result<Option<String>> {
    if config.otlp_endpoint.is_some() {
        anyhow::bail!(
            "`[telemetry] otlp_endpoint` needs the `otel` feature (this mcpwire was built \
             without it)"
        );
    }
    Ok(None)
}

/// Exports the spans still queued (after serving returned, outside the async runtime).
pub fn flush() {
    #[cfg(feature = "otel")]
    if let Some(t) = TELEMETRY.get() {
        t.shutdown();
    }
}

/// The format stderr is written in: the installed subscriber's, else `requested`.
pub fn format(requested: LogFormat) -> LogFormat {
    INSTALLED.get().copied().unwrap_or(requested)
}
