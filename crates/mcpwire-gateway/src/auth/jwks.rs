//! The signing keys of JWT issuers: a JWKS (RFC 7517) read from a file or fetched from a
//! URL, cached, and loaded again when a token names a key the cache lacks — at most once
//! per [`JwksCache::min_refetch`], so a flood of tokens with made-up `kid`s costs one fetch
//! per interval, not one per token. A key set older than [`JwksCache::max_age`] is
//! refreshed in the background (removed keys stop verifying) while the old one serves.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use tokio::time::Instant;

use super::AuthFailure;

/// Keys kept from one key set; more are ignored (with a warning).
const MAX_KEYS: usize = 100;

/// Largest key set document accepted.
const MAX_JWKS_BYTES: usize = 256 * 1024;

/// How long a JWKS URL may take to answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a key set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A JWKS document on disk (read again on an unknown `kid`, so keys can be rotated by
    /// rewriting the file).
    File(PathBuf),
    /// A JWKS document at an `http(s)` URL (an authorization server's `jwks_uri`).
    Url(String),
}

impl std::fmt::Display for JwksSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwksSource::File(p) => write!(f, "{}", p.display()),
            JwksSource::Url(u) => f.write_str(u),
        }
    }
}

/// One verification key.
pub(crate) struct VerifyKey {
    pub(crate) kid: Option<String>,
    /// The algorithm the key is for (`alg`), when the set says.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) family: AlgorithmFamily,
    pub(crate) key: DecodingKey,
}

impl VerifyKey {
    /// Whether this key may verify a token signed with `alg`.
    pub(crate) fn fits(&self, alg: Algorithm) -> bool {
        self.family == alg.family() && self.alg.is_none_or(|a| a == alg)
    }
}

#[derive(Default)]
struct Loaded {
    keys: Arc<Vec<VerifyKey>>,
    /// When the keys were last loaded successfully.
    at: Option<Instant>,
    /// When a load was last tried.
    tried: Option<Instant>,
}

/// A cached key set.
pub(crate) struct JwksCache {
    source: JwksSource,
    loaded: RwLock<Loaded>,
    /// One load at a time; the others wait and use its result.
    loading: tokio::sync::Mutex<()>,
    /// Loads caused by unknown `kid`s are at least this far apart.
    pub(crate) min_refetch: Duration,
    /// A key set older than this is refreshed in the background.
    pub(crate) max_age: Duration,
}

impl JwksCache {
    pub(crate) fn new(source: JwksSource) -> JwksCache {
        JwksCache {
            source,
            loaded: RwLock::new(Loaded::default()),
            loading: tokio::sync::Mutex::new(()),
            min_refetch: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
        }
    }

    pub(crate) fn source(&self) -> &JwksSource {
        &self.source
    }

    /// The keys loaded so far (none before the first load).
    pub(crate) fn keys(&self) -> Arc<Vec<VerifyKey>> {
        self.loaded
            .read()
            .map(|l| l.keys.clone())
            .unwrap_or_default()
    }

    /// Whether the keys are older than `max_age` (and a refresh is not being tried now).
    pub(crate) fn is_stale(&self) -> bool {
        let Ok(l) = self.loaded.read() else {
            return false;
        };
        let now = Instant::now();
        l.at.is_some_and(|at| now.duration_since(at) >= self.max_age)
            && l.tried
                .is_none_or(|t| now.duration_since(t) >= self.min_refetch)
    }

    /// Loads the key set now, at start-up: a failure is only logged, and does not count
    /// against the rate bound (the first token that needs the keys loads them).
    pub(crate) async fn prefetch(&self) {
        let _one = self.loading.lock().await;
        match self.load().await {
            Ok(keys) => {
                if let Ok(mut l) = self.loaded.write() {
                    l.keys = Arc::new(keys);
                    l.at = Some(Instant::now());
                }
            }
            Err(why) => tracing::warn!(source = %self.source, %why, "could not load the JWKS"),
        }
    }

    /// Loads the key set now, unless a load was tried within `min_refetch` (then the keys
    /// stay as they are). Concurrent callers share one load. `Err` says why the load
    /// failed (the previous keys stay).
    pub(crate) async fn refresh(&self) -> Result<(), AuthFailure> {
        let before = self.loaded.read().ok().and_then(|l| l.tried);
        let _one = self.loading.lock().await;
        let tried = self.loaded.read().ok().and_then(|l| l.tried);
        if tried != before {
            // Another caller loaded while this one waited: use its result.
            return Ok(());
        }
        if tried.is_some_and(|t| Instant::now().duration_since(t) < self.min_refetch) {
            return Ok(());
        }
        if let Ok(mut l) = self.loaded.write() {
            l.tried = Some(Instant::now());
        }
        let keys = self.load().await.map_err(|why| {
            tracing::warn!(source = %self.source, %why, "could not load the JWKS");
            AuthFailure::KeysUnavailable(why)
        })?;
        tracing::debug!(source = %self.source, keys = keys.len(), "JWKS loaded");
        if let Ok(mut l) = self.loaded.write() {
            l.keys = Arc::new(keys);
            l.at = Some(Instant::now());
        }
        Ok(())
    }

    async fn load(&self) -> Result<Vec<VerifyKey>, String> {
        let bytes = match &self.source {
            JwksSource::File(path) => {
                // Small and local: read inline (tokio's `fs` feature is not enabled).
                let bytes =
                    std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
                if bytes.len() > MAX_JWKS_BYTES {
                    return Err(format!("{} is over {MAX_JWKS_BYTES} bytes", path.display()));
                }
                bytes
            }
            JwksSource::Url(url) => mcpwire_client::fetch::get(url, FETCH_TIMEOUT, MAX_JWKS_BYTES)
                .await?
                .to_vec(),
        };
        parse_jwks(&bytes)
    }
}

/// The verification keys of a JWKS document: public RSA, EC and OKP keys meant for
/// signatures. Symmetric (`oct`) keys, encryption keys and keys this build cannot use are
/// skipped; a document without any usable key is an error.
pub(crate) fn parse_jwks(bytes: &[u8]) -> Result<Vec<VerifyKey>, String> {
    #[derive(Deserialize)]
    struct Doc {
        keys: Vec<serde_json::Value>,
    }
    let doc: Doc = serde_json::from_slice(bytes)
        .map_err(|e| format!("not a JWKS document (an object with `keys`): {e}"))?;
    let mut keys = Vec::new();
    for raw in doc.keys {
        if keys.len() == MAX_KEYS {
            tracing::warn!("the JWKS has more than {MAX_KEYS} keys; the rest are ignored");
            break;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(raw) else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let family = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
            AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
            AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
            _ => continue,
        };
        let alg = jwk
            .common
            .key_algorithm
            .and_then(|a| Algorithm::try_from(a).ok());
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        keys.push(VerifyKey {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            key,
        });
    }
    if keys.is_empty() {
        return Err("the JWKS has no usable signature key (RSA, EC or OKP)".into());
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_encryption_keys_are_skipped() {
        let doc = br#"{"keys":[
            {"kty":"oct","k":"c2VjcmV0","kid":"h"},
            {"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"e","use":"enc"},
            {"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"s","alg":"EdDSA"},
            {"kty":"weird"}
        ]}"#;
        let keys = parse_jwks(doc).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("s"));
        assert!(keys[0].fits(Algorithm::EdDSA) && !keys[0].fits(Algorithm::HS256));
        assert!(parse_jwks(br#"{"keys":[{"kty":"oct","k":"c2VjcmV0"}]}"#).is_err());
        assert!(parse_jwks(b"[]").is_err());
    }
}
