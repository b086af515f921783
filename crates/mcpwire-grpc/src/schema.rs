//! Message descriptors → tool schemas: `mcpwire-schema`'s proto3 JSON shape, with 64-bit
//! integers accepted (and answered) as strings, and non-object outputs wrapped in
//! `{"result": …}` (an output schema is an object).

use prost_reflect::MessageDescriptor;
use serde_json::{Value, json};

/// The input schema of a method taking `desc`.
pub fn input_schema(desc: &MessageDescriptor) -> Value {
    let mut s = mcpwire_schema::message_schema(desc);
    widen_64_bit(&mut s);
    if s.get("type") != Some(&json!("object")) {
        // A well-known type as the whole request: no argument names to give it.
        return json!({"type": "object"});
    }
    s
}

/// The output schema for answers of `desc`, and whether they are wrapped in `result`.
pub fn output_schema(desc: &MessageDescriptor) -> (Value, bool) {
    let mut s = mcpwire_schema::message_schema(desc);
    widen_64_bit(&mut s);
    if s.get("type") == Some(&json!("object")) {
        return (s, false);
    }
    (wrap(s, "result", false), true)
}

/// `{"type": "object", "properties": {key: s}, "required": [key]}` (`s` an array's
/// items when `list`), `s`'s `$defs` moved up so its references still resolve.
pub fn wrap(mut s: Value, key: &str, list: bool) -> Value {
    let defs = s.as_object_mut().and_then(|m| m.remove("$defs"));
    let inner = if list {
        json!({"type": "array", "items": s})
    } else {
        s
    };
    let mut out = json!({
        "type": "object",
        "properties": { key: inner },
        "required": [key],
    });
    if let Some(d) = defs {
        out["$defs"] = d;
    }
    out
}

/// Integers without an upper bound (int64, uint64 and their wrappers) may also be
/// decimal strings, as proto3 JSON writes them.
fn widen_64_bit(s: &mut Value) {
    match s {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("integer")) && !m.contains_key("maximum") {
                m.insert("type".into(), json!(["integer", "string"]));
                m.insert("pattern".into(), json!("^-?[0-9]+$"));
            }
            for v in m.values_mut() {
                widen_64_bit(v);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(widen_64_bit),
        _ => {}
    }
}

/// The `properties` of an object schema (tests).
#[cfg(test)]
fn props(s: &Value) -> &serde_json::Map<String, Value> {
    s["properties"].as_object().expect("properties")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_integers_and_wrapping() {
        let mut s = json!({"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0, "maximum": 9}}});
        widen_64_bit(&mut s);
        assert_eq!(props(&s)["a"]["type"], json!(["integer", "string"]));
        assert_eq!(props(&s)["b"]["type"], json!("integer"));
        let w = wrap(
            json!({"type": "string", "$defs": {"X": {}}}),
            "result",
            false,
        );
        assert_eq!(w["$defs"], json!({"X": {}}));
        assert_eq!(w["properties"]["result"], json!({"type": "string"}));
    }
}
