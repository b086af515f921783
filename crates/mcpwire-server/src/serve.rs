//! [`Service`]: what a listener serves — the router, the session configuration, the codec
//! limits, and the typed parts the gateway plugs in (authentication, connection limits, a
//! session directory, extra HTTP pages).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use mcpwire_model::types::Implementation;
#[cfg(feature = "proto-mcp")]
use mcpwire_proto_mcp::ProtoToolSchemas;
use mcpwire_router::{Router, Server, TaskConfig};
use mcpwire_session::SessionConfig;
use mcpwire_wire::Limits;

use crate::directory::SessionDirectory;
use crate::identify::Authenticate;

/// How long a connection keeps polling after activity before it sleeps, by default. On
/// virtual machines waking an idle vCPU costs tens of microseconds per message; polling for a
/// short while after each burst removes most of that at a bounded CPU cost (it never spins
/// while idle). See `docs/benchmarks.md`.
pub const DEFAULT_BUSY_POLL: std::time::Duration = std::time::Duration::from_micros(100);

/// Everything needed to serve: the router, the session config and the codec limits.
#[derive(Clone, Debug)]
pub struct Service {
    /// The router over the backend(s).
    pub router: Router,
    /// Identity, capabilities and session limits.
    pub config: Arc<SessionConfig>,
    /// Codec limits.
    pub limits: Limits,
    /// How long a connection keeps polling for input before it sleeps (zero: never).
    pub busy_poll: std::time::Duration,
    /// Each tool's protobuf schema, for proto-mcp connections.
    #[cfg(feature = "proto-mcp")]
    pub proto: Arc<ProtoToolSchemas>,
    /// Authentication for the network listeners serving this service (HTTP, WebSocket,
    /// gRPC, MCPB; never stdio), e.g. the gateway's `Authenticator`. `None`: they accept
    /// anyone (MCPB: its own static tokens).
    pub auth: Option<Arc<dyn Authenticate>>,
    /// Open connections per client IP on the network listeners serving this service
    /// (`None`: unlimited). Shared by every listener of a gateway.
    pub connections: Option<Arc<crate::limits::ConnectionLimits>>,
    /// Where the HTTP listeners' sessions live beyond this process (in a replica set:
    /// sealed session ids, shared records, relayed messages, copies of resumable streams).
    /// `None`: one process, sessions in memory.
    pub directory: Option<Arc<dyn SessionDirectory>>,
    /// Pages the HTTP listeners serving this service answer beside the MCP endpoint,
    /// without authentication (the gateway's OAuth redirect endpoint, where a user's
    /// browser lands after consenting to an upstream). A route at the MCP endpoint's own
    /// path is ignored.
    #[cfg(feature = "http")]
    pub http_routes: Vec<HttpRoute>,
    /// Counts the sessions, connections and stateless requests of the listener serving
    /// this service, and names it to its calls (give each listener its own; `None`: not
    /// counted).
    pub load: Option<Arc<ListenerLoad>>,
}

/// What one listener carries now (the console's listeners panel): its sessions, its open
/// transport connections and the stateless requests it answered. Counting costs an atomic
/// add and sub per session or connection and an add per stateless request; nothing per
/// call of a session.
#[derive(Debug, Default)]
pub struct ListenerLoad {
    /// The listener's name (its URL), which its sessions' calls carry.
    listener: Arc<str>,
    sessions: AtomicUsize,
    connections: AtomicUsize,
    stateless: AtomicU64,
}

impl ListenerLoad {
    /// The load of the listener named `listener` (its URL).
    pub fn new(listener: impl Into<Arc<str>>) -> ListenerLoad {
        ListenerLoad {
            listener: listener.into(),
            ..ListenerLoad::default()
        }
    }

    /// The listener's name.
    pub fn listener(&self) -> &Arc<str> {
        &self.listener
    }

    /// Sessions open now (HTTP sessions; stdio, MCPB and WebSocket connections).
    pub fn sessions(&self) -> usize {
        self.sessions.load(Ordering::Relaxed)
    }

    /// Transport connections open now: TCP (or TLS) connections of an HTTP or gRPC
    /// listener, MCPB connections, WebSocket connections, stdio's one.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Requests answered without a session since the start: stateless (2026-07-28) HTTP
    /// requests and gRPC calls.
    pub fn stateless_requests(&self) -> u64 {
        self.stateless.load(Ordering::Relaxed)
    }

