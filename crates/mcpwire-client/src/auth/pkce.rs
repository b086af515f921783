//! PKCE with `S256` (RFC 7636), and the random values of an authorization request.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::ClientError;

/// A code verifier and its `S256` challenge.
#[derive(Debug, Clone)]
pub(crate) struct Pkce {
    /// The secret kept for the token request (43 characters of base64url).
    pub(crate) verifier: String,
    /// `BASE64URL(SHA256(verifier))`, sent in the authorization request.
    pub(crate) challenge: String,
}

impl Pkce {
    /// A fresh pair from 32 random bytes.
    pub(crate) fn new() -> Result<Pkce, ClientError> {
        let verifier = random_token()?;
        Ok(Pkce {
            challenge: challenge(&verifier),
            verifier,
        })
    }
}

/// The `S256` challenge of `verifier`.
pub(crate) fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// 32 random bytes as base64url (a verifier, a `state`).
pub(crate) fn random_token() -> Result<String, ClientError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| ClientError::Io(format!("no randomness for OAuth: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_rfc_7636_example() {
        assert_eq!(
            challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }

    #[test]
    fn fresh_pairs_are_well_formed_and_differ() {
        let a = Pkce::new().unwrap();
        let b = Pkce::new().unwrap();
        assert_eq!(a.verifier.len(), 43);
        assert!(
            a.verifier
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert_eq!(a.challenge, challenge(&a.verifier));
        assert_ne!(a.verifier, b.verifier);
    }
}
