//! The JSON-RPC 2.0 envelope: decoding inbound messages and encoding outbound ones.
//!
//! Decoding parses the envelope as one struct and classifies the message by which fields are
//! present; `params` and `result` stay raw. A message that cannot be classified becomes a
//! [`Malformed`] carrying the error reply to send (and the id, when one could be read).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::{ErrorObject, McpError};
use crate::{Method, Raw, RequestId};

/// A decoded inbound JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    /// A request expecting a response.
    Request(Request),
    /// A notification (no id, no response).
    Notification(Notification),
    /// A response to a request this side sent.
    Response(Response),
}

/// A JSON-RPC request.
#[derive(Debug)]
pub struct Request {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method called.
    pub method: Method,
    /// The raw `params`, if present.
    pub params: Option<Raw>,
}

/// A JSON-RPC notification.
#[derive(Debug)]
pub struct Notification {
    /// The notification's method.
    pub method: Method,
    /// The raw `params`, if present.
    pub params: Option<Raw>,
}

/// A JSON-RPC response.
#[derive(Debug)]
pub struct Response {
    /// The id of the request this answers.
    pub id: RequestId,
    /// The raw result, or the error object.
    pub outcome: Result<Raw, ErrorObject>,
}

/// A message that could not be decoded, with the error reply it deserves.
#[derive(Debug, Clone)]
pub struct Malformed {
    /// The id to answer, when it could be read (`None` answers with `"id": null`).
    pub id: Option<RequestId>,
    /// The JSON-RPC error to reply with.
    pub error: ErrorObject,
    /// Whether a reply should be sent at all (false for malformed responses and
    /// notifications, which JSON-RPC says must not be answered).
    pub reply: bool,
}

impl Malformed {
    /// A malformed message answered with `error`, which must be one every revision spells
    /// the same (a codec does not know the revision): a parse error, an invalid request, an
    /// oversize message.
    pub fn new(id: Option<RequestId>, error: McpError) -> Malformed {
        Malformed {
            id,
            error: error.to_wire_unnegotiated(),
            reply: true,
        }
    }

    /// A malformed message answered with −32700 (parse error) and `"id": null`; `detail`
    /// says what is wrong.
    pub fn parse_error(detail: impl Into<String>) -> Malformed {
        Malformed::new(None, McpError::ParseError(detail.into()))
    }

    /// A malformed message answered with −32600 (invalid request); `detail` says what is
    /// wrong.
    pub fn invalid_request(id: Option<RequestId>, detail: impl Into<String>) -> Malformed {
        Malformed::new(id, McpError::InvalidRequest(detail.into()))
    }
}

/// The `id` field as found in the envelope: absent, `null`, a valid id, or something invalid.
#[derive(Debug, Default)]
enum IdField {
    #[default]
    Absent,
    Null,
    Valid(RequestId),
    Invalid,
}

