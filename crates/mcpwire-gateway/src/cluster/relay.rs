//! [`ReplicaRelay`]: messages a client sent to one replica for a session request running on
//! another (`docs/design/scale-out.md` § "Asks across replicas").
//!
//! In a stateful session a server→client request (sampling, elicitation, roots) goes out on
//! the stream of the replica running the call; the client POSTs its answer separately and,
//! behind a round-robin balancer, that POST may land on any replica. Every endpoint (one
//! HTTP listener in a replica set) has a name of its own, and its sessions number their
//! asks `{endpoint}-{n}` ([`ReplicaRelay::ask_prefix`]). So the replica receiving an answer
//! knows, from its id alone, which endpoint asked: its own (delivered as always) or
//! another's — then it publishes the answer on the cluster's relay channel and the
//! endpoint that asked feeds it to its session as if the client had POSTed it there.
//! A `notifications/cancelled` names a client request, which any replica may be running:
//! it is delivered locally and published to every endpoint; one holding that session
//! applies it (a session ignores cancellations of requests it does not run).
//!
//! One channel (`relay`, under the store's prefix) and one subscription per cluster: a
//! message reaches every replica, each keeping what is for its endpoints. Relayed messages
//! are rare (answers to asks, cancellations), so the fan-out costs little, and no list of
//! live replicas is needed. Delivery is at most once (pub/sub): a message relayed while the
//! asking replica is reconnecting to the store is lost, and its ask ends at its own
//! deadline, as when a client never answers. A replica never rebuilds a session to deliver
//! a relayed message: a session it does not hold has nothing waiting for it.
//!
//! The same channel spreads what every session of an endpoint must hear whichever replica
//! it is attached to (`docs/design/scale-out.md` § "Changes every client hears"): each
//! replica publishes its router's list changes and resource updates ([`spread_events`]),
//! and every other endpoint serving the same path passes them to the sessions it holds;
//! a `resources/subscribe` taken on one replica is published to the replicas holding the
//! session, so the one with the client's `GET` stream sends the updates.

use std::sync::{Arc, Mutex, Weak};

use mcpwire_model::jsonrpc::decode;
use mcpwire_model::{BackendEvent, RequestId};
use mcpwire_store::{Store, StoreError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use mcpwire_server::directory::HeldSessions;

/// The relay channel, under the store's key prefix.
const CHANNEL: &str = "relay";

/// What every endpoint of a path hears, or every holder of a session.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Note {
    /// A list changed (`tools`, `prompts`, `resources`) on the endpoints serving `path`.
    ListChanged { list: String, path: String },
    /// A resource changed, for the endpoints serving `path`.
    ResourceUpdated { uri: String, path: String },
    /// Session `sid` subscribed to (`on`) or unsubscribed from `uri`.
    Subscription { uri: String, on: bool },
}

/// One relayed message on the wire.
#[derive(Serialize, Deserialize)]
struct Envelope<'a> {
    /// The endpoint that should take it (`None`: every endpoint holding the session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    to: Option<&'a str>,
    /// The endpoint that received it from the client (it does not take it again).
    from: &'a str,
    /// The session's local name (the sealed id's `sid`; empty for a change every session
    /// hears).
    #[serde(default)]
    sid: &'a str,
    /// The client's JSON-RPC message, as it sent it; `None`: the session was ended
    /// (`DELETE`) and every endpoint holding it ends it too.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    msg: Option<&'a RawValue>,
    /// A change to pass on rather than a client's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<Note>,
}

struct ReplicaEndpoint {
    name: Arc<str>,
    /// The path it serves (changes are spread to the endpoints serving the same one).
    path: Arc<str>,
    target: Weak<dyn HeldSessions>,
}

/// The cluster's relay: the endpoints of this process and the subscription feeding them.
pub(crate) struct ReplicaRelay {
    store: Arc<dyn Store>,
    endpoints: Arc<Mutex<Vec<ReplicaEndpoint>>>,
    /// The subscription's task, started with the first endpoint.
    listening: tokio::sync::OnceCell<()>,
}

impl ReplicaRelay {
    pub(crate) fn new(store: Arc<dyn Store>) -> ReplicaRelay {
        ReplicaRelay {
            store,
            endpoints: Arc::default(),
            listening: tokio::sync::OnceCell::new(),
        }
    }

