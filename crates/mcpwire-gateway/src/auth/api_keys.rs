//! API keys: stored as SHA-256 digests only, matched in constant time.

use mcpwire_router::Identity;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// One configured key: its name, the digest of its secret, and the scopes it grants
/// (`None`: the scopes the server requires).
#[derive(Clone)]
pub(crate) struct ApiKey {
    pub(crate) name: String,
    digest: [u8; 32],
    pub(crate) scopes: Option<Vec<String>>,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey").field("name", &self.name).finish()
    }
}

impl ApiKey {
    /// A key from its digest.
    pub(crate) fn new(name: String, digest: [u8; 32], scopes: Option<Vec<String>>) -> ApiKey {
        ApiKey {
            name,
            digest,
            scopes,
        }
    }
}

/// SHA-256 of `secret`.
pub(crate) fn digest(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// A digest written as 64 hex digits.
pub(crate) fn parse_digest(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// The configured keys, each with the one [`Identity`] every request presenting it is
/// given: one instance per key, so what is worked out for a caller and remembered by
/// identity instance (its policy subset) is found again by its other connections.
#[derive(Debug, Clone, Default)]
pub(crate) struct ApiKeys {
    keys: Vec<(ApiKey, Identity)>,
}

impl ApiKeys {
    /// `keys`, a key without scopes of its own granting `default_scopes`.
    pub(crate) fn new(keys: Vec<ApiKey>, default_scopes: &[String]) -> ApiKeys {
        let keys = keys
            .into_iter()
            .map(|key| {
                let scopes = key
                    .scopes
                    .clone()
                    .unwrap_or_else(|| default_scopes.to_vec());
                let identity = Identity::api_key(key.name.clone(), scopes);
                (key, identity)
            })
            .collect();
        ApiKeys { keys }
    }

    /// The identity of the key whose secret is `token`. The token is hashed and compared
    /// with every digest in constant time, so the time taken says nothing about how close a
    /// guess was.
    pub(crate) fn find(&self, token: &str) -> Option<&Identity> {
        if self.keys.is_empty() {
            // Nothing to compare with: no digest (what is configured is no secret).
            return None;
        }
        let d = digest(token);
        let mut found = None;
        for (key, identity) in &self.keys {
            if bool::from(key.digest.ct_eq(&d)) {
                found = Some(identity);
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_match_by_digest_only() {
        let keys = ApiKeys::new(
            vec![
                ApiKey::new("a".into(), digest("secret-a"), None),
                ApiKey::new("b".into(), digest("secret-b"), Some(vec!["x".into()])),
            ],
            &["mcp".into()],
        );
        let b = keys.find("secret-b").expect("key b");
        assert_eq!(b.subject(), "key:b");
        assert!(b.has_scope("x") && !b.has_scope("mcp"));
        let a = keys.find("secret-a").expect("key a");
        assert!(
            a.has_scope("mcp"),
            "a key without scopes grants the default ones"
        );
        assert!(
            a.same_instance(keys.find("secret-a").expect("key a")),
            "every request presenting a key gets the same identity instance"
        );
        assert!(keys.find("secret-").is_none());
        assert!(keys.find("").is_none());
        let hex: String = digest("secret-a")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(parse_digest(&hex), Some(digest("secret-a")));
        assert_eq!(parse_digest("zz"), None);
        assert!(!format!("{:?}", keys).contains("secret"));
    }
}
