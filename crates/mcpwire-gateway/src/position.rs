//! Where things are in a TOML document: the key at a byte offset (to name the key of a
//! parser's error), the span of a key (to place our own errors), and line/column numbers.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use crate::key_path::{KeyPath, Seg};

/// 1-based line and column (in characters) of byte `offset`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The innermost key whose name or value covers `offset`; `None` if the text does not parse.
pub(crate) fn path_at(text: &str, offset: usize) -> Option<KeyPath> {
    let doc = DeTable::parse(text).ok()?;
    let mut segs = Vec::new();
    in_table(doc.get_ref(), offset, &mut segs);
    Some(KeyPath::from_segs(segs))
}

fn in_table(table: &DeTable<'_>, offset: usize, segs: &mut Vec<Seg>) {
    // A table opened by a header spans only its header: the keys after it belong to the
    // last entry starting before `offset`.
    let mut best: Option<(&Spanned<std::borrow::Cow<'_, str>>, &Spanned<DeValue<'_>>)> = None;
    for (k, v) in table.iter() {
        if k.span().contains(&offset) {
            segs.push(Seg::Key(k.get_ref().to_string()));
            return;
        }
        if v.span().contains(&offset) {
            segs.push(Seg::Key(k.get_ref().to_string()));
            in_value(v, offset, segs);
            return;
        }
        let container = matches!(v.get_ref(), DeValue::Table(_) | DeValue::Array(_));
        if container
            && k.span().start <= offset
            && best.is_none_or(|(b, _)| b.span().start <= k.span().start)
        {
            best = Some((k, v));
        }
    }
    if let Some((k, v)) = best {
        segs.push(Seg::Key(k.get_ref().to_string()));
        in_value(v, offset, segs);
    }
}

fn in_value(value: &Spanned<DeValue<'_>>, offset: usize, segs: &mut Vec<Seg>) {
    match value.get_ref() {
        DeValue::Table(t) => in_table(t, offset, segs),
        DeValue::Array(items) => {
            let at = items
                .iter()
                .enumerate()
                .filter(|(_, v)| v.span().start <= offset)
                .max_by_key(|(_, v)| v.span().start);
            if let Some((i, v)) = at {
                segs.push(Seg::Index(i));
                in_value(v, offset, segs);
            }
        }
        _ => {}
    }
}

/// Where `path` is written: its value's span, or for a table its key's.
pub(crate) fn span_of(text: &str, path: &KeyPath) -> Option<Range<usize>> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut array: Option<&[Spanned<DeValue<'_>>]> = None;
    let mut span = None;
    for seg in path.segs() {
        let value = match (seg, array) {
            (Seg::Key(key), None) => {
                let (k, v) = table.iter().find(|(k, _)| k.get_ref() == key)?;
                span = Some(k.span());
                v
            }
            (Seg::Index(i), Some(items)) => items.get(*i)?,
            _ => return None,
        };
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => {
                table = t;
                if matches!(seg, Seg::Index(_)) {
                    span = Some(value.span());
                }
            }
            DeValue::Array(items) => {
                array = Some(items);
                span = Some(value.span());
            }
            _ => span = Some(value.span()),
        }
    }
    span
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"# a gateway
[server]
prefix = "always"

[[listen]]
url = "stdio"

[[listen]]
url = "http://127.0.0.1:8000/mcp"
max_sessions = "many"

[backends.fs]
command = "npx server"
rename = { read_file = "fs_read" }

[backends.tools]
process = "tools.py"
"#;

    fn at(needle: &str) -> usize {
        DOC.find(needle).expect(needle)
    }

    #[test]
    fn keys_at_offsets() {
        let path = |needle| path_at(DOC, at(needle)).unwrap().to_string();
        assert_eq!(path("\"always\""), "server.prefix");
        assert_eq!(path("\"many\""), "listen[1].max_sessions");
        assert_eq!(path("url = \"stdio"), "listen[0].url");
        assert_eq!(path("\"npx"), "backends.fs.command");
        assert_eq!(path("\"fs_read\""), "backends.fs.rename.read_file");
        assert_eq!(path("process"), "backends.tools.process");
    }

    #[test]
    fn spans_of_keys() {
        let line = |p: KeyPath| line_col(DOC, span_of(DOC, &p).unwrap().start).0;
        let root = KeyPath::root();
        assert_eq!(line(root.key("server").key("prefix")), 3);
        assert_eq!(line(root.key("listen").index(1).key("max_sessions")), 10);
        assert_eq!(line(root.key("listen").index(1)), 8);
        assert_eq!(line(root.key("backends").key("fs")), 12);
        assert_eq!(
            line(
                root.key("backends")
                    .key("fs")
                    .key("rename")
                    .key("read_file")
            ),
            14
        );
        assert_eq!(line(root.key("backends").key("tools").key("process")), 17);
        assert!(span_of(DOC, &root.key("backends").key("nope")).is_none());
    }

    #[test]
    fn line_and_column() {
        assert_eq!(line_col("a\nbé c", 5), (2, 3));
        assert_eq!(line_col("", 3), (1, 1));
    }
}
