//! The running configuration as the console shows it: the file's text as applied, with
//! every secret masked. The rule overmasks rather than undermasks: a value is replaced by
//! [`MASK`] when its key names a secret ([`secret_key`]), when it sits in an `env` or
//! `headers` table (a backend's environment and request headers may carry credentials),
//! and every URL loses its password and its query string.

use toml::Value;

/// What a masked value shows.
pub(crate) const MASK: &str = "••••";

/// The rule, as the page states it.
pub(crate) const RULE: &str = "masked: values of keys naming a secret (key, sha256, tokens, \
    session_keys, anything with secret, password or token but *_env/*_file/*_url/*_endpoint), \
    every env and headers value, and every URL's password and query string";

/// Whether a key's value is a secret: `key`, `keys` outside `[policy]` rules (there they
/// are key names), `sha256`, `tokens`, `session_keys`, and any key containing `secret`,
/// `password` or `token` — except a name ending in `_env`, `_file`, `_url` or
/// `_endpoint`, which names where a secret is kept, not the secret.
fn secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    if ["_env", "_file", "_files", "_url", "_endpoint"]
        .iter()
        .any(|s| k.ends_with(s))
    {
        return false;
    }
    matches!(k.as_str(), "key" | "sha256" | "tokens" | "session_keys")
        || ["secret", "password", "token"]
            .iter()
            .any(|s| k.contains(s))
}

/// `text` (a URL or anything else) without a URL's password and query string.
fn mask_url(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return text.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:{MASK}@{host}"),
            None => format!("{MASK}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, _)) => format!("{path}?{MASK}"),
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// `v` with every value inside masked.
fn mask_all(v: &mut Value) {
    match v {
        Value::Table(t) => t.iter_mut().for_each(|(_, v)| mask_all(v)),
        Value::Array(a) => a.iter_mut().for_each(mask_all),
        other => *other = Value::String(MASK.into()),
    }
}

/// Masks the secrets of `v`, found under `key` (`in_rules`: inside `[[policy.rules]]`).
fn mask(key: &str, v: &mut Value, in_rules: bool) {
    let k = key.to_ascii_lowercase();
    if (secret_key(&k) && !(in_rules && k == "keys")) || k == "env" || k == "headers" {
        mask_all(v);
        return;
    }
    let in_rules = in_rules || k == "rules";
    match v {
        Value::Table(t) => t.iter_mut().for_each(|(k, v)| mask(k, v, in_rules)),
        Value::Array(a) => a.iter_mut().for_each(|v| mask(key, v, in_rules)),
        Value::String(s) => *s = mask_url(s),
        _ => {}
    }
}

/// The configuration file's `text` with its secrets masked, as TOML; `None` when it does
/// not parse (it always does once applied).
pub(crate) fn masked(text: &str) -> Option<String> {
    let mut v: Value = toml::from_str(text).ok()?;
    mask("", &mut v, false);
    toml::to_string_pretty(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = r#"
[server]
name = "gw"

[auth]
[[auth.api_keys]]
name = "ops"
key = "s3cret-ops"
[[auth.api_keys]]
name = "ci"
sha256 = "abcdef"
[auth.jwt]
jwks_url = "https://idp.example/jwks?tenant=t1"

[[listen]]
url = "mcpb://127.0.0.1:0"
tokens = ["tok-1", "tok-2"]

[cluster]
store = "redis://admin:hunter2@cache:6379/0"
session_keys = ["k1"]

[[policy.rules]]
effect = "deny"
keys = ["ci"]

[backends.p]
process = "p.py"
env = { API_KEY = "live-123", MODE = "x" }

[backends.u]
url = "https://api.example/mcp?api_key=q-456"
headers = { Authorization = "Bearer b-789" }
client_secret_env = "U_SECRET"
[backends.u.oauth]
client_secret = "cs-000"
"#;

    #[test]
    fn every_secret_is_masked_and_names_stay() {
        let m = masked(FILE).expect("parses");
        for secret in [
            "s3cret-ops",
            "abcdef",
            "tok-1",
            "hunter2",
            "k1",
            "live-123",
            "q-456",
            "b-789",
            "cs-000",
            "tenant=t1",
        ] {
            assert!(!m.contains(secret), "{secret} shown in\n{m}");
        }
        for kept in [
            "name = \"ops\"",
            "U_SECRET",
            "redis://admin:",
            "@cache:6379/0",
            "keys = [\"ci\"]",
            "https://api.example/mcp?",
            "process = \"p.py\"",
        ] {
            assert!(m.contains(kept), "{kept} missing from\n{m}");
        }
    }

    #[test]
    fn urls_lose_password_and_query_only() {
        assert_eq!(mask_url("http://h:1/p"), "http://h:1/p");
        assert_eq!(
            mask_url("http://u:p@h/p?x=1"),
            format!("http://u:{MASK}@h/p?{MASK}")
        );
        assert_eq!(mask_url("not a url"), "not a url");
    }
}
