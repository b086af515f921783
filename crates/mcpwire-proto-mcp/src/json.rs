//! JSON ⇄ `google.protobuf.Struct`, and error data.

use std::collections::BTreeMap;

use prost_types::value::Kind;
use prost_types::{ListValue, Struct, Value as PValue};
use serde_json::{Map, Number, Value};

/// A JSON object as a `Struct` (`None` for anything but an object). Integers beyond 2^53
/// lose precision, as in every proto3 JSON mapping of `Struct`.
pub fn json_to_struct(v: &Value) -> Option<Struct> {
    let Value::Object(map) = v else { return None };
    Some(object_to_struct(map))
}

fn object_to_struct(map: &Map<String, Value>) -> Struct {
    Struct {
        fields: map
            .iter()
            .map(|(k, v)| (k.clone(), json_to_value(v)))
            .collect(),
    }
}

fn json_to_value(v: &Value) -> PValue {
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(*b),
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s.clone()),
        Value::Array(a) => Kind::ListValue(ListValue {
            values: a.iter().map(json_to_value).collect(),
        }),
        Value::Object(m) => Kind::StructValue(object_to_struct(m)),
    };
    PValue { kind: Some(kind) }
}

/// A `Struct` as a JSON object.
pub fn struct_to_json(s: &Struct) -> Value {
    Value::Object(
        s.fields
            .iter()
            .map(|(k, v)| (k.clone(), value_to_json(v)))
            .collect(),
    )
}

fn value_to_json(v: &PValue) -> Value {
    match &v.kind {
        None | Some(Kind::NullValue(_)) => Value::Null,
        Some(Kind::BoolValue(b)) => Value::Bool(*b),
        Some(Kind::NumberValue(n)) => Number::from_f64(*n).map_or(Value::Null, Value::Number),
        Some(Kind::StringValue(s)) => Value::String(s.clone()),
        Some(Kind::ListValue(l)) => Value::Array(l.values.iter().map(value_to_json).collect()),
        Some(Kind::StructValue(s)) => struct_to_json(s),
    }
}

/// `Error.data` (`map<string,string>`): an object's members, strings as they are and
/// anything else as JSON text; any other value under the key `"data"`.
pub(crate) fn data_map(v: &Value) -> BTreeMap<String, String> {
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    match v {
        Value::Object(m) => m.iter().map(|(k, v)| (k.clone(), text(v))).collect(),
        Value::Null => BTreeMap::new(),
        other => BTreeMap::from([("data".to_owned(), text(other))]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn struct_round_trip() {
        let v = json!({"a": [1.5, "x", null, true], "b": {"c": {}}});
        assert_eq!(struct_to_json(&json_to_struct(&v).unwrap()), v);
        assert!(json_to_struct(&json!([1])).is_none());
    }

    #[test]
    fn data_maps_flatten_one_level() {
        let m = data_map(&json!({"tool": "t", "n": 3, "o": {"k": 1}}));
        assert_eq!(m["tool"], "t");
        assert_eq!(m["n"], "3");
        assert_eq!(m["o"], r#"{"k":1}"#);
        assert_eq!(data_map(&json!("s"))["data"], "s");
    }
}
