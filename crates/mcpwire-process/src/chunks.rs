//! Chunked results (`stream_header` + `stream_chunk`s, not sent by SDK 0.3.1, reassembled
//! anyway): pure bookkeeping, no I/O. Only `result_json`, at most `max` bytes, each chunk
//! within the declared chunk size; the buffer grows with the bytes received (reserved at
//! most [`RESERVE_AHEAD`] ahead). The caller only starts streams for pending requests and
//! drops those whose request is gone, so there are never more streams than pending requests.

use std::collections::HashMap;

use mcpwire_wire::length_prefixed::RESERVE_AHEAD;

use crate::pb;

/// What a stream step leads to for its request.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// More chunks to come.
    Pending,
    /// The whole `result_json`.
    Done(String),
    /// The transfer is refused or broken.
    Failed(String),
}

struct Chunked {
    total: u64,
    chunk: u32,
    buf: Vec<u8>,
}

/// Chunked transfers being reassembled, by request id.
#[derive(Default)]
pub(crate) struct ChunkedResults {
    streams: HashMap<String, Chunked>,
}

impl ChunkedResults {
    /// A `stream_header` for request `id`.
    pub(crate) fn start(&mut self, id: String, h: pb::StreamHeader, max: u64) -> Outcome {
        if h.field_name != "result_json" {
            return Outcome::Failed(format!(
                "chunked transfer of unsupported field {:?}",
                h.field_name
            ));
        }
        if h.total_size > max {
            return Outcome::Failed(format!(
                "chunked transfer of {} bytes is over the {max}-byte limit",
                h.total_size
            ));
        }
        if h.total_size == 0 {
            return Outcome::Done(String::new());
        }
        let cap = h.total_size.min(RESERVE_AHEAD as u64) as usize;
        let state = Chunked {
            total: h.total_size,
            chunk: h.chunk_size,
            buf: Vec::with_capacity(cap),
        };
        self.streams.insert(id, state);
        Outcome::Pending
    }

    /// A `stream_chunk` for request `id`; `None` when no stream is open for it.
    pub(crate) fn chunk(&mut self, id: &str, c: pb::StreamChunk) -> Option<Outcome> {
        let s = self.streams.get_mut(id)?;
        let fail = if s.chunk > 0 && c.data.len() > s.chunk as usize {
            Some(format!(
                "chunk of {} bytes is over the declared {}",
                c.data.len(),
                s.chunk
            ))
        } else if (s.buf.len() + c.data.len()) as u64 > s.total {
            Some(format!("chunks exceed the declared {} bytes", s.total))
        } else {
            None
        };
        if let Some(reason) = fail {
            self.streams.remove(id);
            return Some(Outcome::Failed(reason));
        }
        s.buf.extend_from_slice(&c.data);
        if !c.r#final {
            return Some(Outcome::Pending);
        }
        let s = self.streams.remove(id)?;
        Some(match String::from_utf8(s.buf) {
            Ok(text) => Outcome::Done(text),
            Err(_) => Outcome::Failed("chunked result is not UTF-8".into()),
        })
    }

    /// Drops the streams of requests that are no longer pending.
    pub(crate) fn retain(&mut self, pending: impl Fn(&str) -> bool) {
        self.streams.retain(|id, _| pending(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(total: u64, chunk: u32) -> pb::StreamHeader {
        pb::StreamHeader {
            field_name: "result_json".into(),
            total_size: total,
            chunk_size: chunk,
        }
    }

    fn chunk(data: &[u8], last: bool) -> pb::StreamChunk {
        pb::StreamChunk {
            data: data.to_vec(),
            r#final: last,
        }
    }

    #[test]
    fn chunks_are_reassembled_within_their_declarations() {
        let mut c = ChunkedResults::default();
        assert_eq!(c.start("h1".into(), header(5, 3), 10), Outcome::Pending);
        assert_eq!(c.chunk("h1", chunk(b"hel", false)), Some(Outcome::Pending));
        assert_eq!(
            c.chunk("h1", chunk(b"lo", true)),
            Some(Outcome::Done("hello".into()))
        );
        assert_eq!(c.chunk("h1", chunk(b"x", true)), None, "stream ended");
        assert_eq!(
            c.start("h2".into(), header(0, 0), 10),
            Outcome::Done(String::new())
        );
    }

    #[test]
    fn over_the_limit_or_the_declarations_fails() {
        let mut c = ChunkedResults::default();
        assert!(matches!(
            c.start("h1".into(), header(11, 3), 10),
            Outcome::Failed(_)
        ));
        c.start("h2".into(), header(4, 2), 10);
        assert!(matches!(
            c.chunk("h2", chunk(b"abc", false)),
            Some(Outcome::Failed(_))
        ));
        c.start("h3".into(), header(2, 0), 10);
        assert!(matches!(
            c.chunk("h3", chunk(b"abc", true)),
            Some(Outcome::Failed(_))
        ));
        let mut other = header(2, 0);
        other.field_name = "structured_content_json".into();
        assert!(matches!(
            c.start("h4".into(), other, 10),
            Outcome::Failed(_)
        ));
        c.start("h5".into(), header(2, 0), 10);
        c.retain(|id| id != "h5");
        assert_eq!(c.chunk("h5", chunk(b"ab", true)), None, "dropped");
    }
}
