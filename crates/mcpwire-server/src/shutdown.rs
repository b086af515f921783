//! What ends serving by default: the first SIGTERM or Ctrl-C.

use std::io;

use tokio_util::sync::CancellationToken;

/// A token cancelled by the first SIGTERM or Ctrl-C.
pub fn shutdown_on_signals() -> io::Result<CancellationToken> {
    let token = CancellationToken::new();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let signals = token.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        tracing::info!("shutting down");
        signals.cancel();
    });
    Ok(token)
}
