//! Signing keys, their JWKS and bearer tokens made on the spot, for the authentication
//! benchmarks (`benches/auth_policy.rs`, `bin/jwt_fixture.rs` for `bench/overhead.sh`).

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::Algorithm;
use mcpwire_testkit::jwt::{SigningKeys, sign};
use serde_json::{Value, json};

/// The issuer the tokens name.
pub const ISSUER: &str = "https://auth.bench.invalid";

/// Keys of three algorithms, published in one JWKS.
pub struct JwtFixture {
    keys: SigningKeys,
}

impl JwtFixture {
    /// Fresh RSA-2048 (RS256), P-256 (ES256) and Ed25519 (EdDSA) keys.
    pub fn new() -> JwtFixture {
        JwtFixture {
            keys: SigningKeys::generate(),
        }
    }

    /// The JWKS publishing the public keys (`kid`: `rsa`, `ec`, `ed`).
    pub fn jwks(&self) -> Value {
        self.keys.jwks()
    }

    /// A token signed with `alg` for `audience`, subject `sub`, scopes `scope`, valid for
    /// `ttl_secs`.
    pub fn token(
        &self,
        alg: Algorithm,
        audience: &str,
        sub: &str,
        scope: &str,
        ttl_secs: i64,
    ) -> String {
        let (kid, key, _) = self
            .keys
            .all()
            .into_iter()
            .find(|(_, _, a)| *a == alg)
            .expect("an algorithm of the fixture");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let claims = json!({"iss": ISSUER, "aud": audience, "sub": sub, "scope": scope,
                            "iat": now, "exp": now + ttl_secs});
        sign(alg, Some(kid), key, &claims)
    }
}

impl Default for JwtFixture {
    fn default() -> Self {
        JwtFixture::new()
    }
}
