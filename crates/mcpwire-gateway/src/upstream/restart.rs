//! Keeping the shared upstream session up: when it ends (a crashed child, a dropped
//! connection) it is opened again at once, then with growing delays while that fails
//! ([`Backoff`]: 0 s, 0.5 s, 1 s, 2 s, … up to 30 s), and its state is published for the
//! calls ([`Shared`]): up, restarting, or down with the last error until the next try.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::McpError;
use tokio::sync::watch;

use super::link::Link;

/// Delays between tries to open an upstream session again.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    failures: u32,
}

/// The first delay after a failed try; doubled after each further failure.
const FIRST_DELAY: Duration = Duration::from_millis(500);
/// The longest delay.
const MAX_DELAY: Duration = Duration::from_secs(30);

impl Backoff {
    /// No failure yet: the first try is immediate.
    pub(crate) fn new() -> Backoff {
        Backoff { failures: 0 }
    }

    /// How long to wait before the next try.
    pub(crate) fn delay(&self) -> Duration {
        match self.failures {
            0 => Duration::ZERO,
            n => FIRST_DELAY
                .saturating_mul(1 << (n - 1).min(16))
                .min(MAX_DELAY),
        }
    }

    /// A try failed.
    pub(crate) fn failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
    }
}

/// The shared upstream session as calls see it.
#[derive(Clone)]
pub(crate) enum Shared {
    /// Open.
    Up(Arc<Link>),
    /// Being opened again.
    Restarting,
    /// Could not be opened; tried again after a delay.
    Down(String),
}

/// Opens the session again until it is up: immediately, then after each failure's delay;
/// publishes every state on `state`. Returns the new link.
pub(crate) async fn reopen<F, Fut>(state: &watch::Sender<Shared>, mut open: F) -> Arc<Link>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Arc<Link>, McpError>>,
{
    let mut backoff = Backoff::new();
    loop {
        tokio::time::sleep(backoff.delay()).await;
        state.send_replace(Shared::Restarting);
        match open().await {
            Ok(link) => {
                state.send_replace(Shared::Up(link.clone()));
                return link;
            }
            Err(e) => {
                backoff.failed();
                tracing::warn!(
                    "upstream session could not be opened again ({e}); next try in {:?}",
                    backoff.delay()
                );
                state.send_replace(Shared::Down(e.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let mut b = Backoff::new();
        let mut delays = Vec::new();
        for _ in 0..10 {
            delays.push(b.delay().as_millis());
            b.failed();
        }
        assert_eq!(
            delays,
            [0, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn tries_follow_the_schedule_on_the_paused_clock() {
        let (state, mut seen) = watch::channel(Shared::Restarting);
        let start = tokio::time::Instant::now();
        let tries = Arc::new(std::sync::Mutex::new(Vec::new()));
        let t = tries.clone();
        let reopened = reopen(&state, move || {
            let t = t.clone();
            async move {
                let mut t = t.lock().unwrap();
                t.push(start.elapsed().as_millis());
                Err::<Arc<Link>, _>(McpError::Unavailable(format!("try {}", t.len())))
            }
        });
        // Four failed tries take 0 + 0.5 + 1 + 2 s; the fifth waits 4 s more.
        tokio::select! {
            _ = reopened => panic!("every try fails"),
            _ = tokio::time::sleep(Duration::from_millis(3600)) => {}
        }
        assert_eq!(*tries.lock().unwrap(), [0, 500, 1500, 3500]);
        assert!(seen.has_changed().unwrap());
        let last = seen.borrow_and_update().clone();
        assert!(matches!(last, Shared::Down(e) if e.contains("try 4")));
    }
}