    /// Registers an endpoint's sessions under a fresh name (64 random bits, hex), and
    /// starts listening for relayed messages if this is the first. Dropping the target
    /// unregisters it.
    pub(crate) async fn attach(
        &self,
        target: Weak<dyn HeldSessions>,
        path: &str,
    ) -> Result<Arc<str>, StoreError> {
        let name: Arc<str> = Arc::from(random_name());
        {
            let mut endpoints = lock(&self.endpoints);
            endpoints.retain(|e| e.target.strong_count() > 0);
            endpoints.push(ReplicaEndpoint {
                name: name.clone(),
                path: Arc::from(path),
                target,
            });
        }
        self.listening
            .get_or_try_init(|| async {
                let mut sub = self.store.subscribe(&[CHANNEL.to_owned()]).await?;
                let endpoints = Arc::downgrade(&self.endpoints);
                tokio::spawn(async move {
                    while let Some(payload) = sub.recv().await {
                        let Some(endpoints) = endpoints.upgrade() else {
                            return;
                        };
                        receive(&endpoints, &payload).await;
                    }
                });
                Ok::<(), StoreError>(())
            })
            .await?;
        Ok(name)
    }

    /// What an endpoint's sessions put before the number of each ask.
    pub(crate) fn ask_prefix(endpoint: &str) -> Arc<str> {
        Arc::from(format!("{endpoint}-"))
    }

    /// The endpoint that sent the ask `id` answers, when it is another than `endpoint`
    /// (an id numbered by another endpoint's sessions).
    pub(crate) fn asked_elsewhere<'a>(endpoint: &str, id: &'a RequestId) -> Option<&'a str> {
        let RequestId::Str(id) = id else {
            return None;
        };
        let (owner, n) = id.split_once('-')?;
        let ours = owner.len() == NAME_LEN
            && owner.bytes().all(|b| b.is_ascii_hexdigit())
            && n.bytes().all(|b| b.is_ascii_digit());
        (ours && owner != endpoint).then_some(owner)
    }

    /// Publishes the client's message `msg` (its JSON as received) for session `sid`, to
    /// endpoint `to` or (`None`) to every endpoint holding the session but `from`.
    pub(crate) async fn publish(
        &self,
        from: &str,
        to: Option<&str>,
        sid: &str,
        msg: &[u8],
    ) -> Result<(), StoreError> {
        let text = std::str::from_utf8(msg)
            .map_err(|_| StoreError::Protocol("a relayed message is not UTF-8".into()))?;
        let raw: &RawValue = serde_json::from_str(text)
            .map_err(|e| StoreError::Protocol(format!("a relayed message is not JSON: {e}")))?;
        let envelope = Envelope {
            to,
            from,
            sid,
            msg: Some(raw),
            note: None,
        };
        let payload = serde_json::to_vec(&envelope).unwrap_or_default();
        let reached = self.store.publish(CHANNEL, &payload).await?;
        tracing::debug!(session = %sid, to = ?to, reached, "relayed a client message");
        mcpwire_server::observe::replica_relayed("sent");
        Ok(())
    }

    /// Tells every other endpoint that session `sid` was ended (`DELETE` on `from`), so
    /// replicas holding it end it at once rather than at their next record check.
    pub(crate) async fn publish_end(&self, from: &str, sid: &str) -> Result<(), StoreError> {
        self.publish_note(from, sid, None).await
    }

    /// Tells the endpoints serving `path` on other replicas about a list change or resource
    /// update of this one (logs are not spread: they belong to the replica's own clients).
    pub(crate) async fn publish_event(
        &self,
        from: &str,
        path: &str,
        event: &BackendEvent,
    ) -> Result<(), StoreError> {
        let path = path.to_owned();
        let note = match event {
            BackendEvent::ToolsListChanged => Note::ListChanged {
                list: "tools".into(),
                path,
            },
            BackendEvent::PromptsListChanged => Note::ListChanged {
                list: "prompts".into(),
                path,
            },
            BackendEvent::ResourcesListChanged => Note::ListChanged {
                list: "resources".into(),
                path,
            },
            BackendEvent::ResourceUpdated { uri } => Note::ResourceUpdated {
                uri: uri.clone(),
                path,
            },
            BackendEvent::Log(_) => return Ok(()),
        };
        self.publish_note(from, "", Some(note)).await
    }

    /// Tells the other replicas holding session `sid` that it subscribed to (`on`) or
    /// unsubscribed from `uri` here.
    pub(crate) async fn publish_subscription(
        &self,
        from: &str,
        sid: &str,
        uri: &str,
        on: bool,
    ) -> Result<(), StoreError> {
        let note = Note::Subscription {
            uri: uri.to_owned(),
            on,
        };
        self.publish_note(from, sid, Some(note)).await
    }

    async fn publish_note(
        &self,
        from: &str,
        sid: &str,
        note: Option<Note>,
    ) -> Result<(), StoreError> {
        let envelope = Envelope {
            to: None,
            from,
            sid,
            msg: None,
            note,
        };
        let payload = serde_json::to_vec(&envelope).unwrap_or_default();
        self.store.publish(CHANNEL, &payload).await?;
        Ok(())
    }
}

