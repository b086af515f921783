//! Why a credential was refused, as a closed set: what the wires turn into their refusal
//! (HTTP 401/403 with a `WWW-Authenticate` challenge, gRPC `UNAUTHENTICATED` /
//! `PERMISSION_DENIED`, a −32600 answer on MCPB) through [`McpError`].

use mcpwire_model::McpError;

/// Why authentication failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFailure {
    /// No credential was sent.
    #[error("no credential: send a bearer token or API key")]
    Missing,
    /// The credential cannot be read: not the Bearer scheme, not a JWT, a JWT that does not
    /// decode, a required claim missing.
    #[error("malformed credential: {0}")]
    Malformed(String),
    /// Neither a configured API key nor a token this server verifies.
    #[error("unknown API key or token")]
    Unknown,
    /// The token's signature does not verify (or its algorithm is not accepted).
    #[error("the token's signature does not verify")]
    BadSignature,
    /// The token names a signing key the key set does not have (after a refetch).
    #[error("the token's signing key {0:?} is not in the key set")]
    UnknownKey(String),
    /// The token's `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// The token's `nbf` is still ahead.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// The token's `iss` is not an accepted issuer (or it has none).
    #[error("the token's issuer is not accepted")]
    WrongIssuer,
    /// The token's `aud` does not name this server (RFC 8707: a token for another
    /// resource is refused).
    #[error("the token's audience is not this server")]
    WrongAudience,
    /// The credential is valid but lacks scopes this server requires.
    #[error("the credential lacks the required scope: {}", .required.join(" "))]
    InsufficientScope {
        /// Every scope required (the challenge's `scope`).
        required: Vec<String>,
    },
    /// The signing keys could not be loaded (the JWKS URL or file failed); says why.
    #[error("the signing keys are unavailable: {0}")]
    KeysUnavailable(String),
}

impl AuthFailure {
    /// A short name of the failure's kind (the metrics' `reason` label).
    pub fn kind(&self) -> &'static str {
        match self {
            AuthFailure::Missing => "missing",
            AuthFailure::Malformed(_) => "malformed",
            AuthFailure::Unknown => "unknown",
            AuthFailure::BadSignature => "bad_signature",
            AuthFailure::UnknownKey(_) => "unknown_key",
            AuthFailure::Expired => "expired",
            AuthFailure::NotYetValid => "not_yet_valid",
            AuthFailure::WrongIssuer => "wrong_issuer",
            AuthFailure::WrongAudience => "wrong_audience",
            AuthFailure::InsufficientScope { .. } => "insufficient_scope",
            AuthFailure::KeysUnavailable(_) => "keys_unavailable",
        }
    }

    /// The error-table variant the wires answer with: 401 / `UNAUTHENTICATED` for a
    /// credential that is missing or invalid, 403 / `PERMISSION_DENIED` for a scope it
    /// lacks, 503 / `UNAVAILABLE` when the keys could not be loaded (not the client's
    /// fault).
    pub fn to_mcp_error(&self) -> McpError {
        match self {
            AuthFailure::InsufficientScope { required } => {
                McpError::InsufficientScope(required.join(" "))
            }
            AuthFailure::KeysUnavailable(_) => McpError::Unavailable(self.to_string()),
            _ => McpError::Unauthenticated(self.to_string()),
        }
    }

    /// The RFC 6750 `error` code of a Bearer challenge: none when no credential was sent
    /// (§3.1: "SHOULD NOT include an error code"), `invalid_request` for one that cannot be
    /// read, `insufficient_scope`, else `invalid_token`.
    pub fn bearer_error(&self) -> Option<&'static str> {
        match self {
            AuthFailure::Missing | AuthFailure::KeysUnavailable(_) => None,
            AuthFailure::Malformed(_) => Some("invalid_request"),
            AuthFailure::InsufficientScope { .. } => Some("insufficient_scope"),
            _ => Some("invalid_token"),
        }
    }
}
