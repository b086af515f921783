//! The process's `tracing` subscriber: stderr in text or JSON (`--log-format`,
//! `MCPWIRE_LOG_FORMAT`, `[server] log_format`), filtered by `MCPWIRE_LOG`.

use std::sync::OnceLock;

use mcpwire::observe::{ANNOUNCE_DIRECTIVE, LogFormat};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The default filter: warnings, and the telemetry summary.
const DEFAULT_FILTER: &str = "warn,mcpwire::telemetry=info";

static INSTALLED: OnceLock<LogFormat> = OnceLock::new();

/// Installs the subscriber writing `format` (once per process; later calls keep the first
/// format) and tells the library, whose announcements follow it.
pub fn init(format: LogFormat) {
    INSTALLED.get_or_init(|| {
        mcpwire::observe::set_log_format(format);
        let mut filter = EnvFilter::try_from_env("MCPWIRE_LOG")
            .unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
        if let Ok(announce) = ANNOUNCE_DIRECTIVE.parse() {
            filter = filter.add_directive(announce);
        }
        let text = (format == LogFormat::Text).then(|| {
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(false)
        });
        let json = (format == LogFormat::Json).then(|| {
            tracing_subscriber::fmt::layer()
                .json()
                .with_writer(std::io::stderr)
                .with_current_span(true)
                .with_span_list(true)
        });
        // Another subscriber already set (tests embedding the CLI): keep it.
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(text)
            .with(json)
            .try_init();
        format
    });
}

/// The format stderr is written in: the installed subscriber's, else `requested`.
pub fn format(requested: LogFormat) -> LogFormat {
    INSTALLED.get().copied().unwrap_or(requested)
}
