//! Property tests: JSON Schemas of the supported subset → protobuf → JSON Schema gives the
//! same schema back, and JSON values valid against them → `DynamicMessage` → JSON gives
//! the same values back.

use mcpwire_schema::{message_schema, tool_schemas};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// A schema of the supported subset, in the canonical form the reverse conversion writes.
#[derive(Debug, Clone)]
enum S {
    Str {
        min: Option<u64>,
        max: Option<u64>,
    },
    Int {
        min: Option<i64>,
        max: Option<i64>,
    },
    Num,
    Bool,
    Enum(Vec<String>),
    NullableStr,
    Obj(Vec<(String, S, bool, Option<String>)>),
    Arr(Box<S>, Option<u64>),
    Map(Box<S>),
    Free,
    Any,
    /// oneOf: string | integer | object
    Union(Box<S>),
}

fn prop_name() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z][a-z0-9_]{0,7}",
        "[a-zA-Z][a-zA-Z0-9]{0,7}",
        Just("foo-bar".to_owned()),
        Just("message".to_owned()),
        Just("1st".to_owned()),
        Just("a b".to_owned()),
        Just("fooBar".to_owned()),
        Just("foo_bar".to_owned()),
    ]
}

fn leaf() -> impl Strategy<Value = S> {
    prop_oneof![
        (proptest::option::of(0u64..3), proptest::option::of(3u64..8))
            .prop_map(|(min, max)| S::Str { min, max }),
        (
            proptest::option::of(-5i64..0),
            proptest::option::of(0i64..100)
        )
            .prop_map(|(min, max)| S::Int { min, max }),
        Just(S::Num),
        Just(S::Bool),
        proptest::collection::btree_set("[a-zA-Z][a-zA-Z0-9 _.-]{0,6}", 1..5)
            .prop_map(|s| S::Enum(s.into_iter().collect())),
        Just(S::NullableStr),
        Just(S::Free),
        Just(S::Any),
    ]
}

fn object(inner: impl Strategy<Value = S> + Clone) -> impl Strategy<Value = S> {
    proptest::collection::btree_map(
        prop_name(),
        (
            inner,
            any::<bool>(),
            proptest::option::of("[A-Z][a-z ]{0,12}"),
        ),
        1..5,
    )
    // Names that differ only in case are one protobuf name: the converter refuses them
    // (`property "w" clashes with another property's protobuf name`), by design.
    .prop_filter("property names differ in more than case", |m| {
        let mut seen = std::collections::HashSet::new();
        m.keys().all(|k| seen.insert(k.to_lowercase()))
    })
    .prop_map(|m| S::Obj(m.into_iter().map(|(k, (s, r, d))| (k, s, r, d)).collect()))
}

fn schema() -> impl Strategy<Value = S> + Clone {
    leaf().prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            object(inner.clone()),
            (inner.clone(), proptest::option::of(0u64..3))
                .prop_filter("list items are singular", |(s, _)| singular(s))
                .prop_map(|(s, min)| S::Arr(Box::new(s), min)),
            inner
                .clone()
                .prop_filter("map values are singular", singular)
                .prop_map(|s| S::Map(Box::new(s))),
            object(inner).prop_map(|o| S::Union(Box::new(o))),
        ]
    })
}

/// Lists, maps and nullable values cannot be list items or map values (they become
/// `google.protobuf.Value`, tested separately).
fn singular(s: &S) -> bool {
    !matches!(s, S::Arr(..) | S::Map(_) | S::NullableStr | S::Any)
}

fn to_json(s: &S) -> Value {
    match s {
        S::Str { min, max } => {
            let mut v = json!({"type": "string"});
            if let Some(m) = min {
                v["minLength"] = (*m).into();
            }
            if let Some(m) = max {
                v["maxLength"] = (*m).into();
            }
            v
        }
        S::Int { min, max } => {
            let mut v = json!({"type": "integer"});
            if let Some(m) = min {
                v["minimum"] = (*m).into();
            }
            if let Some(m) = max {
                v["maximum"] = (*m).into();
            }
            v
        }
        S::Num => json!({"type": "number"}),
        S::Bool => json!({"type": "boolean"}),
        S::Enum(vals) => json!({"type": "string", "enum": vals}),
        S::NullableStr => json!({"type": ["string", "null"]}),
        S::Obj(fields) => {
            let mut props = Map::new();
            let mut req = Vec::new();
            for (k, s, r, d) in fields {
                let mut v = to_json(s);
                if let Some(d) = d {
                    v["description"] = d.trim().to_owned().into();
                    if d.trim().is_empty() {
                        v.as_object_mut().map(|m| m.remove("description"));
                    }
                }
                props.insert(k.clone(), v);
                if *r {
                    req.push(Value::String(k.clone()));
                }
            }
            let mut v = json!({"type": "object", "properties": props});
            if !req.is_empty() {
                v["required"] = Value::Array(req);
            }
            v
        }
        S::Arr(item, min) => {
            let mut v = json!({"type": "array", "items": to_json(item)});
            if let Some(m) = min {
                v["minItems"] = (*m).into();
            }
            v
        }
        S::Map(val) => json!({"type": "object", "additionalProperties": to_json(val)}),
        S::Free => json!({"type": "object"}),
        S::Any => json!({}),
        S::Union(obj) => json!({"oneOf": [{"type": "string"}, {"type": "integer"}, to_json(obj)]}),
    }
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1000i32..1000).prop_map(|i| Value::from(f64::from(i) + 0.5)),
        "[a-z]{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{1,3}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Values valid against `s` that survive protobuf exactly (as a present field when
