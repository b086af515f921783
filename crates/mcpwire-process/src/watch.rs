//! Watching a file and calling back, debounced, when it changes: `mcpwire dev`'s tool file,
//! and `mcpwire serve`'s configuration file. A leaf: it knows nothing of the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// Watches the directory of `file` (non-recursively, so editors' rename-saves are seen) and
/// calls `changed` once the file has been quiet for `quiet` after a change; stops when
/// `changed` returns false or `shutdown` fires. Change events are coalesced in one flag, so
/// a burst of them costs nothing.
pub fn watch_file(
    file: &Path,
    quiet: Duration,
    shutdown: CancellationToken,
    changed: impl FnMut() -> bool + Send + 'static,
) {
    let file = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let Some(dir) = file.parent().map(PathBuf::from) else {
        return;
    };
    let Some(name) = file.file_name().map(|n| n.to_owned()) else {
        return;
    };
    let events = Arc::new(Notify::new());
    let tx = events.clone();
    let handler = move |ev: notify::Result<notify::Event>| {
        let Ok(ev) = ev else { return };
        if matches!(ev.kind, EventKind::Access(_)) {
            return;
        }
        if ev
            .paths
            .iter()
            .any(|p| p.file_name() == Some(name.as_os_str()))
        {
            tx.notify_one();
        }
    };
    let mut watcher = match notify::recommended_watcher(handler) {
        Ok(w) => w,
        Err(e) => {
            tracing::error!("cannot watch {}: {e}", dir.display());
            return;
        }
    };
    if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
        tracing::error!("cannot watch {}: {e}", dir.display());
        return;
    }
    tokio::spawn(async move {
        let _watcher = watcher;
        debounce(&events, quiet, &shutdown, changed).await;
    });
}

/// Calls `changed` after each burst of `events` once `quiet` has passed without another.
async fn debounce(
    events: &Notify,
    quiet: Duration,
    shutdown: &CancellationToken,
    mut changed: impl FnMut() -> bool,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = events.notified() => {}
        }
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(quiet) => break,
                _ = events.notified() => {}
            }
        }
        if !changed() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn bursts_are_debounced_into_one_call() {
        let events = Arc::new(Notify::new());
        let calls = Arc::new(AtomicUsize::new(0));
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let (events, calls, shutdown) = (events.clone(), calls.clone(), shutdown.clone());
            async move {
                let quiet = Duration::from_millis(200);
                debounce(&events, quiet, &shutdown, || {
                    calls.fetch_add(1, Ordering::Relaxed);
                    true
                })
                .await
            }
        });
        // Lets the debouncer see what happened, then moves the clock.
        let advance = |ms| async move {
            tokio::task::yield_now().await;
            tokio::time::advance(Duration::from_millis(ms)).await;
            tokio::task::yield_now().await;
        };
        for _ in 0..10 {
            events.notify_one();
            advance(50).await;
        }
        assert_eq!(calls.load(Ordering::Relaxed), 0, "still changing");
        advance(250).await;
        assert_eq!(calls.load(Ordering::Relaxed), 1, "one call for the burst");
        events.notify_one();
        advance(100).await;
        assert_eq!(calls.load(Ordering::Relaxed), 1, "not quiet yet");
        advance(150).await;
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        shutdown.cancel();
        task.await.expect("ends on shutdown");
    }
}
