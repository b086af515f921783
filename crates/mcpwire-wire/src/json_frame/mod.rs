//! JSON-RPC frames read and edited as bytes, without decoding them: what the gateway's relay
//! and forwarding paths, and the metrics, read of a message they do not parse.
//!
//! One validating scan ([`ObjectMembers::read`]) reads a frame that is one JSON object and
//! records where its top-level members are; everything else here is built on it:
//! [`member`] and [`replace_member`] (one member found or replaced, the other bytes kept),
//! [`plain_call`] (a `tools/call` that may be sent on as it came: its id, tool and
//! arguments), [`plain_params`] (the params of such a call), [`plain_result`] (an answer
//! that may be handed back as it came), and splicing another id into either
//! ([`PlainCall::write_line_with_id`], [`PlainResult::write_line_with_id`]).
//!
//! # What is accepted
//!
//! The scan accepts exactly the JSON that `serde_json` accepts (RFC 8259: strings with
//! valid escapes and no control characters, numbers in the JSON grammar, `true`, `false`,
//! `null`, whitespace being space, tab, line feed and carriage return), with more limits of
//! its own. A frame is read only when all of these hold; otherwise the answer is `None` —
//! "not found" or "not plain" — and the caller takes the general, decoding path:
//!
//! - the frame is one JSON object, with only whitespace around it (not an array, not two
//!   values, not truncated);
//! - it is UTF-8 (bytes outside strings must be JSON's ASCII; those inside are checked);
//! - no container nests deeper than the `max_depth` asked for (the frame's own object is at
//!   depth 1) nor deeper than [`MAX_NESTING`];
//! - no key of the object read (the frame's, and the params' in [`plain_call`]) is written
//!   with escapes (`"\u0069d"` spells `id`, but it is not looked at), and no such key
//!   repeats;
//! - that object has at most [`MAX_MEMBERS`] members.
//!
//! What lies deeper (the arguments, a result) is checked to be JSON within the depth, and
//! otherwise left as it is: its keys may have escapes or repeat.
//!
//! # Cost
//!
//! One pass over the frame, no allocation: outside strings a byte at a time, inside strings
//! eight bytes at a time (`docs/benchmarks.md`, the `json_frame` rows of `bench/benches/codec.rs`).

mod cursor;
mod plain;

use std::ops::Range;

use bytes::BufMut;

use cursor::{Cursor, Nested, Spans};

pub use plain::{
    IdText, PlainCall, PlainFrame, PlainParams, PlainResult, plain_call, plain_params,
    plain_result, writes_as_is,
};

/// The deepest nesting any scan accepts, whatever `max_depth` a caller asks for (deeper
/// frames take the general path).
pub const MAX_NESTING: usize = 256;

/// The most members an object read here may have (JSON-RPC frames have five at most).
pub const MAX_MEMBERS: usize = 12;

/// The top-level members of a frame that is one JSON object, read by the validating scan
/// (see the module docs for what it accepts), as byte ranges of that frame.
#[derive(Debug, Clone)]
pub struct ObjectMembers<'a> {
    frame: &'a [u8],
    spans: Spans<MAX_MEMBERS>,
}

impl<'a> ObjectMembers<'a> {
    /// The members of `frame`, when it is one JSON object the scan reads (module docs) with
    /// nothing nested deeper than `max_depth`.
    pub fn read(frame: &'a [u8], max_depth: usize) -> Option<ObjectMembers<'a>> {
        let mut cursor = Cursor::new(frame);
        let spans = cursor.object(1, max_depth, None::<&mut Nested<'_, 0>>)?;
        cursor.at_end().then_some(ObjectMembers { frame, spans })
    }

    /// How many members the object has.
    pub fn len(&self) -> usize {
        self.spans.len
    }

    /// Whether the object is `{}`.
    pub fn is_empty(&self) -> bool {
        self.spans.len == 0
    }

    /// Where the value of member `key` is in the frame.
    pub fn range(&self, key: &str) -> Option<Range<usize>> {
        self.spans
            .as_slice()
            .iter()
            .find(|s| self.frame.get(s.key.clone()) == Some(key.as_bytes()))
            .map(|s| s.value.clone())
    }

    /// The bytes of the value of member `key`.
    pub fn get(&self, key: &str) -> Option<&'a [u8]> {
        self.frame.get(self.range(key)?)
    }

    /// The members in order: each key's text (between its quotes, without escapes) and
    /// where its value is in the frame.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], Range<usize>)> + '_ {
        let frame = self.frame;
        self.spans.as_slice().iter().map(move |s| {
            (
                frame.get(s.key.clone()).unwrap_or_default(),
                s.value.clone(),
            )
        })
    }
}

