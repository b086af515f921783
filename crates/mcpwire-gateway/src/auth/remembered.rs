//! [`ConnectionCredential`]: the [`Authenticator`] as one connection uses it
//! ([`Authenticate::for_connection`]), remembering the credential the connection presented
//! last and the caller it was verified as. A client that sends the same token on every
//! request of a keep-alive connection is then recognised by a constant-time byte comparison
//! — no digest, no shared map (`docs/design/auth.md`, "Verification cache").
//!
//! What is remembered counts only while the verifiers it was checked by are the ones in
//! force (a reload of `[auth]` forgets it), with the same key set (a refreshed JWKS forgets
//! it), and until the token expires. Only successes are remembered, and only those answered
//! at once: a check that waited for the key set checked against keys loaded since, so the
//! next request (answered at once from the verified tokens) is remembered instead.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use mcpwire_router::Identity;
use subtle::ConstantTimeEq;

use super::verified::{KeySet, same_keys, unix_now};
use super::{AuthFailure, Authenticator, Check, ResourceServer, Verifiers};
use mcpwire_server::identify::Authenticate;

/// One connection's authenticator: the shared one, and what the connection's last accepted
/// credential verified as. Used by the connection's requests (one at a time on HTTP/1.1).
pub(super) struct ConnectionCredential {
    shared: Arc<Authenticator>,
    last: Mutex<Option<Recognised>>,
}

impl std::fmt::Debug for ConnectionCredential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectionCredential")
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

struct Recognised {
    token: Box<[u8]>,
    identity: Identity,
    /// The last second (Unix time) it is accepted.
    until: u64,
    /// The verifiers that accepted it (a weak reference keeps their address unique).
    verifiers: Weak<Verifiers>,
    /// The key set in force when it was checked.
    keys: KeySet,
}

/// Whether `a` and `b` are equal, in a time that depends only on their lengths: every
/// 8-byte word is compared and the differences folded together without a branch; only the
/// fold is tested, behind `subtle`'s optimisation barrier. (`subtle`'s byte-slice `ct_eq`
/// puts a barrier on every byte: about 10 instructions per byte of a 1 KiB token, measured
/// at more than the rest of the request's authentication.)
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (words_a, tail_a) = a.as_chunks::<8>();
    let (words_b, tail_b) = b.as_chunks::<8>();
    let mut diff = 0u64;
    for (x, y) in words_a.iter().zip(words_b) {
        diff |= u64::from_ne_bytes(*x) ^ u64::from_ne_bytes(*y);
    }
    for (x, y) in tail_a.iter().zip(tail_b) {
        diff |= u64::from(x ^ y);
    }
    bool::from(diff.ct_eq(&0))
}

impl Authenticate for ConnectionCredential {
    /// The credential this connection presented last, if it is `credential` and still
    /// counts, is accepted again by a constant-time comparison; anything else is checked by
    /// the shared authenticator, and an accepted one remembered for the next request.
    fn check(&self, credential: Option<&str>) -> Check {
        let Some(token) = credential else {
            return self.shared.check(None);
        };
        // Borrowed: its count is shared by every request on every core.
        let v = self.shared.current.load();
        let keys = v.key_set();
        if let Some(id) = self.recall(token.as_bytes(), &v, &keys, unix_now()) {
            return Check::Done(Ok(id));
        }
        let checked = self.shared.check(Some(token));
        if let Check::Done(Ok(id)) = &checked
            && let Some(until) = v.accepted_until(id)
        {
            self.remember(token.as_bytes(), id.clone(), &v, keys, until);
        }
        checked
    }

    fn for_connection(self: Arc<Self>) -> Arc<dyn Authenticate> {
        self.shared.clone().for_connection()
    }

    fn resource_server(&self, listener_url: &str) -> ResourceServer {
        self.shared.resource_server(listener_url)
    }

    fn challenge(&self, failure: &AuthFailure) -> String {
        self.shared.challenge(failure)
    }
}

impl ConnectionCredential {
    /// `shared` for one connection, nothing remembered yet.
    pub(super) fn new(shared: Arc<Authenticator>) -> ConnectionCredential {
        ConnectionCredential {
            shared,
            last: Mutex::new(None),
        }
    }

    /// The caller `token` was verified as on this connection, if it still counts with
    /// `verifiers` and `keys` at `now` (Unix seconds).
    fn recall(
        &self,
        token: &[u8],
        verifiers: &Arc<Verifiers>,
        keys: &KeySet,
        now: u64,
    ) -> Option<Identity> {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        let r = last.as_ref()?;
        let same_token = same_bytes(&r.token, token);
        (same_token
            && now <= r.until
            && std::ptr::eq(r.verifiers.as_ptr(), Arc::as_ptr(verifiers))
            && same_keys(&r.keys, keys))
        .then(|| r.identity.clone())
    }

