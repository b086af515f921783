//! Reading an Envelope's `request_id` out of bytes that are being skipped (an oversize
//! frame), without storing them: a streaming reader of the top-level protobuf fields.

/// The Envelope's `request_id` field number.
const REQUEST_ID_FIELD: u64 = 14;
/// Longest request id kept; a longer one is skipped like any other field.
const MAX_ID: u64 = 256;

#[derive(Debug)]
enum Step {
    /// Reading a field key (varint).
    Key { value: u64, shift: u32 },
    /// Reading the length of a length-delimited field.
    Len { field: u64, value: u64, shift: u32 },
    /// Reading a varint value.
    Varint,
    /// Dropping this many bytes of a field's value.
    Drop(u64),
    /// Keeping this many more bytes of the request id.
    Keep(u64),
    /// The bytes are not a protobuf message: nothing more can be read.
    Lost,
}

/// Feeds on a message's bytes as they pass; the last complete `request_id` seen is kept
/// (protobuf's last-one-wins for a repeated scalar field).
#[derive(Debug)]
pub(crate) struct RequestIdSalvage {
    step: Step,
    partial: Vec<u8>,
    found: Option<Vec<u8>>,
}

impl RequestIdSalvage {
    /// A reader at the start of a message.
    pub(crate) fn new() -> RequestIdSalvage {
        RequestIdSalvage {
            step: Step::Key { value: 0, shift: 0 },
            partial: Vec::new(),
            found: None,
        }
    }

    /// Reads the next bytes of the message.
    pub(crate) fn feed(&mut self, mut bytes: &[u8]) {
        while let Some(&b) = bytes.first() {
            match &mut self.step {
                Step::Lost => return,
                Step::Drop(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    *left -= take;
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.step = key_start();
                    }
                }
                Step::Keep(left) => {
                    let take = (*left).min(bytes.len() as u64);
                    *left -= take;
                    self.partial.extend_from_slice(&bytes[..take as usize]);
                    bytes = &bytes[take as usize..];
                    if *left == 0 {
                        self.found = Some(std::mem::take(&mut self.partial));
                        self.step = key_start();
                    }
                }
                Step::Key { value, shift } => {
                    bytes = &bytes[1..];
                    if let Some(key) = varint_byte(value, shift, b) {
                        self.step = after_key(key);
                    }
                }
                Step::Len {
                    field,
                    value,
                    shift,
                } => {
                    let field = *field;
                    bytes = &bytes[1..];
                    if let Some(len) = varint_byte(value, shift, b) {
                        self.start_value(field, len);
                    }
                }
                Step::Varint => {
                    bytes = &bytes[1..];
                    if b & 0x80 == 0 {
                        self.step = key_start();
                    }
                }
            }
        }
    }

    /// The request id, if one was read whole and is text.
    pub(crate) fn finish(self) -> Option<String> {
        self.found.and_then(|b| String::from_utf8(b).ok())
    }

    /// A length-delimited value of `len` bytes starts: kept if it is the request id.
    fn start_value(&mut self, field: u64, len: u64) {
        self.partial.clear();
        self.step = match (field == REQUEST_ID_FIELD && len <= MAX_ID, len) {
            (true, 0) => {
                self.found = Some(Vec::new());
                key_start()
            }
            (true, _) => Step::Keep(len),
            (false, 0) => key_start(),
            (false, _) => Step::Drop(len),
        };
    }
}

/// What follows a key: its value's reading step.
fn after_key(key: u64) -> Step {
    match key & 7 {
        0 => Step::Varint,
        1 => Step::Drop(8),
        2 => Step::Len {
            field: key >> 3,
            value: 0,
            shift: 0,
        },
        5 => Step::Drop(4),
        // Groups (3, 4) are not used by the Envelope schema; anything else is not protobuf.
        _ => Step::Lost,
    }
}

fn key_start() -> Step {
    Step::Key { value: 0, shift: 0 }
}

/// Adds one byte to a varint being read; `Some(value)` when it ended. A varint over 64 bits
/// ends as is (its upper bits are lost), which can only misread a message that is broken.
fn varint_byte(value: &mut u64, shift: &mut u32, b: u8) -> Option<u64> {
    if *shift < 64 {
        *value |= u64::from(b & 0x7f) << *shift;
    }
    *shift += 7;
    (b & 0x80 == 0).then_some(*value)
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;
    use crate::pb::{self, Envelope, envelope::Msg};

    fn salvage(bytes: &[u8], chunk: usize) -> Option<String> {
        let mut s = RequestIdSalvage::new();
        for c in bytes.chunks(chunk.max(1)) {
            s.feed(c);
        }
        s.finish()
    }

    #[test]
    fn finds_the_id_behind_a_large_field_in_any_chunking() {
        let env = Envelope {
            msg: Some(Msg::CallResult(pb::CallToolResponse {
                result_json: "r".repeat(5000),
                is_error: true,
                ..Default::default()
            })),
            request_id: "h42".into(),
            namespace: "ns".into(),
        };
        let bytes = env.encode_to_vec();
        for chunk in [1, 2, 3, 7, 100, bytes.len()] {
            assert_eq!(salvage(&bytes, chunk).as_deref(), Some("h42"), "{chunk}");
        }
    }

    #[test]
    fn no_id_garbage_and_huge_ids_give_none() {
        let no_id = Envelope {
            msg: Some(Msg::Log(pb::LogMessage::default())),
            ..Envelope::default()
        };
        assert_eq!(salvage(&no_id.encode_to_vec(), 3), None);
        assert_eq!(salvage(&[0xff; 40], 1), None);
        let huge = Envelope {
            request_id: "x".repeat(1000),
            ..Envelope::default()
        };
        assert_eq!(salvage(&huge.encode_to_vec(), 5), None);
        // Cut off inside the id: not whole, so not used.
        let cut = Envelope {
            request_id: "h7".into(),
            ..Envelope::default()
        }
        .encode_to_vec();
        assert_eq!(salvage(&cut[..cut.len() - 1], 1), None);
    }
}
