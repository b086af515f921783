//! JSON ⇄ `DynamicMessage` by the mcpwire mapping: JSON member names as in the tool's
//! schema, enums as their JSON strings, 64-bit integers as numbers, union messages as the
//! value of their set member, `google.protobuf.Struct`/`Value` as plain JSON.

use base64::Engine as _;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage, Value,
};
use serde_json::{Map, Number, Value as Json};

use crate::SchemaError;
use crate::meta::{Meta, Shape};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// Google's well-known types (`Struct`, `Value`, `Timestamp`, `Duration`, wrappers, …):
/// converted by the canonical proto3 JSON mapping.
fn is_wkt_json(m: &MessageDescriptor) -> bool {
    m.full_name().starts_with("google.protobuf.")
}

/// Where in the JSON value a conversion is, rendered only when it fails.
#[derive(Clone, Copy)]
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root => f.write_str("$"),
            Path::Key(p, k) => write!(f, "{p}.{k}"),
            Path::Index(p, i) => write!(f, "{p}[{i}]"),
        }
    }
}

fn mismatch(path: &Path<'_>, what: impl std::fmt::Display) -> SchemaError {
    SchemaError::Mismatch(format!("{path}: {what}"))
}

/// JSON → a message of type `desc`.
pub(crate) fn to_message(
    meta: &Meta,
    desc: &MessageDescriptor,
    v: &Json,
    path: &Path<'_>,
) -> Result<DynamicMessage, SchemaError> {
    if is_wkt_json(desc) {
        return DynamicMessage::deserialize(desc.clone(), v).map_err(|e| mismatch(path, e));
    }
    let mm = meta.messages.get(desc.full_name());
    let shape = mm.map_or(Shape::Object, |m| m.shape);
    let mut msg = DynamicMessage::new(desc.clone());
    if shape != Shape::Object {
        for f in desc.fields() {
            if let Ok(x) = field_value(meta, &f, v, path) {
                msg.set_field(&f, x);
                return Ok(msg);
            }
        }
        return Err(mismatch(path, "matches no member of the union"));
    }
    let Json::Object(obj) = v else {
        return Err(mismatch(path, "expected an object"));
    };
    for (k, val) in obj {
        let number = mm.and_then(|m| m.by_key.get(k).copied()).or_else(|| {
            desc.get_field_by_json_name(k)
                .or_else(|| desc.get_field_by_name(k))
                .map(|f| f.number())
        });
        let Some(f) = number.and_then(|n| desc.get_field(n)) else {
            return Err(mismatch(path, format!("unknown member {k:?}")));
        };
        // JSON null is absence, except in a `google.protobuf.Value` (where it is a value).
        let is_value =
            matches!(f.kind(), Kind::Message(m) if m.full_name() == "google.protobuf.Value");
        if val.is_null() && !(is_value && !f.is_list() && !f.is_map()) {
            continue;
        }
        let x = field_value(meta, &f, val, &Path::Key(path, k))?;
        msg.set_field(&f, x);
    }
    Ok(msg)
}

fn field_value(
    meta: &Meta,
    f: &FieldDescriptor,
    v: &Json,
    path: &Path<'_>,
) -> Result<Value, SchemaError> {
    if f.is_map() {
        let Json::Object(obj) = v else {
            return Err(mismatch(path, "expected an object"));
        };
        let Kind::Message(entry) = f.kind() else {
            return Err(mismatch(path, "bad map entry"));
        };
        let (kf, vf) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        let mut out = std::collections::HashMap::with_capacity(obj.len());
        for (k, val) in obj {
            let sub = Path::Key(path, k);
            out.insert(
                map_key(&kf.kind(), k, &sub)?,
                single(meta, &vf.kind(), val, &sub)?,
            );
        }
        return Ok(Value::Map(out));
    }
    if f.is_list() {
        let Json::Array(items) = v else {
            return Err(mismatch(path, "expected an array"));
        };
        let kind = f.kind();
        let list = items
            .iter()
            .enumerate()
            .map(|(i, x)| single(meta, &kind, x, &Path::Index(path, i)))
            .collect::<Result<_, _>>()?;
        return Ok(Value::List(list));
    }
    single(meta, &f.kind(), v, path)
}

