//! JWT bearer tokens: the signature (keys from a JWKS, or an HS256 shared secret), then
//! `exp` and `nbf` (with a small leeway for clock skew), `iss` and `aud` — the audience
//! must name this server (RFC 8707), so a token minted for another resource is refused.

use std::sync::Arc;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use mcpwire_router::Identity;
use serde_json::{Map, Value};

use super::AuthFailure;
use super::jwks::{JwksCache, VerifyKey};
use super::verified::{KeySet, VerifiedTokens, unix_now};

/// Where a token's signing key comes from.
pub(crate) enum JwtKeys {
    /// Public keys from a key set (RS*, PS*, ES*, EdDSA; never HMAC).
    Jwks(Arc<JwksCache>),
    /// One shared secret (HS256, HS384, HS512 only).
    Secret(DecodingKey),
}

/// Verifies JWTs against one key source and the accepted issuers and audiences.
pub(crate) struct JwtVerifier {
    pub(crate) keys: JwtKeys,
    /// Accepted `iss` values; empty: any (the claim is then not required).
    pub(crate) issuers: Vec<String>,
    /// Accepted `aud` values (never empty: configuration refuses that).
    pub(crate) audiences: Vec<String>,
    /// Seconds of clock skew allowed on `exp` and `nbf`.
    pub(crate) leeway: u64,
    /// Tokens verified already, until they expire.
    pub(crate) verified: VerifiedTokens,
}

/// What verifying with the keys at hand gave.
pub(crate) enum Verdict<T = Identity> {
    Done(Result<T, AuthFailure>),
    /// The token names a key the cache does not have: load the key set again, then retry.
    NeedKeys,
}

/// Whether `token` has the shape of a JWS compact serialization (three dot-separated parts).
pub(crate) fn looks_like_jwt(token: &str) -> bool {
    token.split('.').count() == 3
}

impl JwtVerifier {
    /// Verifies `token` with the keys at hand: a token verified before with the same key
    /// set and not expired yet is accepted again without its signature being checked.
    pub(crate) fn verify_cached(&self, token: &str) -> Verdict {
        let keys: KeySet = match &self.keys {
            JwtKeys::Secret(_) => None,
            JwtKeys::Jwks(cache) => Some(cache.keys()),
        };
        let now = unix_now();
        if let Some(id) = self.verified.get(token, &keys, now) {
            return Verdict::Done(Ok(id));
        }
        let verdict = self.verify_uncached(token, keys.as_deref());
        if let Verdict::Done(Ok((id, exp))) = &verdict {
            let until = exp.saturating_add(self.leeway);
            self.verified.put(token, id.clone(), keys, until);
        }
        match verdict {
            Verdict::Done(r) => Verdict::Done(r.map(|(id, _)| id)),
            Verdict::NeedKeys => Verdict::NeedKeys,
        }
    }

