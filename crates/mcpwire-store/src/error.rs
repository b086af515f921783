//! What a store operation can fail with.

/// A store operation that did not happen.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StoreError {
    /// The store cannot be reached, or did not answer in time: retry later.
    #[error("the shared store ({store}) is unavailable: {reason}")]
    Unavailable {
        /// Which store (its address without credentials).
        store: String,
        /// What failed.
        reason: String,
    },
    /// The store is at its bound (the in-memory store's entry limit).
    #[error("the shared store is full ({max} entries)")]
    Full {
        /// Its bound.
        max: usize,
    },
    /// The store answered something this version does not understand.
    #[error("the shared store answered unexpectedly: {0}")]
    Protocol(String),
    /// The store's address or options are not usable.
    #[error("invalid store configuration: {0}")]
    Config(String),
}

impl StoreError {
    /// Whether retrying later may succeed (the store was down or slow), as opposed to a
    /// configuration or protocol fault.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            StoreError::Unavailable { .. } | StoreError::Full { .. }
        )
    }
}
