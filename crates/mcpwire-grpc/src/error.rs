//! What can go wrong finding a gRPC service's methods.

/// Why a service's descriptors could not be had or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrpcError {
    /// The server could not be reached.
    #[error("connecting to {0}")]
    Connect(String),
    /// Server reflection failed (neither v1 nor v1alpha answered).
    #[error("server reflection: {0}")]
    Reflection(String),
    /// The descriptors do not make a pool (missing imports, bad bytes).
    #[error("descriptors: {0}")]
    Descriptors(String),
    /// The descriptor-set file could not be read.
    #[error("reading {0}")]
    Read(String),
    /// More methods than the limit.
    #[error("the services have more than {0} methods")]
    TooManyMethods(usize),
}