/// Where the value of top-level member `key` is in `frame` (see [`ObjectMembers::read`]):
/// `None` when it is absent or the frame is not one the scan reads.
pub fn member(frame: &[u8], key: &str, max_depth: usize) -> Option<Range<usize>> {
    ObjectMembers::read(frame, max_depth)?.range(key)
}

/// The text between the quotes of top-level member `key` of `frame`, when it is a string
/// written without escapes (so that text is the string's value).
pub fn plain_string_member<'a>(frame: &'a [u8], key: &str, max_depth: usize) -> Option<&'a str> {
    let value = frame.get(member(frame, key, max_depth)?)?;
    let text = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if text.contains(&b'\\') {
        return None;
    }
    std::str::from_utf8(text).ok()
}

/// Writes `frame` to `out` with the value of top-level member `key` replaced by `value`
/// (raw JSON, written as given); returns where the old value was in `frame`. `None`, and
/// nothing written, when [`member`] does not find it.
pub fn replace_member(
    frame: &[u8],
    key: &str,
    value: &[u8],
    max_depth: usize,
    out: &mut impl BufMut,
) -> Option<Range<usize>> {
    let at = member(frame, key, max_depth)?;
    let (before, after) = (frame.get(..at.start)?, frame.get(at.end..)?);
    out.put_slice(before);
    out.put_slice(value);
    out.put_slice(after);
    Some(at)
}

/// Whether an object anywhere in the JSON text `json` may have a member named `key`:
/// `false` only when it cannot — `key` does not appear, and neither does a `\u` escape
/// (the only other way to write a key spelled with letters, digits, `_`, `-` or `$`).
/// For a key with other characters the answer is always `true`. A cheap test before a
/// decode that looks for the member.
pub fn may_have_member(json: &str, key: &str) -> bool {
    may_have_member_in(json.as_bytes(), key)
}

/// [`may_have_member`] on JSON text not checked as UTF-8 (an answer a relay hands back).
pub fn may_have_member_in(json: &[u8], key: &str) -> bool {
    MemberProbe::new(key).may_be_in(json)
}

/// [`may_have_member_in`] for one key, its search prepared once: what a path asking the same
/// question of every frame keeps (in a `static`), instead of preparing it per frame.
pub struct MemberProbe<'k> {
    /// `None` when the key has characters a `\` escape other than `\u` can spell: then
    /// every text may have it.
    key: Option<memchr::memmem::Finder<'k>>,
}