impl<'de> Deserialize<'de> for IdField {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IdField;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a request id")
            }
            fn visit_unit<E: de::Error>(self) -> Result<IdField, E> {
                Ok(IdField::Null)
            }
            fn visit_none<E: de::Error>(self) -> Result<IdField, E> {
                Ok(IdField::Null)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdField, E> {
                Ok(IdField::Valid(RequestId::Int(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdField, E> {
                Ok(
                    i64::try_from(v)
                        .map_or(IdField::Invalid, |v| IdField::Valid(RequestId::Int(v))),
                )
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<IdField, E> {
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    Ok(IdField::Valid(RequestId::Int(v as i64)))
                } else {
                    Ok(IdField::Invalid)
                }
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IdField, E> {
                Ok(IdField::Valid(RequestId::Str(v.into())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<IdField, E> {
                Ok(IdField::Invalid)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
                while a.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IdField::Invalid)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut a: A) -> Result<IdField, A::Error> {
                while a.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IdField::Invalid)
            }
        }
        d.deserialize_any(V)
    }
}

impl IdField {
    fn id(&self) -> Option<RequestId> {
        match self {
            IdField::Valid(id) => Some(id.clone()),
            _ => None,
        }
    }
}

/// A message as one struct; `P`: how its params are read (raw, or their members captured
/// as well: `crate::captured`).
#[derive(Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de>"))]
pub(crate) struct Envelope<'a, P> {
    #[serde(borrow, default, deserialize_with = "borrowed_text")]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(default)]
    id: IdField,
    #[serde(borrow, default, deserialize_with = "borrowed_text")]
    method: Option<Cow<'a, str>>,
    #[serde(default)]
    pub(crate) params: Option<P>,
    /// Present even when `null` (a valid JSON-RPC result), unlike a plain `Option`.
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorObject>,
}

/// A string member, borrowed from the input unless it holds escapes (serde copies every
/// `Option<Cow<str>>`: two allocations per message for `jsonrpc` and `method`).
fn borrowed_text<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Cow<'de, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Option::<Text<'de>>::deserialize(d).map(|t| t.map(|Text(s)| s))
}

/// A member that is present, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct IdOnly {
    #[serde(default)]
    id: IdField,
}

/// The default nesting limit of [`decode`]: deeper arrays/objects are refused.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Decodes one JSON-RPC message from `bytes` (one NDJSON line, one HTTP body, one frame)
/// with the default nesting limit.
pub fn decode(bytes: &[u8]) -> Result<Message, Malformed> {
    decode_with_depth(bytes, DEFAULT_MAX_DEPTH)
}

/// Decodes one JSON-RPC message, refusing JSON nested deeper than `max_depth`.
///
/// Never panics and never recurses deeper than `max_depth`: raw `params` are scanned
/// before anything is parsed, so hostile input costs at most two passes over the bytes.
pub fn decode_with_depth(bytes: &[u8], max_depth: usize) -> Result<Message, Malformed> {
    if nesting_exceeds(bytes, max_depth) {
        return Err(too_deep(max_depth));
    }
    let env: Envelope<'_, &RawValue> = match serde_json::from_slice(bytes) {
        Ok(env) => env,
        Err(e) => return Err(classify_error(bytes, &e)),
    };
    let params = env.params.map(Cow::Borrowed);
    env.into_message(params)
}

/// The refusal of JSON nested deeper than `max_depth` levels.
pub(crate) fn too_deep(max_depth: usize) -> Malformed {
    Malformed::parse_error(format!("JSON nested deeper than {max_depth} levels"))
}

impl<'a, P> Envelope<'a, P> {
    /// The message this envelope is, its params being `params` (as read, whatever `P` is).
    pub(crate) fn into_message(
        self,
        params: Option<Cow<'a, RawValue>>,
    ) -> Result<Message, Malformed> {
        let env = self;
        if env.jsonrpc.as_deref() != Some("2.0") {
            return Err(Malformed::invalid_request(
                env.id.id(),
                "\"jsonrpc\" must be \"2.0\"",
            ));
        }
        match (env.method, env.id) {
            (Some(method), IdField::Valid(id)) => {
                if env.result.is_some() || env.error.is_some() {
                    return Err(Malformed::invalid_request(
                        Some(id),
                        "a request cannot carry result or error",
                    ));
                }
                check_params(params.as_deref(), Some(&id))?;
                Ok(Message::Request(Request {
                    id,
                    method: Method::parse(&method),
                    params: params.map(Cow::into_owned),
                }))
            }
            (Some(method), IdField::Absent) => {
                if check_params(params.as_deref(), None).is_err() {
                    return Err(Malformed {
                        reply: false,
                        ..Malformed::invalid_request(None, "Invalid notification params")
                    });
                }
                Ok(Message::Notification(Notification {
                    method: Method::parse(&method),
                    params: params.map(Cow::into_owned),
                }))
            }
            (Some(_), IdField::Null | IdField::Invalid) => Err(Malformed::invalid_request(
                None,
                "id must be a string or an integer",
            )),
            (None, IdField::Valid(id)) => match (env.result, env.error) {
                (Some(result), None) => Ok(Message::Response(Response {
                    id,
                    outcome: Ok(result.to_owned()),
                })),
                (None, Some(error)) => Ok(Message::Response(Response {
                    id,
                    outcome: Err(error),
                })),
                (None, None) => Err(Malformed::invalid_request(Some(id), "missing \"method\"")),
                (Some(_), Some(_)) => Err(Malformed {
                    reply: false,
                    ..Malformed::invalid_request(Some(id), "response carries both result and error")
                }),
            },
            (None, IdField::Null) if env.error.is_some() => Err(Malformed {
                // An error reply about something we sent that the peer could not read.
                reply: false,
                ..Malformed::invalid_request(None, "peer reported an error with id null")
            }),
            (None, id) => Err(Malformed::invalid_request(id.id(), "missing \"method\"")),
        }
    }
}

