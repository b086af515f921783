//! [`StreamLogs`]: the replay logs of resumable SSE streams in the store, so a client that
//! lost a stream resumes it with `Last-Event-ID` on whichever replica its `GET` lands
//! (`docs/design/scale-out.md` § "Streams across replicas").
//!
//! - **Writing never waits.** The session that runs a stream keeps its own log in memory
//!   (as in one process) and hands a copy of each event to [`StreamLogs::append`]: a
//!   bounded queue (in entries and bytes) that one task per replica writes to the store in
//!   batches (one pipelined round trip per batch). A full queue or a failed write drops the
//!   copy with a warning and a count (`mcpwire_cluster_store_errors_total{use="replay"}`);
//!   the live stream is never affected. Only resumable streams are logged: a request's
//!   stream once it is SSE, and the standalone `GET` stream — never a JSON answer or a
//!   stateless 2026-07-28 request.
//! - **Each entry names its writer and request**: a small JSON header line (`w`: this
//!   replica's name, `id`: the request a stream answers, `end`: the entry is its response)
//!   then the event's JSON. While it has logged anything, the writer proves it is alive
//!   (`up:{name}`, refreshed every [`WRITER_HEARTBEAT`], expiring after [`WRITER_TIMEOUT`]).
//! - **Following** ([`StreamLogs::follow`]) a request's stream on another replica replays
//!   what was logged after the client's last event, then polls for more until the
//!   response; if the writer's heartbeat is gone before that (its replica died), the stream
//!   ends with a JSON-RPC error for the request ("the replica running this request
//!   stopped"): the client learns at once that its request was lost and may send it again.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::Stream;
use mcpwire_model::RequestId;
use mcpwire_store::{LogAppend, LogEntry, Store, StoreError, log_gap};
use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use mcpwire_server::directory::{
    CopiedEvent, DirectoryUnavailable, FollowError, Followed, StreamLog,
};

/// Entries waiting to be written to the store, at most (more are dropped, counted).
const QUEUE: usize = 4096;
/// Bytes of entries waiting to be written, at most.
const QUEUE_BYTES: usize = 16 << 20;
/// Entries written in one round trip, at most.
const BATCH: usize = 128;
/// How long a log lives after its last event.
pub(crate) const LOG_TTL: Duration = Duration::from_secs(10 * 60);
/// How often a writer proves it is alive.
pub(crate) const WRITER_HEARTBEAT: Duration = Duration::from_secs(1);
/// How long without a heartbeat before a writer is taken for dead.
pub(crate) const WRITER_TIMEOUT: Duration = Duration::from_secs(3);
/// How often a follower looks for new entries.
const POLL: Duration = Duration::from_millis(100);
/// How long a follower waits for a log to appear (its first entries may still be on their
/// way to the store) before the stream is taken as unknown.
const APPEAR: Duration = Duration::from_secs(1);
/// Entries read per round trip.
const READ: usize = 256;
/// Streams this replica follows at once, at most (more are refused 503).
const MAX_FOLLOWERS: usize = 1024;

/// What each entry starts with (one JSON line).
#[derive(Serialize, Deserialize)]
struct Header {
    /// The writer's name.
    w: String,
    /// The request the stream answers (`None`: the standalone stream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<RequestId>,
    /// This entry is the request's response: the stream ends with it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    end: bool,
}

/// The store key of the log of stream `stream` (its event-id prefix, `p{n}` or `g{n}`) of
/// session `sid`.
fn log_key(sid: &str, stream: &str) -> String {
    format!("l:{sid}:{stream}")
}

/// The replay logs of one replica.
pub(crate) struct StreamLogs {
    store: Arc<dyn Store>,
    /// This replica's name as a writer (64 random bits, hex).
    name: Arc<str>,
    queue: std::sync::OnceLock<mpsc::Sender<LogAppend>>,
    queued_bytes: Arc<AtomicUsize>,
    followers: Arc<Semaphore>,
}

