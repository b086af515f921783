//! Resources the gateway's session-less listeners watch (2026-07-28 clients'
//! `subscriptions/listen` streams with `resourceSubscriptions`): the drivers ask for them
//! as `resources/subscribe` requests of no session, one per stream, and stop with
//! `resources/unsubscribe`. [`Watched`] counts the streams per resource, so the upstream's
//! shared session subscribes once per resource — with `resources/subscribe` in a
//! handshake era, in its own `subscriptions/listen` in the 2026-07-28 era (`super::listen`
//! reads [`Watched::uris`]) — and stops when the last stream does.

use std::collections::BTreeMap;
use std::sync::Mutex;

use mcpwire_model::McpError;
use tokio::sync::watch;

/// Resources watched at once, per backend, before further ones are refused.
pub(crate) const MAX_WATCHED: usize = 1024;

/// What a subscription change means for the upstream.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The first stream watches it: subscribe upstream.
    First,
    /// The last stream stopped: unsubscribe upstream.
    Last,
    /// Nothing to tell the upstream.
    None,
}

/// Streams per watched resource, and the set as a watch for the listen follower.
pub(crate) struct Watched {
    counts: Mutex<BTreeMap<String, usize>>,
    uris: watch::Sender<Vec<String>>,
}

impl Watched {
    /// Nothing watched.
    pub(crate) fn new() -> Watched {
        Watched {
            counts: Mutex::new(BTreeMap::new()),
            uris: watch::Sender::new(Vec::new()),
        }
    }

    /// One more (`on`) or one fewer stream watches `uri`.
    pub(crate) fn change(&self, uri: &str, on: bool) -> Result<Change, McpError> {
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| McpError::Internal("watched resources poisoned".into()))?;
        let change = if on {
            let full = counts.len() >= MAX_WATCHED;
            match counts.get_mut(uri) {
                Some(n) => {
                    *n += 1;
                    Change::None
                }
                None if full => {
                    return Err(McpError::LimitExceeded(format!(
                        "{MAX_WATCHED} resources are watched already"
                    )));
                }
                None => {
                    counts.insert(uri.to_owned(), 1);
                    Change::First
                }
            }
        } else {
            match counts.get_mut(uri) {
                Some(n) if *n > 1 => {
                    *n -= 1;
                    Change::None
                }
                Some(_) => {
                    counts.remove(uri);
                    Change::Last
                }
                None => Change::None,
            }
        };
        if change != Change::None {
            self.uris.send_replace(counts.keys().cloned().collect());
        }
        Ok(change)
    }

    /// The watched resources now, and changes from now on.
    pub(crate) fn uris(&self) -> watch::Receiver<Vec<String>> {
        self.uris.subscribe()
    }

    /// The watched resources now.
    pub(crate) fn now(&self) -> Vec<String> {
        self.uris.borrow().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_counted_per_resource() {
        let w = Watched::new();
        assert_eq!(w.change("a", true).ok(), Some(Change::First));
        assert_eq!(w.change("a", true).ok(), Some(Change::None));
        assert_eq!(w.now(), ["a"]);
        assert_eq!(w.change("a", false).ok(), Some(Change::None));
        assert_eq!(w.change("a", false).ok(), Some(Change::Last));
        assert!(w.now().is_empty());
        assert_eq!(w.change("a", false).ok(), Some(Change::None));
    }

    #[test]
    fn the_set_is_bounded() {
        let w = Watched::new();
        for i in 0..MAX_WATCHED {
            assert!(w.change(&i.to_string(), true).is_ok());
        }
        assert!(matches!(
            w.change("one more", true),
            Err(McpError::LimitExceeded(_))
        ));
        assert_eq!(
            w.change("0", true).ok(),
            Some(Change::None),
            "a watched one still counts"
        );
    }
}
