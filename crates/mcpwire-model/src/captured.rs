//! A JSON-RPC message decoded with the top-level members of its params that a listener
//! reads beside the envelope — `_meta`, the members MCP routes by (`name`, `arguments`,
//! `uri`, `taskId`) and a 2026-07-28 call's input answers (`inputResponses`,
//! `requestState`) — captured in the same pass ([`decode_capturing`]). The params were
//! read twice before: the envelope's pass scanned them whole to keep them raw, and the
//! listener's pass read them again for those members (≈ 3 k instructions of a stateless
//! `tools/call`'s 48 k).
//!
//! The params' raw text is then the span from the object's `{` to its `}`, found from
//! where its first key and last value lie in the input; what cannot be placed that way (an
//! empty object, a first key with escapes, params that are not an object) and any input
//! the envelope's pass refuses are decoded by [`decode_with_depth`] instead, so the message
//! and the error are always what it would make (a refused message costs that second pass,
//! after the nesting check both share).

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::jsonrpc::{Envelope, decode_with_depth, nesting_exceeds, too_deep};
use crate::{Malformed, Message};

/// The top-level members of a message's params read with its envelope, each a raw value
/// borrowed from the input (`None`: absent).
#[derive(Debug, Default, Clone, Copy)]
pub struct TopMembers<'a> {
    /// `_meta`.
    pub meta: Option<&'a RawValue>,
    /// `name` (a tool's or a prompt's).
    pub name: Option<&'a RawValue>,
    /// `arguments`.
    pub arguments: Option<&'a RawValue>,
    /// `uri` (a resource's).
    pub uri: Option<&'a RawValue>,
    /// `taskId`.
    pub task_id: Option<&'a RawValue>,
    /// `inputResponses` (a 2026-07-28 call's answers to its input requests).
    pub input_responses: Option<&'a RawValue>,
    /// `requestState` (what a 2026-07-28 call's earlier rounds answered, sealed).
    pub request_state: Option<&'a RawValue>,
    /// One of them came twice (a struct reading the params refuses them).
    pub duplicate: bool,
}

impl<'a> TopMembers<'a> {
    /// The members of params text `text`, read as [`decode_capturing`] reads them (none
    /// when they are not an object); an error when `text` is not JSON.
    pub fn read(text: &'a str) -> serde_json::Result<TopMembers<'a>> {
        serde_json::from_str::<Capture<'a>>(text).map(|c| c.members)
    }
}

/// What [`decode_capturing`] read of a message's params besides keeping them raw.
#[derive(Debug, Clone, Copy)]
pub struct Captured<'a> {
    /// The members.
    pub members: TopMembers<'a>,
    /// Where the params' text starts in the input (for [`Captured::range`]).
    start: usize,
}

impl Captured<'_> {
    /// Where `member` (one of [`Captured::members`]) lies in the params' text.
    pub fn range(&self, member: &RawValue) -> std::ops::Range<usize> {
        let at = member.get().as_ptr() as usize - self.start;
        at..at + member.get().len()
    }
}

/// Decodes one message as [`decode_with_depth`] does, capturing its params' top-level
/// members in the same pass when the params are an object it can place (`None` otherwise:
/// then they were not read, and the message came from [`decode_with_depth`] itself).
pub fn decode_capturing(
    bytes: &[u8],
    max_depth: usize,
) -> Result<(Message, Option<Captured<'_>>), Malformed> {
    if nesting_exceeds(bytes, max_depth) {
        return Err(too_deep(max_depth));
    }
    let Ok(env) = serde_json::from_slice::<Envelope<'_, Capture<'_>>>(bytes) else {
        // Refused: the plain decoder says why in its own words (serde words some errors
        // differently when the params are visited rather than skipped).
        return decode_with_depth(bytes, max_depth).map(|m| (m, None));
    };
    let (params, captured) = match &env.params {
        None => (None, None),
        Some(capture) => match capture.span(bytes) {
            Some((text, start)) => {
                // SAFETY: `text` is exactly the object serde_json just parsed as the
                // params — from its `{` to its matching `}`, both located over JSON
                // whitespace only from its first key and last value (`Capture::span`) —
                // so it is one well-formed JSON value with no whitespace around it. In
                // debug builds serde_json checks this again.
                #[allow(unsafe_code)]
                let raw = unsafe { RawValue::from_string_unchecked(text.to_owned()) };
                let captured = Captured {
                    members: capture.members,
                    start,
                };
                (Some(Cow::Owned(raw)), Some(captured))
            }
            None => return decode_with_depth(bytes, max_depth).map(|m| (m, None)),
        },
    };
    env.into_message(params).map(|m| (m, captured))
}

/// The params as the envelope's pass read them: the members, and where the object's
/// first key and last value lie (to find its text).
#[derive(Default)]
struct Capture<'a> {
    members: TopMembers<'a>,
    /// The first key, when it was borrowed from the input (no escapes) — `None` for an
    /// empty object or a key with escapes.
    first_key: Option<&'a str>,
    /// The last member's value.
    last_value: Option<&'a RawValue>,
}