/// Passes this endpoint's (`from`, serving `path`) router events to its `hub` (what its
/// sessions hear) and publishes them for the other replicas, until the router's event
/// channel closes or the endpoint (`alive`) is gone.
pub(crate) fn spread_events(
    cluster: Arc<super::Cluster>,
    from: Arc<str>,
    path: String,
    mut events: tokio::sync::broadcast::Receiver<BackendEvent>,
    hub: tokio::sync::broadcast::Sender<BackendEvent>,
    alive: Weak<dyn HeldSessions>,
) {
    use tokio::sync::broadcast::error::RecvError;
    tokio::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(event) => event,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        lost = n,
                        "router events were dropped before reaching the other replicas"
                    );
                    continue;
                }
                Err(RecvError::Closed) => return,
            };
            if alive.strong_count() == 0 {
                return;
            }
            // No listener now: nobody here to tell.
            let _ = hub.send(event.clone());
            if let Err(e) = cluster.relay.publish_event(&from, &path, &event).await {
                mcpwire_server::observe::store_error("relay");
                tracing::warn!(error = %e, "could not tell the other replicas about a change");
            }
        }
    });
}

/// Hands one relayed message to the endpoint(s) of this process it is for.
async fn receive(endpoints: &Mutex<Vec<ReplicaEndpoint>>, payload: &[u8]) {
    let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(payload) else {
        tracing::warn!("dropped an unreadable relayed message");
        return;
    };
    let path = match &envelope.note {
        Some(Note::ListChanged { path, .. } | Note::ResourceUpdated { path, .. }) => Some(&**path),
        _ => None,
    };
    let targets: Vec<Arc<dyn HeldSessions>> = lock(endpoints)
        .iter()
        .filter(|e| match envelope.to {
            Some(to) => *e.name == *to,
            None => *e.name != *envelope.from,
        })
        .filter(|e| path.is_none_or(|p| *e.path == *p))
        .filter_map(|e| e.target.upgrade())
        .collect();
    if let Some(note) = &envelope.note {
        let event = match note {
            Note::ListChanged { list, .. } => match list.as_str() {
                "tools" => BackendEvent::ToolsListChanged,
                "prompts" => BackendEvent::PromptsListChanged,
                "resources" => BackendEvent::ResourcesListChanged,
                _ => return,
            },
            Note::ResourceUpdated { uri, .. } => BackendEvent::ResourceUpdated { uri: uri.clone() },
            Note::Subscription { uri, on } => {
                for target in targets {
                    target.subscription(envelope.sid, uri, *on);
                }
                return;
            }
        };
        for target in targets {
            target.event(&event);
        }
        return;
    }
    let Some(msg) = envelope.msg else {
        for target in targets {
            target.end(envelope.sid);
        }
        return;
    };
    for target in targets {
        let Ok(msg) = decode(msg.get().as_bytes()) else {
            tracing::warn!("dropped a relayed message that is not JSON-RPC");
            return;
        };
        if target.deliver(envelope.sid, msg).await {
            tracing::debug!(session = %envelope.sid, "relayed message delivered");
            mcpwire_server::observe::replica_relayed("delivered");
        }
    }
}

/// Hex digits in an endpoint's name.
const NAME_LEN: usize = 16;

/// A fresh name for an endpoint or a replica: 64 random bits as 16 hex digits.
pub(crate) fn random_name() -> String {
    let mut id = [0u8; NAME_LEN / 2];
    if let Err(e) = getrandom::fill(&mut id) {
        panic!("the OS random number generator failed: {e}");
    }
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn lock(m: &Mutex<Vec<ReplicaEndpoint>>) -> std::sync::MutexGuard<'_, Vec<ReplicaEndpoint>> {
    // Every update is one push or retain: a poisoned list is still consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_id_names_the_endpoint_that_asked() {
        let me = "00112233445566aa";
        let other = "ffeeddccbbaa9988";
        let id = |s: &str| RequestId::Str(s.into());
        assert_eq!(
            ReplicaRelay::asked_elsewhere(me, &id(&format!("{other}-3"))),
            Some(other)
        );
        assert_eq!(
            ReplicaRelay::asked_elsewhere(me, &id(&format!("{me}-3"))),
            None
        );
        // Ids numbered by one process alone, or by a client, are local.
        assert_eq!(ReplicaRelay::asked_elsewhere(me, &RequestId::Int(3)), None);
        assert_eq!(ReplicaRelay::asked_elsewhere(me, &id("abc-3")), None);
        assert_eq!(
            ReplicaRelay::asked_elsewhere(me, &id(&format!("{other}-x"))),
            None
        );
        assert_eq!(*ReplicaRelay::ask_prefix(me), format!("{me}-"));
    }
}
