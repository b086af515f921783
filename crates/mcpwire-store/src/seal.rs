//! Sealing: bytes → an opaque, authenticated, encrypted token (visible ASCII, fit for an HTTP
//! header), and back. ChaCha20-Poly1305 (`ring`) with a random 96-bit nonce per seal.
//!
//! Keys rotate: [`SealKeys`] lists every key that may open a token, newest first; only the
//! newest seals. A token names its key by a 4-byte fingerprint (the start of the key's
//! SHA-256), so opening tries one key, not all. Token layout before base64url (no padding):
//! `version (1) | key fingerprint (4) | nonce (12) | ciphertext | tag (16)`; the version and
//! fingerprint are authenticated as associated data, together with a context string, so a
//! token sealed for one purpose does not open for another.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

/// The token layout's version byte.
const VERSION: u8 = 1;
/// Bytes of a key fingerprint.
const FINGERPRINT: usize = 4;
/// Bytes of the authentication tag.
const TAG: usize = 16;
/// Bytes before the ciphertext.
const HEADER: usize = 1 + FINGERPRINT + NONCE_LEN;
/// Bytes of a key.
pub const KEY_LEN: usize = 32;

/// What is wrong with a key as configured.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    /// No key at all.
    #[error("no session key: give at least one (32 bytes, base64)")]
    None,
    /// Not base64 (standard or URL-safe, padding optional).
    #[error("key {index}: not base64")]
    NotBase64 {
        /// Its position in the list (0 = newest).
        index: usize,
    },
    /// Not 32 bytes once decoded.
    #[error("key {index}: {len} bytes once decoded; a key is 32 random bytes")]
    Length {
        /// Its position in the list.
        index: usize,
        /// Its decoded length.
        len: usize,
    },
    /// Two keys with the same fingerprint (the same key listed twice, most likely).
    #[error("key {index}: listed twice")]
    Duplicate {
        /// Its position in the list.
        index: usize,
    },
}

/// Why a token did not open. Deliberately vague towards the client (all are "unknown
/// session"); the variants are for logs.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    /// Not base64url, too short, or an unknown layout version.
    #[error("not a sealed token")]
    Malformed,
    /// Sealed with a key no longer (or never) listed.
    #[error("sealed with an unknown key")]
    UnknownKey,
    /// The tag does not verify: tampered, or sealed for another context.
    #[error("tampered or sealed for another purpose")]
    Forged,
}

struct Key {
    fingerprint: [u8; FINGERPRINT],
    key: LessSafeKey,
}

/// The keys that open tokens (newest first); the newest seals.
pub struct SealKeys {
    keys: Vec<Key>,
    /// SHA-256 of a label and the newest key: what [`SealKeys::derive`] starts from.
    derive_base: [u8; 32],
}

impl std::fmt::Debug for SealKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Fingerprints only: never the keys.
        let prints: Vec<String> = self
            .keys
            .iter()
            .map(|k| k.fingerprint.iter().map(|b| format!("{b:02x}")).collect())
            .collect();
        f.debug_struct("SealKeys")
            .field("fingerprints", &prints)
            .finish()
    }
}

impl SealKeys {
    /// Keys from raw bytes, newest first.
    pub fn new(raw: &[[u8; KEY_LEN]]) -> Result<SealKeys, KeyError> {
        if raw.is_empty() {
            return Err(KeyError::None);
        }
        let mut keys: Vec<Key> = Vec::with_capacity(raw.len());
        for (index, bytes) in raw.iter().enumerate() {
            let digest = Sha256::digest(bytes);
            let mut fingerprint = [0u8; FINGERPRINT];
            fingerprint.copy_from_slice(&digest[..FINGERPRINT]);
            if keys.iter().any(|k| k.fingerprint == fingerprint) {
                return Err(KeyError::Duplicate { index });
            }
            let unbound =
                UnboundKey::new(&CHACHA20_POLY1305, bytes).map_err(|_| KeyError::Length {
                    index,
                    len: KEY_LEN,
                })?;
            keys.push(Key {
                fingerprint,
                key: LessSafeKey::new(unbound),
            });
        }
        let mut base = Sha256::new();
        base.update(b"mcpwire derive v1\0");
        base.update(raw[0]);
        Ok(SealKeys {
            keys,
            derive_base: base.finalize().into(),
        })
    }

