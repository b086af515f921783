//! What can go wrong reading an OpenAPI document or calling one of its operations.

/// Why a document could not be turned into tools.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenApiError {
    /// The document is neither JSON nor YAML, or not an object.
    #[error("the document is not valid JSON or YAML: {0}")]
    Syntax(String),
    /// The document is over the size limit.
    #[error("the document is {size} bytes, over the limit of {max}")]
    TooLarge {
        /// Its size.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Not an OpenAPI 3.0 or 3.1 document (a Swagger 2.0 one, say).
    #[error("not an OpenAPI 3.0 or 3.1 document: {0}")]
    Version(String),
    /// The document says more operations than the limit allows.
    #[error("the document has more than {0} operations")]
    TooManyOperations(usize),
    /// A `$ref` that cannot be followed.
    #[error("`$ref` {reference}: {reason}")]
    Ref {
        /// The reference as written.
        reference: String,
        /// Why it cannot be followed.
        reason: String,
    },
    /// A schema too large once its references are resolved.
    #[error("a schema is larger than {0} nodes once its references are resolved")]
    SchemaTooLarge(usize),
    /// Something else the document gets wrong, in words.
    #[error("{0}")]
    Invalid(String),
    /// The document could not be read or fetched.
    #[error("reading the document: {0}")]
    Read(String),
}
