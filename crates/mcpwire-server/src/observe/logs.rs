//! How the process writes its stderr lines: plain text (the default) or one JSON object per
//! line (`--log-format json`, `MCPWIRE_LOG_FORMAT=json`, `[server] log_format = "json"`).
//! The binary installs the `tracing` subscriber; the library only needs to know the format
//! for its announcements (`mcpwire: listening on …`), which are plain lines in text mode and
//! log events in JSON mode, so every stderr line stays one JSON object.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Deserialize;

/// How stderr lines are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `fields`, `span`, `spans`.
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<LogFormat, String> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!("`{other}`: expected `text` or `json`")),
        }
    }
}

/// The `tracing` target announcements are logged under in JSON mode; a subscriber should
/// enable it at `info` whatever else it filters (`ANNOUNCE_DIRECTIVE`), as text mode always
/// prints them.
pub const ANNOUNCE_TARGET: &str = "mcpwire::announce";
/// The filter directive that keeps announcements on.
pub const ANNOUNCE_DIRECTIVE: &str = "mcpwire::announce=info";

static JSON: AtomicBool = AtomicBool::new(false);

/// Sets the format announcements are written in (the binary calls it with the format of
/// its subscriber).
pub fn set_log_format(format: LogFormat) {
    JSON.store(format == LogFormat::Json, Ordering::Relaxed);
}

/// The format announcements are written in.
pub fn log_format() -> LogFormat {
    if JSON.load(Ordering::Relaxed) {
        LogFormat::Json
    } else {
        LogFormat::Text
    }
}

/// Writes one announcement (`mcpwire: listening on …`, `mcpwire: reloaded …`): a plain
/// stderr line in text mode, an `info` event under [`ANNOUNCE_TARGET`] in JSON mode.
pub fn announce(line: fmt::Arguments<'_>) {
    match log_format() {
        LogFormat::Text => eprintln!("{line}"),
        LogFormat::Json => tracing::info!(target: "mcpwire::announce", "{line}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("text".parse::<LogFormat>(), Ok(LogFormat::Text));
        assert!("xml".parse::<LogFormat>().is_err());
    }
}
