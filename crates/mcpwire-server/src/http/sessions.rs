//! The table of live stateful sessions, by `Mcp-Session-Id`, with a size bound.
//!
//! A full table makes room for a new session by evicting the least recently used one that
//! is idle — nothing in flight, no open stream — as such sessions are often abandoned
//! (clients such as the MCP Inspector CLI and the TypeScript SDK's `close()` never send
//! `DELETE`). Only when every session is busy is a new one refused (503). Evictions are
//! counted ([`HttpStats`]) and logged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use mcpwire_model::{BackendEvent, Message};
use mcpwire_router::{BoxFuture, Identity};
use mcpwire_session::{HandshakeState, IdMap};
use tokio::sync::broadcast;

use super::session::{self, Busy, SessionHandle};
use crate::Service;
use crate::directory::HeldSessions;

/// Counters of a Streamable HTTP server, readable while it serves.
#[derive(Debug, Default)]
pub struct HttpStats {
    sessions_evicted: AtomicU64,
}

impl HttpStats {
    /// Idle sessions ended to make room for new ones since the server started.
    pub fn sessions_evicted(&self) -> u64 {
        self.sessions_evicted.load(Ordering::Relaxed)
    }
}

struct Entry {
    handle: SessionHandle,
    busy: Arc<Busy>,
    /// When a request last named this session, on the table's use counter.
    last_used: u64,
    /// When this replica last checked with the session directory that the session is live.
    checked: std::time::Instant,
}

/// The map and a logical clock of uses (no wall clock needed to order them).
#[derive(Default)]
struct Table {
    map: IdMap<String, Entry>,
    uses: u64,
}

impl Table {
    fn tick(&mut self) -> u64 {
        self.uses += 1;
        self.uses
    }
}

/// Live sessions. Ids are 128 random bits from the OS CSPRNG, as 32 hex digits.
pub(crate) struct Sessions {
    table: Mutex<Table>,
    max: usize,
    stats: Arc<HttpStats>,
    /// In a replica set: what its sessions' asks' ids start with (the endpoint's name in the
    /// session directory, which relays answers by it).
    ask_prefix: OnceLock<Arc<str>>,
    /// In a replica set: the changes its sessions and `subscriptions/listen` streams hear —
    /// its router's and the other replicas' (`SessionDirectory::spread_events`).
    hub: OnceLock<broadcast::Sender<BackendEvent>>,
}

/// The table is at its bound and every session in it is busy.
#[derive(Debug)]
pub(crate) struct Full;

impl Sessions {
    /// An empty table admitting at most `max` sessions.
    pub(crate) fn new(max: usize, stats: Arc<HttpStats>) -> Sessions {
        Sessions {
            table: Mutex::new(Table::default()),
            max,
            stats,
            ask_prefix: OnceLock::new(),
            hub: OnceLock::new(),
        }
    }

    /// Makes this endpoint's sessions hear `hub` rather than the router alone (once;
    /// sessions started later).
    pub(crate) fn set_hub(&self, hub: broadcast::Sender<BackendEvent>) {
        let _ = self.hub.set(hub);
    }

    /// The hub its sessions hear, in a replica set.
    pub(crate) fn hub(&self) -> Option<&broadcast::Sender<BackendEvent>> {
        self.hub.get()
    }

    /// Makes sessions started from now on start their asks' ids with `prefix` (once).
    pub(crate) fn set_ask_prefix(&self, prefix: Arc<str>) {
        let _ = self.ask_prefix.set(prefix);
    }

    fn lock(&self) -> MutexGuard<'_, Table> {
        // A panic while holding the lock leaves the map consistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new session and registers it under a fresh id, evicting the least recently
    /// used idle session when the table is full.
    pub(crate) fn create(
        self: &Arc<Self>,
        service: &Service,
        idle: Duration,
        owner: Option<Identity>,
        ip: Option<std::net::IpAddr>,
    ) -> Result<(String, SessionHandle), Full> {
        self.start(service, idle, None, owner, ip)
    }

    /// The session `sid` continued on this replica from a handshake made on another (or
    /// the one already running here under that id), evicting as [`Sessions::create`] does.
    pub(crate) fn resume(
        self: &Arc<Self>,
        service: &Service,
        idle: Duration,
        sid: &str,
        state: HandshakeState,
        owner: Option<Identity>,
        ip: Option<std::net::IpAddr>,
    ) -> Result<SessionHandle, Full> {
        if let Some(running) = self.get(sid) {
            return Ok(running);
        }
        let resumed = Some((sid.to_owned(), state));
        self.start(service, idle, resumed, owner, ip)
            .map(|(_, handle)| handle)
    }

