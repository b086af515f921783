//! Messages between replicas: [`Subscription`], what [`crate::Store::subscribe`] hands out.
//!
//! Delivery is at most once, to the replicas subscribed at the moment of publishing (Redis
//! pub/sub semantics, which the in-memory store mirrors): a message published while a
//! subscriber is reconnecting, or past its bound, is lost — callers use it for things that
//! have their own deadline (the answer to a server→client request, a cancellation).

use std::sync::Arc;

use tokio::sync::{broadcast, mpsc};

/// Messages waiting for a subscriber that has not taken them, at most; newer ones are
/// dropped (with a warning) until it catches up.
pub const SUBSCRIPTION_BOUND: usize = 1024;

/// A live subscription: the payloads published on its channels, in order, bounded. Dropping
/// it unsubscribes (and closes the connection behind it).
#[derive(Debug)]
pub struct Subscription {
    rx: mpsc::Receiver<Vec<u8>>,
}

impl Subscription {
    /// A subscription and the sending end a store feeds (bounded by [`SUBSCRIPTION_BOUND`]).
    pub(crate) fn channel() -> (mpsc::Sender<Vec<u8>>, Subscription) {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_BOUND);
        (tx, Subscription { rx })
    }

    /// The next payload; `None` once the store behind it is gone.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.rx.recv().await
    }
}

/// Hands `payload` to a subscriber without waiting: a subscriber that fell
/// [`SUBSCRIPTION_BOUND`] behind loses it. False once the subscription was dropped.
pub(crate) fn offer(tx: &mpsc::Sender<Vec<u8>>, payload: Vec<u8>) -> bool {
    match tx.try_send(payload) {
        Ok(()) => true,
        Err(mpsc::error::TrySendError::Full(_)) => {
            tracing::warn!("a subscriber is not keeping up; a relayed message was dropped");
            true
        }
        Err(mpsc::error::TrySendError::Closed(_)) => false,
    }
}

/// The in-memory store's channels: one broadcast of (channel, payload), filtered per
/// subscriber.
pub(crate) struct Hub {
    tx: broadcast::Sender<(Arc<str>, Arc<[u8]>)>,
}

impl Hub {
    pub(crate) fn new() -> Hub {
        Hub {
            tx: broadcast::channel(SUBSCRIPTION_BOUND).0,
        }
    }

    /// Publishes; how many subscriptions were listening.
    pub(crate) fn publish(&self, channel: &str, payload: &[u8]) -> usize {
        self.tx
            .send((Arc::from(channel), Arc::from(payload)))
            .unwrap_or(0)
    }

    /// A subscription to `channels` (a task forwards what matches until it is dropped).
    pub(crate) fn subscribe(&self, channels: &[String]) -> Subscription {
        let (tx, sub) = Subscription::channel();
        let mut all = self.tx.subscribe();
        let channels: Vec<String> = channels.to_vec();
        tokio::spawn(async move {
            loop {
                let received = tokio::select! {
                    r = all.recv() => r,
                    () = tx.closed() => return,
                };
                match received {
                    Ok((channel, payload)) => {
                        if channels.iter().any(|c| **c == *channel) && !offer(&tx, payload.to_vec())
                        {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(lost = n, "a subscriber fell behind; messages dropped");
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        sub
    }
}
