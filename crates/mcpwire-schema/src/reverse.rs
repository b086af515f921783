//! Descriptors → JSON Schema 2020-12: the inverse of `convert` for generated messages, and
//! the proto3 JSON shape (with `buf.validate` rules as constraints) for any other message.

use std::collections::{BTreeMap, HashMap};

use prost_reflect::{DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, Value};
use serde_json::{Map, Value as Json, json};

use crate::compile::docs_of;
use crate::meta::{Exts, Meta, Shape, ext_value};

/// The JSON Schema of `desc` (recursive messages go to `$defs`).
pub fn message_schema(desc: &MessageDescriptor) -> Json {
    let pool = desc.parent_pool();
    let mut w = Writer {
        exts: Exts::of(pool),
        meta: Meta::build(pool),
        docs: docs_of(pool),
        stack: Vec::new(),
        defs: BTreeMap::new(),
        recursive: HashMap::new(),
    };
    let mut root = w.message(desc);
    if !w.defs.is_empty()
        && let Json::Object(m) = &mut root
    {
        m.insert("$defs".into(), Json::Object(w.defs.into_iter().collect()));
    }
    root
}

struct Writer {
    exts: Exts,
    meta: Meta,
    docs: HashMap<String, String>,
    stack: Vec<String>,
    defs: BTreeMap<String, Json>,
    recursive: HashMap<String, bool>,
}

impl Writer {
    fn message(&mut self, desc: &MessageDescriptor) -> Json {
        let name = desc.full_name().to_owned();
        match name.as_str() {
            "google.protobuf.Struct" => return json!({"type": "object"}),
            "google.protobuf.Value" => return json!({}),
            "google.protobuf.ListValue" => return json!({"type": "array"}),
            "google.protobuf.Timestamp" => return json!({"type": "string", "format": "date-time"}),
            "google.protobuf.Duration"
            | "google.protobuf.FieldMask"
            | "google.protobuf.StringValue"
            | "google.protobuf.BytesValue" => return json!({"type": "string"}),
            "google.protobuf.BoolValue" => return json!({"type": "boolean"}),
            "google.protobuf.DoubleValue" | "google.protobuf.FloatValue" => {
                return json!({"type": "number"});
            }
            "google.protobuf.Int32Value"
            | "google.protobuf.Int64Value"
            | "google.protobuf.UInt32Value"
            | "google.protobuf.UInt64Value" => return json!({"type": "integer"}),
            "google.protobuf.Any" | "google.protobuf.Empty" => return json!({"type": "object"}),
            _ => {}
        }
        if self.stack.contains(&name) {
            self.recursive.insert(name.clone(), true);
            return json!({"$ref": format!("#/$defs/{name}")});
        }
        self.stack.push(name.clone());
        let shape = self
            .meta
            .messages
            .get(&name)
            .map_or(Shape::Object, |m| m.shape);
        let mut out = Map::new();
        if shape == Shape::Object {
            out.insert("type".into(), "object".into());
            let mut props = Map::new();
            let mut required = Vec::new();
            for f in desc.fields() {
                let fm = self
                    .meta
                    .messages
                    .get(&name)
                    .and_then(|m| m.fields.get(&f.number()))
                    .cloned()
                    .unwrap_or_else(|| crate::meta::FieldMeta {
                        key: crate::meta::json_key(&f),
                        json_required: false,
                        required: false,
                    });
                let s = self.field(&f);
                if fm.required || fm.json_required {
                    required.push(Json::String(fm.key.clone()));
                }
                props.insert(fm.key, s);
            }
            out.insert("properties".into(), Json::Object(props));
            if !required.is_empty() {
                out.insert("required".into(), Json::Array(required));
            }
        } else {
            let variants: Vec<Json> = desc.fields().map(|f| self.field(&f)).collect();
            let key = if shape == Shape::OneOf {
                "oneOf"
            } else {
                "anyOf"
            };
            out.insert(key.into(), Json::Array(variants));
        }
        if let Some(d) = self.docs.get(&name) {
            out.insert("description".into(), d.clone().into());
        }
        self.stack.pop();
        let schema = Json::Object(out);
        if self.recursive.remove(&name).is_some() {
            self.defs.insert(name.clone(), schema);
            return json!({"$ref": format!("#/$defs/{name}")});
        }
        schema
    }