/// Whether `bytes` nests arrays/objects deeper than `max`. String contents are skipped with
/// `memchr`, so long strings (the bulk of large payloads) cost a vectorized search, not a
/// byte-by-byte walk. [`decode_with_depth`] refuses such input; a raw-frame path that
/// forwards bytes undecoded checks it first, as the decoder would.
///
/// A message with no more opening brackets in all (strings' included) than `max` cannot
/// nest deeper: that is counted first (vectorized, and most messages end there), the walk
/// runs only past it.
pub fn nesting_exceeds(bytes: &[u8], max: usize) -> bool {
    brackets_exceed(bytes, max) && nesting_walk_exceeds(bytes, max)
}

/// Whether `bytes` holds more than `max` opening brackets, counted in blocks so a long
/// input stops counting once past it.
fn brackets_exceed(bytes: &[u8], max: usize) -> bool {
    let mut seen = 0usize;
    for block in bytes.chunks(512) {
        seen += memchr::memchr2_iter(b'{', b'[', block).count();
        if seen > max {
            return true;
        }
    }
    false
}

/// The nesting walk itself: strings skipped, brackets counted by depth.
fn nesting_walk_exceeds(bytes: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                // Skip to the closing quote, hopping over escapes.
                i += 1;
                loop {
                    let Some(rest) = bytes.get(i..) else {
                        return false; // an escape at the very end: unterminated
                    };
                    match memchr::memchr2(b'"', b'\\', rest) {
                        Some(off) if bytes[i + off] == b'\\' => i += off + 2,
                        Some(off) => {
                            i += off;
                            break;
                        }
                        None => return false, // unterminated: the parser reports it
                    }
                }
            }
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    false
}

fn check_params(params: Option<&RawValue>, id: Option<&RequestId>) -> Result<(), Malformed> {
    match params.map(|p| p.get().as_bytes().first().copied()) {
        None | Some(Some(b'{')) | Some(Some(b'[')) => Ok(()),
        Some(_) => Err(Malformed::invalid_request(
            id.cloned(),
            "params must be an object or an array",
        )),
    }
}

fn classify_error(bytes: &[u8], e: &serde_json::Error) -> Malformed {
    let first = bytes.iter().copied().find(|b| !b.is_ascii_whitespace());
    if first == Some(b'[') && !e.is_syntax() && !e.is_eof() {
        return Malformed::invalid_request(
            None,
            "JSON-RPC batches are not supported by this protocol revision",
        );
    }
    match e.classify() {
        serde_json::error::Category::Data => {
            let id = serde_json::from_slice::<IdOnly>(bytes)
                .ok()
                .and_then(|v| v.id.id());
            Malformed::invalid_request(id, e.to_string())
        }
        _ => Malformed::parse_error(e.to_string()),
    }
}

/// An outbound JSON-RPC message, built by a session and encoded by a wire.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A successful response.
    Response {
        /// The request id being answered.
        id: RequestId,
        /// The raw result.
        result: Raw,
    },
    /// An error response; `id` is `None` when the request's id could not be read.
    Error {
        /// The request id being answered.
        id: Option<RequestId>,
        /// The error object.
        error: ErrorObject,
    },
    /// A notification.
    Notification {
        /// The notification's method name.
        method: Cow<'static, str>,
        /// The raw params.
        params: Option<Raw>,
    },
    /// A request to the peer (server → client asks).
    Request {
        /// The id this side minted.
        id: RequestId,
        /// The method name.
        method: Cow<'static, str>,
        /// The raw params.
        params: Option<Raw>,
    },
}

