//! The active tool list a process controls with `enable_tools`, `disable_tools`,
//! `set_allowed`, `set_blocked` and `batch` (pmcp's `toollist` semantics).

use std::collections::BTreeSet;

/// How the active list is derived from the registered tools.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Mode {
    /// Registered minus disabled.
    #[default]
    Open,
    /// Only these (that are registered).
    Allow,
    /// Registered minus these.
    Block,
}

/// Registered tools and the set that filters them.
#[derive(Debug, Clone, Default)]
pub struct ToolList {
    registered: BTreeSet<String>,
    mode: Mode,
    /// Open: disabled names. Allow: allowed names. Block: blocked names.
    set: BTreeSet<String>,
}

/// A change requested by the process.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    /// Tools to enable (after allow/block).
    pub enable: Vec<String>,
    /// Tools to disable (last).
    pub disable: Vec<String>,
    /// Switch to an allow list (`Some(empty)`: back to open mode).
    pub allow: Option<Vec<String>>,
    /// Switch to a block list (`Some(empty)`: back to open mode).
    pub block: Option<Vec<String>>,
}

impl ToolList {
    /// A list where every registered tool is active.
    pub fn new(registered: impl IntoIterator<Item = String>) -> ToolList {
        ToolList {
            registered: registered.into_iter().collect(),
            ..ToolList::default()
        }
    }

    /// The active tool names, sorted.
    pub fn active(&self) -> Vec<String> {
        self.registered
            .iter()
            .filter(|n| self.is_active(n))
            .cloned()
            .collect()
    }

    /// Whether `name` is registered and active.
    pub fn is_active(&self, name: &str) -> bool {
        self.registered.contains(name)
            && match self.mode {
                Mode::Open | Mode::Block => !self.set.contains(name),
                Mode::Allow => self.set.contains(name),
            }
    }

    /// Makes the names active in the current mode.
    pub fn enable<I: IntoIterator<Item = String>>(&mut self, names: I) {
        for n in names {
            match self.mode {
                Mode::Open | Mode::Block => {
                    self.set.remove(&n);
                }
                Mode::Allow => {
                    self.set.insert(n);
                }
            }
        }
    }

    /// Makes the names inactive in the current mode.
    pub fn disable<I: IntoIterator<Item = String>>(&mut self, names: I) {
        for n in names {
            match self.mode {
                Mode::Open | Mode::Block => {
                    self.set.insert(n);
                }
                Mode::Allow => {
                    self.set.remove(&n);
                }
            }
        }
    }

    /// Switches to an allow list (an empty list returns to open mode).
    pub fn set_allowed(&mut self, names: Vec<String>) {
        self.switch(Mode::Allow, names);
    }

    /// Switches to a block list (an empty list returns to open mode).
    pub fn set_blocked(&mut self, names: Vec<String>) {
        self.switch(Mode::Block, names);
    }

    fn switch(&mut self, mode: Mode, names: Vec<String>) {
        if names.is_empty() {
            self.mode = Mode::Open;
            self.set.clear();
        } else {
            self.mode = mode;
            self.set = names.into_iter().collect();
        }
    }

    /// Applies allow/block, then enable, then disable. Allow and block together is refused
    /// (nothing changes).
    pub fn batch(&mut self, b: Batch) -> Result<(), &'static str> {
        match (b.allow, b.block) {
            (Some(_), Some(_)) => {
                return Err("a batch cannot set both an allow list and a block list");
            }
            (Some(allow), None) => self.set_allowed(allow),
            (None, Some(block)) => self.set_blocked(block),
            (None, None) => {}
        }
        self.enable(b.enable);
        self.disable(b.disable);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn modes_follow_pmcp() {
        let mut l = ToolList::new(names(&["a", "b", "c"]));
        assert_eq!(l.active(), names(&["a", "b", "c"]));
        l.disable(names(&["b", "zz"]));
        assert_eq!(l.active(), names(&["a", "c"]));
        l.enable(names(&["b"]));
        assert_eq!(l.active(), names(&["a", "b", "c"]));
        l.set_allowed(names(&["c", "nope"]));
        assert_eq!(l.active(), names(&["c"]));
        l.enable(names(&["a"]));
        assert_eq!(l.active(), names(&["a", "c"]));
        l.set_blocked(names(&["a"]));
        assert_eq!(l.active(), names(&["b", "c"]));
        l.set_blocked(vec![]);
        assert_eq!(l.active(), names(&["a", "b", "c"]));
    }

    #[test]
    fn batch_order_and_conflict() {
        let mut l = ToolList::new(names(&["a", "b", "c"]));
        let b = Batch {
            allow: Some(names(&["a", "b"])),
            enable: names(&["c"]),
            disable: names(&["a"]),
            ..Batch::default()
        };
        l.batch(b).expect("valid batch");
        assert_eq!(l.active(), names(&["b", "c"]));
        let bad = Batch {
            allow: Some(names(&["a"])),
            block: Some(names(&["b"])),
            ..Batch::default()
        };
        assert!(l.batch(bad).is_err());
        assert_eq!(l.active(), names(&["b", "c"]));
    }
}
