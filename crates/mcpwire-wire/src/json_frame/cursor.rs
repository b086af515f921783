//! The validating scanner under [`json_frame`](super): RFC 8259 JSON as `serde_json` reads
//! it, walked once, byte by byte outside strings and eight bytes at a time inside them,
//! with no allocation and no recursion. Every function returns `None` on the first byte it
//! does not accept; the callers give up on the frame then.

use std::ops::Range;

use super::MAX_NESTING;

/// A position in a frame being scanned.
pub(super) struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// One member of an object: its key's text (between the quotes) and its value's bytes, as
/// ranges of the frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) key: Range<usize>,
    pub(super) value: Range<usize>,
}

/// The members of one object, in order, at most `N`.
#[derive(Debug, Clone)]
pub(super) struct Spans<const N: usize> {
    pub(super) len: usize,
    pub(super) items: [Span; N],
}

impl<const N: usize> Spans<N> {
    const EMPTY: Span = Span {
        key: 0..0,
        value: 0..0,
    };

    pub(super) fn new() -> Spans<N> {
        Spans {
            len: 0,
            items: [Self::EMPTY; N],
        }
    }

    pub(super) fn as_slice(&self) -> &[Span] {
        self.items.get(..self.len).unwrap_or_default()
    }
}

/// A nested object whose members the scan records too (the params of a call): the key it is
/// the value of, and where its members go. `found` says whether it was an object.
pub(super) struct Nested<'k, const N: usize> {
    pub(super) key: &'k [u8],
    pub(super) spans: Spans<N>,
    pub(super) found: bool,
}

impl<'a> Cursor<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, at: 0 }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    /// Skips JSON whitespace (space, tab, line feed, carriage return).
    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Whether the whole frame was read (only whitespace after the cursor).
    pub(super) fn at_end(&mut self) -> bool {
        self.ws();
        self.at == self.bytes.len()
    }

    /// The object at the cursor (after whitespace), nested `depth` deep (the frame's own
    /// object is 1), with nothing deeper than `max_depth`: its members' spans. `None` when it
    /// is not a valid object, a key has escapes, a key repeats, or it has more than `N`
    /// members. A member named `nested.key` whose value is an object has that object's
    /// members recorded in `nested` (with the same rules).
    pub(super) fn object<const N: usize, const M: usize>(
        &mut self,
        depth: usize,
        max_depth: usize,
        mut nested: Option<&mut Nested<'_, M>>,
    ) -> Option<Spans<N>> {
        if depth > max_depth.min(MAX_NESTING) {
            return None;
        }
        self.ws();
        self.eat(b'{')?;
        self.ws();
        let mut spans = Spans::<N>::new();
        if self.eat(b'}').is_some() {
            return Some(spans);
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let (key, escaped) = self.string()?;
            let name = self.bytes.get(key.clone())?;
            if escaped
                || spans
                    .as_slice()
                    .iter()
                    .any(|s| self.bytes.get(s.key.clone()) == Some(name))
            {
                return None;
            }
            self.ws();
            self.eat(b':')?;
            self.ws();
            let start = self.at;
            match nested.as_deref_mut() {
                Some(inner) if inner.key == name && self.peek()? == b'{' => {
                    inner.spans = self.object(depth + 1, max_depth, None::<&mut Nested<'_, 0>>)?;
                    inner.found = true;
                }
                _ => self.value(max_depth.min(MAX_NESTING).saturating_sub(depth))?,
            }
            let slot = spans.items.get_mut(spans.len)?;
            *slot = Span {
                key,
                value: start..self.at,
            };
            spans.len += 1;
            self.ws();
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(spans);
                }
                _ => return None,
            }
        }
    }

    /// Skips one value at the cursor, checking it: a string, number or literal, or an array
    /// or object nesting at most `depth_left` containers (`0`: none).
    pub(super) fn value(&mut self, depth_left: usize) -> Option<()> {
        // Which open containers are objects (bit set) or arrays, innermost at `open - 1`.
        let mut kinds = [0u64; MAX_NESTING / 64];
        let mut open = 0usize;
        loop {
            // A value is expected here.
            self.ws();
            match self.peek()? {
                b'"' => {
                    self.string()?;
                }
                b'-' | b'0'..=b'9' => self.number()?,
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                c @ (b'{' | b'[') => {
                    if open >= depth_left.min(MAX_NESTING) {
                        return None;
                    }
                    let object = c == b'{';
                    let word = kinds.get_mut(open / 64)?;
                    let bit = 1u64 << (open % 64);
                    *word = if object { *word | bit } else { *word & !bit };
                    open += 1;
                    self.at += 1;
                    self.ws();
                    let close = if object { b'}' } else { b']' };
                    if self.eat(close).is_none() {
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                    open -= 1;
                }
                _ => return None,
            }
            // After a value: close containers until one continues with `,`.
            loop {
                if open == 0 {
                    return Some(());
                }
                let object = kinds.get((open - 1) / 64)? & (1u64 << ((open - 1) % 64)) != 0;
                self.ws();
                match self.peek()? {
                    b',' => {
                        self.at += 1;
                        if object {
                            self.ws();
                            self.key()?;
                        }
                        break;
                    }
                    b'}' if object => {
                        self.at += 1;
                        open -= 1;
                    }
                    b']' if !object => {
                        self.at += 1;
                        open -= 1;
                    }
                    _ => return None,
                }
            }
        }
    }

    /// A key and its colon, inside an object being skipped.
    fn key(&mut self) -> Option<()> {
        if self.peek()? != b'"' {
            return None;
        }
        self.string()?;
        self.ws();
        self.eat(b':')
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.at + word.len();
        (self.bytes.get(self.at..end)? == word).then(|| self.at = end)
    }

    /// A number: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        self.eat(b'-');
        match self.peek()? {
            b'0' => self.at += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.eat(b'.').is_some() {
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            self.peek().filter(u8::is_ascii_digit)?;
            self.digits();
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
    }

    /// A string at the cursor (on its opening quote): the range of its text between the
    /// quotes, and whether it has escapes. Checks escapes, refuses control characters, and
    /// checks that what is not ASCII is UTF-8.
    pub(super) fn string(&mut self) -> Option<(Range<usize>, bool)> {
        self.eat(b'"')?;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.at = plain_run_end(self.bytes, self.at);
            match self.peek()? {
                b'"' => {
                    self.at += 1;
                    return Some((start..self.at - 1, escaped));
                }
                b'\\' => {
                    escaped = true;
                    let hex = match self.bytes.get(self.at + 1)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 0,
                        b'u' => 4,
                        _ => return None,
                    };
                    let digits = self.bytes.get(self.at + 2..self.at + 2 + hex)?;
                    if !digits.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    self.at += 2 + hex;
                }
                0x80.. => {
                    // A run of bytes over 0x7f holds whole characters (UTF-8 never splits
                    // one across an ASCII byte), so it is checked as one piece.
                    let rest = self.bytes.get(self.at..)?;
                    let run = rest.iter().position(|b| *b < 0x80).unwrap_or(rest.len());
                    std::str::from_utf8(rest.get(..run)?).ok()?;
                    self.at += run;
                }
                _ => return None, // a control character
            }
        }
    }
}