#[derive(Serialize)]
struct OutEnvelope<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<Option<&'a RequestId>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    method: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ErrorObject>,
}

impl Outbound {
    /// Writes this message as compact JSON (no trailing newline) to `out`.
    pub fn write_json(&self, out: impl std::io::Write) -> std::io::Result<()> {
        let env = match self {
            Outbound::Response { id, result } => OutEnvelope {
                id: Some(Some(id)),
                result: Some(result),
                ..OutEnvelope::EMPTY
            },
            Outbound::Error { id, error } => OutEnvelope {
                id: Some(id.as_ref()),
                error: Some(error),
                ..OutEnvelope::EMPTY
            },
            Outbound::Notification { method, params } => OutEnvelope {
                method: Some(method),
                params: params.as_deref(),
                ..OutEnvelope::EMPTY
            },
            Outbound::Request { id, method, params } => OutEnvelope {
                id: Some(Some(id)),
                method: Some(method),
                params: params.as_deref(),
                ..OutEnvelope::EMPTY
            },
        };
        serde_json::to_writer(out, &env).map_err(std::io::Error::from)
    }

    /// This message as a compact JSON string.
    pub fn to_json_string(&self) -> String {
        let mut v = Vec::with_capacity(self.encoded_len_hint());
        // Writing into a Vec cannot fail.
        let _ = self.write_json(&mut v);
        String::from_utf8(v).unwrap_or_default()
    }

    /// About how many bytes [`Outbound::write_json`] writes: a buffer of this capacity
    /// rarely grows (the envelope around a result or params, plus their own length).
    pub fn encoded_len_hint(&self) -> usize {
        const ENVELOPE: usize = 96;
        ENVELOPE
            + match self {
                Outbound::Response { result, .. } => result.get().len(),
                Outbound::Error { error, .. } => {
                    error.message.len() + error.data.as_ref().map_or(0, |d| d.get().len())
                }
                Outbound::Notification { params, .. } | Outbound::Request { params, .. } => {
                    params.as_ref().map_or(0, |p| p.get().len())
                }
            }
    }

    /// The request id this message answers, if it is a response.
    pub fn response_id(&self) -> Option<&RequestId> {
        match self {
            Outbound::Response { id, .. } => Some(id),
            Outbound::Error { id, .. } => id.as_ref(),
            _ => None,
        }
    }
}