    fn start(
        self: &Arc<Self>,
        service: &Service,
        idle: Duration,
        resumed: Option<(String, HandshakeState)>,
        owner: Option<Identity>,
        ip: Option<std::net::IpAddr>,
    ) -> Result<(String, SessionHandle), Full> {
        let mut table = self.lock();
        if let Some((sid, _)) = &resumed
            && let Some(running) = table.map.get(sid)
        {
            // Another request rebuilt it meanwhile.
            return Ok((sid.clone(), running.handle.clone()));
        }
        if table.map.len() >= self.max {
            let Some(victim) = least_recently_used_idle(&table.map) else {
                return Err(Full);
            };
            if let Some(old) = table.map.remove(&victim) {
                old.handle.close();
                let total = self.stats.sessions_evicted.fetch_add(1, Ordering::Relaxed) + 1;
                tracing::info!(
                    session = %victim,
                    evicted_total = total,
                    "session table full: evicted the least recently used idle session"
                );
            }
        }
        let (id, handshake) = match resumed {
            Some((sid, state)) => (sid, Some(state)),
            None => loop {
                let id = new_id();
                if !table.map.contains_key(&id) {
                    break (id, None);
                }
            },
        };
        let busy = Arc::new(Busy::default());
        let sessions = self.clone();
        let ended = id.clone();
        let handle = session::spawn(
            service,
            idle,
            id.clone(),
            busy.clone(),
            session::Origin {
                owner,
                ip,
                handshake,
                ask_prefix: self.ask_prefix.get().cloned(),
                events: self.hub.get().map(broadcast::Sender::subscribe),
            },
            move || sessions.forget(&ended),
        );
        let entry = Entry {
            handle: handle.clone(),
            busy,
            last_used: table.tick(),
            checked: crate::driver::now(),
        };
        table.map.insert(id.clone(), entry);
        Ok((id, handle))
    }

    /// Whether this replica should check with the session directory that session `id` is
    /// still live (last checked `every` ago or more); if so, counts the check as done.
    pub(crate) fn due_for_check(&self, id: &str, every: Duration) -> bool {
        let mut table = self.lock();
        let now = crate::driver::now();
        match table.map.get_mut(id) {
            Some(e) if now.duration_since(e.checked) >= every => {
                e.checked = now;
                true
            }
            _ => false,
        }
    }

    /// The session named `id`, if it is alive; counts as a use.
    pub(crate) fn get(&self, id: &str) -> Option<SessionHandle> {
        let mut table = self.lock();
        let now = table.tick();
        let entry = table.map.get_mut(id)?;
        entry.last_used = now;
        Some(entry.handle.clone())
    }

    /// Ends and unregisters session `id`; whether it existed.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let entry = self.lock().map.remove(id);
        match entry {
            Some(e) => {
                e.handle.close();
                true
            }
            None => false,
        }
    }

    /// Unregisters a session whose task ended by itself.
    pub(crate) fn forget(&self, id: &str) {
        self.lock().map.remove(id);
    }
}

impl HeldSessions for Sessions {
    fn deliver(&self, sid: &str, msg: Message) -> BoxFuture<'static, bool> {
        let running = self.lock().map.get(sid).map(|e| e.handle.clone());
        Box::pin(async move {
            match running {
                Some(handle) => handle.message(msg).await.is_ok(),
                None => false,
            }
        })
    }

    fn end(&self, sid: &str) {
        if self.remove(sid) {
            tracing::debug!(session = %sid, "session ended on another replica; ended here");
        }
    }

    fn event(&self, event: &BackendEvent) {
        if let Some(hub) = self.hub.get() {
            // No listener now: nobody to tell.
            let _ = hub.send(event.clone());
        }
    }

    fn subscription(&self, sid: &str, uri: &str, on: bool) {
        let held = self.lock().map.get(sid).map(|e| e.handle.clone());
        if let Some(handle) = held {
            handle.offer_subscription(uri.to_owned(), on);
        }
    }
}

/// The id of the idle session used longest ago, if any session is idle.
fn least_recently_used_idle(map: &IdMap<String, Entry>) -> Option<String> {
    map.iter()
        .filter(|(_, e)| !e.busy.get() && !e.handle.seam.busy())
        .min_by_key(|(_, e)| e.last_used)
        .map(|(id, _)| id.clone())
}

