//! Every claim `mcpwire_wire::json_frame` makes about a frame, checked against `serde_json`
//! (and the model's decoder) reading the same bytes. Shared by the test vectors
//! (`tests/json_frame_vectors.rs`) and the `json_frame` fuzz target (`fuzz/`, by path).
//!
//! [`check`] panics, naming the claim, when one is wrong; it says nothing about frames the
//! scan gives up on (giving up is always allowed: the caller decodes).

use std::collections::BTreeMap;

use bytes::BytesMut;
use mcpwire_model::jsonrpc::{decode_with_depth, nesting_exceeds};
use mcpwire_model::{Message, Method, Outbound, RequestId};
use mcpwire_wire::json_frame::{self, ObjectMembers};
use serde_json::value::RawValue;

/// What the scan said of one frame (for tests to compare with what they expect).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// The frame's members were read: their keys, in order.
    pub members: Option<Vec<String>>,
    /// It is a plain call: its id text, tool and arguments.
    pub call: Option<(String, String, Option<String>)>,
    /// It is a plain result: its id.
    pub result: Option<u64>,
}

/// A JSON object as serde reads it: its members' decoded keys and raw values, or `None`
/// when serde refuses it. Also how many members it had (a repeated key is one map entry).
fn serde_object(text: &[u8]) -> Option<(BTreeMap<String, &RawValue>, usize)> {
    // Counts members while collecting, so a repeated key shows.
    struct Counted<'a>(BTreeMap<String, &'a RawValue>, usize);
    impl<'de> serde::Deserialize<'de> for Counted<'de> {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Counted<'de>;
                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("an object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<Counted<'de>, A::Error> {
                    let mut out = Counted(BTreeMap::new(), 0);
                    while let Some((k, v)) = map.next_entry::<String, &'de RawValue>()? {
                        out.0.insert(k, v);
                        out.1 += 1;
                    }
                    Ok(out)
                }
            }
            d.deserialize_map(Visit)
        }
    }
    let Counted(map, n) = serde_json::from_slice::<Counted<'_>>(text).ok()?;
    Some((map, n))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Checks every claim the scan makes about `frame` read with `max_depth`, and returns them.
pub fn check(frame: &[u8], max_depth: usize) -> Claims {
    let mut claims = Claims::default();
    let shown = text(frame);
    if let Some(members) = ObjectMembers::read(frame, max_depth) {
        let Some((map, count)) = serde_object(frame) else {
            panic!("members read from a frame serde refuses: {shown:?}");
        };
        assert!(std::str::from_utf8(frame).is_ok(), "not UTF-8: {shown:?}");
        assert!(
            !nesting_exceeds(frame, max_depth),
            "deeper than {max_depth}: {shown:?}"
        );
        assert_eq!(count, map.len(), "a repeated key was read: {shown:?}");
        assert_eq!(members.len(), count, "member count: {shown:?}");
        let mut keys = Vec::new();
        for (key, at) in members.iter() {
            let key = String::from_utf8(key.to_vec()).expect("keys are UTF-8");
            let serde_value = map.get(&key).map(|v| v.get().as_bytes());
            assert_eq!(
                serde_value,
                frame.get(at.clone()),
                "member {key:?} of {shown:?}"
            );
            // Replacing it keeps the others and puts the new value in.
            let mut out = Vec::new();
            let old = json_frame::replace_member(frame, &key, b"[0]", max_depth, &mut out);
            assert_eq!(old, Some(at), "replace_member {key:?} of {shown:?}");
            let (replaced, _) = serde_object(&out).expect("a replaced frame is JSON");
            assert_eq!(replaced.get(&key).map(|v| v.get()), Some("[0]"));
            assert_eq!(replaced.len(), map.len());
            if let Some(name) = json_frame::plain_string_member(frame, &key, max_depth) {
                let decoded: Option<String> = map
                    .get(&key)
                    .and_then(|v| serde_json::from_str(v.get()).ok());
                assert_eq!(
                    decoded.as_deref(),
                    Some(name),
                    "string {key:?} of {shown:?}"
                );
            }
            keys.push(key);
        }
        claims.members = Some(keys);
    } else {
        assert!(json_frame::member(frame, "id", max_depth).is_none());
    }
    if let Some(call) = json_frame::plain_call(frame, max_depth) {
        claims.call = Some(check_call(frame, max_depth, &call));
    }
    if let Some(result) = json_frame::plain_result(frame, max_depth) {
        check_result(frame, max_depth, &result);
        claims.result = Some(result.id());
    }
    if let Some(params) = json_frame::plain_params(frame, max_depth) {
        check_params(frame, &params);
    }
    if let Ok(json) = std::str::from_utf8(frame) {
        for key in ["isError", "id", "name"] {
            if !json_frame::may_have_member(json, key)
                && let Ok(value) = serde_json::from_str::<serde_json::Value>(json)
            {
                assert!(!has_member(&value, key), "{key:?} missed in {shown:?}");
            }
        }
    }
    claims
}

