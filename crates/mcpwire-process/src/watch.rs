//! `mcpwire dev`: watching the tool file's directory and reloading on changes.

use std::path::PathBuf;
use std::sync::Weak;

use notify::{EventKind, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use crate::backend::Shared;

/// Watches the directory of the tool file (non-recursively, so editors' rename-saves are
/// seen), debounces, and asks the supervisor to reload. Ends when the backend is dropped.
pub(crate) fn spawn_watcher(shared: Weak<Shared>) {
    let Some(s) = shared.upgrade() else { return };
    let file =
        std::path::absolute(&s.config.launch.file).unwrap_or_else(|_| s.config.launch.file.clone());
    let shutdown = s.shutdown.clone();
    drop(s);
    let Some(dir) = file.parent().map(PathBuf::from) else {
        return;
    };
    let Some(name) = file.file_name().map(|n| n.to_owned()) else {
        return;
    };
    let (tx, mut rx) = mpsc::unbounded_channel::<()>();
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
            let _ = tx.send(());
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
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                ev = rx.recv() => if ev.is_none() { return },
            }
            // Debounce: wait for a quiet period.
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    _ = tokio::time::sleep(super::backend::RELOAD_DEBOUNCE) => break,
                    ev = rx.recv() => if ev.is_none() { return },
                }
            }
            match shared.upgrade() {
                Some(s) => {
                    tracing::info!("{} changed; reloading", file.display());
                    s.reload.notify_one();
                }
                None => return,
            }
        }
    });
}