impl<'k> MemberProbe<'k> {
    /// The probe for members named `key`.
    pub fn new(key: &'k str) -> MemberProbe<'k> {
        let simple = key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'$'));
        MemberProbe {
            key: simple.then(|| memchr::memmem::Finder::new(key.as_bytes())),
        }
    }

    /// Whether an object anywhere in `json` may have the member ([`may_have_member`]).
    pub fn may_be_in(&self, json: &[u8]) -> bool {
        let Some(key) = &self.key else { return true };
        key.find(json).is_some()
            || memchr::memchr_iter(b'\\', json).any(|at| json.get(at + 1) == Some(&b'u'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPTH: usize = 64;

    fn id_of(frame: &str) -> Option<&str> {
        member(frame.as_bytes(), "id", DEPTH).map(|r| &frame[r])
    }

    #[test]
    fn members_are_found_in_any_order_and_spacing() {
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), Some("7"));
        assert_eq!(id_of(r#"{"method":"x","id":"a-1"}"#), Some(r#""a-1""#));
        assert_eq!(
            id_of(" {\r\n\t\"id\" :\n -12.5e3 , \"m\":1 }\n"),
            Some("-12.5e3")
        );
        assert_eq!(id_of(r#"{"id":null}"#), Some("null"));
        let frame =
            r#"{"params":{"id":1,"arguments":{"id":[{"id":2}]}},"method":"tools/call","id":9}"#;
        assert_eq!(id_of(frame), Some("9"));
        let frame = r#"{"params":{"text":"\"id\":5, \\\"id\\\": 6 } {"},"id":"x\"y"}"#;
        assert_eq!(id_of(frame), Some(r#""x\"y""#));
        assert_eq!(id_of(r#"{"params":{"id":1},"method":"n"}"#), None);
    }

    #[test]
    fn what_cannot_be_read_with_certainty_is_none() {
        for frame in [
            r#"{"id":1,"id":2}"#,
            r#"{"\u0069d":4,"method":"x"}"#,
            r#"[{"id":1}]"#,
            r#"{"id":1"#,
            r#"{"id":"open}"#,
            r#"{"id":1} x"#,
            r#"{"id":1}{}"#,
            r#"{"id":}"#,
            r#"{"a":"\q","id":1}"#,
            r#"{"a":"\u12","id":1}"#,
            "{\"a\":\"tab\there\",\"id\":1}",
            r#"{id:1}"#,
            r#"{"a":[1,],"id":1}"#,
            "",
        ] {
            assert_eq!(id_of(frame), None, "{frame}");
        }
        let many = format!(
            "{{{}\"id\":1}}",
            (0..MAX_MEMBERS)
                .map(|i| format!("\"k{i}\":0,"))
                .collect::<String>()
        );
        assert_eq!(id_of(&many), None, "more than MAX_MEMBERS");
    }

    #[test]
    fn depth_counts_the_frame_itself() {
        let frame = r#"{"id":1,"params":{"a":[{}]}}"#;
        assert_eq!(member(frame.as_bytes(), "id", 4), Some(6..7));
        assert_eq!(member(frame.as_bytes(), "id", 3), None);
        assert_eq!(member(b"{\"id\":1}", "id", 1), Some(6..7));
        assert_eq!(member(b"{\"id\":1}", "id", 0), None);
    }

    #[test]
    fn replacing_a_member_keeps_every_other_byte() {
        let frame = r#"{ "jsonrpc" : "2.0", "method":"tools/call", "params":{"name":"echo","arguments":{"text":"é \"id\":1 \u2028"}}, "id" : "client-7" }"#;
        let mut out = Vec::new();
        let old = replace_member(frame.as_bytes(), "id", b"42", DEPTH, &mut out).unwrap();
        assert_eq!(&frame[old.clone()], r#""client-7""#);
        let want = format!("{}42{}", &frame[..old.start], &frame[old.end..]);
        assert_eq!(String::from_utf8(out).unwrap(), want);
        let mut out = Vec::new();
        assert!(replace_member(br#"{"method":"n"}"#, "id", b"1", DEPTH, &mut out).is_none());
        assert!(out.is_empty());
    }

    #[test]
    fn plain_string_members_are_their_text() {
        fn read(params: &str) -> Option<&str> {
            plain_string_member(params.as_bytes(), "name", DEPTH)
        }
        assert_eq!(
            read(r#"{"arguments":{"name":"x"},"name":"add"}"#),
            Some("add")
        );
        assert_eq!(read(r#"{"name":"café"}"#), Some("café"));
        assert_eq!(read(r#"{"name":"a\"b"}"#), None);
        assert_eq!(read(r#"{"name":7}"#), None);
    }

    #[test]
    fn a_member_may_be_there_unless_its_name_and_escapes_are_absent() {
        assert!(!may_have_member(r#"{"content":[]}"#, "isError"));
        assert!(may_have_member(r#"{"isError":true}"#, "isError"));
        assert!(may_have_member(r#"{"\u0069sError":true}"#, "isError"));
        assert!(may_have_member(r#"{}"#, "a/b"), "`\\/` spells `/`");
        let probe = MemberProbe::new("isError");
        assert!(
            !probe.may_be_in(br#"{"text":"a\\\"b\\n"}"#),
            "escapes other than \\u"
        );
        assert!(probe.may_be_in(br#"{"\u0069sError":true}"#));
        assert!(probe.may_be_in(br#"{"result":{"isError":false}}"#));
        assert!(!probe.may_be_in(br#"{"result":{"content":[]}}"#));
        assert!(!probe.may_be_in(b"\\"), "a backslash at the end");
    }
}
