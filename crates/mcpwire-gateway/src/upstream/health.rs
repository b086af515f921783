//! Health checks of an HTTP upstream's shared session. A stdio child's exit and an MCPB
//! connection's end say when those go; an HTTP server that went away says nothing until a
//! request fails, and the shared session (catalog listing, stateless calls) may see no
//! request for a long time. So it is pinged every [`INTERVAL`]; a ping that fails or takes
//! longer than [`TIMEOUT`] ends the session, and the backend's supervisor opens it again
//! with backoff, listing the backend again once it is back (`docs/design/gateway.md` §
//! Backends that are down: a server killed is noticed within `INTERVAL + TIMEOUT`).

use std::time::Duration;

use mcpwire_client::ClientError;

use super::link::Link;

/// Time between two pings.
pub(crate) const INTERVAL: Duration = Duration::from_secs(5);

/// How long a ping may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// Pings the upstream on `link` every [`INTERVAL`]; completes with why when a ping failed.
/// An error the server answered (e.g. it does not know `ping`) is a healthy server.
pub(crate) async fn failed(link: &Link) -> String {
    loop {
        tokio::time::sleep(INTERVAL).await;
        let ping = link.client().request("ping", serde_json::json!({}));
        match tokio::time::timeout(TIMEOUT, ping).await {
            Ok(Ok(_)) | Ok(Err(ClientError::Rpc { .. } | ClientError::InputRequired { .. })) => {}
            Ok(Err(e)) => return e.to_string(),
            Err(_) => return format!("no answer to `ping` within {TIMEOUT:?}"),
        }
    }
}