    /// Counts one more session until the guard is dropped.
    pub(crate) fn open(self: &Arc<Self>) -> Counted {
        self.sessions.fetch_add(1, Ordering::Relaxed);
        Counted(self.clone(), Count::Session)
    }

    /// Counts one more open connection until the guard is dropped.
    pub(crate) fn connected(self: &Arc<Self>) -> Counted {
        self.connections.fetch_add(1, Ordering::Relaxed);
        Counted(self.clone(), Count::Connection)
    }

    /// Counts one stateless request.
    pub(crate) fn stateless_request(&self) {
        self.stateless.fetch_add(1, Ordering::Relaxed);
    }
}

/// What a [`Counted`] counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Count {
    Session,
    Connection,
}

/// One open session or connection of a [`ListenerLoad`], counted until dropped.
#[derive(Debug)]
pub(crate) struct Counted(Arc<ListenerLoad>, Count);

impl Drop for Counted {
    fn drop(&mut self) {
        let n = match self.1 {
            Count::Session => &self.0.sessions,
            Count::Connection => &self.0.connections,
        };
        n.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A page an HTTP listener answers beside the MCP endpoint ([`Service::http_routes`]).
#[cfg(feature = "http")]
#[derive(Clone, Debug)]
pub struct HttpRoute {
    /// The path (`/oauth/callback`).
    pub path: String,
    /// What answers it.
    pub handler: axum::routing::MethodRouter,
}

impl Service {
    /// A service over a native [`Server`], introducing itself with the server's info.
    pub fn from_server(server: Arc<Server>) -> Service {
        let info: Implementation = server.server_info().clone();
        let instructions = server.instructions().map(str::to_owned);
        let router = Router::new(server).with_tasks(TaskConfig::default());
        Service::new(router, info, instructions)
    }

    /// A service over any router, introducing itself as `info`.
    pub fn new(router: Router, info: Implementation, instructions: Option<String>) -> Service {
        let config = SessionConfig {
            server_info: info,
            capabilities: router.info().capabilities.clone(),
            instructions,
            limits: Default::default(),
            derived: Default::default(),
        };
        Service {
            router,
            config: Arc::new(config),
            limits: Limits::default(),
            busy_poll: DEFAULT_BUSY_POLL,
            #[cfg(feature = "proto-mcp")]
            proto: Arc::new(ProtoToolSchemas::new(
                crate::proto_schemas::default_converter(),
            )),
            auth: None,
            connections: None,
            directory: None,
            #[cfg(feature = "http")]
            http_routes: Vec::new(),
            load: None,
        }
    }

    /// This service with its HTTP listeners' sessions kept in `directory` as well as in
    /// memory (see [`Service::directory`]).
    pub fn with_directory(mut self, directory: Arc<dyn SessionDirectory>) -> Service {
        self.directory = Some(directory);
        self
    }

    /// This service with every network listener requiring a credential `auth` accepts
    /// (the gateway's `Arc<Authenticator>`: a reload's `Authenticator::replace` reaches every
    /// listener holding it).
    pub fn with_auth(mut self, auth: Arc<dyn Authenticate>) -> Service {
        self.auth = Some(auth);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listener_counts_the_sessions_alive() {
        let load = Arc::new(ListenerLoad::default());
        let a = load.open();
        let b = load.open();
        assert_eq!(load.sessions(), 2);
        drop(a);
        assert_eq!(load.sessions(), 1);
        drop(b);
        assert_eq!(load.sessions(), 0);
    }

    #[test]
    fn a_listener_counts_connections_and_stateless_requests_apart() {
        let load = Arc::new(ListenerLoad::new("http://127.0.0.1:1/mcp"));
        let c = load.connected();
        let s = load.open();
        load.stateless_request();
        load.stateless_request();
        assert_eq!((load.connections(), load.sessions()), (1, 1));
        assert_eq!(load.stateless_requests(), 2);
        drop(c);
        assert_eq!((load.connections(), load.sessions()), (0, 1));
        drop(s);
        assert_eq!(load.sessions(), 0);
        assert_eq!(&**load.listener(), "http://127.0.0.1:1/mcp");
    }
}
