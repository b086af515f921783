//! Signing keys, their JWKS and bearer tokens made on the spot, for the authentication
//! benchmarks (`benches/auth_policy.rs`, `bin/jwt_fixture.rs` for `bench/overhead.sh`).

use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The issuer the tokens name.
pub const ISSUER: &str = "https://auth.bench.invalid";

/// Keys of three algorithms, published in one JWKS.
pub struct JwtFixture {
    keys: Vec<(&'static str, EncodingKey, Algorithm)>,
}

impl JwtFixture {
    /// Fresh RSA-2048 (RS256), P-256 (ES256) and Ed25519 (EdDSA) keys.
    pub fn new() -> JwtFixture {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        let rsa = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("RSA key");
        let rsa = EncodingKey::from_rsa_der(rsa.to_pkcs1_der().expect("PKCS#1").as_bytes());
        let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("EC key");
        let ec = EncodingKey::from_ec_der(&ec.serialize_der());
        // Ed25519 as PKCS#8 v1: the fixed prefix, then a random 32-byte seed.
        let mut ed = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        let mut seed = [0u8; 32];
        rsa::rand_core::RngCore::fill_bytes(&mut rsa::rand_core::OsRng, &mut seed);
        ed.extend_from_slice(&seed);
        JwtFixture {
            keys: vec![
                ("rsa", rsa, Algorithm::RS256),
                ("ec", ec, Algorithm::ES256),
                ("ed", EncodingKey::from_ed_der(&ed), Algorithm::EdDSA),
            ],
        }
    }

    /// The JWKS publishing the public keys (`kid`: `rsa`, `ec`, `ed`).
    pub fn jwks(&self) -> Value {
        let keys: Vec<Value> = self
            .keys
            .iter()
            .map(|(kid, key, alg)| {
                let mut jwk = Jwk::from_encoding_key(key, *alg).expect("JWK");
                jwk.common.key_id = Some((*kid).to_owned());
                serde_json::to_value(jwk).expect("JWK JSON")
            })
            .collect();
        json!({ "keys": keys })
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
            .iter()
            .find(|(_, _, a)| *a == alg)
            .expect("an algorithm of the fixture");
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let claims = json!({"iss": ISSUER, "aud": audience, "sub": sub, "scope": scope,
                            "iat": now, "exp": now + ttl_secs});
        let mut h = Header::new(alg);
        h.kid = Some((*kid).to_owned());
        jsonwebtoken::encode(&h, &claims, key).expect("sign")
    }
}

impl Default for JwtFixture {
    fn default() -> Self {
        JwtFixture::new()
    }
}
