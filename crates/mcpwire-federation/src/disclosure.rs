//! [`Disclosures`]: which tools each session's searches disclosed (hybrid disclosure in
//! `search` catalog mode) — pure and bounded: at most [`MAX_DISCLOSED_PER_SESSION`] tools per
//! session (the least recently found leave first) and [`MAX_DISCLOSING_SESSIONS`]
//! sessions (the least recently active leave first).

use std::collections::HashMap;

/// Tools a session's `tools/list` shows beyond the meta-tools.
pub const MAX_DISCLOSED_PER_SESSION: usize = 32;

/// Sessions whose disclosed tools are remembered at once (one listener).
pub(crate) const MAX_DISCLOSING_SESSIONS: usize = 4096;

/// The disclosed tools of every session of one listener, by session id.
#[derive(Debug, Default)]
pub(crate) struct Disclosures {
    sessions: HashMap<u64, Disclosed>,
    /// A clock of uses: each disclosure (and each session's activity) takes the next tick.
    tick: u64,
}

/// One session's disclosed tools, in the order they were first disclosed (so the list a
/// client holds only grows at its end, until one leaves).
#[derive(Debug, Default)]
struct Disclosed {
    /// Exposed name and when it was last found.
    tools: Vec<(String, u64)>,
    last_active: u64,
}

/// What a disclosure changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change {
    /// The session's list gained or lost a tool (its client should be told).
    pub list_changed: bool,
    /// The session was not in the table before (its end should be watched).
    pub new_session: bool,
}

impl Disclosures {
    /// Records that a search of session `session` found `names` (best first): each is
    /// added to the session's list or refreshed; past the bound the least recently found
    /// leave.
    pub(crate) fn disclose(&mut self, session: u64, names: &[&str]) -> Change {
        let new_session = !self.sessions.contains_key(&session);
        if new_session && self.sessions.len() >= MAX_DISCLOSING_SESSIONS {
            self.forget_least_active();
        }
        self.tick += 1;
        let now = self.tick;
        let entry = self.sessions.entry(session).or_default();
        entry.last_active = now;
        let mut list_changed = false;
        // New tools join in rank order; the best hit counts as the most recently found,
        // so of one search's hits the worst leave first.
        for (rank, name) in names.iter().enumerate() {
            let when = now + (names.len() - rank) as u64;
            match entry.tools.iter_mut().find(|(n, _)| n == name) {
                Some((_, last)) => *last = when,
                None => {
                    entry.tools.push(((*name).to_owned(), when));
                    list_changed = true;
                }
            }
        }
        self.tick = now + names.len() as u64;
        while entry.tools.len() > MAX_DISCLOSED_PER_SESSION {
            let oldest = entry
                .tools
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, when))| *when)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                entry.tools.remove(i);
            }
        }
        Change {
            list_changed,
            new_session,
        }
    }

    /// Session `session`'s disclosed tools, in disclosure order.
    pub(crate) fn of(&self, session: u64) -> Vec<String> {
        self.sessions
            .get(&session)
            .map(|d| d.tools.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default()
    }

    /// Forgets session `session` (it ended).
    pub(crate) fn forget(&mut self, session: u64) {
        self.sessions.remove(&session);
    }

    /// How many sessions are remembered.
    #[cfg(test)]
    pub(crate) fn sessions(&self) -> usize {
        self.sessions.len()
    }

    fn forget_least_active(&mut self) {
        let least = self
            .sessions
            .iter()
            .min_by_key(|(_, d)| d.last_active)
            .map(|(id, _)| *id);
        if let Some(id) = least {
            self.sessions.remove(&id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_keeps_its_most_recently_found_tools_within_the_bound() {
        let mut d = Disclosures::default();
        let first = d.disclose(1, &["a", "b"]);
        assert!(first.list_changed && first.new_session);
        assert_eq!(d.of(1), ["a", "b"]);
        let again = d.disclose(1, &["b"]);
        assert!(!again.list_changed && !again.new_session, "nothing new");
        assert!(d.of(2).is_empty(), "per session");
        let names: Vec<String> = (0..MAX_DISCLOSED_PER_SESSION)
            .map(|i| format!("t{i}"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        // `b` was found after `a`: `a` leaves first, then `b`.
        d.disclose(1, &refs[..MAX_DISCLOSED_PER_SESSION - 1]);
        assert_eq!(d.of(1).len(), MAX_DISCLOSED_PER_SESSION);
        assert!(!d.of(1).contains(&"a".to_owned()) && d.of(1).contains(&"b".to_owned()));
        d.disclose(1, &["b"]);
        d.disclose(1, &["new"]);
        let now = d.of(1);
        assert_eq!(now.len(), MAX_DISCLOSED_PER_SESSION);
        assert!(now.contains(&"b".to_owned()), "refreshed, so kept");
        assert!(
            !now.contains(&"t30".to_owned()),
            "the worst hit of a search leaves first"
        );
        assert_eq!(
            now.last().map(String::as_str),
            Some("new"),
            "new ones go last"
        );
        d.forget(1);
        assert!(d.of(1).is_empty());
    }

    #[test]
    fn sessions_are_bounded_least_active_first() {
        let mut d = Disclosures::default();
        for s in 0..MAX_DISCLOSING_SESSIONS as u64 + 10 {
            d.disclose(s, &["x"]);
            if s >= 5 {
                d.disclose(0, &["x"]);
            }
        }
        assert_eq!(d.sessions(), MAX_DISCLOSING_SESSIONS);
        assert_eq!(d.of(0), ["x"], "kept active");
        assert!(d.of(1).is_empty(), "the least active left");
    }
}