/// A session id: 16 bytes from the OS CSPRNG as lowercase hex (visible ASCII).
fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        // Without an entropy source, ids would be guessable: refuse to go on.
        panic!("the OS random number generator failed: {e}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    use futures::StreamExt;
    use mcpwire_model::types::Implementation;
    use mcpwire_model::{Method, Request, RequestId, to_raw};
    use mcpwire_router::{CallCtx, NoArgs, ToolError, tool};

    /// A service with one tool, `wait`, that never finishes by itself.
    fn service() -> Service {
        let server = mcpwire_router::Server::builder(Implementation::new("t", "1"))
            .tool(tool("wait", |_c: CallCtx, _: NoArgs| async {
                std::future::pending::<()>().await;
                Ok::<_, ToolError>("never")
            }))
            .build();
        Service::from_server(server)
    }

    fn request(id: i64, method: Method, params: serde_json::Value) -> Request {
        Request {
            id: RequestId::Int(id),
            method,
            params: Some(to_raw(&params)),
        }
    }

    /// Opens `handle`'s session with an `initialize`, and waits for its answer.
    async fn initialize(handle: &SessionHandle) {
        let init = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}});
        let mut answer = handle
            .request(request(0, Method::Initialize, init), None)
            .await
            .unwrap();
        assert!(answer.next().await.is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn idle_sessions_expire_and_busy_ones_stay() {
        let table = Arc::new(Sessions::new(2, Arc::default()));
        let idle = Duration::from_secs(60);
        let (quiet, _) = table.create(&service(), idle, None, None).unwrap();
        let (busy, handle) = table.create(&service(), idle, None, None).unwrap();
        initialize(&handle).await;
        let call = serde_json::json!({"name": "wait", "arguments": {}});
        let _running = handle
            .request(request(1, Method::ToolsCall, call), None)
            .await
            .unwrap();
        // Paused time: these sleeps advance tokio's clock, exactly.
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(table.get(&quiet).is_some(), "not idle for 60 s yet");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(table.get(&quiet).is_none(), "idle for 60 s: ended");
        tokio::time::sleep(Duration::from_secs(600)).await;
        assert!(
            table.get(&busy).is_some(),
            "a call in flight keeps a session"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_session_used_again_expires_an_idle_period_after_its_last_use() {
        let table = Arc::new(Sessions::new(2, Arc::default()));
        let idle = Duration::from_secs(60);
        let (sid, handle) = table.create(&service(), idle, None, None).unwrap();
        initialize(&handle).await;
        // Used again at 50 s: its expiry moves to 110 s (the timer set for 60 s rings
        // early, finds nothing due, and is set again).
        tokio::time::sleep(Duration::from_secs(50)).await;
        let mut pong = handle
            .request(request(1, Method::Ping, serde_json::json!({})), None)
            .await
            .unwrap();
        assert!(pong.next().await.is_some());
        tokio::time::sleep(Duration::from_secs(59)).await;
        assert!(
            table.get(&sid).is_some(),
            "idle for 59 s since its last use"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(
            table.get(&sid).is_none(),
            "idle for 61 s since its last use: ended"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_table_evicts_the_least_recently_used_idle_session() {
        let service = service();
        let stats = Arc::new(HttpStats::default());
        let table = Arc::new(Sessions::new(2, stats.clone()));
        let idle = Duration::from_secs(3600);
        let (a, _) = table.create(&service, idle, None, None).unwrap();
        let (b, _) = table.create(&service, idle, None, None).unwrap();
        assert!(table.get(&a).is_some()); // a was used after b
        let (c, _) = table.create(&service, idle, None, None).unwrap();
        assert!(table.get(&b).is_none(), "b was the least recently used");
        assert!(table.get(&a).is_some() && table.get(&c).is_some());
        assert_eq!(stats.sessions_evicted(), 1);
        // Let the session tasks settle (each reports itself idle), then make both busy.
        for _ in 0..4 {
            tokio::task::yield_now().await;
        }
        for e in table.lock().map.values() {
            e.busy.set(true);
        }
        assert!(
            table.create(&service, idle, None, None).is_err(),
            "every session is busy"
        );
        assert_eq!(table.lock().map.len(), 2);
        table.lock().map[&a].busy.set(false);
        let (_d, _) = table.create(&service, idle, None, None).unwrap();
        assert!(table.get(&a).is_none(), "a was the only idle session");
        assert!(table.get(&c).is_some());
        assert_eq!(stats.sessions_evicted(), 2);
    }

    #[test]
    fn ids_are_visible_ascii_and_distinct() {
        let a = new_id();
        let b = new_id();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| (0x21..=0x7e).contains(&c)));
        assert_ne!(a, b);
    }
}
