//! Waiting for something to happen in a test: a condition polled until a deadline, never a
//! fixed sleep. A fixed sleep is either too short (a flaky test on a loaded machine) or too
//! long (a slow test everywhere); a poll returns as soon as the condition holds and fails,
//! naming what did not happen, only once the deadline passed.
//!
//! - Blocking ([`wait_until`], [`wait_for`], [`poll_for`]): for tests driving another
//!   process or a server on its own thread, on the real clock.
//! - Async ([`wait_until_async`], [`wait_for_async`]): on tokio's clock, so that under a
//!   paused clock (`tokio::time::pause`) the polls advance time instead of waiting, and the
//!   deadline covers a probe that never returns.
//!
//! A timer being tested (expiry, backoff, keep-alive) is not waited for at all: run the code
//! under test in-process on the paused clock and `tokio::time::advance` past it.

use std::time::{Duration, Instant};

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(10);

/// Polls `probe` every [`POLL`] until it gives a value; `None` once `within` passed without
/// one (the probe is always tried at least once, and once more at the deadline).
pub fn poll_for<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = probe() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(POLL.min(deadline - now));
    }
}

/// Polls `probe` every [`POLL`] until it gives a value; panics naming `what` once `within`
/// passed without one.
pub fn wait_for<T>(within: Duration, what: &str, probe: impl FnMut() -> Option<T>) -> T {
    poll_for(within, probe).unwrap_or_else(|| panic!("{what}: not within {within:?}"))
}

/// Polls `cond` every [`POLL`] until it holds; panics naming `what` once `within` passed.
pub fn wait_until(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    wait_for(within, what, || cond().then_some(()));
}

/// Polls `probe` every [`POLL`] of tokio's clock until it gives a value; panics naming
/// `what` once `within` passed (a probe still running then included).
pub async fn wait_for_async<T>(
    within: Duration,
    what: &str,
    mut probe: impl AsyncFnMut() -> Option<T>,
) -> T {
    let polls = async {
        loop {
            if let Some(v) = probe().await {
                return v;
            }
            tokio::time::sleep(POLL).await;
        }
    };
    match tokio::time::timeout(within, polls).await {
        Ok(v) => v,
        Err(_) => panic!("{what}: not within {within:?}"),
    }
}

/// Polls `cond` every [`POLL`] of tokio's clock until it holds; panics naming `what` once
/// `within` passed (a poll still running then included).
pub async fn wait_until_async(within: Duration, what: &str, mut cond: impl AsyncFnMut() -> bool) {
    wait_for_async(within, what, async || cond().await.then_some(())).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_blocking_poll_returns_as_soon_as_the_condition_holds() {
        let tries = Cell::new(0);
        let got = wait_for(Duration::from_secs(10), "the third try", || {
            tries.set(tries.get() + 1);
            (tries.get() == 3).then_some("three")
        });
        assert_eq!((got, tries.get()), ("three", 3));
    }

    #[test]
    fn a_blocking_poll_gives_up_at_its_deadline() {
        let started = Instant::now();
        assert_eq!(poll_for(Duration::from_millis(50), || None::<()>), None);
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    #[should_panic(expected = "the flag: not within")]
    fn a_blocking_wait_names_what_did_not_happen() {
        wait_until(Duration::from_millis(20), "the flag", || false);
    }

    #[tokio::test(start_paused = true)]
    async fn an_async_poll_advances_the_paused_clock() {
        let start = tokio::time::Instant::now();
        let mut tries = 0;
        let n = wait_for_async(Duration::from_secs(60), "the fifth try", async || {
            tries += 1;
            (tries == 5).then_some(tries)
        })
        .await;
        assert_eq!(n, 5);
        assert_eq!(start.elapsed(), 4 * POLL, "four polls apart, exactly");
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "the answer: not within 1s")]
    async fn an_async_wait_covers_a_probe_that_never_returns() {
        wait_until_async(Duration::from_secs(1), "the answer", async || {
            std::future::pending::<bool>().await
        })
        .await;
    }
}
