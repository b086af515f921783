//! Protobuf identifiers made from JSON names: deterministic, unique within a scope.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Words protobuf's grammar gives a meaning to; a field or type named so gets a `_` suffix
/// to keep the generated text unambiguous for every parser (an `f_` prefix, not a `_`
/// suffix, which protoc's JSON-name folding would drop).
const RESERVED: &[&str] = &[
    "syntax",
    "edition",
    "import",
    "weak",
    "public",
    "package",
    "option",
    "optional",
    "required",
    "repeated",
    "group",
    "oneof",
    "map",
    "extensions",
    "to",
    "max",
    "reserved",
    "enum",
    "message",
    "extend",
    "service",
    "rpc",
    "stream",
    "returns",
    "true",
    "false",
    "inf",
    "nan",
    "double",
    "float",
    "int32",
    "int64",
    "uint32",
    "uint64",
    "sint32",
    "sint64",
    "fixed32",
    "fixed64",
    "sfixed32",
    "sfixed64",
    "bool",
    "string",
    "bytes",
];

/// `s` as an identifier: letters, digits and `_`, starting with a letter.
pub(crate) fn identifier(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.is_empty() {
        "field".to_owned()
    } else {
        trimmed.to_owned()
    };
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert_str(0, "f_");
    }
    if RESERVED.contains(&out.as_str()) {
        out.insert_str(0, "f_");
    }
    out
}

/// `s` as a PascalCase type name.
pub(crate) fn pascal(s: &str) -> String {
    let mut out = String::new();
    let mut upper = true;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if upper {
                out.push(c.to_ascii_uppercase());
            } else {
                out.push(c);
            }
            upper = false;
        } else {
            upper = true;
        }
    }
    if out.is_empty() {
        out.push_str("Value");
    }
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert(0, 'T');
    }
    out
}

/// `s` as UPPER_SNAKE_CASE (for enum values).
pub(crate) fn upper_snake(s: &str) -> String {
    let mut out = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && prev_lower && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
            out.push(c.to_ascii_uppercase());
        } else {
            if !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            prev_lower = false;
        }
    }
    let out = out.trim_matches('_').to_owned();
    if out.is_empty() {
        "EMPTY".to_owned()
    } else {
        out
    }
}

/// protoc's default JSON name of a field: `_x` becomes `X`, other characters stay.
pub(crate) fn default_json_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut upper = false;
    for c in name.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Names taken in one message scope. Every symbol (field, nested type, enum value) must
/// differ exactly. Fields must also differ in JSON: a field's name, its JSON name and its
/// default JSON name may equal no other field's (JSON parsers accept both names, so
/// protobuf runtimes reject such clashes), compared case-insensitively to also satisfy
/// protoc's proto3 check.
#[derive(Debug, Default, Clone)]
pub(crate) struct Scope {
    exact: HashSet<String>,
    json: HashSet<String>,
    /// Names of an enclosing scope this one must avoid too, shared rather than copied (a
    /// copy per message made conversion quadratic in the number of `$defs`).
    outer: Option<Rc<RefCell<HashSet<String>>>>,
    /// Per wanted name, the first suffix not yet tried by [`Scope::claim`] (names are never
    /// released, so the ones before it stay taken).
    next: HashMap<String, usize>,
}

/// Give up renaming after this many candidates.
const MAX_TRIES: usize = 1000;

impl Scope {
    /// An empty scope that also avoids every name in `outer`, as it is when claiming.
    pub(crate) fn within(outer: Rc<RefCell<HashSet<String>>>) -> Scope {
        Scope {
            outer: Some(outer),
            ..Scope::default()
        }
    }

    fn taken(&self, name: &str) -> bool {
        self.exact.contains(name)
            || self
                .outer
                .as_ref()
                .is_some_and(|o| o.borrow().contains(name))
    }

    /// Marks a symbol taken without renaming it.
    pub(crate) fn reserve(&mut self, name: &str) {
        self.exact.insert(name.to_owned());
    }

    /// A type or enum-value name like `want` that no symbol in this scope has yet:
    /// `want`, `want_2`, `want_3`, …
    pub(crate) fn claim(&mut self, want: &str) -> String {
        let mut n = self.next.get(want).copied().unwrap_or(1);
        loop {
            let cand = candidate(want, n);
            n += 1;
            if !self.taken(&cand) {
                self.exact.insert(cand.clone());
                self.next.insert(want.to_owned(), n);
                return cand;
            }
        }
    }

    /// A field name like `want` for JSON member `key` (`None`: the field's JSON name is its
    /// default). `None` when `key` itself clashes with a field already claimed.
    pub(crate) fn claim_field(&mut self, want: &str, key: Option<&str>) -> Option<String> {
        for n in 1..=MAX_TRIES {
            let cand = candidate(want, n);
            let explicit = key.filter(|k| *k != cand);
            let mut ids = vec![
                cand.to_ascii_lowercase(),
                default_json_name(&cand).to_ascii_lowercase(),
            ];
            if let Some(k) = explicit {
                ids.push(k.to_ascii_lowercase());
            }
            if self.taken(&cand) || ids.iter().any(|i| self.json.contains(i)) {
                if explicit.is_some_and(|k| self.json.contains(&k.to_ascii_lowercase())) {
                    return None;
                }
                continue;
            }
            self.exact.insert(cand.clone());
            self.json.extend(ids);
            return Some(cand);
        }
        None
    }
}

fn candidate(want: &str, n: usize) -> String {
    if n == 1 {
        want.to_owned()
    } else {
        format!("{want}_{n}")
    }
}

/// A 32-bit FNV-1a hash, for short deterministic name suffixes.
pub(crate) fn fnv32(s: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        assert_eq!(identifier("max_results"), "max_results");
        assert_eq!(identifier("foo-bar.baz"), "foo_bar_baz");
        assert_eq!(identifier("1st"), "f_1st");
        assert_eq!(identifier(""), "field");
        assert_eq!(identifier("message"), "f_message");
        assert_eq!(pascal("date_range"), "DateRange");
        assert_eq!(upper_snake("dateRange"), "DATE_RANGE");
        assert_eq!(upper_snake("in-progress"), "IN_PROGRESS");
        assert_eq!(default_json_name("max_results"), "maxResults");
    }

    #[test]
    fn scope_dedups_json_folding() {
        let mut s = Scope::default();
        assert_eq!(
            s.claim_field("fooBar", Some("fooBar")).as_deref(),
            Some("fooBar")
        );
        // foo_bar's default JSON name is fooBar: renamed, with an explicit JSON name
        assert_eq!(
            s.claim_field("foo_bar", Some("foo_bar")).as_deref(),
            Some("foo_bar_2")
        );
        // foo-bar wants foo_bar, which is now another field's JSON name
        assert_eq!(
            s.claim_field("foo_bar", Some("foo-bar")).as_deref(),
            Some("foo_bar_3")
        );
        // a JSON name equal to another field's name cannot be renamed away
        assert_eq!(
            s.claim_field("foo_bar_2", Some("foo_bar_2")).as_deref(),
            None
        );
        assert_eq!(s.claim("FooBar"), "FooBar");
        assert_eq!(s.claim("foo_bar"), "foo_bar");
    }
}
