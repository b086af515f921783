//! [`SessionTicket`]: what a session id says once a [`super::SessionDirectory`] opened it.

use mcpwire_model::Revision;
use mcpwire_model::types::{ClientCapabilities, Implementation};
use mcpwire_session::HandshakeState;

/// A session id opened for its caller: the session's name and the handshake sealed in it,
/// from which a replica that never saw the session continues it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionTicket {
    /// The session's name: the key of every replica's session table and of the
    /// directory's records.
    pub sid: String,
    /// The negotiated revision, as sealed (a newer replica may seal one this build does not
    /// know).
    pub revision: String,
    /// The client's capabilities; `None` when the directory keeps them in the session's
    /// record instead.
    pub client_capabilities: Option<ClientCapabilities>,
    /// The client's `clientInfo`.
    pub client_info: Option<Implementation>,
}

impl SessionTicket {
    /// The handshake to continue the session from, with `kept` capabilities when the ticket
    /// has none. `None` when the revision is not a handshake revision this build knows.
    pub fn handshake(&self, kept: Option<ClientCapabilities>) -> Option<HandshakeState> {
        let revision = Revision::parse(&self.revision).filter(|r| !r.is_stateless())?;
        Some(HandshakeState {
            revision,
            client_capabilities: self
                .client_capabilities
                .clone()
                .or(kept)
                .unwrap_or_default(),
            client_info: self.client_info.clone(),
        })
    }
}
