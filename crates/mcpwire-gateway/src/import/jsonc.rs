//! JSON with comments (`//`, `/* */`) and trailing commas, as VS Code writes its settings,
//! made plain JSON: comments and trailing commas become spaces, so lines and columns of
//! errors stay those of the file.

/// `text` with its comments and trailing commas blanked.
pub(super) fn to_json(text: &str) -> String {
    let mut out: Vec<u8> = text.as_bytes().to_vec();
    let b = text.as_bytes();
    let mut i = 0;
    let mut in_string = false;
    // Where the last comma outside a string is, while only blanks follow it.
    let mut comma: Option<usize> = None;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        match (c, b.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                comma = None;
            }
            (b'/', Some(b'/')) => {
                while i < b.len() && b[i] != b'\n' {
                    out[i] = b' ';
                    i += 1;
                }
                continue;
            }
            (b'/', Some(b'*')) => {
                let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                for o in &mut out[i..end] {
                    if *o != b'\n' {
                        *o = b' ';
                    }
                }
                i = end;
                continue;
            }
            (b',', _) => comma = Some(i),
            (b'}' | b']', _) => {
                if let Some(at) = comma.take() {
                    out[at] = b' ';
                }
            }
            (c, _) if c.is_ascii_whitespace() => {}
            _ => comma = None,
        }
        i += 1;
    }
    // Only ASCII bytes outside strings were replaced by ASCII spaces.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::to_json;

    #[test]
    fn comments_and_trailing_commas() {
        let text = "{ // a comment\n \"a\": \"x // not a comment\", /* b */ \"b\": [1, 2,],\n}";
        let v: serde_json::Value = serde_json::from_str(&to_json(text)).expect("plain JSON");
        assert_eq!(v["a"], "x // not a comment");
        assert_eq!(v["b"], serde_json::json!([1, 2]));
        assert_eq!(to_json("\"a\\\"//\""), "\"a\\\"//\"");
        assert_eq!(to_json("/* open"), "       ");
    }
}
