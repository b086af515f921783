//! [`BackendRequest`]: a request as the router hands it to a backend.

use std::collections::BTreeMap;

use mcpwire_model::types::CompleteParams;
use mcpwire_model::{Method, Raw};

/// A request parsed by the router; arguments stay raw.
#[derive(Debug)]
#[non_exhaustive]
pub enum BackendRequest {
    /// `tools/list`.
    ListTools {
        /// Pagination cursor.
        cursor: Option<String>,
        /// A search query (SEP-1821): a backend that searches answers the ranked matches;
        /// one that does not may ignore it and list as usual.
        query: Option<String>,
    },
    /// `tools/call`.
    CallTool {
        /// Tool name.
        name: String,
        /// Raw arguments.
        arguments: Option<Raw>,
    },
    /// `resources/list`.
    ListResources {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `resources/templates/list`.
    ListResourceTemplates {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `resources/read`.
    ReadResource {
        /// URI.
        uri: String,
    },
    /// `resources/subscribe`.
    Subscribe {
        /// URI.
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        /// URI.
        uri: String,
    },
    /// `prompts/list`.
    ListPrompts {
        /// Pagination cursor.
        cursor: Option<String>,
    },
    /// `prompts/get`.
    GetPrompt {
        /// Prompt name.
        name: String,
        /// Argument values.
        arguments: BTreeMap<String, String>,
    },
    /// `completion/complete`.
    Complete(CompleteParams),
    /// Any other method, passed through.
    Other {
        /// Method.
        method: Method,
        /// Raw params.
        params: Option<Raw>,
    },
}
