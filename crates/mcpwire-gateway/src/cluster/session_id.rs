//! The sealed `Mcp-Session-Id` of a replica set: what a replica that never saw a session
//! needs to continue it, encrypted and authenticated with the cluster's session keys
//! (`docs/design/scale-out.md` § 2).
//!
//! Sealed: the session's local name (`sid`, 128 random bits: the key of its store record and
//! of every replica's session table), the negotiated revision, the client's capabilities and
//! info, the fingerprint of the identity it is bound to, and when it was issued. The id is
//! minted once, when `initialize` succeeds, and never changes — so state that appears later
//! (upstream session ids) cannot be in it and lives in the store instead.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcpwire_model::types::{ClientCapabilities, Implementation};
use mcpwire_router::{Credential, Identity};
use mcpwire_session::HandshakeState;
use mcpwire_store::{SealError, SealKeys};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use mcpwire_server::directory::SessionTicket;

/// What sealed session ids are sealed for (the AEAD's associated data, followed by the
/// listener's endpoint path): a token sealed for another purpose — or by another endpoint
/// of the cluster, such as a view on its own path — never opens as a session id here.
const CONTEXT: &[u8] = b"mcpwire session id v1";

fn context(endpoint: &str) -> Vec<u8> {
    let mut c = CONTEXT.to_vec();
    c.push(0);
    c.extend_from_slice(endpoint.as_bytes());
    c
}

/// The largest sealed id issued, in characters. Past it (a client declaring very large
/// capabilities) the capabilities go to the session's store record instead: proxies
/// commonly cap a header line at 8 KiB.
pub(crate) const MAX_SEALED_ID: usize = 2048;

/// The state sealed into a session id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionClaims {
    /// The session's local name: 32 hex digits.
    pub(crate) sid: String,
    /// The negotiated revision.
    pub(crate) rev: String,
    /// The client's capabilities; `None` when they are kept in the store record instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) caps: Option<ClientCapabilities>,
    /// The client's `clientInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) info: Option<Implementation>,
    /// The fingerprint of the identity that opened the session ([`owner_tag`]); `None`:
    /// the listener does not authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<String>,
    /// Seconds since the Unix epoch when the id was issued (for logs and audits).
    pub(crate) iat: u64,
}

impl SessionClaims {
    /// The claims of session `sid` after its handshake, bound to `owner`.
    pub(crate) fn new(sid: &str, state: &HandshakeState, owner: Option<&Identity>) -> Self {
        SessionClaims {
            sid: sid.to_owned(),
            rev: state.revision.as_str().to_owned(),
            caps: Some(state.client_capabilities.clone()),
            info: state.client_info.clone(),
            owner: owner.map(owner_tag),
            iat: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        }
    }

    /// What the listener learns from the id: the session's name and its sealed handshake
    /// (the identity binding was checked by then).
    pub(crate) fn ticket(self) -> SessionTicket {
        SessionTicket {
            sid: self.sid,
            revision: self.rev,
            client_capabilities: self.caps,
            client_info: self.info,
        }
    }

    /// Whether `caller` may use the session: the same caller as the one who opened it
    /// (no owner: the listener does not authenticate, anyone holding the id may).
    pub(crate) fn allows(&self, caller: Option<&Identity>) -> bool {
        match (&self.owner, caller) {
            (None, _) => true,
            (Some(owner), Some(caller)) => *owner == owner_tag(caller),
            (Some(_), None) => false,
        }
    }

    /// The sealed id for the listener at `endpoint` (its path); when it would be longer than
    /// [`MAX_SEALED_ID`], the capabilities are left out of it and returned to be kept in the
    /// store record.
    pub(crate) fn seal(
        mut self,
        keys: &SealKeys,
        endpoint: &str,
    ) -> (String, Option<ClientCapabilities>) {
        let context = context(endpoint);
        let id = keys.seal(&context, &self.to_json());
        if id.len() <= MAX_SEALED_ID {
            return (id, None);
        }
        let caps = self.caps.take();
        (keys.seal(&context, &self.to_json()), caps)
    }

    /// The claims sealed in `id` for the listener at `endpoint`, if one of `keys` sealed it
    /// there and nothing was changed.
    pub(crate) fn open(
        keys: &SealKeys,
        endpoint: &str,
        id: &str,
    ) -> Result<SessionClaims, SealError> {
        let plain = keys.open(&context(endpoint), id)?;
        serde_json::from_slice(&plain).map_err(|_| SealError::Malformed)
    }

    fn to_json(&self) -> Vec<u8> {
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// A caller's fingerprint: who they are and how they authenticated (as
/// [`Identity::same_caller`] compares them), hashed so the id carries no names.
pub(crate) fn owner_tag(identity: &Identity) -> String {
    let mut h = Sha256::new();
    match identity.credential() {
        Credential::ApiKey { name } => {
            h.update(b"key\0");
            h.update(name.as_bytes());
        }
        Credential::Bearer { issuer } => {
            h.update(b"bearer\0");
            h.update(issuer.as_deref().unwrap_or("").as_bytes());
        }
        // A credential kind added later binds by subject alone.
        _ => h.update(b"other\0"),
    }
    h.update(b"\0");
    h.update(identity.subject().as_bytes());
    URL_SAFE_NO_PAD.encode(&h.finalize()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_model::Revision;

    fn keys(n: u8) -> SealKeys {
        SealKeys::new(&[[n; 32]]).unwrap()
    }

    fn state() -> HandshakeState {
        HandshakeState {
            revision: Revision::V2025_06_18,
            client_capabilities: ClientCapabilities {
                sampling: Some(serde_json::json!({})),
                ..Default::default()
            },
            client_info: Some(Implementation::new("c", "1")),
        }
    }

    #[test]
    fn round_trip_binds_the_owner() {
        let alice = Identity::api_key("alice", vec![]);
        let claims = SessionClaims::new("00ff", &state(), Some(&alice));
        let (id, spilled) = claims.clone().seal(&keys(1), "/mcp");
        assert!(spilled.is_none());
        assert!(id.len() < 400, "a small header: {}", id.len());
        assert_eq!(
            SessionClaims::open(&keys(1), "/public", &id),
            Err(SealError::Forged),
            "another endpoint's id"
        );
        let opened = SessionClaims::open(&keys(1), "/mcp", &id).unwrap();
        assert_eq!(opened, claims);
        assert_eq!(opened.clone().ticket().handshake(None), Some(state()));
        assert!(opened.allows(Some(&alice)));
        assert!(opened.allows(Some(&Identity::api_key("alice", vec!["more".into()]))));
        assert!(!opened.allows(Some(&Identity::api_key("bob", vec![]))));
        let bearer_alice = Identity::bearer("key:alice", None, vec![], Default::default());
        assert!(
            !opened.allows(Some(&bearer_alice)),
            "same subject, other credential"
        );
        assert!(!opened.allows(None));
        assert_eq!(
            SessionClaims::open(&keys(2), "/mcp", &id),
            Err(SealError::UnknownKey)
        );
    }

    #[test]
    fn large_capabilities_spill_to_the_store() {
        let mut big = state();
        big.client_capabilities.experimental = Some(serde_json::json!({"x": "y".repeat(4000)}));
        let (id, spilled) = SessionClaims::new("00ff", &big, None).seal(&keys(1), "/mcp");
        assert!(id.len() <= MAX_SEALED_ID);
        let caps = spilled.expect("spilled");
        let opened = SessionClaims::open(&keys(1), "/mcp", &id).unwrap();
        assert!(opened.caps.is_none());
        assert_eq!(opened.ticket().handshake(Some(caps)), Some(big));
    }
}