impl StreamLogs {
    pub(crate) fn new(store: Arc<dyn Store>, name: Arc<str>) -> StreamLogs {
        StreamLogs {
            store,
            name,
            queue: std::sync::OnceLock::new(),
            queued_bytes: Arc::default(),
            followers: Arc::new(Semaphore::new(MAX_FOLLOWERS)),
        }
    }

    /// Queues event `seq` of the stream `log` for the store (never waits; needs a tokio
    /// runtime). `keep_from`: the first event the writer still keeps (its bound); `end`:
    /// the event is the request's response.
    pub(crate) fn append(&self, log: &StreamLog, seq: u64, data: &str, keep_from: u64, end: bool) {
        let header = Header {
            w: self.name.to_string(),
            id: log.request.clone(),
            end,
        };
        let mut bytes = serde_json::to_vec(&header).unwrap_or_default();
        bytes.push(b'\n');
        bytes.extend_from_slice(data.as_bytes());
        let size = bytes.len();
        if self.queued_bytes.fetch_add(size, Ordering::Relaxed) + size > QUEUE_BYTES {
            self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
            dropped("the replay log queue is full (bytes)");
            return;
        }
        let entry = LogAppend {
            key: log_key(&log.sid, &log.stream),
            seq,
            data: bytes,
            keep_from,
            ttl: LOG_TTL,
        };
        if self.writer().try_send(entry).is_err() {
            self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
            dropped("the replay log queue is full");
        }
    }

    /// The queue, and the task writing it, started with the first event.
    fn writer(&self) -> &mpsc::Sender<LogAppend> {
        self.queue.get_or_init(|| {
            let (tx, rx) = mpsc::channel(QUEUE);
            let writer = Writer {
                store: self.store.clone(),
                name: self.name.clone(),
                queued_bytes: self.queued_bytes.clone(),
            };
            tokio::spawn(writer.run(rx));
            tx
        })
    }

    /// What was logged of a request's stream `stream` of session `sid` after event
    /// `after`, then what is logged next, until its response — or an error when its
    /// writer died first. Ends (the client may resume again) when the log expires.
    pub(crate) async fn follow(
        &self,
        sid: &str,
        stream: &str,
        after: u64,
    ) -> Result<impl Stream<Item = Followed> + Send + 'static, FollowError> {
        let permit = self.permit()?;
        let key = log_key(sid, stream);
        let first = self.first_read(&key, after).await?;
        // Who writes the stream (for its liveness): said by every entry, so by the last
        // one the client saw when nothing newer is logged yet.
        let mut writer = None;
        if first.is_empty() && after > 0 {
            let seen = self.store.log_read(&key, after - 1, 1).await;
            if let Some((header, _)) = seen
                .ok()
                .flatten()
                .as_deref()
                .and_then(|e| e.first())
                .and_then(parse)
            {
                if header.end {
                    // Answered already, and the client saw the answer: nothing more comes.
                    return Err(FollowError::Unknown);
                }
                writer = Some((header.w, header.id));
            }
        }
        let state = Follow {
            store: self.store.clone(),
            key,
            last: after,
            pending: first.into(),
            writer,
            done: false,
            idle_polls: 0,
            _permit: permit,
        };
        Ok(futures::stream::unfold(state, Follow::next))
    }

    /// The events of the standalone stream `stream` of session `sid` logged after `after`
    /// (what the client missed; the stream itself does not move: the replica answering
    /// goes on with a standalone stream of its own).
    pub(crate) async fn replay(
        &self,
        sid: &str,
        stream: &str,
        after: u64,
    ) -> Result<Vec<CopiedEvent>, FollowError> {
        let _permit = self.permit()?;
        let key = log_key(sid, stream);
        let entries = self.first_read(&key, after).await?;
        Ok(entries
            .iter()
            .filter_map(|e| parse(e).map(|(_, data)| (e.seq, data)))
            .collect())
    }

    /// A place among the streams this replica reads from the store (at most
    /// [`MAX_FOLLOWERS`] at once).
    fn permit(&self) -> Result<OwnedSemaphorePermit, FollowError> {
        self.followers
            .clone()
            .try_acquire_owned()
            .map_err(|_| FollowError::Unavailable(DirectoryUnavailable::new(too_many())))
    }

    /// The log's entries after `after`, waiting up to [`APPEAR`] for it to exist.
    async fn first_read(&self, key: &str, after: u64) -> Result<Vec<LogEntry>, FollowError> {
        let deadline = tokio::time::Instant::now() + APPEAR;
        loop {
            match self.store.log_read(key, after, READ).await {
                Ok(Some(entries)) => {
                    if log_gap(after, &entries) {
                        tracing::warn!(log = %key, "resumed stream lost events to its bound");
                    }
                    return Ok(entries);
                }
                Ok(None) if tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(POLL).await;
                }
                Ok(None) => return Err(FollowError::Unknown),
                Err(e) => {
                    mcpwire_server::observe::store_error("replay");
                    return Err(FollowError::Unavailable(DirectoryUnavailable::new(e)));
                }
            }
        }
    }
}