    /// A 32-byte key for `purpose`, derived from the newest key: the same on every process
    /// configured with the same newest key, unrelated to it and to other purposes (for
    /// secrets that must agree across replicas, such as the HMAC key of 2026-07-28
    /// `requestState`).
    pub fn derive(&self, purpose: &str) -> [u8; KEY_LEN] {
        let mut h = Sha256::new();
        h.update(self.derive_base);
        h.update(purpose.as_bytes());
        h.finalize().into()
    }

    /// Keys written as base64 (standard or URL-safe, padding optional), newest first.
    pub fn from_base64<S: AsRef<str>>(texts: &[S]) -> Result<SealKeys, KeyError> {
        let mut raw = Vec::with_capacity(texts.len());
        for (index, text) in texts.iter().enumerate() {
            let bytes = decode_key(text.as_ref().trim()).ok_or(KeyError::NotBase64 { index })?;
            let key: [u8; KEY_LEN] = bytes.as_slice().try_into().map_err(|_| KeyError::Length {
                index,
                len: bytes.len(),
            })?;
            raw.push(key);
        }
        SealKeys::new(&raw)
    }

    /// A fresh random key as base64 (what `mcpwire` prints for an operator to configure).
    pub fn generate() -> String {
        let mut key = [0u8; KEY_LEN];
        fill_random(&mut key);
        base64::engine::general_purpose::STANDARD.encode(key)
    }

    /// How many keys open tokens.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Never true (a key set has at least one key); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// `plain` sealed with the newest key for `context`, as base64url text.
    pub fn seal(&self, context: &[u8], plain: &[u8]) -> String {
        let key = &self.keys[0];
        let mut nonce = [0u8; NONCE_LEN];
        fill_random(&mut nonce);
        let mut out = Vec::with_capacity(HEADER + plain.len() + TAG);
        out.push(VERSION);
        out.extend_from_slice(&key.fingerprint);
        out.extend_from_slice(&nonce);
        let mut body = plain.to_vec();
        let aad = aad(context, &out[..1 + FINGERPRINT]);
        // Sealing in place only fails for inputs over ChaCha20's 256 GiB block counter.
        if key
            .key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut body,
            )
            .is_err()
        {
            panic!("a sealed token over 256 GiB");
        }
        out.extend_from_slice(&body);
        URL_SAFE_NO_PAD.encode(out)
    }

    /// The bytes sealed in `token` for `context`, if one of the keys sealed it and nothing
    /// was changed.
    pub fn open(&self, context: &[u8], token: &str) -> Result<Vec<u8>, SealError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(token.as_bytes())
            .map_err(|_| SealError::Malformed)?;
        if bytes.len() < HEADER + TAG || bytes[0] != VERSION {
            return Err(SealError::Malformed);
        }
        let print = &bytes[1..1 + FINGERPRINT];
        let key = self
            .keys
            .iter()
            .find(|k| k.fingerprint == print)
            .ok_or(SealError::UnknownKey)?;
        let mut nonce = [0u8; NONCE_LEN];
        nonce.copy_from_slice(&bytes[1 + FINGERPRINT..HEADER]);
        let aad = aad(context, &bytes[..1 + FINGERPRINT]);
        let mut body = bytes[HEADER..].to_vec();
        let plain = key
            .key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad),
                &mut body,
            )
            .map_err(|_| SealError::Forged)?;
        Ok(plain.to_vec())
    }
}

/// The associated data: the context, a separator, the version and key fingerprint.
fn aad(context: &[u8], header: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(context.len() + 1 + header.len());
    aad.extend_from_slice(context);
    aad.push(0);
    aad.extend_from_slice(header);
    aad
}

fn decode_key(text: &str) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE};
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(text).ok())
}

