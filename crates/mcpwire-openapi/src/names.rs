//! Tool names: an operation's `operationId`, or `method_path` when it has none, made
//! valid (`[A-Za-z0-9_.-]`, at most 64 characters) and unique (`_2`, `_3`, … in document
//! order).

use std::collections::BTreeSet;

/// Longest tool name made.
pub const MAX_NAME: usize = 64;

/// The name for an operation: `operation_id` if it has one, else `get_pets_petId` from
/// `GET /pets/{petId}`.
pub fn base_name(operation_id: Option<&str>, method: &str, path: &str) -> String {
    let raw = match operation_id {
        Some(id) if !id.trim().is_empty() => id.to_owned(),
        _ => format!("{}_{}", method.to_ascii_lowercase(), path),
    };
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            c
        } else {
            '_'
        };
        if c == '_' && (out.is_empty() || out.ends_with('_')) {
            continue;
        }
        out.push(c);
    }
    let trimmed = out.trim_end_matches('_');
    let name: String = trimmed.chars().take(MAX_NAME).collect();
    if name.is_empty() {
        "operation".into()
    } else {
        name
    }
}

/// Makes names unique in the order they are asked for.
#[derive(Debug, Default)]
pub struct Unique(BTreeSet<String>);

impl Unique {
    /// `name`, or `name_2`, `name_3`, … if taken (shortened to stay within [`MAX_NAME`]).
    pub fn take(&mut self, name: &str) -> String {
        let mut candidate = name.to_owned();
        let mut n = 1;
        while self.0.contains(&candidate) {
            n += 1;
            let suffix = format!("_{n}");
            let keep = MAX_NAME.saturating_sub(suffix.len());
            candidate = format!("{}{suffix}", name.chars().take(keep).collect::<String>());
        }
        self.0.insert(candidate.clone());
        candidate
    }

    /// Whether `name` is taken.
    pub fn contains(&self, name: &str) -> bool {
        self.0.contains(name)
    }

    /// Marks `name` as taken.
    pub fn insert(&mut self, name: &str) {
        self.0.insert(name.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_ids_and_paths() {
        assert_eq!(base_name(Some("listPets"), "get", "/pets"), "listPets");
        assert_eq!(base_name(None, "GET", "/pets/{petId}"), "get_pets_petId");
        assert_eq!(base_name(Some("a b/c"), "get", "/"), "a_b_c");
        assert_eq!(base_name(None, "get", "/"), "get");
        assert_eq!(
            base_name(Some(&"x".repeat(100)), "get", "/").len(),
            MAX_NAME
        );
    }

    #[test]
    fn unique_names_get_suffixes() {
        let mut u = Unique::default();
        assert_eq!(u.take("a"), "a");
        assert_eq!(u.take("a"), "a_2");
        assert_eq!(u.take("a"), "a_3");
        let long = "y".repeat(MAX_NAME);
        u.take(&long);
        assert_eq!(u.take(&long).len(), MAX_NAME);
    }
}