/// Checks a plain call against the model's decoder and serde; its id text, tool and
/// arguments.
fn check_call(
    frame: &[u8],
    max_depth: usize,
    call: &json_frame::PlainCall<'_>,
) -> (String, String, Option<String>) {
    let shown = text(frame);
    let (map, _) = serde_object(frame).expect("a plain call is an object");
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "jsonrpc", "method", "params"], "{shown:?}");
    let Ok(Message::Request(req)) = decode_with_depth(frame, max_depth) else {
        panic!("a plain call the decoder does not read as a request: {shown:?}");
    };
    assert_eq!(&req.id, call.request_id(), "{shown:?}");
    assert_eq!(req.method, Method::ToolsCall, "{shown:?}");
    let id_text = call.id_text();
    assert_eq!(frame.get(call.id_at()), Some(id_text.as_bytes()));
    assert_eq!(
        serde_json::to_string(call.request_id()).ok().as_deref(),
        std::str::from_utf8(id_text.as_bytes()).ok(),
        "the id is written back as it came: {shown:?}"
    );
    let params = req.params.as_deref().expect("params").get().as_bytes();
    let plain = json_frame::plain_params(params, max_depth).expect("plain params");
    check_params(params, &plain);
    assert_eq!(params.get(plain.name.clone()), Some(call.tool().as_bytes()));
    let arguments = call.arguments().map(|at| text(&frame[at]));
    let (params_map, _) = serde_object(params).expect("params");
    assert_eq!(
        params_map.get("arguments").map(|a| a.get().to_owned()),
        arguments,
        "{shown:?}"
    );
    // The id spliced: serde reads the new one and every other member as it was.
    for id in [0, 7, u64::MAX] {
        let mut line = BytesMut::new();
        call.write_line_with_id(id, &mut line);
        assert_eq!(line.last(), Some(&b'\n'));
        let (spliced, _) = serde_object(&line).expect("a spliced call is JSON");
        assert_eq!(
            spliced.get("id").map(|v| v.get()),
            Some(id.to_string().as_str())
        );
        for (k, v) in &map {
            if k != "id" {
                assert_eq!(spliced.get(k).map(|s| s.get()), Some(v.get()));
            }
        }
    }
    // The tool renamed as well: serde reads the new name, the arguments and the rest as
    // they were, whichever side of the id the params are on.
    for name in ["", "up_echo", "a much longer name than any tool's ü/.-"] {
        let renamed = call.sent_as(name).expect("needs no escapes");
        let mut line = BytesMut::new();
        renamed.write_line_with_id(42, &mut line);
        let (spliced, _) = serde_object(&line).expect("a renamed call is JSON");
        for (k, v) in &map {
            match k.as_str() {
                "id" => assert_eq!(spliced.get(k).map(|v| v.get()), Some("42")),
                "params" => {
                    let got = spliced.get(k).expect("params").get().as_bytes();
                    let (got, _) = serde_object(got).expect("params");
                    let (was, _) = serde_object(v.get().as_bytes()).expect("params");
                    assert_eq!(got.len(), was.len(), "{shown:?}");
                    let quoted = format!("\"{name}\"");
                    assert_eq!(got.get("name").map(|v| v.get()), Some(quoted.as_str()));
                    assert_eq!(
                        got.get("arguments").map(|v| v.get()),
                        was.get("arguments").map(|v| v.get()),
                        "{shown:?}"
                    );
                }
                _ => assert_eq!(spliced.get(k).map(|s| s.get()), Some(v.get())),
            }
        }
        assert_eq!(renamed.tool(), call.tool(), "tool() names the frame's");
    }
    assert!(call.sent_as("a\"b").is_none() && call.sent_as("a\nb").is_none());
    (text(id_text.as_bytes()), call.tool().to_owned(), arguments)
}