    fn field(&mut self, f: &FieldDescriptor) -> Json {
        let opts = f.options();
        let rules = match ext_value(&opts, &self.exts.validate) {
            Some(Value::Message(r)) => Some(r),
            _ => None,
        };
        let json_schema = match ext_value(&opts, &self.exts.json_schema) {
            Some(Value::String(s)) => serde_json::from_str::<Json>(&s).ok(),
            _ => None,
        };
        let nullable = matches!(
            ext_value(&opts, &self.exts.nullable),
            Some(Value::Bool(true))
        );
        let (value_kind, value_rules) = if f.is_map() {
            let Kind::Message(entry) = f.kind() else {
                return json!({});
            };
            (
                entry.map_entry_value_field().kind(),
                sub_rules(&rules, "map", "values"),
            )
        } else if f.is_list() {
            (f.kind(), sub_rules(&rules, "repeated", "items"))
        } else {
            (f.kind(), rules.clone())
        };
        let text = |ext| match ext_value(&opts, ext) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let format = text(&self.exts.format);
        let default =
            text(&self.exts.json_default).and_then(|d| serde_json::from_str::<Json>(&d).ok());
        let mut s = match json_schema {
            Some(js) => js,
            None => {
                let mut s = self.single(&value_kind);
                if let Some(r) = &value_rules {
                    apply_scalar_rules(&mut s, r);
                }
                if let (Some(f), Json::Object(m)) = (format, &mut s) {
                    m.insert("format".into(), f.into());
                }
                s
            }
        };
        if f.is_map() {
            let mut m = json!({"type": "object", "additionalProperties": s});
            if let Some(r) = rules.as_ref().and_then(|r| sub(r, "map")) {
                copy_u64(&r, "min_pairs", &mut m, "minProperties");
                copy_u64(&r, "max_pairs", &mut m, "maxProperties");
            }
            s = m;
        } else if f.is_list() {
            let mut a = json!({"type": "array", "items": s});
            if let Some(r) = rules.as_ref().and_then(|r| sub(r, "repeated")) {
                copy_u64(&r, "min_items", &mut a, "minItems");
                copy_u64(&r, "max_items", &mut a, "maxItems");
                if matches!(
                    r.get_field_by_name("unique").as_deref(),
                    Some(Value::Bool(true))
                ) {
                    a["uniqueItems"] = true.into();
                }
            }
            s = a;
        }
        if nullable {
            s = make_nullable(s);
        }
        if let (Some(d), Json::Object(m)) = (default, &mut s) {
            m.insert("default".into(), d);
        }
        if let Some(d) = self.docs.get(f.full_name())
            && let Json::Object(m) = &mut s
        {
            m.insert("description".into(), d.clone().into());
        }
        s
    }