/// One followed stream.
struct Follow {
    store: Arc<dyn Store>,
    key: String,
    last: u64,
    pending: std::collections::VecDeque<LogEntry>,
    /// The writer's name and the request, once an entry said them.
    writer: Option<(String, Option<RequestId>)>,
    done: bool,
    /// Polls with nothing new since the last liveness check.
    idle_polls: u32,
    _permit: OwnedSemaphorePermit,
}

impl Follow {
    async fn next(mut self) -> Option<(Followed, Follow)> {
        loop {
            if self.done {
                return None;
            }
            if let Some(entry) = self.pending.pop_front() {
                self.last = entry.seq;
                let Some((header, data)) = parse(&entry) else {
                    continue;
                };
                self.done = header.end;
                self.writer = Some((header.w, header.id));
                return Some((Followed::Event(entry.seq, data), self));
            }
            tokio::time::sleep(POLL).await;
            match self.store.log_read(&self.key, self.last, READ).await {
                Ok(Some(entries)) if !entries.is_empty() => {
                    self.idle_polls = 0;
                    self.pending.extend(entries);
                    continue;
                }
                // Expired (or the store restarted empty): the client may resume again.
                Ok(None) => return None,
                Ok(Some(_)) => {}
                Err(e) => {
                    tracing::debug!(log = %self.key, error = %e, "could not follow a stream; ending it");
                    mcpwire_server::observe::store_error("replay");
                    return None;
                }
            }
            self.idle_polls += 1;
            let every = (WRITER_HEARTBEAT.as_millis() / POLL.as_millis()).max(1) as u32;
            if !self.idle_polls.is_multiple_of(every) {
                continue;
            }
            let Some((writer, request)) = &self.writer else {
                continue;
            };
            match self.store.get(&alive_key(writer)).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    tracing::info!(log = %self.key, %writer, "the replica running a followed stream stopped");
                    self.done = true;
                    let id = request.clone()?;
                    let seq = self.last + 1;
                    return Some((Followed::Lost(seq, lost(id)), self));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "could not check a stream's writer");
                }
            }
        }
    }
}

/// The response ending a request whose replica died before answering it.
fn lost(id: RequestId) -> Arc<str> {
    let error = mcpwire_model::McpError::Internal(
        "the replica running this request stopped before answering; send it again".into(),
    )
    .to_wire_unnegotiated();
    Arc::from(
        mcpwire_model::Outbound::Error {
            id: Some(id),
            error,
        }
        .to_json_string(),
    )
}

fn parse(entry: &LogEntry) -> Option<(Header, Arc<str>)> {
    let text = std::str::from_utf8(&entry.data).ok()?;
    let (head, data) = text.split_once('\n')?;
    let header: Header = serde_json::from_str(head).ok()?;
    Some((header, Arc::from(data)))
}

fn alive_key(writer: &str) -> String {
    format!("up:{writer}")
}

fn dropped(why: &str) {
    mcpwire_server::observe::store_error("replay");
    tracing::warn!("{why}; an event was not logged for other replicas");
}

fn too_many() -> StoreError {
    StoreError::Full { max: MAX_FOLLOWERS }
}

/// Writes queued entries in batches and heartbeats while there is anything to vouch for.
struct Writer {
    store: Arc<dyn Store>,
    name: Arc<str>,
    queued_bytes: Arc<AtomicUsize>,
}

