//! What backends record per downstream session in the store (`up:{sid}`): one JSON object
//! of records by backend name — the upstream gateway's re-attachable upstream sessions. It
//! lives as long as the session's record (extended and removed with it), and is bounded.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_router::{BoxFuture, SessionRecords};
use mcpwire_store::Store;
use serde_json::{Map, Value};

/// Backends with a record per session, at most (more are not recorded).
const MAX_BACKENDS: usize = 32;
/// Bytes of one session's records, at most.
const MAX_BYTES: usize = 256 << 10;

/// The key of session `sid`'s backend records.
pub(crate) fn upstreams_key(sid: &str) -> String {
    format!("up:{sid}")
}

/// [`SessionRecords`] over the cluster's store; `ttl`: the sessions' idle time.
pub(crate) struct StoreRecords {
    store: Arc<dyn Store>,
    ttl: Duration,
}

impl std::fmt::Debug for StoreRecords {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreRecords")
            .field("store", &self.store.describe())
            .finish()
    }
}

impl StoreRecords {
    pub(crate) fn new(store: Arc<dyn Store>, ttl: Duration) -> StoreRecords {
        StoreRecords { store, ttl }
    }

    async fn all(&self, sid: &str) -> Result<Map<String, Value>, String> {
        let value = self
            .store
            .get(&upstreams_key(sid))
            .await
            .map_err(|e| e.to_string())?;
        Ok(value
            .and_then(|v| serde_json::from_slice(&v).ok())
            .unwrap_or_default())
    }
}

impl SessionRecords for StoreRecords {
    fn load<'a>(
        &'a self,
        sid: &'a str,
        backend: &'a str,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, String>> {
        Box::pin(async move {
            let mut all = self.all(sid).await?;
            Ok(all
                .remove(backend)
                .map(|v| serde_json::to_vec(&v).unwrap_or_default()))
        })
    }

    /// Read, change, write: not atomic across replicas — two backends recording at the
    /// same moment for one session may lose one record (that backend then starts afresh on
    /// the next replica).
    fn save<'a>(
        &'a self,
        sid: &'a str,
        backend: &'a str,
        value: Vec<u8>,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let record: Value = serde_json::from_slice(&value).map_err(|e| e.to_string())?;
            let mut all = self.all(sid).await?;
            all.insert(backend.to_owned(), record);
            let bytes = serde_json::to_vec(&all).unwrap_or_default();
            if all.len() > MAX_BACKENDS || bytes.len() > MAX_BYTES {
                return Err(format!(
                    "the session's upstream records would pass their bound ({MAX_BACKENDS} \
                     backends, {MAX_BYTES} bytes)"
                ));
            }
            self.store
                .put(&upstreams_key(sid), &bytes, self.ttl)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn is_live<'a>(&'a self, sid: &'a str) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move {
            self.store
                .get(&super::record_key(sid))
                .await
                .map(|v| v.is_some())
                .map_err(|e| e.to_string())
        })
    }
}
