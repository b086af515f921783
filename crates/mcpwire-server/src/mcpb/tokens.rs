//! [`StaticTokens`]: the MCPB listener's own tokens (`McpbConfig::tokens`, `--mcpb-token`),
//! accepted when the service has no authenticator of its own. The caller a token names is
//! `key:mcpb-token-N` (the N-th token), with no scopes.
//!
//! A presented token is compared with every configured one in a time that depends on the
//! configured tokens' lengths and the presented token's length only — not on its bytes, so
//! a guess learns nothing from how long its refusal took. The tokens are kept as given (they were given in plain
//! on the command line or in the listener's configuration); no digest, so no hash crate.

use std::sync::Arc;

use mcpwire_router::Identity;

use crate::identify::{
    AuthFailure, Authenticate, Check, MAX_CREDENTIAL, ResourceServer, count_failure, resource,
};

/// Tokens shorter than this are accepted with a warning.
const SHORT_TOKEN: usize = 16;

/// The configured tokens and the caller each names.
pub(crate) struct StaticTokens {
    tokens: Vec<(Identity, Box<[u8]>)>,
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("tokens", &self.tokens.len())
            .finish()
    }
}

/// A configured token that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the MCPB token `{name}` is empty")]
pub(crate) struct EmptyToken {
    name: String,
}

impl StaticTokens {
    /// Accepts `tokens` (the N-th names `key:mcpb-token-N`); an empty one is refused, a short
    /// one accepted with a warning.
    pub(crate) fn new(tokens: &[String]) -> Result<StaticTokens, EmptyToken> {
        let mut accepted = Vec::with_capacity(tokens.len());
        for (i, token) in tokens.iter().enumerate() {
            let name = format!("mcpb-token-{}", i + 1);
            if token.is_empty() {
                return Err(EmptyToken { name });
            }
            if token.len() < SHORT_TOKEN {
                tracing::warn!(
                    token = name,
                    "a short MCPB token: use at least {SHORT_TOKEN} random characters"
                );
            }
            let caller = Identity::api_key(name, Vec::new());
            accepted.push((caller, token.as_bytes().into()));
        }
        Ok(StaticTokens { tokens: accepted })
    }

    fn find(&self, credential: Option<&str>) -> Result<Identity, AuthFailure> {
        let Some(token) = credential else {
            return Err(AuthFailure::Missing);
        };
        if token.is_empty() || token.len() > MAX_CREDENTIAL {
            let e = format!("a credential is 1 to {MAX_CREDENTIAL} bytes");
            return Err(AuthFailure::Malformed(e));
        }
        let mut found = None;
        for (caller, secret) in &self.tokens {
            if same_secret(secret, token.as_bytes()) {
                found = Some(caller);
            }
        }
        found.cloned().ok_or(AuthFailure::Unknown)
    }
}

/// Whether `presented` is `secret`, in a time that depends only on the two lengths: every
/// byte of `secret` is compared (with a zero past the end of `presented`) and the
/// differences folded together without a branch; only the fold is tested, behind an
/// optimisation barrier.
fn same_secret(secret: &[u8], presented: &[u8]) -> bool {
    let mut diff = u64::from(secret.len() != presented.len());
    for (i, s) in secret.iter().enumerate() {
        diff |= u64::from(s ^ presented.get(i).copied().unwrap_or(0));
    }
    std::hint::black_box(diff) == 0
}

impl Authenticate for StaticTokens {
    fn check(&self, credential: Option<&str>) -> Check {
        let found = self.find(credential);
        if let Err(failure) = &found {
            count_failure(failure);
        }
        Check::Done(found)
    }

    fn for_connection(self: Arc<Self>) -> Arc<dyn Authenticate> {
        self
    }

    /// Not an HTTP listener's: a resource named by the listener, nothing else.
    fn resource_server(&self, listener_url: &str) -> ResourceServer {
        ResourceServer {
            resource: listener_url.to_owned(),
            authorization_servers: Vec::new(),
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
        }
    }

    fn challenge(&self, failure: &AuthFailure) -> String {
        resource::challenge(None, &[], failure)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        let a = b"0123456789abcdefXYZ";
        assert!(same_secret(a, a));
        for i in 0..a.len() {
            let mut b = *a;
            b[i] ^= 1;
            assert!(!same_secret(a, &b), "differs at {i}");
        }
        assert!(!same_secret(a, &a[..18]));
        assert!(!same_secret(&a[..18], a));
        let mut padded = a.to_vec();
        padded.push(0);
        assert!(!same_secret(a, &padded), "a trailing zero is still longer");
    }

    #[test]
    fn tokens_name_their_callers() {
        let tokens = [
            "first-token-0123456".to_owned(),
            "second-token-012345".to_owned(),
        ];
        let t = StaticTokens::new(&tokens).expect("tokens");
        let second = t.find(Some("second-token-012345")).expect("accepted");
        assert_eq!(second.subject(), "key:mcpb-token-2");
        assert_eq!(second.key_name(), Some("mcpb-token-2"));
        assert_eq!(
            t.find(Some("second-token-01234")),
            Err(AuthFailure::Unknown)
        );
        assert_eq!(t.find(None), Err(AuthFailure::Missing));
        assert!(matches!(t.find(Some("")), Err(AuthFailure::Malformed(_))));
        let long = "x".repeat(MAX_CREDENTIAL + 1);
        assert!(matches!(
            t.find(Some(&long)),
            Err(AuthFailure::Malformed(_))
        ));
        let empty = StaticTokens::new(&["t".into(), String::new()]).expect_err("empty");
        assert_eq!(empty.to_string(), "the MCPB token `mcpb-token-2` is empty");
    }
}
