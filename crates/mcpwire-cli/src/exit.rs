//! How the CLI ends on an error: `error: …` with its causes on stderr, and an exit status
//! that says who is to blame (documented in `mcpwire --help`).

use std::process::ExitCode;

use mcpwire::observe::LogFormat;
use mcpwire_client::{Blame, ClientError};
use mcpwire_gateway::{ConfigError, GatewayError, StartFailure};

/// Any other failure.
pub const OTHER: u8 = 1;
/// Bad arguments, options or target (clap uses 2 for its own usage errors too).
pub const USAGE: u8 = 2;
/// The server could not be started, reached or understood, or went away.
pub const CONNECTION: u8 = 3;
/// The server answered with an error, or the tool's result has `isError: true`.
pub const SERVER: u8 = 4;

/// An argument the CLI refuses before talking to any server.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints `err` and its causes and returns the exit status its blame calls for. The debug
/// form (and a backtrace, if one was captured) only under `MCPWIRE_LOG=debug` or `trace`.
/// In JSON mode (`format`) it is one `error` event with the causes as a field.
pub fn report(err: &anyhow::Error, format: LogFormat) -> ExitCode {
    if format == LogFormat::Json {
        let _ = crate::logging::init(format, None);
        let causes: Vec<String> = err.chain().skip(1).map(ToString::to_string).collect();
        tracing::error!(target: "mcpwire", causes = %causes.join("; "), "{err}");
        return ExitCode::from(code(err));
    }
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    let verbose =
        std::env::var("MCPWIRE_LOG").is_ok_and(|v| v.contains("debug") || v.contains("trace"));
    if verbose {
        eprintln!("\n{err:?}");
    }
    ExitCode::from(code(err))
}

/// The exit status for `err`: the blame of the first cause that has one.
fn code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        if cause.is::<UsageError>() || cause.is::<ConfigError>() {
            return USAGE;
        }
        if cause.is::<StartFailure>() {
            return CONNECTION;
        }
        match cause.downcast_ref::<GatewayError>() {
            Some(GatewayError::Config(_)) => return USAGE,
            Some(GatewayError::Start(_)) => return CONNECTION,
            _ => {}
        }
        let client =
            cause.downcast_ref::<ClientError>().or_else(|| match cause
                .downcast_ref::<crate::schema_cmd::SchemaCliError>(
            ) {
                Some(crate::schema_cmd::SchemaCliError::Client(e)) => Some(e),
                _ => None,
            });
        if let Some(e) = client {
            return match e.blame() {
                Blame::Usage => USAGE,
                Blame::Connection => CONNECTION,
                Blame::Server => SERVER,
            };
        }
    }
    OTHER
}
