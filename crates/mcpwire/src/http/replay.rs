//! Resumable SSE streams: event ids, the bounded log of what a stream sent, and
//! `Last-Event-ID` parsing.
//!
//! Every SSE stream of a session has a process-unique number `n`; its events have ids
//! `p{n}-{seq}` (a request's stream) or `g{n}-{seq}` (the standalone stream), `seq` counting
//! from 1. Sequence 0 is the priming event (an id and empty data, with `retry:`), sent first
//! so a client can resume a stream that closes before anything else arrived. A stream keeps
//! its recent events so a client reconnecting with `GET` and `Last-Event-ID` gets what it
//! missed, then the rest of the stream.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Events kept per stream for replay (oldest dropped first).
const MAX_EVENTS: usize = 256;
/// Bytes of events kept per stream for replay (the newest event is always kept).
const MAX_BYTES: usize = 4 << 20;
/// The reconnection delay announced to clients in the priming event.
pub(crate) const RETRY: Duration = Duration::from_millis(500);

/// Numbers SSE streams, so event ids are unique in the process.
static STREAMS: AtomicU64 = AtomicU64::new(1);

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
        match self {
            StreamKind::Request => format!("p{n}-"),
            StreamKind::Standalone => format!("g{n}-"),
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
    /// The server ends this connection on purpose; the client may resume the stream.
    Detach,
}

/// The recent events of one stream, for replay.
#[derive(Debug, Default)]
pub(crate) struct ReplayLog {
    last_seq: u64,
    events: VecDeque<(u64, Arc<str>)>,
    bytes: usize,
}

impl ReplayLog {
    /// Records the next event and returns it as a stream item.
    pub(crate) fn push(&mut self, data: Arc<str>) -> StreamItem {
        self.last_seq += 1;
        self.bytes += data.len();
        self.events.push_back((self.last_seq, data.clone()));
        while self.events.len() > MAX_EVENTS || (self.bytes > MAX_BYTES && self.events.len() > 1) {
            if let Some((_, old)) = self.events.pop_front() {
                self.bytes -= old.len();
            }
        }
        StreamItem::Event(self.last_seq, data)
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
            log.push(Arc::from(format!("{i}")));
        }
        assert_eq!(log.events.len(), MAX_EVENTS);
        assert!(log.lost_after(0));
        let last = (MAX_EVENTS + 10) as u64;
        assert!(!log.lost_after(last - 5));
        let seqs: Vec<u64> = log
            .after(last - 2)
            .map(|i| match i {
                StreamItem::Event(s, _) => s,
                StreamItem::Detach => 0,
            })
            .collect();
        assert_eq!(seqs, vec![last - 1, last]);

        let mut big = ReplayLog::default();
        big.push(Arc::from("x".repeat(MAX_BYTES)));
        big.push(Arc::from("y".repeat(10)));
        assert_eq!(big.events.len(), 1);
        big.push(Arc::from("z".repeat(MAX_BYTES + 1)));
        assert_eq!(big.events.len(), 1, "the newest event is always kept");
    }
}
