//! Resumable SSE streams: event ids, the bounded log of what a stream sent, and
//! `Last-Event-ID` parsing.
//!
//! Every SSE stream of a session has a number `n`, unique in the process and — as each
//! process starts counting at a random point of a 2^52 range — across the replicas of a
//! replica set, so an event id names its stream wherever it is presented; its events have ids
//! `p{n}-{seq}` (a request's stream) or `g{n}-{seq}` (the standalone stream), `seq` counting
//! from 1. Sequence 0 is the priming event (an id and empty data, with `retry:`), sent first
//! so a client can resume a stream that closes before anything else arrived. A stream keeps
//! its recent events so a client reconnecting with `GET` and `Last-Event-ID` gets what it
//! missed, then the rest of the stream. In a replica set a log also copies each event to
//! the session directory ([`Mirror`], [`SessionDirectory::log_event`]), so another replica
//! can replay it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use mcpwire_model::RequestId;

use crate::directory::{SessionDirectory, StreamLog};

/// Events kept per stream for replay (oldest dropped first).
const MAX_EVENTS: usize = 256;
/// Bytes of events kept per stream for replay (the newest event is always kept).
const MAX_BYTES: usize = 4 << 20;
/// The reconnection delay announced to clients in the priming event.
pub(crate) const RETRY: Duration = Duration::from_millis(500);

/// Numbers SSE streams, from a random start in `[2^32, 2^52)`: unique in the process,
/// and across replicas sharing a session directory but by a chance of one in ~2^52 per pair of
/// streams (the logs are per session too). Below 2^53, so every JSON number reader agrees.
static STREAMS: LazyLock<AtomicU64> = LazyLock::new(|| {
    let mut bytes = [0u8; 8];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("the OS random number generator failed: {e}");
    }
    let span = (1u64 << 52) - (1u64 << 32);
    AtomicU64::new((1u64 << 32) + u64::from_le_bytes(bytes) % span)
});

/// A new stream number.
pub(crate) fn next_stream() -> u64 {
    STREAMS.fetch_add(1, Ordering::Relaxed)
}

/// Which kind of stream an event id names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamKind {
    /// The stream answering one `POST`ed request.
    Request,
    /// The session's standalone `GET` stream.
    Standalone,
}

impl StreamKind {
    /// The event-id prefix of stream `n`.
    pub(crate) fn prefix(self, n: u64) -> String {
        format!("{}-", self.name(n))
    }

    /// Stream `n`'s name: `p{n}` or `g{n}`.
    pub(crate) fn name(self, n: u64) -> String {
        match self {
            StreamKind::Request => format!("p{n}"),
            StreamKind::Standalone => format!("g{n}"),
        }
    }
}

/// A parsed `Last-Event-ID`: the stream and the last sequence number the client saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) kind: StreamKind,
    pub(crate) stream: u64,
    pub(crate) seq: u64,
}

