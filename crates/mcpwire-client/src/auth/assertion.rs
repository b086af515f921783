//! `private_key_jwt` client authentication (RFC 7523 §2.2, as SEP-1046 uses it for the
//! client-credentials grant): a short-lived JWT signed with the client's key, `iss` and
//! `sub` its client id, `aud` the authorization server's issuer.

use std::fmt;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};

use super::pkce::random_token;
use crate::ClientError;

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

/// The assertion type sent with it.
pub(crate) const ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// A client's private key for `private_key_jwt`.
#[derive(Clone)]
pub struct ClientSigningKey {
    key: Arc<EncodingKey>,
    alg: Algorithm,
}

impl fmt::Debug for ClientSigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ClientSigningKey({:?})", self.alg)
    }
}

impl ClientSigningKey {
    /// A PKCS#8 PEM private key used with `alg` (`ES256`, `ES384`, `RS256`, `PS256`,
    /// `EdDSA`).
    pub fn from_pem(pem: &str, alg: &str) -> Result<ClientSigningKey, ClientError> {
        let bad = |e: &dyn fmt::Display| ClientError::Target(format!("the {alg} key: {e}"));
        let alg: Algorithm = alg.parse().map_err(|e| bad(&e))?;
        let key = match alg {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
            Algorithm::RS256 | Algorithm::RS384 | Algorithm::RS512 | Algorithm::PS256 => {
                EncodingKey::from_rsa_pem(pem.as_bytes())
            }
            Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
            other => {
                return Err(ClientError::Target(format!(
                    "{other:?} is not a signing algorithm for client assertions"
                )));
            }
        }
        .map_err(|e| bad(&e))?;
        Ok(ClientSigningKey {
            key: Arc::new(key),
            alg,
        })
    }

    /// An assertion for `client_id` toward the server `issuer`.
    pub(crate) fn assertion(&self, client_id: &str, issuer: &str) -> Result<String, ClientError> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let claims = serde_json::json!({
            "iss": client_id,
            "sub": client_id,
            "aud": issuer,
            "iat": now,
            "exp": now + LIFETIME_SECS,
            "jti": random_token()?,
        });
        jsonwebtoken::encode(&Header::new(self.alg), &claims, &self.key)
            .map_err(|e| ClientError::Auth(format!("signing the client assertion: {e}")))
    }
}