impl Writer {
    async fn run(self, mut rx: mpsc::Receiver<LogAppend>) {
        let mut beat = tokio::time::interval(WRITER_HEARTBEAT);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut batch = Vec::with_capacity(BATCH);
        loop {
            tokio::select! {
                n = rx.recv_many(&mut batch, BATCH) => {
                    if n == 0 {
                        return;
                    }
                    let size: usize = batch.iter().map(|e| e.data.len()).sum();
                    if let Err(e) = self.store.log_append(&batch).await {
                        mcpwire_server::observe::store_error("replay");
                        tracing::warn!(error = %e, entries = batch.len(), "could not write replay logs; those events cannot be resumed on another replica");
                    }
                    self.queued_bytes.fetch_sub(size, Ordering::Relaxed);
                    batch.clear();
                }
                _ = beat.tick() => {
                    let ttl = WRITER_TIMEOUT;
                    if let Err(e) = self.store.put(&alive_key(&self.name), b"1", ttl).await {
                        tracing::debug!(error = %e, "could not refresh the stream writer's heartbeat");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;
    use mcpwire_store::MemoryStore;

    use super::*;

    /// Stream `stream` of session `sid`, answering `request`.
    fn log(sid: &str, stream: &str, request: Option<RequestId>) -> StreamLog {
        StreamLog {
            sid: Arc::from(sid),
            stream: stream.to_owned(),
            request,
        }
    }

    fn texts(events: &[Followed]) -> Vec<(u64, String)> {
        events
            .iter()
            .map(|f| match f {
                Followed::Event(s, d) => (*s, d.to_string()),
                Followed::Lost(s, d) => (*s, format!("lost {d}")),
            })
            .collect()
    }

    /// Replica A writes a request's stream; B replays it after the client's last event,
    /// follows it as A goes on, and stops after the response.
    #[tokio::test(start_paused = true)]
    async fn another_replica_follows_a_stream_to_its_response() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(64));
        let a = StreamLogs::new(store.clone(), Arc::from("aaaa"));
        let b = StreamLogs::new(store.clone(), Arc::from("bbbb"));
        let log = log("s1", "p7", Some(RequestId::Int(3)));
        a.append(&log, 1, "one", 1, false);
        a.append(&log, 2, "two", 1, false);
        // Unknown streams are unknown (after waiting for a log that may be on its way).
        assert!(matches!(
            b.follow("s1", "p8", 0).await,
            Err(FollowError::Unknown)
        ));
        let mut followed = Box::pin(b.follow("s1", "p7", 1).await.expect("logged"));
        let first = followed.next().await.expect("an event");
        assert_eq!(texts(&[first]), vec![(2, "two".to_owned())]);
        a.append(&log, 3, "three", 1, false);
        a.append(&log, 4, "answer", 1, true);
        let rest: Vec<Followed> = followed.collect().await;
        assert_eq!(
            texts(&rest),
            vec![(3, "three".to_owned()), (4, "answer".to_owned())]
        );
        // A client that saw the answer has nothing more to resume.
        assert!(matches!(
            b.follow("s1", "p7", 4).await,
            Err(FollowError::Unknown)
        ));
    }

    /// The writer stops (its process died) before answering: the follower ends the
    /// stream with an error for the request, within the writer timeout.
    #[tokio::test(start_paused = true)]
    async fn a_stream_whose_writer_died_ends_with_an_error_for_its_request() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(64));
        let a = StreamLogs::new(store.clone(), Arc::from("aaaa"));
        let b = StreamLogs::new(store.clone(), Arc::from("bbbb"));
        let log = log("s1", "p9", Some(RequestId::Str("call-1".into())));
        a.append(&log, 1, "progress", 1, false);
        let mut followed = Box::pin(b.follow("s1", "p9", 0).await.expect("logged"));
        assert_eq!(
            texts(&[followed.next().await.expect("replayed")]),
            vec![(1, "progress".to_owned())]
        );
        // While A lives, the follower waits (paused clock: 30 s pass at once).
        let waited = tokio::time::timeout(Duration::from_secs(30), followed.next()).await;
        assert!(waited.is_err(), "nothing new while the writer lives");
        drop(a);
        let started = tokio::time::Instant::now();
        let end = followed.next().await.expect("an error ends it");
        let Followed::Lost(2, data) = end else {
            panic!("{end:?}");
        };
        let error: serde_json::Value = serde_json::from_str(&data).unwrap();
        assert_eq!(error["id"], "call-1");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("stopped")
        );
        assert!(started.elapsed() <= WRITER_TIMEOUT + WRITER_HEARTBEAT * 2);
        assert!(followed.next().await.is_none());
    }

