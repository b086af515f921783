//! [`CancelWatch`]: waiting for a [`CancellationToken`] beside something that wakes its
//! task often — an HTTP connection waits for the listener's shutdown at every wake-up of
//! the connection, twice a request.
//!
//! The token's own future takes the token's lock at every poll (to check and refresh its
//! waker). Its waiter, once registered, stays registered with the task's waker, so this
//! polls it only the first time and whenever the task's waker changes; every other
//! wake-up costs an atomic load of the token's state (issue 24: ≈ 300 instructions per
//! request on the HTTP listener).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Completes when its token is cancelled (see the module docs).
pub(crate) struct CancelWatch {
    token: CancellationToken,
    wait: Pin<Box<WaitForCancellationFutureOwned>>,
    /// The waker the token's waiter was last registered with.
    registered: Option<Waker>,
}

impl CancelWatch {
    /// Watches `token`.
    pub(crate) fn new(token: CancellationToken) -> CancelWatch {
        CancelWatch {
            wait: Box::pin(token.clone().cancelled_owned()),
            token,
            registered: None,
        }
    }
}

impl Future for CancelWatch {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.token.is_cancelled() {
            return Poll::Ready(());
        }
        if self
            .registered
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            return Poll::Pending;
        }
        self.registered = Some(cx.waker().clone());
        self.wait.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn wakes_its_task_when_cancelled_after_many_other_wakes() {
        let token = CancellationToken::new();
        let mut watch = std::pin::pin!(CancelWatch::new(token.clone()));
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            canceller.cancel();
        });
        // The task wakes every 10 ms for something else: the watch is polled each time.
        let mut ticks = 0u32;
        loop {
            tokio::select! {
                biased;
                () = &mut watch => break,
                () = tokio::time::sleep(Duration::from_millis(10)) => ticks += 1,
            }
        }
        assert!(
            ticks >= 400,
            "the task woke {ticks} times before the cancel"
        );
        // A watch made after the cancel completes at once.
        CancelWatch::new(token).await;
    }
}