/// `field` is true: no `null`, no empty lists/maps for optional members).
fn value(s: &S) -> BoxedStrategy<Value> {
    match s {
        S::Str { min, max } => {
            let lo = min.unwrap_or(0);
            let hi = max.unwrap_or(6).max(lo);
            proptest::string::string_regex(&format!("[a-z0-9 ]{{{lo},{hi}}}"))
                .expect("regex")
                .prop_map(Value::String)
                .boxed()
        }
        S::Int { min, max } => (min.unwrap_or(-1000)..=max.unwrap_or(1000))
            .prop_map(Value::from)
            .boxed(),
        S::Num => (-1e6f64..1e6).prop_map(Value::from).boxed(),
        S::Bool => any::<bool>().prop_map(Value::Bool).boxed(),
        S::Enum(vals) => proptest::sample::select(vals.clone())
            .prop_map(Value::String)
            .boxed(),
        S::NullableStr => {
            prop_oneof![Just(Value::Null), "[a-z]{0,3}".prop_map(Value::String)].boxed()
        }
        S::Obj(fields) => {
            let parts: Vec<BoxedStrategy<Option<(String, Value)>>> = fields
                .iter()
                .map(|(k, s, r, _)| {
                    let k = k.clone();
                    let v = member(s, *r);
                    if *r {
                        v.prop_map(move |v| Some((k.clone(), v))).boxed()
                    } else {
                        proptest::option::of(v)
                            .prop_map(move |v| v.map(|v| (k.clone(), v)))
                            .boxed()
                    }
                })
                .collect();
            parts
                .prop_map(|kv| Value::Object(kv.into_iter().flatten().collect()))
                .boxed()
        }
        S::Arr(item, min) => proptest::collection::vec(value(item), (min.unwrap_or(0) as usize)..4)
            .prop_map(Value::Array)
            .boxed(),
        S::Map(val) => proptest::collection::btree_map("[a-z]{0,3}", value(val), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
        S::Free => proptest::collection::btree_map("[a-z]{1,3}", any_json(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect()))
            .boxed(),
        S::Any => any_json()
            .prop_filter("null is absence", |v| !v.is_null())
            .boxed(),
        S::Union(obj) => prop_oneof![
            "[a-z]{0,3}".prop_map(Value::String),
            (-50i64..50).prop_map(Value::from),
            value(obj),
        ]
        .boxed(),
    }
}

/// A value for an object member: optional lists and maps are never empty (protobuf cannot
/// tell an empty list from a missing one; required ones are written back as `[]`/`{}`).
fn member(s: &S, required: bool) -> BoxedStrategy<Value> {
    let v = value(s);
    match s {
        S::Arr(..) | S::Map(_) if !required => v
            .prop_filter("optional lists/maps are non-empty", |v| match v {
                Value::Array(a) => !a.is_empty(),
                Value::Object(o) => !o.is_empty(),
                _ => true,
            })
            .boxed(),
        S::NullableStr | S::Any if !required => v
            .prop_filter("optional members are not null", |v| !v.is_null())
            .boxed(),
        _ => v,
    }
}

fn root() -> impl Strategy<Value = (S, Value)> {
    object(schema()).prop_flat_map(|s| {
        let v = value(&s);
        (Just(s), v)
    })
}

/// No field's name or JSON name equals another field's (case-insensitively): protobuf
/// runtimes (upb, protoc) refuse such files.
fn assert_json_names_distinct(pool: &prost_reflect::DescriptorPool) {
    for m in pool.all_messages() {
        let mut seen = std::collections::HashMap::new();
        for f in m.fields() {
            let mut ids = vec![
                f.name().to_ascii_lowercase(),
                f.json_name().to_ascii_lowercase(),
            ];
            ids.dedup();
            for id in ids {
                if let Some(other) = seen.insert(id.clone(), f.name().to_owned()) {
                    panic!(
                        "{}: {} and {other} share the JSON name {id}",
                        m.full_name(),
                        f.name()
                    );
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, .. ProptestConfig::default() })]

    #[test]
    fn schema_and_values_round_trip((s, v) in root()) {
        let schema = to_json(&s);
        let ts = tool_schemas("prop_tool", &schema, Some(&schema)).expect("converts");
        assert_json_names_distinct(ts.pool());
        // descriptor → JSON Schema gives the schema back
        prop_assert_eq!(&message_schema(&ts.input), &schema);
        // the value is valid against the schema (the generator is right)…
        let validator = jsonschema::validator_for(&schema).expect("valid schema");
        prop_assert!(validator.is_valid(&v), "generated value invalid: {}", v);
        // …and survives JSON → protobuf → JSON, through encoded bytes
        let msg = ts.json_to_input(&v).expect("to message");
        let bytes = prost::Message::encode_to_vec(&msg);
        let decoded = prost_reflect::DynamicMessage::decode(ts.input.clone(), bytes.as_slice())
            .expect("decodes");
        prop_assert_eq!(&ts.arguments_to_json(&decoded).expect("to json"), &v);
        let out = ts.structured_to_message(&v).expect("output message");
        prop_assert_eq!(&ts.output_to_json(&out).expect("output json"), &v);
    }
}
