//! Resource URIs across members: the reversible rewrite of contested URIs and templates,
//! and a lenient template matcher for routing.
//!
//! A URI (or template) two members both list stays with the first; the later member's is
//! exposed as `mcpwire+{tag}:{original}`, where `{tag}` is the member's URI tag (its name,
//! lowercased, `_` as `-`, unique among members). That is a valid absolute URI (scheme
//! `mcpwire+{tag}`, the original as its path), so strict clients parse it, and stripping
//! the prefix gives the original back — also for any URI a client expands from a rewritten
//! template, since the prefix is literal text in front of the template.
//!
//! MCP Apps' `ui://` URIs keep their scheme (a host renders only a `ui://` resource):
//! `ui://{authority}/{path}` becomes `ui://mcpwire+{tag}/{authority}/{path}` — the tag as
//! the authority (`+` is allowed in a host name's characters), the original after it.

use std::borrow::Cow;
use std::collections::HashSet;

/// The scheme prefix of rewritten URIs.
const SCHEME: &str = "mcpwire+";

/// MCP Apps' scheme, kept by the rewrite.
const UI: &str = "ui://";

/// A URI tag for member `name` not in `taken`: its name lowercased with `_` as `-`, and
/// `-2`, `-3`, … when that is taken (two members differing only in case or `_`/`-`).
pub(crate) fn member_tag(name: &str, taken: &HashSet<String>) -> String {
    let base: String = name
        .chars()
        .map(|c| match c {
            '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect();
    if !taken.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| format!("{base}-{n}"))
        .find(|t| !taken.contains(t))
        .unwrap_or(base)
}

/// The rewritten form of `uri` (or a template) of the member tagged `tag`.
pub(crate) fn rewrite(tag: &str, uri: &str) -> String {
    match uri.strip_prefix(UI) {
        Some(rest) => format!("{UI}{SCHEME}{tag}/{rest}"),
        None => format!("{SCHEME}{tag}:{uri}"),
    }
}

/// `(tag, original)` when `uri` is in rewritten form.
pub(crate) fn split_rewritten(uri: &str) -> Option<(&str, Cow<'_, str>)> {
    if let Some(rest) = uri.strip_prefix(UI).and_then(|r| r.strip_prefix(SCHEME)) {
        let slash = rest.find('/')?;
        return Some((
            &rest[..slash],
            Cow::Owned(format!("{UI}{}", &rest[slash + 1..])),
        ));
    }
    let rest = uri.strip_prefix(SCHEME)?;
    let colon = rest.find(':')?;
    Some((&rest[..colon], Cow::Borrowed(&rest[colon + 1..])))
}

/// A URI template (RFC 6570, any level) reduced to what routing needs: its literal text
/// and where expressions go. It matches a URI when the literals appear in order, reading
/// each expression as any non-empty text (`{?…}` and `{&…}` may be empty). Lenient on
/// purpose: it only picks the member that owns a URI; the member itself checks the rest.
#[derive(Debug, Clone)]
pub(crate) struct TemplateMatcher {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Literal(String),
    /// An expression; `true` when it may expand to nothing.
    Expr(bool),
}

impl TemplateMatcher {
    /// Reads `template`; `None` when a brace is unbalanced.
    pub(crate) fn parse(template: &str) -> Option<TemplateMatcher> {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = open + rest[open..].find('}')?;
            let optional = matches!(rest[open + 1..].chars().next(), Some('?' | '&'));
            parts.push(Part::Expr(optional));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return None;
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Some(TemplateMatcher { parts })
    }

    /// Whether `uri` could be an expansion of the template.
    pub(crate) fn matches(&self, uri: &str) -> bool {
        let mut rest = uri;
        let mut i = 0;
        while i < self.parts.len() {
            match &self.parts[i] {
                Part::Literal(l) => match rest.strip_prefix(l.as_str()) {
                    Some(r) => rest = r,
                    None => return false,
                },
                Part::Expr(optional) => {
                    let end = match self.parts.get(i + 1) {
                        Some(Part::Literal(next)) => {
                            // Non-empty expansions look past the first character.
                            let from = usize::from(!optional).min(rest.len());
                            match rest[from..].find(next.as_str()) {
                                Some(e) => from + e,
                                None => return false,
                            }
                        }
                        _ => rest.len(),
                    };
                    if end == 0 && !optional && self.parts.get(i + 1).is_none() {
                        return false;
                    }
                    rest = &rest[end..];
                }
            }
            i += 1;
        }
        rest.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewriting_round_trips() {
        let r = rewrite("fs", "file:///srv/a.txt");
        assert_eq!(r, "mcpwire+fs:file:///srv/a.txt");
        assert_eq!(
            split_rewritten(&r),
            Some(("fs", "file:///srv/a.txt".into()))
        );
        assert_eq!(split_rewritten("file:///x"), None);
        let ui = rewrite("fast2", "ui://trialfast/widget.html");
        assert_eq!(ui, "ui://mcpwire+fast2/trialfast/widget.html");
        assert_eq!(
            split_rewritten(&ui),
            Some(("fast2", "ui://trialfast/widget.html".into()))
        );
        assert_eq!(split_rewritten("ui://trialfast/widget.html"), None);
        let t = rewrite("my-fs", "file:///{path}");
        let m = TemplateMatcher::parse(&t).unwrap();
        assert!(m.matches("mcpwire+my-fs:file:///notes.md"));
        assert!(!m.matches("file:///notes.md"));
    }

    proptest::proptest! {
        #[test]
        fn rewritten_uris_and_template_expansions_round_trip(
            name in "[a-zA-Z0-9_-]{1,20}",
            uri in ".{0,60}",
            id in "[a-z0-9]{1,8}",
        ) {
            let tag = member_tag(&name, &HashSet::new());
            // A tag is valid in a URI scheme (RFC 3986: ALPHA / DIGIT / "+" / "-" / ".").
            proptest::prop_assert!(tag.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'));
            let r = rewrite(&tag, &uri);
            proptest::prop_assert_eq!(split_rewritten(&r), Some((tag.as_str(), uri.as_str().into())));
            let ui = format!("ui://{id}/{uri}");
            let r = rewrite(&tag, &ui);
            proptest::prop_assert!(r.starts_with("ui://"));
            proptest::prop_assert_eq!(split_rewritten(&r), Some((tag.as_str(), ui.as_str().into())));
            let template = rewrite(&tag, "x://items/{id}");
            let expanded = template.replace("{id}", &id);
            proptest::prop_assert!(TemplateMatcher::parse(&template).unwrap().matches(&expanded));
            let original = format!("x://items/{id}");
            proptest::prop_assert_eq!(split_rewritten(&expanded), Some((tag.as_str(), original.as_str().into())));
        }
    }

    #[test]
    fn tags_are_unique() {
        let mut taken = HashSet::new();
        let a = member_tag("My_FS", &taken);
        assert_eq!(a, "my-fs");
        taken.insert(a);
        assert_eq!(member_tag("my-fs", &taken), "my-fs-2");
    }

    #[test]
    fn lenient_matching() {
        let m = |t: &str, u: &str| TemplateMatcher::parse(t).unwrap().matches(u);
        assert!(m("test://template/{id}/data", "test://template/7/data"));
        assert!(!m("test://template/{id}/data", "test://template//data"));
        assert!(m("file:///{+path}", "file:///a/b/c.txt"));
        assert!(m("file:///{dir}/{name}", "file:///a/b/c"));
        assert!(m("search://q{?query,limit}", "search://q"));
        assert!(m("search://q{?query,limit}", "search://q?query=x"));
        assert!(!m("test://a/{id}", "test://b/1"));
        assert!(!m("test://a/{id}", "test://a/"));
        assert!(m("plain://fixed", "plain://fixed"));
        assert!(TemplateMatcher::parse("bad://{x").is_none());
    }
}
