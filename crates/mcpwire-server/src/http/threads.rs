//! An HTTP listener on threads of its own (`HttpConfig::threads`): each thread is a
//! single-threaded runtime accepting on a duplicate of the listening socket, so a
//! connection, its requests and what they start stay on one thread. The threads share the
//! connections out: a thread serving more than another (by more than [`SLACK`]) waits
//! [`YIELD`] before it accepts, so the other — woken by the same connection — takes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{App, accept_loop};
use crate::tls::Incoming;

/// Connections a thread may serve beyond the least busy one before it lets that one accept.
const SLACK: usize = 1;

/// How long a thread ahead of another waits before it accepts (it accepts then anyway: a
/// thread stuck in a long call does not hold new connections back).
pub(super) const YIELD: Duration = Duration::from_millis(2);

/// One thread's part of the count of connections each thread serves.
pub(super) struct Share {
    open: Arc<[AtomicUsize]>,
    me: usize,
}

impl Share {
    /// The shares of `threads` threads.
    fn all(threads: usize) -> Vec<Share> {
        let open: Arc<[AtomicUsize]> = (0..threads).map(|_| AtomicUsize::new(0)).collect();
        (0..threads)
            .map(|me| Share {
                open: open.clone(),
                me,
            })
            .collect()
    }

    /// Whether another thread serves fewer connections than this one by more than [`SLACK`].
    pub(super) fn ahead(&self) -> bool {
        let mine = self.open[self.me].load(Ordering::Relaxed);
        self.open
            .iter()
            .any(|o| o.load(Ordering::Relaxed) + SLACK < mine)
    }

    /// Counts a connection this thread serves until the returned guard is dropped.
    pub(super) fn serving(&self) -> Serving {
        self.open[self.me].fetch_add(1, Ordering::Relaxed);
        Serving {
            open: self.open.clone(),
            me: self.me,
        }
    }
}

/// A connection counted in its thread's [`Share`] while it is served.
pub(super) struct Serving {
    open: Arc<[AtomicUsize]>,
    me: usize,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.open[self.me].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Serves `listener` on `threads` threads of its own until `shutdown`, then drains each
/// (within `grace`); returns once every thread has. A thread keeps running what its
/// connections started (a session opened on one thread may serve calls that came in on
/// another) until every thread has drained. A thread that cannot start or ends with an
/// error (or panics) stops the others: the listener fails as one, with the first error,
/// and no thread is left serving.
pub(super) async fn serve(
    app: Arc<App>,
    router: axum::Router,
    listener: Incoming,
    threads: usize,
    shutdown: CancellationToken,
    grace: Duration,
) -> std::io::Result<()> {
    // Cancelled by the listener's shutdown, and by a thread that fails.
    let stop = shutdown.child_token();
    // Cancelled once every thread's connections are drained: until then each thread's
    // runtime keeps running the tasks its sessions started.
    let drained = CancellationToken::new();
    let mut serving = Vec::with_capacity(threads);
    let mut exits = Vec::with_capacity(threads);
    let mut failed = None;
    let copies = listener.detach(threads)?.into_iter();
    for (i, (listener, share)) in copies.zip(Share::all(threads)).enumerate() {
        let (app, router) = (app.clone(), router.clone());
        let (mine, drained) = (stop.clone(), drained.clone());
        let (done, served) = tokio::sync::oneshot::channel();
        let (exit, exited) = tokio::sync::oneshot::channel::<()>();
        let spawned = std::thread::Builder::new()
            .name(format!("mcpwire-http-{i}"))
            .spawn(move || {
                // A panic stops the other threads too (and `done` is dropped unsent).
                let _stop_the_others = mine.clone().drop_guard();
                let _exit = exit;
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = done.send(Err(e));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let ended = match listener.attach() {
                        Ok(listener) => {
                            accept_loop(app, router, listener, Some(share), mine.clone(), grace)
                                .await
                        }
                        Err(e) => Err(e),
                    };
                    if ended.is_err() {
                        mine.cancel();
                    }
                    let _ = done.send(ended);
                    drained.cancelled().await;
                });
            });
        match spawned {
            Ok(_) => {
                serving.push(served);
                exits.push(exited);
            }
            Err(e) => {
                stop.cancel();
                failed = Some(e);
                break;
            }
        }
    }
    for served in serving {
        let ended = served
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("an HTTP listener thread panicked")));
        if let Err(e) = ended {
            failed.get_or_insert(e);
        }
    }
    drained.cancel();
    for exited in exits {
        // Sent by nobody: the sender is dropped as the thread ends.
        let _ = exited.await;
    }
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_ahead_of_another_by_more_than_the_slack_lets_it_accept() {
        let shares = Share::all(3);
        assert!(shares.iter().all(|s| !s.ahead()), "all even");
        let mut held = Vec::new();
        held.push(shares[0].serving());
        assert!(!shares[0].ahead(), "one ahead is within the slack");
        held.push(shares[0].serving());
        assert!(shares[0].ahead(), "two ahead of the others");
        assert!(!shares[1].ahead() && !shares[2].ahead());
        held.push(shares[1].serving());
        held.push(shares[2].serving());
        assert!(!shares[0].ahead(), "the others caught up");
        held.clear();
        assert!(shares.iter().all(|s| !s.ahead()), "every connection ended");
    }
}
