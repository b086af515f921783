//! Signing keys made on the spot, the JWKS that publishes them, and tokens signed with
//! them — for the authentication tests (`mcpwire-cli/tests/auth.rs`,
//! `mcpwire-server/tests/auth_identity.rs`) and benchmarks (`bench/src/jwt_fixture.rs`).

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// A fresh RSA-2048 key (RS256).
pub fn rsa_key() -> EncodingKey {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    let rsa = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).expect("RSA key");
    EncodingKey::from_rsa_der(rsa.to_pkcs1_der().expect("PKCS#1").as_bytes())
}

/// A fresh P-256 key (ES256).
pub fn ec_key() -> EncodingKey {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("EC key");
    EncodingKey::from_ec_der(&pair.serialize_der())
}

/// A fresh Ed25519 key (EdDSA).
pub fn ed_key() -> EncodingKey {
    // PKCS#8 v1: the fixed prefix, then a random 32-byte seed.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    let mut seed = [0u8; 32];
    rsa::rand_core::RngCore::fill_bytes(&mut rsa::rand_core::OsRng, &mut seed);
    der.extend_from_slice(&seed);
    EncodingKey::from_ed_der(&der)
}

/// One key of each asymmetric algorithm, published under the `kid`s `rsa`, `ec` and `ed`.
pub struct SigningKeys {
    /// RS256.
    pub rsa: EncodingKey,
    /// ES256.
    pub ec: EncodingKey,
    /// EdDSA.
    pub ed: EncodingKey,
}

impl SigningKeys {
    /// Fresh keys.
    pub fn generate() -> SigningKeys {
        SigningKeys {
            rsa: rsa_key(),
            ec: ec_key(),
            ed: ed_key(),
        }
    }

    /// Each key with its `kid` and algorithm.
    pub fn all(&self) -> [(&'static str, &EncodingKey, Algorithm); 3] {
        [
            ("rsa", &self.rsa, Algorithm::RS256),
            ("ec", &self.ec, Algorithm::ES256),
            ("ed", &self.ed, Algorithm::EdDSA),
        ]
    }

    /// The JWKS publishing every key.
    pub fn jwks(&self) -> Value {
        jwks(&self.all())
    }
}

/// The JWK publishing `key` (for `alg`) under `kid`.
pub fn jwk(kid: &str, key: &EncodingKey, alg: Algorithm) -> Value {
    let mut jwk = Jwk::from_encoding_key(key, alg).expect("JWK");
    jwk.common.key_id = Some(kid.to_owned());
    serde_json::to_value(jwk).expect("JWK JSON")
}

/// A JWKS publishing `keys` as (`kid`, key, algorithm).
pub fn jwks(keys: &[(&str, &EncodingKey, Algorithm)]) -> Value {
    let keys: Vec<Value> = keys
        .iter()
        .map(|(kid, key, alg)| jwk(kid, key, *alg))
        .collect();
    json!({ "keys": keys })
}

/// `claims` signed with `key` by `alg`, naming `kid` in the header.
pub fn sign(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).expect("sign")
}