    /// At most [`MAX_FOLLOWERS`] streams are read from the store at once: past it, 503.
    #[tokio::test(start_paused = true)]
    async fn followers_are_bounded() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(64));
        let a = StreamLogs::new(store.clone(), Arc::from("aaaa"));
        let b = StreamLogs::new(store.clone(), Arc::from("bbbb"));
        a.append(&log("s1", "p1", None), 1, "x", 1, false);
        let mut held = Vec::new();
        for _ in 0..MAX_FOLLOWERS {
            held.push(b.follow("s1", "p1", 0).await.expect("followed"));
        }
        assert!(matches!(
            b.follow("s1", "p1", 0).await,
            Err(FollowError::Unavailable(_))
        ));
        assert!(matches!(
            b.replay("s1", "p1", 0).await,
            Err(FollowError::Unavailable(_))
        ));
        held.pop();
        assert!(b.follow("s1", "p1", 0).await.is_ok(), "a place came free");
    }

    /// `mcpwire_cluster_store_errors_total{use="replay"}` as this process counts it.
    fn replay_errors() -> f64 {
        let Some(handle) = mcpwire_server::observe::prometheus() else {
            return 0.0;
        };
        handle
            .render()
            .lines()
            .find_map(|l| l.strip_prefix(r#"mcpwire_cluster_store_errors_total{use="replay"} "#))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// A stream writing far faster than the store takes its copies (nothing runs the
    /// writer task until the test yields): round after round the queue to the store stays
    /// within its bounds in bytes and entries, every copy past them is dropped and counted,
    /// what was queued reaches the store and is accounted for, and `append` never waits.
    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_flood_keeps_the_write_queue_at_its_bounds() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new(64));
        let a = StreamLogs::new(store.clone(), Arc::from("aaaa"));
        let big = "x".repeat(1 << 20);
        let before = replay_errors();
        let mut dropped = 0;
        let mut seq = 0;
        for round in 0..4 {
            let log = log("s1", &format!("p{round}"), None);
            // Twice the byte bound in 1 MiB events, then twice the entry bound in small ones.
            let events = (0..2 * (QUEUE_BYTES >> 20))
                .map(|_| big.as_str())
                .chain((0..2 * QUEUE).map(|_| "y"));
            let mut offered = 0;
            for data in events {
                seq += 1;
                offered += 1;
                a.append(&log, seq, data, 1, false);
                assert!(a.queued_bytes.load(Ordering::Relaxed) <= QUEUE_BYTES);
            }
            let queue = a.writer();
            assert_eq!(queue.capacity(), 0, "the queue is full");
            assert_eq!(queue.max_capacity(), QUEUE, "and has not grown");
            dropped += offered - QUEUE;
            for _ in 0..1000 {
                if a.queued_bytes.load(Ordering::Relaxed) == 0 && queue.capacity() == QUEUE {
                    break;
                }
                tokio::task::yield_now().await;
            }
            assert_eq!(
                a.queued_bytes.load(Ordering::Relaxed),
                0,
                "written, accounted"
            );
            assert_eq!(queue.capacity(), QUEUE, "the queue drained");
            let key = log_key(&log.sid, &log.stream);
            let stored = store.log_read(&key, 0, 1).await.expect("store");
            assert!(
                stored.is_some_and(|e| !e.is_empty()),
                "the copies reached the store"
            );
        }
        assert!(
            replay_errors() - before >= dropped as f64,
            "every dropped copy is counted ({dropped})"
        );
    }
}
