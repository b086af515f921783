//! [`Glob`]: shell-style patterns over names and URIs (member filters, views).
//!
//! Names and URIs are not paths, so `*` matches any run of characters, `/` included.
//! Matching is linear in practice (the classic two-pointer algorithm: one backtrack point,
//! the last `*`), never exponential.

use std::fmt;
use std::str::FromStr;

/// A pattern over a name or URI: `*` (any run, possibly empty), `?` (one character),
/// `[abc]`, `[a-z]`, `[!abc]` (one character in or not in a set) and `\x` (a literal `x`).
/// Everything else matches itself; matching is case-sensitive.
#[derive(Clone, PartialEq, Eq)]
pub struct Glob {
    source: String,
    tokens: Vec<Token>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Char(char),
    Any,
    Star,
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// Why a pattern is not a [`Glob`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid pattern {pattern:?}: {reason}")]
pub struct GlobError {
    /// The pattern.
    pub pattern: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl Glob {
    /// Parses `pattern`. Fails on an unclosed `[`, an empty class or a trailing `\`.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let err = |reason| GlobError {
            pattern: pattern.to_owned(),
            reason,
        };
        let mut tokens = Vec::new();
        let mut chars = pattern.chars().peekable();
        while let Some(c) = chars.next() {
            let token = match c {
                '*' => {
                    if tokens.last() == Some(&Token::Star) {
                        continue;
                    }
                    Token::Star
                }
                '?' => Token::Any,
                '\\' => Token::Char(chars.next().ok_or_else(|| err("ends with '\\'"))?),
                '[' => {
                    let negated = chars.next_if(|&c| c == '!' || c == '^').is_some();
                    let mut ranges = Vec::new();
                    let mut first = true;
                    loop {
                        let c = chars.next().ok_or_else(|| err("unclosed '['"))?;
                        if c == ']' && !first {
                            break;
                        }
                        first = false;
                        let lo = if c == '\\' {
                            chars.next().ok_or_else(|| err("unclosed '['"))?
                        } else {
                            c
                        };
                        let hi = if chars.peek() == Some(&'-') {
                            chars.next();
                            match chars.next() {
                                Some(']') => {
                                    ranges.push((lo, lo));
                                    ranges.push(('-', '-'));
                                    break;
                                }
                                Some(hi) => hi,
                                None => return Err(err("unclosed '['")),
                            }
                        } else {
                            lo
                        };
                        ranges.push((lo.min(hi), lo.max(hi)));
                    }
                    Token::Class { negated, ranges }
                }
                c => Token::Char(c),
            };
            tokens.push(token);
        }
        Ok(Glob {
            source: pattern.to_owned(),
            tokens,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the pattern has no wildcard (it matches exactly one string).
    pub fn is_literal(&self) -> bool {
        self.tokens.iter().all(|t| matches!(t, Token::Char(_)))
    }

    /// Whether `text` matches the whole pattern.
    pub fn matches(&self, text: &str) -> bool {
        let text: Vec<char> = text.chars().collect();
        let (mut t, mut p) = (0, 0);
        // The last `*` seen and the text position it is currently taken to end at.
        let mut backtrack: Option<(usize, usize)> = None;
        while t < text.len() {
            let step = match self.tokens.get(p) {
                Some(Token::Star) => {
                    backtrack = Some((p, t));
                    p += 1;
                    continue;
                }
                Some(Token::Char(c)) => *c == text[t],
                Some(Token::Any) => true,
                Some(Token::Class { negated, ranges }) => {
                    ranges
                        .iter()
                        .any(|&(lo, hi)| lo <= text[t] && text[t] <= hi)
                        != *negated
                }
                None => false,
            };
            if step {
                t += 1;
                p += 1;
            } else if let Some((star, end)) = backtrack {
                // Let the last `*` take one more character and retry after it.
                backtrack = Some((star, end + 1));
                p = star + 1;
                t = end + 1;
            } else {
                return false;
            }
        }
        self.tokens[p..].iter().all(|t| *t == Token::Star)
    }
}

impl FromStr for Glob {
    type Err = GlobError;
    fn from_str(s: &str) -> Result<Glob, GlobError> {
        Glob::new(s)
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.source)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl serde::Serialize for Glob {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> serde::Deserialize<'de> for Glob {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Glob, D::Error> {
        let s = String::deserialize(d)?;
        Glob::new(&s).map_err(serde::de::Error::custom)
    }
}

/// Whether any of `globs` matches `text`.
pub(crate) fn any_matches(globs: &[Glob], text: &str) -> bool {
    globs.iter().any(|g| g.matches(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, t: &str) -> bool {
        Glob::new(p).unwrap().matches(t)
    }

    #[test]
    fn wildcards() {
        assert!(m("*", ""));
        assert!(m("*", "anything/at all"));
        assert!(m("fs_*", "fs_read"));
        assert!(!m("fs_*", "gh_read"));
        assert!(m("*_read", "fs_read"));
        assert!(m("a*b*c", "axxbyyc"));
        assert!(!m("a*b*c", "axxbyy"));
        assert!(m("file:///*", "file:///srv/data/x.txt"));
        assert!(m("t?st", "test"));
        assert!(!m("t?st", "tst"));
        assert!(m("exact", "exact"));
        assert!(!m("exact", "exactly"));
        assert!(m("a**b", "ab"));
    }

    #[test]
    fn classes_and_escapes() {
        assert!(m("v[0-9]", "v7"));
        assert!(!m("v[0-9]", "vx"));
        assert!(m("v[!0-9]", "vx"));
        assert!(m("[]]", "]"));
        assert!(m("[a-]", "-"));
        assert!(m(r"a\*", "a*"));
        assert!(!m(r"a\*", "ab"));
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("abc\\").is_err());
        assert!(Glob::new("fs_*").unwrap().to_string() == "fs_*");
        assert!(Glob::new("fs_read").unwrap().is_literal());
    }

    #[test]
    fn many_stars_stay_fast() {
        let p = Glob::new(&"*a".repeat(50)).unwrap();
        let text = "a".repeat(49) + &"b".repeat(10_000);
        assert!(!p.matches(&text));
    }
}
