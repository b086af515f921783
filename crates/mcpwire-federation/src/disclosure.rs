//! [`Disclosures`]: which tools each session's searches disclosed (hybrid disclosure in
//! `search` catalog mode) — pure and bounded: at most [`MAX_DISCLOSED_PER_SESSION`] tools
//! and [`MAX_DISCLOSED_BYTES`] of their definitions per session (the least recently found
//! leave first; the most recent one stays whatever its size), and
//! [`MAX_DISCLOSING_SESSIONS`] sessions (the least recently active leave first).

use std::collections::HashMap;

/// Tools a session's `tools/list` shows beyond the meta-tools.
pub const MAX_DISCLOSED_PER_SESSION: usize = 32;

/// Bytes of tool definitions (compact JSON) a session's `tools/list` shows beyond the
/// meta-tools — about 4,500 tokens: tool sizes are skewed (a few are 10 KB and more), so
/// a bound on the count alone would let a few searches bring back a large part of the
/// catalog.
pub const MAX_DISCLOSED_BYTES: usize = 20 * 1024;

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
    /// Exposed name, when it was last found, and its definition's size in bytes.
    tools: Vec<(String, u64, usize)>,
    last_active: u64,
}

impl Disclosed {
    /// Whether the list is over a bound (and holds more than one tool: the most recent
    /// stays whatever its size).
    fn over(&self) -> bool {
        let bytes: usize = self.tools.iter().map(|(_, _, b)| b).sum();
        self.tools.len() > MAX_DISCLOSED_PER_SESSION
            || (bytes > MAX_DISCLOSED_BYTES && self.tools.len() > 1)
    }
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
    /// Records that a search of session `session` found `tools` (exposed name and
    /// definition size, best first): each is added to the session's list or refreshed;
    /// past the bounds the least recently found leave.
    pub(crate) fn disclose(&mut self, session: u64, tools: &[(&str, usize)]) -> Change {
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
        for (rank, &(name, bytes)) in tools.iter().enumerate() {
            let when = now + (tools.len() - rank) as u64;
            match entry.tools.iter_mut().find(|(n, _, _)| n == name) {
                Some((_, last, size)) => (*last, *size) = (when, bytes),
                None => {
                    entry.tools.push((name.to_owned(), when, bytes));
                    list_changed = true;
                }
            }
        }
        self.tick = now + tools.len() as u64;
        while entry.over() {
            let oldest = entry
                .tools
                .iter()
                .enumerate()
                .min_by_key(|(_, (_, when, _))| *when)
                .map(|(i, _)| i);
            if let Some(i) = oldest {
                entry.tools.remove(i);
                list_changed = true;
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
            .map(|d| d.tools.iter().map(|(n, _, _)| n.clone()).collect())
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

    /// `names` as small tools.
    fn small<'a>(names: &[&'a str]) -> Vec<(&'a str, usize)> {
        names.iter().map(|n| (*n, 100)).collect()
    }

    #[test]
    fn a_session_keeps_its_most_recently_found_tools_within_the_bound() {
        let mut d = Disclosures::default();
        let first = d.disclose(1, &small(&["a", "b"]));
        assert!(first.list_changed && first.new_session);
        assert_eq!(d.of(1), ["a", "b"]);
        let again = d.disclose(1, &small(&["b"]));
        assert!(!again.list_changed && !again.new_session, "nothing new");
        assert!(d.of(2).is_empty(), "per session");
        let names: Vec<String> = (0..MAX_DISCLOSED_PER_SESSION)
            .map(|i| format!("t{i}"))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        // `b` was found after `a`: `a` leaves first, then `b`.
        d.disclose(1, &small(&refs[..MAX_DISCLOSED_PER_SESSION - 1]));
        assert_eq!(d.of(1).len(), MAX_DISCLOSED_PER_SESSION);
        assert!(!d.of(1).contains(&"a".to_owned()) && d.of(1).contains(&"b".to_owned()));
        d.disclose(1, &small(&["b"]));
        d.disclose(1, &small(&["new"]));
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
    fn large_tools_leave_within_the_byte_budget_but_the_newest_stays() {
        let mut d = Disclosures::default();
        let third = MAX_DISCLOSED_BYTES / 3;
        d.disclose(1, &[("a", third), ("b", third)]);
        d.disclose(1, &[("c", third)]);
        assert_eq!(d.of(1), ["a", "b", "c"], "exactly at the budget");
        let change = d.disclose(1, &[("d", 10)]);
        assert!(change.list_changed);
        assert_eq!(
            d.of(1),
            ["a", "c", "d"],
            "b, the first search's worse hit, left"
        );
        d.disclose(1, &[("huge", MAX_DISCLOSED_BYTES * 2)]);
        assert_eq!(
            d.of(1),
            ["huge"],
            "the newest stays alone, whatever its size"
        );
    }

    #[test]
    fn sessions_are_bounded_least_active_first() {
        let mut d = Disclosures::default();
        for s in 0..MAX_DISCLOSING_SESSIONS as u64 + 10 {
            d.disclose(s, &small(&["x"]));
            if s >= 5 {
                d.disclose(0, &small(&["x"]));
            }
        }
        assert_eq!(d.sessions(), MAX_DISCLOSING_SESSIONS);
        assert_eq!(d.of(0), ["x"], "kept active");
        assert!(d.of(1).is_empty(), "the least active left");
    }
}
