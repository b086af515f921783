//! Who is calling, as the authentication layer of the wire a request came in on established
//! it. Later layers (policy, rate limits) and backends read it from [`crate::CallCtx::identity`].

use std::sync::Arc;

/// How the caller proved who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Credential {
    /// A configured API key (or MCPB token), by the name it was configured under.
    ApiKey {
        /// The key's name.
        name: String,
    },
    /// A JWT bearer token whose signature and claims were checked.
    Bearer {
        /// Its `iss` claim, if it had one.
        issuer: Option<String>,
    },
    /// A TLS client certificate the listener verified against its client CA (mTLS), on a
    /// listener with no other authentication.
    ClientCertificate,
}

/// An authenticated caller: a subject, how it authenticated, its scopes and (for a JWT) its
/// claims. Cheap to clone.
#[derive(Debug, Clone, PartialEq)]
pub struct Identity {
    inner: Arc<IdentityInner>,
}

#[derive(Debug, PartialEq)]
struct IdentityInner {
    subject: String,
    credential: Credential,
    scopes: Vec<String>,
    claims: serde_json::Map<String, serde_json::Value>,
}

impl Identity {
    /// The holder of the API key `name`, granted `scopes`. Its subject is `key:NAME`.
    pub fn api_key(name: impl Into<String>, scopes: Vec<String>) -> Identity {
        let name = name.into();
        Identity {
            inner: Arc::new(IdentityInner {
                subject: format!("key:{name}"),
                credential: Credential::ApiKey { name },
                scopes,
                claims: serde_json::Map::new(),
            }),
        }
    }

    /// The bearer of a verified token: its `sub` (or `client_id`, or `unknown` for a token
    /// with neither), `iss`, scopes and every claim.
    pub fn bearer(
        subject: impl Into<String>,
        issuer: Option<String>,
        scopes: Vec<String>,
        claims: serde_json::Map<String, serde_json::Value>,
    ) -> Identity {
        Identity {
            inner: Arc::new(IdentityInner {
                subject: subject.into(),
                credential: Credential::Bearer { issuer },
                scopes,
                claims,
            }),
        }
    }

    /// The holder of a verified TLS client certificate: `cert:NAME` (its first URI
    /// subject alternative name, else its first DNS name, else `sha256:` and its
    /// fingerprint), with the names as claims (`uri`, `dns`: arrays of strings).
    pub fn client_certificate(
        subject: impl Into<String>,
        claims: serde_json::Map<String, serde_json::Value>,
    ) -> Identity {
        Identity {
            inner: Arc::new(IdentityInner {
                subject: subject.into(),
                credential: Credential::ClientCertificate,
                scopes: Vec::new(),
                claims,
            }),
        }
    }

    /// Who the caller is: a token's `sub`, `key:NAME` for an API key, `cert:NAME` for a
    /// client certificate.
    pub fn subject(&self) -> &str {
        &self.inner.subject
    }

    /// How the caller authenticated.
    pub fn credential(&self) -> &Credential {
        &self.inner.credential
    }

    /// The API key's name, for a caller that used one.
    pub fn key_name(&self) -> Option<&str> {
        match &self.inner.credential {
            Credential::ApiKey { name } => Some(name),
            Credential::Bearer { .. } | Credential::ClientCertificate => None,
        }
    }

    /// The scopes granted.
    pub fn scopes(&self) -> &[String] {
        &self.inner.scopes
    }

    /// Whether `scope` was granted.
    pub fn has_scope(&self, scope: &str) -> bool {
        self.inner.scopes.iter().any(|s| s == scope)
    }

    /// Every claim of the caller's token (empty for an API key).
    pub fn claims(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.inner.claims
    }

    /// One claim of the caller's token.
    pub fn claim(&self, name: &str) -> Option<&serde_json::Value> {
        self.inner.claims.get(name)
    }

    /// Whether `other` is a clone of this very identity (one verification's result,
    /// shared by the requests that presented the same credential) — cheaper than comparing,
    /// for caches of what was worked out for a caller.
    pub fn same_instance(&self, other: &Identity) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Where this identity instance lives: equal for clones of one verification's result
    /// ([`Identity::same_instance`]), for caches to spread callers by.
    pub fn instance_address(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// Whether `other` is the same caller: the same subject, authenticated the same way
    /// (what an HTTP session checks on each request so one caller cannot use another's
    /// session).
    pub fn same_caller(&self, other: &Identity) -> bool {
        self.inner.subject == other.inner.subject && self.inner.credential == other.inner.credential
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_and_bearers() {
        let k = Identity::api_key("ci", vec!["mcp".into()]);
        assert_eq!(k.subject(), "key:ci");
        assert_eq!(k.key_name(), Some("ci"));
        assert!(k.has_scope("mcp") && !k.has_scope("admin"));
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), "alice".into());
        let b = Identity::bearer("alice", Some("https://as".into()), vec![], claims);
        assert_eq!(b.claim("sub").and_then(|v| v.as_str()), Some("alice"));
        assert!(b.key_name().is_none());
        assert!(b.same_caller(&b.clone()) && !b.same_caller(&k));
    }
}