impl<'a> Capture<'a> {
    /// The params' text in `input` and where it starts, from the `{` before the first key
    /// to the `}` after the last value (only JSON whitespace between); `None` when that
    /// cannot be said.
    fn span(&self, input: &'a [u8]) -> Option<(&'a str, usize)> {
        let base = input.as_ptr() as usize;
        let key = self.first_key?.as_ptr() as usize - base;
        let mut open = key.checked_sub(1)?;
        if input[open] != b'"' {
            return None;
        }
        loop {
            open = open.checked_sub(1)?;
            match input[open] {
                b'{' => break,
                b' ' | b'\t' | b'\n' | b'\r' => {}
                _ => return None,
            }
        }
        let last = self.last_value?.get();
        let mut close = last.as_ptr() as usize - base + last.len();
        loop {
            match input.get(close)? {
                b'}' => break,
                b' ' | b'\t' | b'\n' | b'\r' => close += 1,
                _ => return None,
            }
        }
        let text = std::str::from_utf8(&input[open..=close]).ok()?;
        Some((text, text.as_ptr() as usize))
    }
}

impl<'de> Deserialize<'de> for Capture<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(CaptureVisitor)
    }
}

struct CaptureVisitor;

impl<'de> Visitor<'de> for CaptureVisitor {
    type Value = Capture<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("params")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Capture<'de>, A::Error> {
        let mut capture = Capture::default();
        let mut first = true;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let value: &'de RawValue = map.next_value()?;
            if first {
                capture.first_key = match key {
                    Key::Borrowed(k) => Some(k),
                    Key::Owned(_) => None,
                };
                first = false;
            }
            capture.last_value = Some(value);
            let m = &mut capture.members;
            let slot = match key.as_str() {
                "_meta" => &mut m.meta,
                "name" => &mut m.name,
                "arguments" => &mut m.arguments,
                "uri" => &mut m.uri,
                "taskId" => &mut m.task_id,
                "inputResponses" => &mut m.input_responses,
                "requestState" => &mut m.request_state,
                _ => continue,
            };
            if slot.is_some() {
                m.duplicate = true;
            }
            *slot = Some(value);
        }
        Ok(capture)
    }

    // Params that are not an object are refused here (a visitor's default), so the plain
    // decoder takes the message: it makes the same of them, accepted or not.
}

/// A key, borrowed from the input when it has no escapes.
enum Key<'a> {
    Borrowed(&'a str),
    Owned(String),
}

impl Key<'_> {
    fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(k) => k,
            Key::Owned(k) => k,
        }
    }
}

struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key<'de>, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
        Ok(Key::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
        Ok(Key::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bodies of every shape the plain decoder meets: each decoded both ways.
    fn corpus() -> Vec<Vec<u8>> {
        let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}"#;
        let mut bodies: Vec<String> = vec![
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}},"_meta":{meta}}}}}"#
            ),
            format!(
                "{{ \"jsonrpc\" : \"2.0\" ,\n \"params\" :\t{{\n  \"_meta\" : {meta} ,\r\n  \"name\" : \"echo\" , \"arguments\" : {{ }}\n }} , \"method\":\"tools/call\",\"id\":\"a\"}}"
            ),
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"e\"c\\ho","arguments":{"t":"{}}}\"[["},"x":[1,{"y":null}]}}"#.into(),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"\u006eame":"echo","arguments":{}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","\u0061rguments":{"a":1}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}"#.into(),
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{ }}"#.into(),
            r#"{"jsonrpc":"2.0","id":7,"method":"m","params":[1,2,{"a":[]}]}"#.into(),
            r#"{"jsonrpc":"2.0","id":8,"method":"m","params":"text"}"#.into(),
            r#"{"jsonrpc":"2.0","id":9,"method":"m","params":null}"#.into(),
            r#"{"jsonrpc":"2.0","id":10,"method":"m","params":5}"#.into(),
            r#"{"jsonrpc":"2.0","id":11,"method":"m","params":true}"#.into(),
            r#"{"jsonrpc":"2.0","id":12,"method":"m"}"#.into(),
            r#"{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"a","name":"b"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":14,"method":"resources/read","params":{"uri":"file:///x","_meta":{"progressToken":3}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":15,"method":"tasks/get","params":{"taskId":"t1","other":{"deep":[[[]]]}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":27,"method":"tools/call","params":{"name":"ask","inputResponses":{"k":{"action":"accept"}},"requestState":"s.e.a.l"}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#.into(),
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":"bad"}"#.into(),
            r#"{"jsonrpc":"2.0","id":16,"result":{"content":[]}}"#.into(),
            r#"{"jsonrpc":"2.0","id":17,"error":{"code":-32600,"message":"no"}}"#.into(),
            r#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"echo","arguments":{"text":"é ☃ 😀"}}}"#.into(),
            r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo""#.into(),
            r#"{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":echo}}"#.into(),
            r#"{"jsonrpc":"1.0","id":21,"method":"m","params":{"a":1}}"#.into(),
            r#"{"jsonrpc":"2.0","id":null,"method":"m","params":{"a":1}}"#.into(),
            r#"{"jsonrpc":"2.0","id":22,"method":"m","params":{"a":1},"params":{"b":2}}"#.into(),
            r#"{"jsonrpc":"2.0","id":23,"method":"m","params":{"a":1},"result":1}"#.into(),
            r#"[{"jsonrpc":"2.0","id":24,"method":"m","params":{"a":1}}]"#.into(),
            r#"{"jsonrpc":"2.0","id":25,"method":"m","params":{"a":1}} trailing"#.into(),
            format!(r#"{{"jsonrpc":"2.0","id":26,"method":"m","params":{{"a":{}}}}}"#, "[".repeat(80) + &"]".repeat(80)),
            "  \n".into(),
            String::new(),
        ];
        // Each body cut short at every point: truncation.
        let whole = bodies[0].clone();
        for n in (0..whole.len()).step_by(7) {
            bodies.push(whole[..n].to_owned());
        }
        let mut bytes: Vec<Vec<u8>> = bodies.into_iter().map(String::into_bytes).collect();
        // Invalid UTF-8 in a key, in a value, and around the params.
        bytes.push(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"\xff\":1}}".to_vec(),
        );
        bytes.push(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xc3\"}}".to_vec(),
        );
        bytes.push(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":1}\xfe}".to_vec(),
        );
        bytes
    }

    #[test]
    fn decoding_with_the_members_makes_what_the_plain_decoder_makes() {
        for body in corpus() {
            let plain = decode_with_depth(&body, 64);
            let captured = decode_capturing(&body, 64);
            let shown = String::from_utf8_lossy(&body);
            match (&plain, &captured) {
                (Ok(p), Ok((c, _))) => assert_eq!(format!("{p:?}"), format!("{c:?}"), "{shown}"),
                (Err(p), Err(c)) => assert_eq!(format!("{p:?}"), format!("{c:?}"), "{shown}"),
                _ => panic!("{shown}: {plain:?} against {captured:?}"),
            }
        }
    }

    /// The members as a struct reading the params text would find them.
    #[derive(Deserialize)]
    struct Members<'a> {
        #[serde(rename = "_meta", borrow, default)]
        meta: Option<&'a RawValue>,
        #[serde(borrow, default)]
        name: Option<&'a RawValue>,
        #[serde(borrow, default)]
        arguments: Option<&'a RawValue>,
        #[serde(borrow, default)]
        uri: Option<&'a RawValue>,
        #[serde(rename = "taskId", borrow, default)]
        task_id: Option<&'a RawValue>,
        #[serde(rename = "inputResponses", borrow, default)]
        input_responses: Option<&'a RawValue>,
        #[serde(rename = "requestState", borrow, default)]
        request_state: Option<&'a RawValue>,
    }

    #[test]
    fn the_members_are_what_a_struct_reading_the_params_finds() {
        let mut captured_some = 0;
        for body in corpus() {
            let Ok((msg, Some(captured))) = decode_capturing(&body, 64) else {
                continue;
            };
            captured_some += 1;
            let params = match msg {
                Message::Request(r) => r.params,
                Message::Notification(n) => n.params,
                Message::Response(_) => panic!("a response has no params"),
            };
            let text = params.as_deref().map(RawValue::get).expect("params");
            let shown = String::from_utf8_lossy(&body);
            let m = captured.members;
            match serde_json::from_str::<Members<'_>>(text) {
                Ok(read) => {
                    assert!(!m.duplicate, "{shown}");
                    let pairs = [
                        (m.meta, read.meta),
                        (m.name, read.name),
                        (m.arguments, read.arguments),
                        (m.uri, read.uri),
                        (m.task_id, read.task_id),
                        (m.input_responses, read.input_responses),
                        (m.request_state, read.request_state),
                    ];
                    for (got, want) in pairs {
                        assert_eq!(got.map(RawValue::get), want.map(RawValue::get), "{shown}");
                        if let Some(got) = got {
                            assert_eq!(&text[captured.range(got)], got.get(), "{shown}");
                        }
                    }
                }
                Err(e) => assert!(m.duplicate, "{shown}: {e}"),
            }
        }
        assert!(
            captured_some >= 9,
            "the corpus places most params: {captured_some}"
        );
    }

    #[test]
    fn what_cannot_be_placed_is_left_to_the_plain_decoder() {
        for body in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"\u0061":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}"#,
        ] {
            let (_, captured) = decode_capturing(body.as_bytes(), 64).expect(body);
            assert!(captured.is_none(), "{body}");
        }
    }
}