impl EventId {
    /// Parses `p{n}-{seq}` or `g{n}-{seq}`.
    pub(crate) fn parse(s: &str) -> Option<EventId> {
        let kind = match s.as_bytes().first()? {
            b'p' => StreamKind::Request,
            b'g' => StreamKind::Standalone,
            _ => return None,
        };
        let (n, seq) = s[1..].split_once('-')?;
        Some(EventId {
            kind,
            stream: n.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// What a session stream carries to its HTTP connection.
#[derive(Debug, Clone)]
pub(crate) enum StreamItem {
    /// An event: its sequence number and the message's JSON text.
    Event(u64, Arc<str>),
    /// An event of another stream, with its whole id (a standalone stream's events another
    /// replica logged, replayed before this replica's own).
    Replayed(String, Arc<str>),
    /// The server ends this connection on purpose; the client may resume the stream.
    Detach,
}

/// Where a log's events are copied in a replica set: stream `n` of `kind` of session
/// `sid`, answering `request`, in the session directory. The log's name there is made on the
/// first event (most requests are answered with JSON and log nothing).
pub(crate) struct Mirror {
    pub(crate) directory: Arc<dyn SessionDirectory>,
    pub(crate) sid: Arc<str>,
    pub(crate) kind: StreamKind,
    pub(crate) n: u64,
    pub(crate) request: Option<RequestId>,
    pub(crate) log: OnceLock<StreamLog>,
}

impl Mirror {
    fn log(&self) -> &StreamLog {
        self.log.get_or_init(|| StreamLog {
            sid: self.sid.clone(),
            stream: self.kind.name(self.n),
            request: self.request.clone(),
        })
    }
}

impl std::fmt::Debug for Mirror {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mirror")
            .field("sid", &self.sid)
            .field("stream", &self.kind.name(self.n))
            .finish()
    }
}

/// The recent events of one stream, for replay.
#[derive(Debug, Default)]
pub(crate) struct ReplayLog {
    last_seq: u64,
    events: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
    mirror: Option<Mirror>,
}

impl ReplayLog {
    /// An empty log copying its events to `mirror` (a replica set's store).
    pub(crate) fn new(mirror: Option<Mirror>) -> ReplayLog {
        ReplayLog {
            mirror,
            ..ReplayLog::default()
        }
    }

    /// Records the next event (`end`: the request's response, the stream's last) and
    /// returns it as a stream item.
    pub(crate) fn push(&mut self, data: Arc<str>, end: bool) -> StreamItem {
        self.last_seq += 1;
        self.bytes += data.len();
        self.events.push_back((self.last_seq, data.clone()));
        while self.events.len() > MAX_EVENTS || (self.bytes > MAX_BYTES && self.events.len() > 1) {
            if let Some((_, old)) = self.events.pop_front() {
                self.bytes -= old.len();
            }
        }
        if let Some(m) = &self.mirror {
            let keep_from = self.events.front().map_or(self.last_seq, |(s, _)| *s);
            m.directory
                .log_event(m.log(), self.last_seq, &data, keep_from, end);
        }
        StreamItem::Event(self.last_seq, data)
    }

    /// Forgets the events held, keeping the numbering (and the mirror).
    pub(crate) fn clear(&mut self) {
        self.events.clear();
        self.bytes = 0;
    }

    /// The events after `seq` still held, oldest first.
    pub(crate) fn after(&self, seq: u64) -> impl Iterator<Item = StreamItem> + '_ {
        self.events
            .iter()
            .filter(move |(s, _)| *s > seq)
            .map(|(s, d)| StreamItem::Event(*s, d.clone()))
    }

    /// Whether events after `seq` were dropped before they could be replayed.
    pub(crate) fn lost_after(&self, seq: u64) -> bool {
        self.events
            .front()
            .is_some_and(|(first, _)| *first > seq.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        let id = EventId::parse("p12-3").unwrap();
        assert_eq!(id.kind, StreamKind::Request);
        assert_eq!((id.stream, id.seq), (12, 3));
        assert_eq!(EventId::parse("g1-0").unwrap().kind, StreamKind::Standalone);
        for bad in [
            "",
            "x1-2",
            "p-1",
            "p1-",
            "p1",
            "p1-x",
            "g99999999999999999999-1",
        ] {
            assert!(EventId::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(StreamKind::Request.prefix(7), "p7-");
    }

    #[test]
    fn log_is_bounded_and_replays_after_a_point() {
        let mut log = ReplayLog::default();
        for i in 0..(MAX_EVENTS + 10) {
            log.push(Arc::from(format!("{i}")), false);
        }
        assert_eq!(log.events.len(), MAX_EVENTS);
        assert!(log.lost_after(0));
        let last = (MAX_EVENTS + 10) as u64;
        assert!(!log.lost_after(last - 5));
        let seqs: Vec<u64> = log
            .after(last - 2)
            .map(|i| match i {
                StreamItem::Event(s, _) => s,
                _ => 0,
            })
            .collect();
        assert_eq!(seqs, vec![last - 1, last]);

        let mut big = ReplayLog::default();
        big.push(Arc::from("x".repeat(MAX_BYTES)), false);
        big.push(Arc::from("y".repeat(10)), false);
        assert_eq!(big.events.len(), 1);
        big.push(Arc::from("z".repeat(MAX_BYTES + 1)), false);
        assert_eq!(big.events.len(), 1, "the newest event is always kept");
    }
}
