//! [`VerifiedTokens`]: JWTs whose signature and claims were verified, remembered by their
//! SHA-256 digest until they expire, so a client that sends the same bearer token on every
//! request pays the signature check once (`docs/design/auth.md`, "Verification cache").
//!
//! Only successes are remembered: a bad token is checked (and refused) every time. An entry
//! holds the key set it was verified with; once the key set is replaced (a refreshed JWKS)
//! the entry no longer counts. A reload of `[auth]` builds new verifiers, so an empty cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use mcpwire_router::Identity;
use sha2::{Digest, Sha256};

use super::jwks::VerifyKey;

/// Tokens remembered at most; when full, the cache starts over (bounded memory whatever
/// the number of distinct tokens).
pub const MAX_VERIFIED: usize = 4096;

/// The key set a token was verified with (`None`: a shared secret, fixed for the
/// verifier's life).
pub(crate) type KeySet = Option<Arc<Vec<VerifyKey>>>;

struct Remembered {
    identity: Identity,
    /// The last second (Unix time) the token is accepted: `exp` plus the leeway.
    until: u64,
    keys: KeySet,
}

/// Verified tokens by digest.
#[derive(Default)]
pub(crate) struct VerifiedTokens {
    map: Mutex<HashMap<[u8; 32], Remembered>>,
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether two key sets are the same one (not merely equal).
pub(super) fn same_keys(a: &KeySet, b: &KeySet) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        _ => false,
    }
}

impl VerifiedTokens {
    /// The caller `token` was verified as, if it was, with the key set `keys`, and it has
    /// not expired at `now` (Unix seconds).
    pub(crate) fn get(&self, token: &str, keys: &KeySet, now: u64) -> Option<Identity> {
        let d = digest(token);
        let map = self.map.lock().ok()?;
        let r = map.get(&d)?;
        (now <= r.until && same_keys(&r.keys, keys)).then(|| r.identity.clone())
    }

    /// Remembers that `token` verified as `identity` with `keys`, accepted until `until`
    /// (Unix seconds).
    pub(crate) fn put(&self, token: &str, identity: Identity, keys: KeySet, until: u64) {
        let d = digest(token);
        if let Ok(mut map) = self.map.lock() {
            if map.len() >= MAX_VERIFIED && !map.contains_key(&d) {
                map.clear();
            }
            map.insert(
                d,
                Remembered {
                    identity,
                    until,
                    keys,
                },
            );
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Identity {
        Identity::bearer("alice", None, Vec::new(), serde_json::Map::new())
    }

    #[test]
    fn a_token_counts_until_it_expires_and_only_with_its_keys() {
        let cache = VerifiedTokens::default();
        let keys: KeySet = Some(Arc::new(Vec::new()));
        cache.put("t1", alice(), keys.clone(), 100);
        assert_eq!(
            cache.get("t1", &keys, 100).map(|i| i.subject().to_owned()),
            Some("alice".into())
        );
        assert!(cache.get("t1", &keys, 101).is_none(), "expired");
        assert!(cache.get("t2", &keys, 50).is_none(), "never verified");
        let rotated: KeySet = Some(Arc::new(Vec::new()));
        assert!(cache.get("t1", &rotated, 50).is_none(), "another key set");
        assert!(cache.get("t1", &None, 50).is_none());
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache = VerifiedTokens::default();
        for i in 0..(MAX_VERIFIED * 2 + 7) {
            cache.put(&format!("token-{i}"), alice(), None, u64::MAX);
            assert!(cache.len() <= MAX_VERIFIED);
        }
        let last = format!("token-{}", MAX_VERIFIED * 2 + 6);
        assert!(cache.get(&last, &None, 0).is_some());
    }
}
