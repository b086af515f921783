//! [`Alarm`]: a timer for a deadline that moves with every request — a session's next
//! request timeout, its idle expiry — armed once and moved only when an earlier deadline
//! comes or it rings, rather than a new sleep registered with the runtime's timer wheel and
//! cancelled on every wait (issue 24: a session's loops made two per request, each a lock
//! of the timer driver to insert and another to remove).
//!
//! An alarm may ring early: one armed for an earlier deadline than its owner now needs
//! (that request was answered, the session was used again) stays armed; when it rings, the
//! owner finds nothing due and sets it again. So a busy session's alarm rings about once
//! per deadline period, not once per request.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use tokio::time::Sleep;

/// A timer armed for the earliest deadline its owner asked for (see the module docs). The
/// runtime's timer is made or moved only when the alarm is waited on: a wait that ends
/// before the alarm is polled (a stateless request answered at once) costs none.
#[derive(Default)]
pub(crate) struct Alarm {
    /// Made at the first wait on a deadline, then reset in place (kept registered).
    sleep: Option<Pin<Box<Sleep>>>,
    /// When the alarm rings; `None`: not armed.
    armed: Option<Instant>,
}

impl Alarm {
    /// Rings no later than `at` (`None`: nothing is due; an armed alarm stays armed).
    pub(crate) fn set(&mut self, at: Option<Instant>) {
        let Some(at) = at else { return };
        if self.armed.is_none_or(|armed| at < armed) {
            self.armed = Some(at);
        }
    }

    /// Completes when the alarm rings (never while it is not armed), disarming it.
    pub(crate) fn rung(&mut self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            let Some(at) = self.armed else {
                return Poll::Pending;
            };
            let sleep = match &mut self.sleep {
                Some(sleep) if sleep.deadline() == at.into() => sleep,
                Some(sleep) => {
                    sleep.as_mut().reset(at.into());
                    sleep
                }
                None => self
                    .sleep
                    .insert(Box::pin(tokio::time::sleep_until(at.into()))),
            };
            match sleep.as_mut().poll(cx) {
                Poll::Ready(()) => {
                    self.armed = None;
                    Poll::Ready(())
                }
                Poll::Pending => Poll::Pending,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::driver::now;

    #[tokio::test(start_paused = true)]
    async fn rings_at_the_earliest_deadline_asked_and_not_while_unarmed() {
        let hour = Duration::from_secs(3600);
        let mut alarm = Alarm::default();
        assert!(tokio::time::timeout(hour, alarm.rung()).await.is_err());
        let t0 = now();
        alarm.set(Some(t0 + Duration::from_secs(10)));
        // A later deadline keeps the earlier one; nothing due keeps it too.
        alarm.set(Some(t0 + Duration::from_secs(20)));
        alarm.set(None);
        alarm.rung().await;
        assert_eq!(now() - t0, Duration::from_secs(10));
        // Rung: not armed until set again.
        assert!(tokio::time::timeout(hour, alarm.rung()).await.is_err());
        let t1 = now();
        alarm.set(Some(t1 + Duration::from_secs(30)));
        // An earlier deadline moves it.
        alarm.set(Some(t1 + Duration::from_secs(5)));
        alarm.rung().await;
        assert_eq!(now() - t1, Duration::from_secs(5));
    }
}