impl OutEnvelope<'_> {
    const EMPTY: OutEnvelope<'static> = OutEnvelope {
        jsonrpc: "2.0",
        id: None,
        method: None,
        params: None,
        result: None,
        error: None,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes;

    fn err_code(r: Result<Message, Malformed>) -> (i64, Option<RequestId>) {
        let m = r.expect_err("should be malformed");
        (m.error.code, m.id)
    }

    #[test]
    fn escaped_and_plain_members_read_alike() {
        // `jsonrpc` and `method` are borrowed when plain and copied when escaped.
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2\u002e0","id":1,"method":"tools\/call"}"#,
        ] {
            match decode(text.as_bytes()) {
                Ok(Message::Request(r)) => assert_eq!(r.method, Method::ToolsCall),
                other => panic!("{text}: {other:?}"),
            }
        }
        for bad in [
            r#"{"jsonrpc":2,"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        ] {
            assert_eq!(
                err_code(decode(bad.as_bytes())).0,
                codes::INVALID_REQUEST,
                "{bad}"
            );
        }
        assert_eq!(
            err_code(decode(br#"{"jsonrpc":null,"id":1,"method":"x"}"#)).0,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn a_null_result_is_a_response() {
        // JSON-RPC allows `"result": null`; it is not a missing member (found while fuzzing).
        match decode(br#"{"jsonrpc":"2.0","id":1,"result":null}"#) {
            Ok(Message::Response(Response {
                outcome: Ok(raw), ..
            })) => assert_eq!(raw.get(), "null"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            err_code(decode(
                br#"{"jsonrpc":"2.0","id":1,"method":"x","result":null}"#
            ))
            .0,
            codes::INVALID_REQUEST
        );
        assert_eq!(
            err_code(decode(br#"{"jsonrpc":"2.0","id":1}"#)).0,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn classifies_requests_notifications_responses() {
        let m = decode(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#).unwrap();
        assert!(matches!(
            m,
            Message::Request(Request {
                method: Method::ToolsList,
                ..
            })
        ));
        let m = decode(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap();
        assert!(matches!(m, Message::Notification(_)));
        let m = decode(br#"{"jsonrpc":"2.0","id":"a","result":{"x":1}}"#).unwrap();
        assert!(matches!(
            m,
            Message::Response(Response { outcome: Ok(_), .. })
        ));
        let m = decode(br#"{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}"#).unwrap();
        assert!(matches!(
            m,
            Message::Response(Response {
                outcome: Err(_),
                ..
            })
        ));
    }

    #[test]
    fn bad_input_gets_the_right_code() {
        assert_eq!(err_code(decode(b"{not json")), (codes::PARSE_ERROR, None));
        assert_eq!(err_code(decode(b"")).0, codes::PARSE_ERROR);
        assert_eq!(err_code(decode(b"\xff\xfe")).0, codes::PARSE_ERROR);
        assert_eq!(
            err_code(decode(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\xff\"}"
            ))
            .0,
            codes::PARSE_ERROR
        );
        assert_eq!(
            err_code(decode(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)),
            (codes::INVALID_REQUEST, None)
        );
        assert_eq!(
            err_code(decode(br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#)),
            (codes::INVALID_REQUEST, Some(RequestId::Int(3)))
        );
        assert_eq!(
            err_code(decode(br#"{"jsonrpc":"2.0","id":4,"method":12}"#)),
            (codes::INVALID_REQUEST, Some(RequestId::Int(4)))
        );
        assert_eq!(
            err_code(decode(
                br#"{"jsonrpc":"2.0","id":5,"method":"x","params":3}"#
            )),
            (codes::INVALID_REQUEST, Some(RequestId::Int(5)))
        );
        assert_eq!(err_code(decode(b"42")).0, codes::INVALID_REQUEST);
        assert_eq!(
            err_code(decode(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#)).0,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let mut s = String::from(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"#);
        s.push_str(&"[".repeat(100_000));
        s.push_str(&"]".repeat(100_000));
        s.push_str("}}");
        let (code, _) = err_code(decode(s.as_bytes()));
        assert_eq!(code, codes::PARSE_ERROR);
    }

    #[test]
    fn nesting_scan_skips_strings_and_escapes() {
        assert!(!nesting_exceeds(br#"{"a":"[[[[\"]]]{{{"}"#, 1));
        assert!(nesting_exceeds(br#"{"a":[[1]]}"#, 2));
        assert!(!nesting_exceeds(br#"{"a":[[1]]}"#, 3));
        assert!(!nesting_exceeds(b"\"abc\\", 1));
        // Past the bracket count, the walk decides (brackets in strings do not nest).
        let many_in_strings = format!("{{\"a\":\"{}\"}}", "[".repeat(100));
        assert!(!nesting_exceeds(many_in_strings.as_bytes(), 4));
        let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
        assert!(nesting_exceeds(deep.as_bytes(), 64));
        assert!(!nesting_exceeds(deep.as_bytes(), 65));
        // Wide but shallow, past the count's first block.
        let wide = format!("[{}1]", "[1],".repeat(1000));
        assert!(!nesting_exceeds(wide.as_bytes(), 2));
        assert!(nesting_exceeds(wide.as_bytes(), 1));
    }

    #[test]
    fn encodes_compactly() {
        let o = Outbound::Response {
            id: RequestId::Int(1),
            result: crate::to_raw(&serde_json::json!({"a": 1})),
        };
        assert_eq!(
            o.to_json_string(),
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#
        );
        let o = Outbound::Error {
            id: None,
            error: McpError::ParseError("x".into()).to_wire_unnegotiated(),
        };
        assert_eq!(
            o.to_json_string(),
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}"#
        );
    }
}
