//! Limits every codec must be built with.

/// Size and shape limits for decoded messages.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest message (NDJSON line, frame, body) in bytes.
    pub max_message_bytes: usize,
    /// Deepest JSON nesting accepted.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_message_bytes: 16 * 1024 * 1024,
            max_depth: mcpwire_model::jsonrpc::DEFAULT_MAX_DEPTH,
        }
    }
}
