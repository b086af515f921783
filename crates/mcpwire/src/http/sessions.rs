//! The table of live stateful sessions, by `Mcp-Session-Id`, with a size bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::session::{self, SessionHandle};
use crate::Service;

/// Live sessions. Ids are 128 random bits from the OS CSPRNG, as 32 hex digits.
pub(crate) struct Sessions {
    map: Mutex<HashMap<String, SessionHandle>>,
    max: usize,
}

/// The table is at its bound.
#[derive(Debug)]
pub(crate) struct Full;

impl Sessions {
    /// An empty table admitting at most `max` sessions.
    pub(crate) fn new(max: usize) -> Sessions {
        Sessions {
            map: Mutex::new(HashMap::new()),
            max,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, SessionHandle>> {
        // A panic while holding the lock leaves the map consistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new session and registers it under a fresh id.
    pub(crate) fn create(
        self: &Arc<Self>,
        service: &Service,
        idle: Duration,
    ) -> Result<(String, SessionHandle), Full> {
        let mut map = self.lock();
        if map.len() >= self.max {
            return Err(Full);
        }
        let id = loop {
            let id = new_id();
            if !map.contains_key(&id) {
                break id;
            }
        };
        let handle = session::spawn(service, idle, id.clone(), self.clone());
        map.insert(id.clone(), handle.clone());
        Ok((id, handle))
    }

    /// The session named `id`, if it is alive.
    pub(crate) fn get(&self, id: &str) -> Option<SessionHandle> {
        self.lock().get(id).cloned()
    }

    /// Ends and unregisters session `id`; whether it existed.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let handle = self.lock().remove(id);
        match handle {
            Some(h) => {
                h.close();
                true
            }
            None => false,
        }
    }

    /// Unregisters a session whose task ended by itself.
    pub(crate) fn forget(&self, id: &str) {
        self.lock().remove(id);
    }
}

/// A session id: 16 bytes from the OS CSPRNG as lowercase hex (visible ASCII).
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // Without an entropy source, ids would be guessable: refuse to go on.
        panic!("the OS random number generator failed: {e}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_visible_ascii_and_distinct() {
        let a = super::new_id();
        let b = super::new_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
        assert_ne!(a, b);
    }
}
