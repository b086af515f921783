//! JSON ⇄ `google.protobuf.Struct`, error data, and the gRPC status of an MCP code.

use std::collections::BTreeMap;

use mcpwire_model::codes;
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

/// The gRPC status code (as its number) answering an MCP / proto-mcp error `code`.
pub fn grpc_code(code: i64) -> i32 {
    const INVALID_ARGUMENT: i32 = 3;
    const DEADLINE_EXCEEDED: i32 = 4;
    const NOT_FOUND: i32 = 5;
    const FAILED_PRECONDITION: i32 = 9;
    const UNIMPLEMENTED: i32 = 12;
    const INTERNAL: i32 = 13;
    const UNKNOWN: i32 = 2;
    match code {
        codes::PROTO_SCHEMA_UNRESOLVED | codes::PROTO_UNSUPPORTED_VERSION => FAILED_PRECONDITION,
        codes::NOT_INITIALIZED => FAILED_PRECONDITION,
        codes::PROTO_SCHEMA_VALIDATION
        | codes::INVALID_PARAMS
        | codes::INVALID_REQUEST
        | codes::PARSE_ERROR => INVALID_ARGUMENT,
        codes::PROTO_TIMEOUT | codes::REQUEST_TIMEOUT => DEADLINE_EXCEEDED,
        codes::RESOURCE_NOT_FOUND => NOT_FOUND,
        codes::METHOD_NOT_FOUND => UNIMPLEMENTED,
        codes::INTERNAL_ERROR => INTERNAL,
        _ => UNKNOWN,
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

    #[test]
    fn codes_map_to_statuses() {
        assert_eq!(grpc_code(-33001), 3);
        assert_eq!(grpc_code(-33002), 9);
        assert_eq!(grpc_code(-33003), 4);
        assert_eq!(grpc_code(-32002), 5);
        assert_eq!(grpc_code(-32601), 12);
        assert_eq!(grpc_code(1), 2);
    }
}
