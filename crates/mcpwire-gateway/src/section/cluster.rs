//! `[cluster]`: this gateway is one replica of several behind a load balancer, sharing
//! state in a store (`docs/design/scale-out.md`).
//!
//! ```toml
//! [cluster]
//! store = "redis://127.0.0.1:6379/0"   # or "memory" (one replica: sealed ids, local state)
//! session_keys = ["base64 of 32 random bytes", "an older key"]  # newest first; or set
//!                                       # MCPWIRE_SESSION_KEYS (comma-separated)
//! prefix = "mcpwire:"                  # namespace of every store key
//! recheck_secs = 5                     # how often a replica re-checks a session it holds
//! ```
//!
//! With it, session ids are sealed state any replica can continue, and `[limits]` rates are
//! kept in the store so each limit holds across replicas.

use std::time::Duration;

use serde::Deserialize;

use crate::cluster::{ClusterConfig, DEFAULT_RECHECK, StoreSpec};

/// `[cluster]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCluster {
    store: String,
    session_keys: Option<Vec<String>>,
    prefix: Option<String>,
    recheck_secs: Option<u64>,
}

impl RawCluster {
    /// The checked section, or the key at fault (below `cluster`) and why. Listed keys are
    /// checked here (so a bad one names its line); keys from the environment when the
    /// gateway starts.
    pub(crate) fn check(self) -> Result<ClusterConfig, (String, String)> {
        let store = StoreSpec::parse(&self.store).map_err(|m| ("store".to_owned(), m))?;
        let session_keys = self.session_keys.unwrap_or_default();
        if !session_keys.is_empty() {
            mcpwire_store::SealKeys::from_base64(&session_keys)
                .map_err(|e| ("session_keys".to_owned(), e.to_string()))?;
        }
        let prefix = self.prefix.unwrap_or_else(|| "mcpwire:".into());
        if prefix.is_empty() || prefix.len() > 64 {
            return Err(("prefix".to_owned(), "1 to 64 characters".to_owned()));
        }
        Ok(ClusterConfig {
            store,
            session_keys,
            prefix,
            recheck: self
                .recheck_secs
                .map_or(DEFAULT_RECHECK, Duration::from_secs),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<ClusterConfig, (String, String)> {
        toml::from_str::<RawCluster>(text).unwrap().check()
    }

    #[test]
    fn the_shape_and_its_refusals() {
        let key = mcpwire_store::SealKeys::generate();
        let ok = parse(&format!(
            "store = \"redis://127.0.0.1:6379/0\"\nsession_keys = [\"{key}\"]\n"
        ))
        .unwrap();
        assert_eq!(
            ok.store,
            StoreSpec::Redis("redis://127.0.0.1:6379/0".into())
        );
        assert_eq!(ok.recheck, DEFAULT_RECHECK);
        assert!(!format!("{ok:?}").contains(&key), "keys stay out of logs");
        assert_eq!(
            parse("store = \"memory\"").unwrap().store,
            StoreSpec::Memory
        );
        let e = parse("store = \"postgres://u:secret@db\"").unwrap_err();
        assert_eq!(e.0, "store");
        assert!(!e.1.contains("secret"), "{}", e.1);
        let e = parse("store = \"memory\"\nsession_keys = [\"short\"]").unwrap_err();
        assert_eq!(e.0, "session_keys");
        assert!(toml::from_str::<RawCluster>("store = \"memory\"\nkeys = []").is_err());
    }
}