/// Where the run of bytes a string holds as they are (no `"`, `\`, control character or
/// byte over 0x7f) that starts at `from` ends: eight bytes at a time, then one at a time.
fn plain_run_end(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::MAX / 255;
    const HIGH: u64 = ONES << 7;
    const QUOTES: u64 = ONES * b'"' as u64;
    const BACKSLASHES: u64 = ONES * b'\\' as u64;
    /// The high bit of (at least the lowest) zero byte of `y`.
    fn zero_byte(y: u64) -> u64 {
        y.wrapping_sub(ONES) & !y
    }
    let Some(rest) = bytes.get(from..) else {
        return bytes.len();
    };
    let mut at = from;
    let mut chunks = rest.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word);
        // The high bit of each byte that is below 0x20, a quote, a backslash or over 0x7f
        // (the lowest one flagged is exact: borrows only run upwards).
        let control = x.wrapping_sub(ONES * 0x20) & !x;
        let special = (control | zero_byte(x ^ QUOTES) | zero_byte(x ^ BACKSLASHES) | x) & HIGH;
        if special != 0 {
            return at + special.trailing_zeros() as usize / 8;
        }
        at += 8;
    }
    for &b in chunks.remainder() {
        if b < 0x20 || b == b'"' || b == b'\\' || b >= 0x80 {
            return at;
        }
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_run_ends_at_the_first_special_byte_wherever_it_falls() {
        for special in [b'"', b'\\', 0x00, 0x1f, 0x80, 0xff] {
            for len in 0..20 {
                let mut bytes = vec![b'a'; len];
                bytes.push(special);
                bytes.extend_from_slice(b"zzzzzzzzz\"");
                assert_eq!(plain_run_end(&bytes, 0), len, "{special:#x} after {len}");
            }
        }
        assert_eq!(plain_run_end(b" !#[]~\x7f", 0), 7);
        assert_eq!(plain_run_end(b"abc", 5), 3);
    }

    #[test]
    fn values_are_checked_as_serde_checks_them() {
        let ok = |text: &str| {
            let mut c = Cursor::new(text.as_bytes());
            c.value(4).is_some() && c.at_end()
        };
        for good in [
            "0",
            "-0.5e+10",
            "1E3",
            "true",
            "null",
            r#""a\u00e9\n""#,
            "[]",
            "{}",
            r#"[1, {"a": [true, "x"]}, []]"#,
            r#" { "k" : { "k" : [ ] } } "#,
            "[[[[1]]]]",
        ] {
            assert!(ok(good), "{good}");
        }
        for bad in [
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "+1",
            "tru",
            "nul",
            "[1,]",
            "[,1]",
            "{,}",
            r#"{"a"}"#,
            r#"{"a":1,}"#,
            r#"{1:2}"#,
            "[1 2]",
            r#""\x""#,
            r#""\u12g4""#,
            "\"a\tb\"",
            "[",
            "[[[[[1]]]]]",
            "]",
            "{]",
            "[}",
        ] {
            assert!(!ok(bad), "{bad}");
        }
    }
}
