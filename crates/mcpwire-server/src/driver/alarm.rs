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
use std::time::Instant;

use tokio::time::Sleep;

/// A timer armed for the earliest deadline its owner asked for (see the module docs).
#[derive(Default)]
pub(crate) struct Alarm {
    /// Made at the first deadline, then reset in place (kept registered while armed).
    sleep: Option<Pin<Box<Sleep>>>,
    /// When it rings; `None`: not armed.
    armed: Option<Instant>,
}

impl Alarm {
    /// Rings no later than `at` (`None`: nothing is due; an armed alarm stays armed).
    pub(crate) fn set(&mut self, at: Option<Instant>) {
        let Some(at) = at else { return };
        if self.armed.is_some_and(|armed| armed <= at) {
            return;
        }
        match &mut self.sleep {
            Some(sleep) => sleep.as_mut().reset(at.into()),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(at.into()))),
        }
        self.armed = Some(at);
    }

    /// Completes when the alarm rings (never while it is not armed), disarming it.
    pub(crate) fn rung(&mut self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| match (&mut self.sleep, self.armed) {
            (Some(sleep), Some(_)) => match sleep.as_mut().poll(cx) {
                std::task::Poll::Ready(()) => {
                    self.armed = None;
                    std::task::Poll::Ready(())
                }
                std::task::Poll::Pending => std::task::Poll::Pending,
            },
            _ => std::task::Poll::Pending,
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
