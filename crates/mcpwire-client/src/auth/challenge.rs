//! The `Bearer` (or `DPoP`) challenge of a `401` or `403` answer (`WWW-Authenticate`, RFC 6750 §3 and
//! RFC 9728 §5.1): where the protected-resource metadata is, which scope the request needs,
//! and the error (`invalid_token`, `insufficient_scope`).

/// What a `Bearer` challenge says (every field optional).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// `resource_metadata`: the protected-resource metadata URL (RFC 9728 §5.1).
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub(crate) scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, …
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// The `Bearer` and `DPoP` (RFC 9449 §7.1) challenges among `values` (each a
    /// `WWW-Authenticate` header value, which may hold several challenges), merged: the
    /// first value of each parameter wins; the default when there is none.
    pub(crate) fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Challenge {
        let mut found = Challenge::default();
        for value in values {
            for (scheme, params) in challenges(value) {
                if !(scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("dpop")) {
                    continue;
                }
                for (name, v) in params {
                    let slot = match name.to_ascii_lowercase().as_str() {
                        "resource_metadata" => &mut found.resource_metadata,
                        "scope" => &mut found.scope,
                        "error" => &mut found.error,
                        _ => continue,
                    };
                    if slot.is_none() {
                        *slot = Some(v);
                    }
                }
            }
        }
        found
    }

    /// Whether the server asks for a DPoP nonce (`error="use_dpop_nonce"`, RFC 9449 §9).
    pub(crate) fn wants_dpop_nonce(&self) -> bool {
        self.error.as_deref() == Some("use_dpop_nonce")
    }

    /// Whether this is a step-up challenge (`error="insufficient_scope"`).
    pub(crate) fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The challenges in one header value: `scheme [param=value, …]`, comma separated, where a
/// new challenge starts at a token not followed by `=`.
fn challenges(value: &str) -> Vec<(String, Vec<(String, String)>)> {
    let mut out: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut rest = value.trim();
    while !rest.is_empty() {
        rest = rest.trim_start_matches([',', ' ', '\t', '=']);
        let token_end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..token_end];
        if token.is_empty() {
            break;
        }
        let after = rest[token_end..].trim_start();
        if let Some(v) = after.strip_prefix('=')
            && !v.starts_with('=')
        {
            // A parameter of the current challenge.
            let (value, remaining) = param_value(v.trim_start());
            if let Some((_, params)) = out.last_mut() {
                params.push((token.to_owned(), value));
            }
            rest = remaining;
        } else {
            // A scheme (a token68 after one, such as `Basic abc==`, reads as a scheme
            // without parameters, which is harmless).
            out.push((token.to_owned(), Vec::new()));
            rest = after;
        }
    }
    out
}

/// A quoted string (with `\` escapes) or a token; the rest after it.
fn param_value(v: &str) -> (String, &str) {
    if let Some(quoted) = v.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        return (value, "");
    }
    let end = v.find([',', ' ', '\t']).unwrap_or(v.len());
    (v[..end].to_owned(), &v[end..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_parameters() {
        let c = Challenge::parse([
            r#"Bearer error="insufficient_scope", scope="mcp:basic mcp:write", resource_metadata="https://x.example/.well-known/oauth-protected-resource/mcp", error_description="needs \"write\"""#,
        ]);
        assert_eq!(c.scope.as_deref(), Some("mcp:basic mcp:write"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://x.example/.well-known/oauth-protected-resource/mcp")
        );
        assert!(c.insufficient_scope());
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_values() {
        let c = Challenge::parse([
            "Basic realm=\"a\", DPoP algs=\"ES256\"",
            "bearer scope=read",
        ]);
        assert_eq!(c.scope.as_deref(), Some("read"));
        let c = Challenge::parse([r#"Basic realm="a", Bearer realm="b", scope="s""#]);
        assert_eq!(c.scope.as_deref(), Some("s"));
        assert_eq!(Challenge::parse(["Bearer"]), Challenge::default());
        assert_eq!(Challenge::parse(["Basic"]), Challenge::default());
        assert_eq!(Challenge::parse(std::iter::empty()), Challenge::default());
    }

    #[test]
    fn tolerates_bad_input() {
        for v in [
            "",
            ",,,",
            "=",
            "Bearer =",
            "Bearer scope=\"unterminated",
            "Bearer ,scope",
        ] {
            let _ = Challenge::parse([v]);
        }
        let c = Challenge::parse(["Bearer scope=\"unterminated"]);
        assert_eq!(c.scope.as_deref(), Some("unterminated"));
    }
}
