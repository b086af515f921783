//! Which scopes to ask for (MCP 2025-11-25 "Scope Selection Strategy", SEP-2350 and
//! SEP-2207): the configured ones and the challenge's `scope`, else the protected
//! resource's `scopes_supported`, else none; on re-authorization the union with what was asked before; `offline_access`
//! added when the authorization server lists it and a refresh token is wanted.

/// The scope parameter to send, or `None` to leave it out.
pub(crate) fn select(
    configured: Option<&str>,
    challenged: Option<&str>,
    resource_supported: Option<&[String]>,
    prior: Option<&str>,
    server_supported: Option<&[String]>,
) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    let asked: Vec<&str> = configured
        .map(words)
        .into_iter()
        .flatten()
        .chain(challenged.map(words).into_iter().flatten())
        .collect();
    let base = if asked.is_empty() {
        resource_supported.map_or_else(Vec::new, |s| s.iter().map(String::as_str).collect())
    } else {
        asked
    };
    for s in base
        .into_iter()
        .chain(prior.map(words).into_iter().flatten())
    {
        if !scopes.contains(&s) {
            scopes.push(s);
        }
    }
    if !scopes.is_empty()
        && !scopes.contains(&OFFLINE_ACCESS)
        && server_supported.is_some_and(|s| s.iter().any(|x| x == OFFLINE_ACCESS))
    {
        scopes.push(OFFLINE_ACCESS);
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

/// Whether every scope of `needed` is among `had` (a step-up that asks for nothing new
/// cannot succeed by asking again).
pub(crate) fn covers(had: Option<&str>, needed: &str) -> bool {
    let had: Vec<&str> = had.map(words).unwrap_or_default();
    words(needed).iter().all(|s| had.contains(s))
}

const OFFLINE_ACCESS: &str = "offline_access";

fn words(s: &str) -> Vec<&str> {
    s.split_ascii_whitespace().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_challenge_wins_over_scopes_supported() {
        let prm = v(&["mcp:profile", "mcp:read"]);
        assert_eq!(
            select(None, Some("mcp:basic"), Some(&prm), None, None).as_deref(),
            Some("mcp:basic")
        );
        assert_eq!(
            select(None, None, Some(&prm), None, None).as_deref(),
            Some("mcp:profile mcp:read")
        );
        assert_eq!(select(None, None, None, None, None), None);
        assert_eq!(select(None, None, Some(&[]), None, None), None);
        assert_eq!(
            select(Some("fixed"), Some("mcp:basic"), Some(&prm), None, None).as_deref(),
            Some("fixed mcp:basic")
        );
        assert_eq!(
            select(Some("fixed"), None, Some(&prm), None, None).as_deref(),
            Some("fixed")
        );
    }

    #[test]
    fn re_authorization_keeps_what_was_asked_before() {
        assert_eq!(
            select(None, Some("mcp:write"), None, Some("mcp:basic"), None).as_deref(),
            Some("mcp:write mcp:basic")
        );
        assert_eq!(
            select(None, Some("a b"), None, Some("b a"), None).as_deref(),
            Some("a b")
        );
    }

    #[test]
    fn offline_access_only_when_the_server_lists_it() {
        let with = v(&["mcp:basic", "offline_access"]);
        let without = v(&["mcp:basic"]);
        assert_eq!(
            select(None, Some("mcp:basic"), None, None, Some(&with)).as_deref(),
            Some("mcp:basic offline_access")
        );
        assert_eq!(
            select(None, Some("mcp:basic"), None, None, Some(&without)).as_deref(),
            Some("mcp:basic")
        );
        // Nothing else asked for: the parameter stays out.
        assert_eq!(select(None, None, None, None, Some(&with)), None);
    }

    #[test]
    fn covers_is_a_subset_test() {
        assert!(covers(Some("a b c"), "c a"));
        assert!(!covers(Some("a"), "a b"));
        assert!(!covers(None, "a"));
        assert!(covers(None, ""));
    }
}
