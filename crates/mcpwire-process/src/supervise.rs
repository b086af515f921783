//! The supervisor: starts process generations, restarts them with backoff, reports crash
//! loops, swaps in reloads and retires the old generation.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crate::channel::ChildChannel;
use crate::current::GenState;
use crate::handshake::{framed, handshake};
use crate::host::ProcessHost;
use crate::io::Hooks;
use crate::spawn::{ChildProc, spawn};

/// Failed starts within [`CRASH_WINDOW`] that make a crash loop.
pub(crate) const CRASH_LOOP_STARTS: usize = 5;
pub(crate) const CRASH_WINDOW: Duration = Duration::from_secs(60);
pub(crate) const BACKOFF_START: Duration = Duration::from_millis(100);
pub(crate) const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// How long a crash loop waits before trying again (a file change in `dev` retries at once).
pub(crate) const CRASH_LOOP_RETRY: Duration = Duration::from_secs(30);
/// How long a process gets between SIGTERM and SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// One running process: its channel and the child itself.
struct Generation {
    channel: Arc<ChildChannel>,
    child: ChildProc,
}

/// Runs process generations: start, serve until exit, restart with backoff; reloads.
pub(crate) async fn supervise(host: Arc<ProcessHost>) {
    let mut failures: VecDeque<Instant> = VecDeque::new();
    let mut backoff = BACKOFF_START;
    let mut gen_no = 0u64;
    let mut ever_ready = false;
    loop {
        gen_no += 1;
        let started = Instant::now();
        let last_error = match start_generation(&host, gen_no).await {
            Ok(g) => {
                ever_ready = true;
                let reason = serve_generation(&host, g, &mut gen_no).await;
                let Some(reason) = reason else { return };
                if started.elapsed() > CRASH_WINDOW {
                    failures.clear();
                    backoff = BACKOFF_START;
                }
                reason
            }
            Err(e) if !ever_ready => {
                host.set_state(GenState::Failed(e));
                return;
            }
            Err(e) => e,
        };
        tracing::warn!("tool process ended: {last_error}; restarting");
        host.restarts
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        failures.push_back(Instant::now());
        failures.retain(|t| t.elapsed() < CRASH_WINDOW);
        if failures.len() >= CRASH_LOOP_STARTS {
            let reason = format!(
                "the tool process failed {} times within {}s; last: {last_error}",
                failures.len(),
                CRASH_WINDOW.as_secs()
            );
            tracing::error!("{reason}");
            host.set_state(GenState::Failed(reason));
            tokio::select! {
                _ = host.shutdown.cancelled() => return,
                _ = tokio::time::sleep(CRASH_LOOP_RETRY) => {}
                _ = host.reload.notified() => {}
            }
            failures.clear();
            backoff = BACKOFF_START;
            continue;
        }
        tokio::select! {
            _ = host.shutdown.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Serves one generation (and the reloads that replace it) until it ends; `None` on shutdown,
/// else why it ended.
async fn serve_generation(
    host: &Arc<ProcessHost>,
    mut g: Generation,
    gen_no: &mut u64,
) -> Option<String> {
    host.activate(&g.channel).await;
    loop {
        tokio::select! {
            _ = host.shutdown.cancelled() => {
                g.channel.close("mcpwire is shutting down");
                g.child.shutdown(KILL_GRACE).await;
                return None;
            }
            status = g.child.wait() => {
                let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                let reason = format!("tool process exited ({status}){}", g.child.stderr_tail());
                host.set_state(GenState::Starting);
                g.channel.close(&reason);
                return Some(reason);
            }
            _ = g.channel.done.cancelled() => {
                host.set_state(GenState::Starting);
                let status = tokio::time::timeout(Duration::from_secs(1), g.child.wait()).await;
                let tail = g.child.stderr_tail();
                g.child.shutdown(KILL_GRACE).await;
                return Some(match status {
                    Ok(Ok(s)) => format!("tool process exited ({s}){tail}"),
                    _ => "tool process connection failed".to_string(),
                });
            }
            _ = host.reload.notified() => {
                *gen_no += 1;
                match start_generation(host, *gen_no).await {
                    Ok(new) => {
                        let old = std::mem::replace(&mut g, new);
                        host.activate(&g.channel).await;
                        tracing::info!(generation = *gen_no, "tool process reloaded");
                        tokio::spawn(retire(old, host.config.reload_grace));
                    }
                    Err(e) => tracing::warn!("reload failed, keeping the running process: {e}"),
                }
            }
        }
    }
}

/// Lets a replaced generation finish its calls (bounded by `grace`), then ends it.
async fn retire(g: Generation, grace: Duration) {
    let deadline = Instant::now() + grace;
    while g.channel.in_flight() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    g.channel
        .close("the tool process was reloaded during the call");
    g.child.shutdown(KILL_GRACE).await;
}

async fn start_generation(host: &Arc<ProcessHost>, gen_no: u64) -> Result<Generation, String> {
    let cfg = &host.config;
    let deadline = cfg.handshake_timeout;
    let (mut child, stream) = spawn(&cfg.launch, &cfg.log_name(), &gen_no.to_string(), deadline)
        .await
        .map_err(|e| e.to_string())?;
    let (mut r, mut w) = framed(stream, cfg.max_envelope, cfg.max_raw);
    let hs = tokio::select! {
        hs = tokio::time::timeout(deadline, handshake(&mut r, &mut w, &host.ids)) => hs,
        _ = child.wait() => Ok(Err("tool process exited during the handshake".into())),
    };
    let hs = match hs {
        Ok(Ok(hs)) => hs,
        Ok(Err(e)) => {
            let tail = child.stderr_tail();
            child.shutdown(KILL_GRACE).await;
            return Err(format!("{e}{tail}"));
        }
        Err(_) => {
            child.shutdown(KILL_GRACE).await;
            return Err(format!(
                "tool process did not complete its handshake within {deadline:?}"
            ));
        }
    };
    let hooks: Weak<dyn Hooks> = Arc::downgrade(host) as Weak<ProcessHost>;
    let ids = host.ids.clone();
    let channel = crate::io::start(gen_no, (r, w), hs, ids, cfg.max_pending, hooks);
    Ok(Generation { channel, child })
}