    /// Checks `token`'s signature with `keys` (the key set; `None` with a shared secret)
    /// and its claims; a success also gives its `exp`.
    fn verify_uncached(
        &self,
        token: &str,
        keys: Option<&Vec<VerifyKey>>,
    ) -> Verdict<(Identity, u64)> {
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => {
                return Verdict::Done(Err(AuthFailure::Malformed(format!(
                    "not a readable JWT: {e}"
                ))));
            }
        };
        let alg = header.alg;
        match &self.keys {
            JwtKeys::Secret(key) => {
                if alg.family() != AlgorithmFamily::Hmac {
                    return Verdict::Done(Err(AuthFailure::BadSignature));
                }
                Verdict::Done(self.decode(token, alg, key))
            }
            JwtKeys::Jwks(_) => {
                if alg.family() == AlgorithmFamily::Hmac {
                    // Never verify an HMAC token with a public key (algorithm confusion).
                    return Verdict::Done(Err(AuthFailure::BadSignature));
                }
                let keys = keys.map_or(&[][..], Vec::as_slice);
                let fitting: Vec<&VerifyKey> = keys
                    .iter()
                    .filter(|k| k.fits(alg))
                    .filter(|k| header.kid.is_none() || k.kid == header.kid)
                    .collect();
                if fitting.is_empty() {
                    return match header.kid {
                        Some(_) => Verdict::NeedKeys,
                        None if keys.is_empty() => Verdict::NeedKeys,
                        None => Verdict::Done(Err(AuthFailure::BadSignature)),
                    };
                }
                for key in fitting {
                    match self.decode(token, alg, &key.key) {
                        Err(AuthFailure::BadSignature) => continue,
                        other => return Verdict::Done(other),
                    }
                }
                Verdict::Done(Err(AuthFailure::BadSignature))
            }
        }
    }

    /// Verifies `token`, loading the key set again (rate-bounded) when it names a key the
    /// cache lacks.
    pub(crate) async fn verify(&self, token: &str) -> Result<Identity, AuthFailure> {
        if let Verdict::Done(r) = self.verify_cached(token) {
            return r;
        }
        let JwtKeys::Jwks(cache) = &self.keys else {
            return Err(AuthFailure::BadSignature);
        };
        let loaded = cache.refresh().await;
        match self.verify_cached(token) {
            Verdict::Done(r) => r,
            Verdict::NeedKeys => {
                loaded?;
                let kid = jsonwebtoken::decode_header(token)
                    .ok()
                    .and_then(|h| h.kid)
                    .unwrap_or_default();
                if cache.keys().is_empty() {
                    Err(AuthFailure::KeysUnavailable(format!(
                        "no keys loaded from {}",
                        cache.source()
                    )))
                } else {
                    Err(AuthFailure::UnknownKey(kid))
                }
            }
        }
    }

    fn decode(
        &self,
        token: &str,
        alg: Algorithm,
        key: &DecodingKey,
    ) -> Result<(Identity, u64), AuthFailure> {
        let mut v = Validation::new(alg);
        v.leeway = self.leeway;
        v.validate_exp = true;
        v.validate_nbf = true;
        v.set_audience(&self.audiences);
        let mut required = vec!["exp", "aud"];
        if !self.issuers.is_empty() {
            v.set_issuer(&self.issuers);
            required.push("iss");
        }
        v.set_required_spec_claims(&required);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &v)
            .map_err(|e| failure(e.kind()))?;
        // `exp` is required and was checked: a number of seconds.
        let exp = data
            .claims
            .get("exp")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        Ok((identity(data.claims), exp.max(0.0) as u64))
    }
}

/// The failure for a `jsonwebtoken` error.
fn failure(kind: &ErrorKind) -> AuthFailure {
    match kind {
        ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => AuthFailure::BadSignature,
        ErrorKind::ExpiredSignature => AuthFailure::Expired,
        ErrorKind::ImmatureSignature => AuthFailure::NotYetValid,
        ErrorKind::InvalidIssuer => AuthFailure::WrongIssuer,
        ErrorKind::InvalidAudience => AuthFailure::WrongAudience,
        ErrorKind::MissingRequiredClaim(c) if c == "aud" => AuthFailure::WrongAudience,
        ErrorKind::MissingRequiredClaim(c) if c == "iss" => AuthFailure::WrongIssuer,
        ErrorKind::MissingRequiredClaim(c) => {
            AuthFailure::Malformed(format!("the token has no `{c}` claim"))
        }
        ErrorKind::InvalidClaimFormat(c) => {
            AuthFailure::Malformed(format!("the token's `{c}` claim is malformed"))
        }
        other => AuthFailure::Malformed(format!("{other:?}")),
    }
}

/// The caller a verified token names: `sub` (else `client_id`), `iss`, and its scopes from
/// `scope` (space-separated, RFC 8693 / RFC 9068) or `scp` (a string or an array).
fn identity(claims: Map<String, Value>) -> Identity {
    let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
    let subject = text("sub")
        .or_else(|| text("client_id"))
        .unwrap_or_else(|| "unknown".into());
    let issuer = text("iss");
    let scopes = match claims.get("scope").or_else(|| claims.get("scp")) {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    Identity::bearer(subject, issuer, scopes, claims)
}