    /// Remembers that `token` was accepted as `identity` by `verifiers` with `keys`, until
    /// `until` (Unix seconds).
    fn remember(
        &self,
        token: &[u8],
        identity: Identity,
        verifiers: &Arc<Verifiers>,
        keys: KeySet,
        until: u64,
    ) {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        *last = Some(Recognised {
            token: token.into(),
            identity,
            until,
            verifiers: Arc::downgrade(verifiers),
            keys,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ApiKeyConfig, ApiKeySecret, AuthConfig, JwtConfig, JwtKeySource};
    use super::*;

    const SECRET: &str = "a-shared-hs256-secret-of-32-bytes-or-more";
    const RESOURCE: &str = "https://mcp.test/mcp";
    const KEY: &str = "k-0123456789abcdef0123";

    fn config(with_key: bool) -> AuthConfig {
        AuthConfig {
            api_keys: if with_key {
                vec![ApiKeyConfig {
                    name: "robot".into(),
                    secret: ApiKeySecret::Plain(KEY.into()),
                    scopes: None,
                }]
            } else {
                Vec::new()
            },
            jwt: Some(JwtConfig::new(JwtKeySource::Secret(SECRET.into()))),
            resource: Some(RESOURCE.into()),
            ..AuthConfig::default()
        }
    }

    fn jwt(exp: u64) -> String {
        let claims = serde_json::json!({"aud": RESOURCE, "sub": "alice", "exp": exp});
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
        )
        .expect("sign")
    }

    #[test]
    fn bytes_compare_whole() {
        let a = b"0123456789abcdefXYZ";
        assert!(same_bytes(a, a));
        for i in 0..a.len() {
            let mut b = *a;
            b[i] ^= 1;
            assert!(!same_bytes(a, &b), "differs at {i}");
        }
        assert!(!same_bytes(a, &a[..18]));
        assert!(same_bytes(b"", b""));
    }

    #[tokio::test]
    async fn a_connection_recalls_its_last_accepted_credential_only_while_it_counts() {
        let auth = Arc::new(Authenticator::new(config(true)).expect("config"));
        let conn = ConnectionCredential::new(auth.clone());
        let checks: &dyn Authenticate = &conn;
        let first = checks.verify(Some(KEY)).await.expect("the key");
        let again = checks.verify(Some(KEY)).await.expect("the key");
        assert!(again.same_instance(&first), "recalled, not checked again");
        // Any other credential on the same connection is checked on its own.
        let near = "k-0123456789abcdef0124";
        assert_eq!(checks.verify(Some(near)).await, Err(AuthFailure::Unknown));
        assert_eq!(checks.verify(None).await, Err(AuthFailure::Missing));

        // A token: recalled until its `exp` plus the leeway, not after.
        let exp = unix_now() + 300;
        let token = jwt(exp);
        let alice = checks.verify(Some(&token)).await.expect("token");
        assert_eq!(alice.subject(), "alice");
        let v = auth.current.load_full();
        let leeway = v.jwt.as_ref().map_or(0, |j| j.leeway);
        let recall = |now| conn.recall(token.as_bytes(), &v, &None, now);
        assert!(recall(exp + leeway).is_some());
        assert!(recall(exp + leeway + 1).is_none(), "expired");
        assert!(
            conn.recall(KEY.as_bytes(), &v, &None, 0).is_none(),
            "only the last credential is kept"
        );

        // A reload of `[auth]` that drops the key: the connection's memory no longer counts.
        checks.verify(Some(KEY)).await.expect("the key");
        auth.replace(&Authenticator::new(config(false)).expect("config"));
        assert_eq!(checks.verify(Some(KEY)).await, Err(AuthFailure::Unknown));
    }

    #[tokio::test]
    async fn a_connection_made_by_the_trait_remembers_and_follows_a_reload() {
        let auth = Arc::new(Authenticator::new(config(true)).expect("config"));
        let shared: Arc<dyn Authenticate> = auth.clone();
        let conn = shared.clone().for_connection();
        let first = conn.verify(Some(KEY)).await.expect("the key");
        let again = conn.verify(Some(KEY)).await.expect("the key");
        assert!(again.same_instance(&first), "recalled, not checked again");
        let other = shared.for_connection();
        let elsewhere = other.verify(Some(KEY)).await.expect("the key");
        assert!(
            elsewhere.same_instance(&first),
            "another connection checks it again, and gets the key's one identity"
        );
        auth.replace(&Authenticator::new(config(false)).expect("config"));
        assert_eq!(conn.verify(Some(KEY)).await, Err(AuthFailure::Unknown));
    }
}
