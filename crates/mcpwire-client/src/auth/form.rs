//! `application/x-www-form-urlencoded` (token requests, authorization URLs) and reading a
//! redirect's query.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// What is escaped in a form value: everything but the unreserved characters.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `k=v&k=v`, every name and value escaped.
pub(crate) fn encode<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut out = String::new();
    for (k, v) in pairs {
        if !out.is_empty() {
            out.push('&');
        }
        out.extend(utf8_percent_encode(k, FORM));
        out.push('=');
        out.extend(utf8_percent_encode(v, FORM));
    }
    out
}

/// One value escaped as in a form (also what client_secret_basic encodes, RFC 6749 §2.3.1).
pub(crate) fn escape(v: &str) -> String {
    utf8_percent_encode(v, FORM).to_string()
}

/// The pairs of a query string (`+` is a space).
pub(crate) fn decode(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (unescape(k), unescape(v))
        })
        .collect()
}

fn unescape(s: &str) -> String {
    percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

/// `url` with `pairs` added to its query.
pub(crate) fn with_query<'a>(
    url: &str,
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> String {
    let (base, fragment) = url
        .split_once('#')
        .map_or((url, None), |(b, f)| (b, Some(f)));
    let sep = if base.contains('?') { '&' } else { '?' };
    let mut out = format!("{base}{sep}{}", encode(pairs));
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let e = encode([("scope", "a b"), ("redirect_uri", "http://l:1/cb?x=1&y")]);
        assert_eq!(
            e,
            "scope=a%20b&redirect_uri=http%3A%2F%2Fl%3A1%2Fcb%3Fx%3D1%26y"
        );
        assert_eq!(
            decode(&e),
            vec![
                ("scope".to_owned(), "a b".to_owned()),
                ("redirect_uri".to_owned(), "http://l:1/cb?x=1&y".to_owned())
            ]
        );
        assert_eq!(
            decode("a=b+c&d"),
            vec![("a".into(), "b c".into()), ("d".into(), String::new())]
        );
        assert_eq!(
            with_query("https://a/x?k=1", [("z", "2")]),
            "https://a/x?k=1&z=2"
        );
        assert_eq!(with_query("https://a/x", [("z", "2")]), "https://a/x?z=2");
    }
}
