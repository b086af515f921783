//! One top-level member of a JSON-RPC frame found and replaced in place, the rest of the
//! bytes untouched and undecoded: what a raw-frame forwarder needs to rewrite an `id`
//! (`docs/design/gateway.md` § The forwarding hot path; `relay_floor` in `bench` uses it).
//!
//! The scan is JSON-aware — strings with escapes, nested objects and arrays, whitespace and
//! keys in any order are handled as a parser would, and a key written with escapes
//! (`"\u0069d"`) is the key it spells — so an `"id"` inside `params` or inside a string is
//! never taken for the frame's own. It locates; it does not validate: the value of the
//! member asked for is bracket- and string-balanced, but a caller that forwards the frame
//! must still have checked it is JSON. Anything it cannot read with certainty — not an
//! object, a repeated key, an unterminated string, bytes after the object — is `None`, and
//! the caller takes the decoding path.

use std::ops::Range;

/// The byte range of the value of top-level member `key` in the JSON object `frame`
/// (`None`: absent, repeated, or the frame is not an object this scan can read).
pub fn member(frame: &[u8], key: &str) -> Option<Range<usize>> {
    let mut scan = Scan { b: frame, i: 0 };
    scan.ws();
    scan.expect(b'{')?;
    scan.ws();
    let mut found = None;
    if scan.peek()? == b'}' {
        scan.i += 1;
    } else {
        loop {
            scan.ws();
            let (name, escaped) = scan.string()?;
            scan.ws();
            scan.expect(b':')?;
            scan.ws();
            let start = scan.i;
            scan.value()?;
            if key_is(&frame[name], escaped, key)? {
                if found.is_some() {
                    return None;
                }
                found = Some(start..scan.i);
            }
            scan.ws();
            match scan.peek()? {
                b',' => scan.i += 1,
                b'}' => {
                    scan.i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    scan.ws();
    (scan.i == frame.len()).then_some(found).flatten()
}

/// Writes `frame` to `out` with the value of top-level member `key` replaced by `value`
/// (raw JSON, written as given); returns the range the old value had in `frame`. `None`
/// (and nothing written) when [`member`] finds no such member.
pub fn replace_member(
    frame: &[u8],
    key: &str,
    value: &[u8],
    out: &mut Vec<u8>,
) -> Option<Range<usize>> {
    let at = member(frame, key)?;
    out.reserve(frame.len() - at.len() + value.len());
    out.extend_from_slice(&frame[..at.start]);
    out.extend_from_slice(value);
    out.extend_from_slice(&frame[at.end..]);
    Some(at)
}

/// Whether the key whose raw text (between its quotes) is `raw` is `key`.
fn key_is(raw: &[u8], escaped: bool, key: &str) -> Option<bool> {
    if !escaped {
        return Some(raw == key.as_bytes());
    }
    let mut quoted = Vec::with_capacity(raw.len() + 2);
    quoted.push(b'"');
    quoted.extend_from_slice(raw);
    quoted.push(b'"');
    let name: String = serde_json::from_slice(&quoted).ok()?;
    Some(name == key)
}

struct Scan<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string at the cursor: the range of its text between the quotes, and whether it
    /// has escapes.
    fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.expect(b'"')?;
        let start = self.i;
        let mut escaped = false;
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some((start..self.i - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let hex = match self.b.get(self.i + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 0,
                        b'u' => 4,
                        _ => return None,
                    };
                    let digits = self.b.get(self.i + 2..self.i + 2 + hex)?;
                    if !digits.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.i += 2 + hex;
                }
                c if c < 0x20 => return None,
                _ => self.i += 1,
            }
        }
    }

    /// Skips one value: a string, an object or array (balanced, strings skipped whole), or
    /// a scalar (a number or literal, up to the next delimiter).
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(());
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                let start = self.i;
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.i += 1;
                }
                (self.i > start).then_some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn id_of(frame: &str) -> Option<&str> {
        member(frame.as_bytes(), "id").map(|r| &frame[r])
    }

    fn with_id(frame: &str, id: &str) -> Value {
        let mut out = Vec::new();
        replace_member(frame.as_bytes(), "id", id.as_bytes(), &mut out).unwrap();
        serde_json::from_slice(&out).unwrap()
    }

    #[test]
    fn ids_are_found_as_numbers_and_strings_in_any_order_and_spacing() {
        assert_eq!(id_of(r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#), Some("7"));
        assert_eq!(id_of(r#"{"method":"x","id":"a-1"}"#), Some(r#""a-1""#));
        assert_eq!(
            id_of(" {\r\n\t\"id\" :\n -12.5e3 , \"m\":1 }\n"),
            Some("-12.5e3")
        );
        assert_eq!(id_of(r#"{"id":null}"#), Some("null"));
        assert_eq!(id_of(r#"{"result":{},"jsonrpc":"2.0","id":3}"#), Some("3"));
    }

    #[test]
    fn an_id_elsewhere_is_not_the_frames() {
        let frame =
            r#"{"params":{"id":1,"arguments":{"id":[{"id":2}]}},"method":"tools/call","id":9}"#;
        assert_eq!(id_of(frame), Some("9"));
        let frame = r#"{"params":{"text":"\"id\":5, \\\"id\\\": 6 } {"},"id":"x\"y"}"#;
        assert_eq!(id_of(frame), Some(r#""x\"y""#));
        assert_eq!(id_of(r#"{"params":{"id":1},"method":"n"}"#), None);
    }

    #[test]
    fn a_key_written_with_escapes_is_the_key_it_spells() {
        assert_eq!(id_of(r#"{"\u0069d":4,"method":"x"}"#), Some("4"));
        assert_eq!(id_of(r#"{"i\u0064x":4}"#), None);
    }

    #[test]
    fn what_cannot_be_read_with_certainty_is_none() {
        for frame in [
            r#"{"id":1,"id":2}"#,
            r#"{"\u0069d":1,"id":2}"#,
            r#"[{"id":1}]"#,
            r#"{"id":1"#,
            r#"{"id":"open}"#,
            r#"{"id":1} x"#,
            r#"{"id":}"#,
            r#"{"a":"\q","id":1}"#,
            r#"{"a":"\u12","id":1}"#,
            "{\"a\":\"tab\there\",\"id\":1}",
            r#"{id:1}"#,
            "",
        ] {
            assert_eq!(id_of(frame), None, "{frame}");
        }
    }

    #[test]
    fn replacing_an_id_keeps_every_other_byte() {
        let frame = r#"{ "jsonrpc" : "2.0", "method":"tools/call", "params":{"name":"echo","arguments":{"text":"é \"id\":1 \u2028"}}, "id" : "client-7" }"#;
        let mut out = Vec::new();
        let old = replace_member(frame.as_bytes(), "id", b"42", &mut out).unwrap();
        assert_eq!(&frame[old.clone()], r#""client-7""#);
        let want = format!("{}42{}", &frame[..old.start], &frame[old.end..]);
        assert_eq!(String::from_utf8(out).unwrap(), want);
        assert_eq!(
            with_id(
                r#"{"jsonrpc":"2.0","id":42,"result":{"content":[]}}"#,
                r#""client-7""#
            ),
            json!({"jsonrpc": "2.0", "id": "client-7", "result": {"content": []}})
        );
        let mut out = Vec::new();
        assert!(replace_member(br#"{"method":"n"}"#, "id", b"1", &mut out).is_none());
        assert!(out.is_empty());
    }
}