fn fill_random(buf: &mut [u8]) {
    if let Err(e) = getrandom::fill(buf) {
        // Without an entropy source nonces could repeat: refuse to go on.
        panic!("the OS random number generator failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: &[u8] = b"test";

    fn keys(n: u8) -> [u8; KEY_LEN] {
        [n; KEY_LEN]
    }

    #[test]
    fn a_sealed_token_opens_and_says_nothing() {
        let k = SealKeys::new(&[keys(1)]).unwrap();
        let token = k.seal(CTX, b"revision=2025-11-25");
        assert!(
            token
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
        assert!(!token.contains("revision"));
        assert_eq!(k.open(CTX, &token).unwrap(), b"revision=2025-11-25");
        // Two seals of the same bytes differ (random nonces).
        assert_ne!(token, k.seal(CTX, b"revision=2025-11-25"));
    }

    #[test]
    fn rotation_old_keys_open_the_newest_seals() {
        let old = SealKeys::new(&[keys(1)]).unwrap();
        let token = old.seal(CTX, b"x");
        let rotated = SealKeys::new(&[keys(2), keys(1)]).unwrap();
        assert_eq!(rotated.open(CTX, &token).unwrap(), b"x");
        let fresh = rotated.seal(CTX, b"y");
        assert_eq!(
            old.open(CTX, &fresh),
            Err(SealError::UnknownKey),
            "sealed by the new key"
        );
        let retired = SealKeys::new(&[keys(2)]).unwrap();
        assert_eq!(retired.open(CTX, &token), Err(SealError::UnknownKey));
        assert_eq!(retired.open(CTX, &fresh).unwrap(), b"y");
    }

    #[test]
    fn tampering_and_other_contexts_are_refused() {
        let k = SealKeys::new(&[keys(1)]).unwrap();
        let token = k.seal(CTX, b"hello");
        let mut bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for at in [0, 3, HEADER - 1, HEADER, bytes.len() - 1] {
            bytes[at] ^= 1;
            let forged = URL_SAFE_NO_PAD.encode(&bytes);
            assert!(k.open(CTX, &forged).is_err(), "flipped a bit at {at}");
            bytes[at] ^= 1;
        }
        assert_eq!(k.open(b"other", &token), Err(SealError::Forged));
        assert_eq!(k.open(CTX, "not base64!"), Err(SealError::Malformed));
        assert_eq!(k.open(CTX, "AAAA"), Err(SealError::Malformed));
        assert!(k.open(CTX, &token[..token.len() - 4]).is_err(), "truncated");
    }

    #[test]
    fn derived_keys_follow_the_newest_key_and_the_purpose() {
        let a = SealKeys::new(&[keys(1), keys(2)]).unwrap();
        let b = SealKeys::new(&[keys(1)]).unwrap();
        assert_eq!(a.derive("x"), b.derive("x"));
        assert_ne!(a.derive("x"), a.derive("y"));
        assert_ne!(
            a.derive("x"),
            SealKeys::new(&[keys(2)]).unwrap().derive("x")
        );
        assert_ne!(a.derive("x"), keys(1));
    }

    #[test]
    fn configured_keys_are_checked() {
        let good = SealKeys::generate();
        assert_eq!(SealKeys::from_base64(&[good.as_str()]).unwrap().len(), 1);
        assert_eq!(
            SealKeys::from_base64::<&str>(&[]).unwrap_err(),
            KeyError::None
        );
        assert_eq!(
            SealKeys::from_base64(&["%%%"]).unwrap_err(),
            KeyError::NotBase64 { index: 0 }
        );
        assert_eq!(
            SealKeys::from_base64(&[good.as_str(), "AAAA"]).unwrap_err(),
            KeyError::Length { index: 1, len: 3 }
        );
        assert_eq!(
            SealKeys::from_base64(&[good.as_str(), good.as_str()]).unwrap_err(),
            KeyError::Duplicate { index: 1 }
        );
        assert!(!format!("{:?}", SealKeys::from_base64(&[good.as_str()]).unwrap()).contains(&good));
    }
}