fn map_key(kind: &Kind, k: &str, path: &Path<'_>) -> Result<MapKey, SchemaError> {
    let bad = || mismatch(path, "bad map key");
    Ok(match kind {
        Kind::String => MapKey::String(k.to_owned()),
        Kind::Bool => MapKey::Bool(k.parse().map_err(|_| bad())?),
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => MapKey::I32(k.parse().map_err(|_| bad())?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => MapKey::I64(k.parse().map_err(|_| bad())?),
        Kind::Uint32 | Kind::Fixed32 => MapKey::U32(k.parse().map_err(|_| bad())?),
        Kind::Uint64 | Kind::Fixed64 => MapKey::U64(k.parse().map_err(|_| bad())?),
        _ => return Err(bad()),
    })
}

fn int(v: &Json) -> Option<i128> {
    match v {
        Json::Number(n) => n.as_i64().map(i128::from).or_else(|| {
            n.as_u64().map(i128::from).or_else(|| {
                let f = n.as_f64()?;
                (f.fract() == 0.0 && f.abs() < 1.8e19).then_some(f as i128)
            })
        }),
        Json::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn single(meta: &Meta, kind: &Kind, v: &Json, path: &Path<'_>) -> Result<Value, SchemaError> {
    let bad = |what: &str| mismatch(path, format!("expected {what}"));
    let ranged = |lo: i128, hi: i128, what: &str| {
        int(v)
            .filter(|i| (lo..=hi).contains(i))
            .ok_or_else(|| bad(what))
    };
    Ok(match kind {
        Kind::String => Value::String(v.as_str().ok_or_else(|| bad("a string"))?.to_owned()),
        Kind::Bool => Value::Bool(v.as_bool().ok_or_else(|| bad("a boolean"))?),
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => {
            Value::I64(ranged(i64::MIN.into(), i64::MAX.into(), "an integer")? as i64)
        }
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Value::I32(ranged(i32::MIN.into(), i32::MAX.into(), "a 32-bit integer")? as i32)
        }
        Kind::Uint64 | Kind::Fixed64 => {
            Value::U64(ranged(0, u64::MAX.into(), "an unsigned integer")? as u64)
        }
        Kind::Uint32 | Kind::Fixed32 => {
            Value::U32(ranged(0, u32::MAX.into(), "an unsigned 32-bit integer")? as u32)
        }
        Kind::Double => Value::F64(v.as_f64().ok_or_else(|| bad("a number"))?),
        Kind::Float => Value::F32(v.as_f64().ok_or_else(|| bad("a number"))? as f32),
        Kind::Bytes => {
            let s = v.as_str().ok_or_else(|| bad("a base64 string"))?;
            Value::Bytes(B64.decode(s).map_err(|_| bad("a base64 string"))?.into())
        }
        Kind::Enum(e) => {
            let em = meta.enums.get(e.full_name());
            let n = match v {
                Json::String(s) => em
                    .and_then(|m| m.from_json.get(s).copied())
                    .or_else(|| {
                        (!em.is_some_and(|m| m.zero_is_absent))
                            .then(|| e.get_value_by_name(s).map(|x| x.number()))
                            .flatten()
                    })
                    .ok_or_else(|| bad("one of the enum's values"))?,
                Json::Number(_) if !em.is_some_and(|m| m.zero_is_absent) => {
                    ranged(i32::MIN.into(), i32::MAX.into(), "an enum number")? as i32
                }
                _ => return Err(bad("one of the enum's values")),
            };
            Value::EnumNumber(n)
        }
        Kind::Message(m) => Value::Message(to_message(meta, m, v, path)?),
    })
}

/// A message → JSON.
pub(crate) fn to_json(meta: &Meta, msg: &DynamicMessage) -> Result<Json, SchemaError> {
    let desc = msg.descriptor();
    if is_wkt_json(&desc) {
        let mut j = serde_json::to_value(msg).map_err(|e| SchemaError::Mismatch(e.to_string()))?;
        integral_numbers(&mut j);
        return Ok(j);
    }
    let mm = meta.messages.get(desc.full_name());
    if mm.is_some_and(|m| m.shape != Shape::Object) {
        for (f, v) in msg.fields() {
            if let Some(j) = field_json(meta, &f, v)? {
                return Ok(j);
            }
        }
        return Ok(Json::Null);
    }
    let mut out = Map::new();
    for f in desc.fields() {
        let fm = mm.and_then(|m| m.fields.get(&f.number()));
        let key = fm.map_or_else(|| crate::meta::json_key(&f), |m| m.key.clone());
        let present = msg.has_field(&f);
        let value = if present {
            field_json(meta, &f, &msg.get_field(&f))?
        } else {
            None
        };
        match value {
            Some(j) => {
                out.insert(key, j);
            }
            None if fm.is_some_and(|m| m.json_required) => {
                let empty = if f.is_map() {
                    Json::Object(Map::new())
                } else if f.is_list() {
                    Json::Array(Vec::new())
                } else {
                    Json::Null
                };
                out.insert(key, empty);
            }
            None => {}
        }
    }
    Ok(Json::Object(out))
}

/// `google.protobuf.Value` holds every number as a double: write integral ones (within
/// ±2^53, where doubles are exact) as JSON integers, as the tool's JSON had them.
fn integral_numbers(j: &mut Json) {
    match j {
        Json::Number(n) => {
            if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() <= 9_007_199_254_740_992.0
            {
                *j = Json::from(f as i64);
            }
        }
        Json::Array(a) => a.iter_mut().for_each(integral_numbers),
        Json::Object(o) => o.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// A field's JSON, or `None` when it stands for "absent" (enum 0 of a generated enum).
fn field_json(meta: &Meta, f: &FieldDescriptor, v: &Value) -> Result<Option<Json>, SchemaError> {
    let kind = f.kind();
    Ok(Some(match v {
        Value::List(items) => Json::Array(
            items
                .iter()
                .map(|x| single_json(meta, &kind, x).map(|j| j.unwrap_or(Json::Null)))
                .collect::<Result<_, _>>()?,
        ),
        Value::Map(m) => {
            let Kind::Message(entry) = &kind else {
                return Err(SchemaError::Mismatch("bad map entry".into()));
            };
            let vk = entry.map_entry_value_field().kind();
            let mut out = Map::new();
            for (k, x) in m {
                let key = match k {
                    MapKey::String(s) => s.clone(),
                    MapKey::Bool(b) => b.to_string(),
                    MapKey::I32(i) => i.to_string(),
                    MapKey::I64(i) => i.to_string(),
                    MapKey::U32(i) => i.to_string(),
                    MapKey::U64(i) => i.to_string(),
                };
                out.insert(key, single_json(meta, &vk, x)?.unwrap_or(Json::Null));
            }
            Json::Object(out)
        }
        other => match single_json(meta, &kind, other)? {
            Some(j) => j,
            None => return Ok(None),
        },
    }))
}

fn single_json(meta: &Meta, kind: &Kind, v: &Value) -> Result<Option<Json>, SchemaError> {
    let float = |f: f64| {
        Number::from_f64(f)
            .map(Json::Number)
            .ok_or_else(|| SchemaError::Mismatch(format!("{f} has no JSON form")))
    };
    Ok(Some(match v {
        Value::Bool(b) => Json::Bool(*b),
        Value::I32(i) => Json::from(*i),
        Value::I64(i) => Json::from(*i),
        Value::U32(i) => Json::from(*i),
        Value::U64(i) => Json::from(*i),
        Value::F32(f) => float(f64::from(*f))?,
        Value::F64(f) => float(*f)?,
        Value::String(s) => Json::String(s.clone()),
        Value::Bytes(b) => Json::String(B64.encode(b)),
        Value::EnumNumber(n) => {
            let Kind::Enum(e) = kind else {
                return Ok(Some(Json::from(*n)));
            };
            match meta.enums.get(e.full_name()) {
                Some(m) if *n == 0 && m.zero_is_absent => return Ok(None),
                Some(m) => match m.to_json.get(n) {
                    Some(s) => Json::String(s.clone()),
                    None => Json::from(*n),
                },
                None => match e.get_value(*n) {
                    Some(x) => Json::String(x.name().to_owned()),
                    None => Json::from(*n),
                },
            }
        }
        Value::Message(m) => to_json(meta, m)?,
        Value::List(_) | Value::Map(_) => {
            return Err(SchemaError::Mismatch("nested list or map".into()));
        }
    }))
}