    fn single(&mut self, kind: &Kind) -> Json {
        match kind {
            Kind::String => json!({"type": "string"}),
            Kind::Bytes => json!({"type": "string", "contentEncoding": "base64"}),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::Double | Kind::Float => json!({"type": "number"}),
            Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
                json!({"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX})
            }
            Kind::Uint32 | Kind::Fixed32 => {
                json!({"type": "integer", "minimum": 0, "maximum": u32::MAX})
            }
            Kind::Uint64 | Kind::Fixed64 => json!({"type": "integer", "minimum": 0}),
            Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => json!({"type": "integer"}),
            Kind::Enum(e) => {
                let values: Vec<Json> = match self.meta.enums.get(e.full_name()) {
                    Some(m) => {
                        let mut v: Vec<(&i32, &String)> = m.to_json.iter().collect();
                        v.sort();
                        v.into_iter()
                            .map(|(_, s)| Json::String(s.clone()))
                            .collect()
                    }
                    None => e.values().map(|v| Json::String(v.name().into())).collect(),
                };
                json!({"type": "string", "enum": values})
            }
            Kind::Message(m) => self.message(m),
        }
    }
}

fn sub(r: &DynamicMessage, name: &str) -> Option<DynamicMessage> {
    if !r.has_field_by_name(name) {
        return None;
    }
    match r.get_field_by_name(name).as_deref() {
        Some(Value::Message(m)) => Some(m.clone()),
        _ => None,
    }
}

fn sub_rules(r: &Option<DynamicMessage>, outer: &str, inner: &str) -> Option<DynamicMessage> {
    sub(&sub(r.as_ref()?, outer)?, inner)
}

fn copy_u64(r: &DynamicMessage, from: &str, to: &mut Json, key: &str) {
    if r.has_field_by_name(from)
        && let Some(Value::U64(n)) = r.get_field_by_name(from).as_deref()
    {
        to[key] = (*n).into();
    }
}

fn rule_json(v: &Value) -> Option<Json> {
    Some(match v {
        Value::I64(i) => Json::from(*i),
        Value::I32(i) => Json::from(*i),
        Value::U64(i) => Json::from(*i),
        Value::U32(i) => Json::from(*i),
        Value::F64(f) => Json::from(*f),
        Value::F32(f) => Json::from(f64::from(*f)),
        Value::String(s) => Json::String(s.clone()),
        Value::Bool(b) => Json::Bool(*b),
        Value::List(l) => Json::Array(l.iter().filter_map(rule_json).collect()),
        _ => return None,
    })
}

/// Scalar `buf.validate` rules as JSON Schema keywords on `s`.
fn apply_scalar_rules(s: &mut Json, r: &DynamicMessage) {
    const NUMERIC: &[&str] = &[
        "int64", "int32", "uint64", "uint32", "sint64", "sint32", "fixed64", "fixed32", "sfixed64",
        "sfixed32", "double", "float",
    ];
    if let Some(st) = sub(r, "string") {
        for (from, to) in [
            ("min_len", "minLength"),
            ("max_len", "maxLength"),
            ("pattern", "pattern"),
            ("const", "const"),
            ("in", "enum"),
        ] {
            if st.has_field_by_name(from)
                && let Some(j) = st.get_field_by_name(from).as_deref().and_then(rule_json)
            {
                s[to] = j;
            }
        }
        for (rule, format) in [
            ("email", "email"),
            ("hostname", "hostname"),
            ("ipv4", "ipv4"),
            ("ipv6", "ipv6"),
            ("uri", "uri"),
            ("uri_ref", "uri-reference"),
            ("uuid", "uuid"),
        ] {
            if st.has_field_by_name(rule) {
                s["format"] = format.into();
            }
        }
    }
    for n in NUMERIC {
        if let Some(nr) = sub(r, n) {
            for (from, to) in [
                ("gte", "minimum"),
                ("lte", "maximum"),
                ("gt", "exclusiveMinimum"),
                ("lt", "exclusiveMaximum"),
                ("const", "const"),
                ("in", "enum"),
            ] {
                if nr.has_field_by_name(from)
                    && let Some(j) = nr.get_field_by_name(from).as_deref().and_then(rule_json)
                {
                    s[to] = j;
                }
            }
        }
    }
}

fn make_nullable(s: Json) -> Json {
    let mut s = s;
    if let Some(Json::String(t)) = s.get("type").cloned() {
        if let Some(Json::Array(e)) = s.get_mut("enum") {
            e.push(Json::Null);
        }
        s["type"] = json!([t, "null"]);
        return s;
    }
    json!({"anyOf": [s, {"type": "null"}]})
}
