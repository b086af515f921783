//! Server-sent events, split from a byte stream (only what an MCP client needs: `id`,
//! `data`, `retry`).

use crate::{ClientError, MAX_MESSAGE_BYTES};

/// One SSE event: its id, its type, and its `data` lines joined by newlines.
#[derive(Debug, PartialEq)]
pub(super) struct SseEvent {
    pub(super) id: Option<String>,
    /// `event:` (None: the default, `message`).
    pub(super) event: Option<String>,
    pub(super) data: String,
}

impl SseEvent {
    /// Whether this event carries an MCP message (type `message`, data not empty).
    pub(super) fn is_message(&self) -> bool {
        !self.data.is_empty() && self.event.as_deref().is_none_or(|e| e == "message")
    }
}

/// Splits a byte stream into SSE events; remembers the last `retry:`. Holds at most
/// [`MAX_MESSAGE_BYTES`] of an unfinished event.
#[derive(Default)]
pub(super) struct SseParser {
    buf: Vec<u8>,
    /// How far `buf` has been searched for the blank line ending an event (so a large
    /// event arriving in many chunks is scanned once).
    scanned: usize,
    pub(super) retry: Option<std::time::Duration>,
}

impl SseParser {
    pub(super) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, ClientError> {
        // CRLF line ends become LF (JSON data never holds a raw CR).
        self.buf
            .extend(chunk.iter().copied().filter(|&b| b != b'\r'));
        let mut out = Vec::new();
        loop {
            let from = self.scanned.saturating_sub(1);
            let Some(end) = self.buf[from..]
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| i + from)
            else {
                self.scanned = self.buf.len();
                break;
            };
            self.scanned = 0;
            let event: Vec<u8> = self.buf.drain(..end + 2).collect();
            let event = String::from_utf8_lossy(&event[..end]);
            let mut id = None;
            let mut kind = None;
            let mut data: Vec<&str> = Vec::new();
            for line in event.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "data" => data.push(value),
                    "id" => id = Some(value.to_owned()),
                    "event" => kind = Some(value.to_owned()),
                    "retry" => {
                        if let Ok(ms) = value.parse() {
                            self.retry = Some(std::time::Duration::from_millis(ms));
                        }
                    }
                    _ => {}
                }
            }
            if !data.is_empty() || id.is_some() {
                out.push(SseEvent {
                    id,
                    event: kind,
                    data: data.join("\n"),
                });
            }
        }
        if self.buf.len() > MAX_MESSAGE_BYTES {
            return Err(ClientError::Invalid(format!(
                "an event stream event longer than {} MiB",
                MAX_MESSAGE_BYTES >> 20
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::SseParser;

    #[test]
    fn sse_events_split_across_chunks() {
        let mut p = SseParser::default();
        assert!(p.push(b"id: 1\ndata: {\"a\"").unwrap().is_empty());
        let events = p
            .push(b":1}\n\n: keep-alive\n\ndata: x\r\n\r\nid: p1-0\nretry: 500\ndata:\n\nevent: ping\ndata: 1\n\n")
            .unwrap();
        let data: Vec<&str> = events.iter().map(|e| e.data.as_str()).collect();
        assert_eq!(data, vec!["{\"a\":1}", "x", "", "1"]);
        assert!(events[0].is_message() && !events[2].is_message() && !events[3].is_message());
        assert_eq!(events[0].id.as_deref(), Some("1"));
        assert_eq!(events[2].id.as_deref(), Some("p1-0"));
        assert_eq!(p.retry, Some(std::time::Duration::from_millis(500)));
    }
}
