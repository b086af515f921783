//! The console's logins: a bounded table of sessions, each with its CSRF token and expiry.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Sessions kept at most; a login past this evicts the one closest to expiry.
pub const MAX_SESSIONS: usize = 64;
/// How long a session lives after its login.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);

/// One logged-in operator.
#[derive(Debug, Clone)]
pub struct Session {
    /// Who logged in (the admin key's name).
    pub admin: String,
    /// Sent back in `X-CSRF-Token` on every state-changing request.
    pub csrf: String,
    expires: Instant,
}

/// The table of sessions, keyed by the cookie's random token.
#[derive(Debug, Default)]
pub struct Sessions {
    by_token: HashMap<String, Session>,
}

/// 32 random bytes as hex; `None` when the system has no randomness to give.
pub fn random_token() -> Option<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Sessions {
    /// A new session for `admin`: its cookie token and CSRF token.
    pub fn open(&mut self, admin: String) -> Option<(String, Session)> {
        let now = Instant::now();
        self.by_token.retain(|_, s| s.expires > now);
        if self.by_token.len() >= MAX_SESSIONS {
            let oldest = self
                .by_token
                .iter()
                .min_by_key(|(_, s)| s.expires)
                .map(|(t, _)| t.clone());
            if let Some(t) = oldest {
                self.by_token.remove(&t);
            }
        }
        let token = random_token()?;
        let session = Session {
            admin,
            csrf: random_token()?,
            expires: now + SESSION_TTL,
        };
        self.by_token.insert(token.clone(), session.clone());
        Some((token, session))
    }

    /// The live session with this cookie token.
    pub fn get(&self, token: &str) -> Option<&Session> {
        self.by_token
            .get(token)
            .filter(|s| s.expires > Instant::now())
    }

    /// Ends a session.
    pub fn close(&mut self, token: &str) {
        self.by_token.remove(token);
    }

    /// Sessions held now (expired ones included until the next login sweeps them).
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn sessions_expire() {
        let mut s = Sessions::default();
        let (t, _) = s.open("ops".into()).expect("open");
        assert!(s.get(&t).is_some());
        tokio::time::advance(SESSION_TTL + Duration::from_secs(1)).await;
        assert!(s.get(&t).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn the_table_stays_bounded() {
        let mut s = Sessions::default();
        let mut first = None;
        for i in 0..MAX_SESSIONS * 10 {
            tokio::time::advance(Duration::from_millis(1)).await;
            let (t, _) = s.open(format!("a{i}")).expect("open");
            first.get_or_insert(t);
            assert!(s.len() <= MAX_SESSIONS);
        }
        assert!(
            s.get(&first.expect("one")).is_none(),
            "the oldest went first"
        );
    }

    #[test]
    fn tokens_differ() {
        let a = random_token().expect("random");
        assert_eq!(a.len(), 64);
        assert_ne!(a, random_token().expect("random"));
    }
}