/// Checks plain params against serde: only `name` (the string it reads) and maybe an
/// `arguments` object.
fn check_params(params: &[u8], plain: &json_frame::PlainParams) {
    let shown = text(params);
    let (map, count) = serde_object(params).expect("plain params are an object");
    assert_eq!(count, map.len(), "{shown:?}");
    assert!(
        map.keys().all(|k| k == "name" || k == "arguments"),
        "{shown:?}"
    );
    let name: String = serde_json::from_str(map["name"].get()).expect("a string name");
    assert_eq!(
        params.get(plain.name.clone()),
        Some(name.as_bytes()),
        "{shown:?}"
    );
    assert_eq!(
        map["name"].get().len(),
        name.len() + 2,
        "no escapes: {shown:?}"
    );
    match (&plain.arguments, map.get("arguments")) {
        (Some(at), Some(raw)) => {
            assert_eq!(params.get(at.clone()), Some(raw.get().as_bytes()));
            assert!(raw.get().starts_with('{'), "{shown:?}");
        }
        (None, None) => {}
        _ => panic!("arguments: {shown:?}"),
    }
}

/// Checks a plain result against serde and the decoder; splices a client's id back in.
fn check_result(frame: &[u8], max_depth: usize, result: &json_frame::PlainResult<'_>) {
    let shown = text(frame);
    let (map, _) = serde_object(frame).expect("a plain result is an object");
    let keys: Vec<&str> = map.keys().map(String::as_str).collect();
    assert_eq!(keys, ["id", "jsonrpc", "result"], "{shown:?}");
    assert_eq!(map["jsonrpc"].get(), "\"2.0\"");
    assert_eq!(map["id"].get().parse::<u64>().ok(), Some(result.id()));
    assert_eq!(frame.get(result.id_at()), Some(map["id"].get().as_bytes()));
    if let Ok(id) = i64::try_from(result.id()) {
        let Ok(Message::Response(r)) = decode_with_depth(frame, max_depth) else {
            panic!("a plain result the decoder does not read as a response: {shown:?}");
        };
        assert_eq!(r.id, RequestId::Int(id));
        assert_eq!(
            r.outcome.map(|raw| raw.get().to_owned()).ok().as_deref(),
            Some(map["result"].get())
        );
    }
    // A client's id (from a call written with it) spliced back in.
    let client = br#"{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"t"}}"#;
    let call = json_frame::plain_call(client, 8).expect("a plain call");
    let mut line = BytesMut::new();
    result.write_line_with_id(&call.id_text(), &mut line);
    let (spliced, _) = serde_object(&line).expect("a spliced result is JSON");
    assert_eq!(spliced.get("id").map(|v| v.get()), Some("\"c-1\""));
    assert_eq!(spliced["result"].get(), map["result"].get());
}

/// Whether any object in `value` has a member named `key`.
fn has_member(value: &serde_json::Value, key: &str) -> bool {
    match value {
        serde_json::Value::Object(m) => {
            m.contains_key(key) || m.values().any(|v| has_member(v, key))
        }
        serde_json::Value::Array(a) => a.iter().any(|v| has_member(v, key)),
        _ => false,
    }
}

/// Checks that the request line the wire writes directly is the one its codec writes.
pub fn check_request_line(id: &RequestId, method: &str, params: Option<&RawValue>) {
    let mut direct = BytesMut::new();
    mcpwire_wire::encode_request_line(&mut direct, id, method, params);
    let msg = Outbound::Request {
        id: id.clone(),
        method: method.to_owned().into(),
        params: params.map(|p| p.to_owned()),
    };
    let mut encoded = BytesMut::new();
    mcpwire_wire::encode_line(&msg, &mut encoded).expect("encodes");
    assert_eq!(text(&direct), text(&encoded));
}
