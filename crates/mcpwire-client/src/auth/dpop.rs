//! DPoP (RFC 9449, SEP-1932): sender-constrained access tokens. One P-256 key per upstream;
//! every token request and every request to the server carries a fresh proof — a JWT
//! signed with that key naming the method, the URL, the time, a unique id, the hash of the
//! access token (`ath`, toward the server) and the server's nonce when it asked for one.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use p256::ecdsa::signature::Signer;
use p256::ecdsa::{Signature, SigningKey};
use sha2::{Digest, Sha256};

use super::pkce::random_token;
use crate::ClientError;

/// A client's DPoP key and the nonces its servers gave.
pub(crate) struct DpopKey {
    key: SigningKey,
    /// The public key as a JWK (`kty`, `crv`, `x`, `y`: no private part).
    jwk: serde_json::Value,
    /// The last nonce the authorization server gave (RFC 9449 §8).
    server_nonce: Mutex<Option<String>>,
    /// The last nonce the resource server gave (§9).
    resource_nonce: Mutex<Option<String>>,
}

impl DpopKey {
    /// A fresh key.
    pub(crate) fn new() -> Result<DpopKey, ClientError> {
        let key = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes)
                .map_err(|e| ClientError::Io(format!("no randomness for DPoP: {e}")))?;
            // Out of range with probability about 2^-128: draw again.
            if let Ok(k) = SigningKey::from_slice(&bytes) {
                break k;
            }
        };
        let point = key.verifying_key().to_encoded_point(false);
        let (Some(x), Some(y)) = (point.x(), point.y()) else {
            return Err(ClientError::Io(
                "a DPoP public key without coordinates".into(),
            ));
        };
        let jwk = serde_json::json!({
            "kty": "EC",
            "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        });
        Ok(DpopKey {
            key,
            jwk,
            server_nonce: Mutex::new(None),
            resource_nonce: Mutex::new(None),
        })
    }

    /// A proof for a token request to `endpoint`.
    pub(crate) fn token_proof(&self, endpoint: &str) -> Result<String, ClientError> {
        let nonce = lock(&self.server_nonce).clone();
        self.proof("POST", endpoint, None, nonce.as_deref())
    }

    /// A proof for `method` on `url` presenting `token`.
    pub(crate) fn resource_proof(
        &self,
        method: &str,
        url: &str,
        token: &str,
    ) -> Result<String, ClientError> {
        let ath = URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()));
        let nonce = lock(&self.resource_nonce).clone();
        self.proof(method, url, Some(&ath), nonce.as_deref())
    }

    /// Remembers the authorization server's nonce.
    pub(crate) fn set_server_nonce(&self, nonce: &str) {
        *lock(&self.server_nonce) = Some(nonce.to_owned());
    }

    /// Remembers the resource server's nonce.
    pub(crate) fn set_resource_nonce(&self, nonce: &str) {
        *lock(&self.resource_nonce) = Some(nonce.to_owned());
    }

    fn proof(
        &self,
        htm: &str,
        url: &str,
        ath: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, ClientError> {
        // `htu` is the URL without query and fragment (RFC 9449 §4.2).
        let htu = url.split(['?', '#']).next().unwrap_or(url);
        let header = serde_json::json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
        let iat = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut claims = serde_json::json!({
            "jti": random_token()?,
            "htm": htm,
            "htu": htu,
            "iat": iat,
        });
        if let Some(a) = ath {
            claims["ath"] = a.into();
        }
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature: Signature = self.key.sign(input.as_bytes());
        Ok(format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(signature.to_bytes())
        ))
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::VerifyingKey;
    use p256::ecdsa::signature::Verifier;

    #[test]
    fn a_proof_verifies_with_the_key_in_its_header() {
        let k = DpopKey::new().unwrap();
        k.set_resource_nonce("n1");
        let proof = k
            .resource_proof("POST", "https://mcp.example/mcp?x=1", "tok")
            .unwrap();
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(header["typ"], "dpop+jwt");
        assert!(header["jwk"].get("d").is_none());
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")).as_str()
        );
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().unwrap())
            .unwrap();
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().unwrap())
            .unwrap();
        let mut sec1 = vec![4u8];
        sec1.extend(x);
        sec1.extend(y);
        let public = VerifyingKey::from_sec1_bytes(&sec1).unwrap();
        let sig = Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
        public
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &sig)
            .unwrap();
        // Every proof is fresh.
        let again = k
            .resource_proof("POST", "https://mcp.example/mcp", "tok")
            .unwrap();
        assert_ne!(proof.split('.').nth(1), again.split('.').nth(1));
    }
}
