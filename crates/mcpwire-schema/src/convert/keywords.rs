//! Keyword helpers: scalars with their `buf.validate` rules, nullability, docs.

use serde_json::{Map, Value};

use super::Kind;
use crate::ir::{RuleValue, Rules, Ty};

pub(super) fn doc_of(obj: &Map<String, Value>) -> Option<String> {
    obj.get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
}

pub(super) fn is_type(obj: &Map<String, Value>, t: &str) -> bool {
    obj.get("type").and_then(Value::as_str) == Some(t)
}

pub(super) fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// An object schema with properties (and nothing that makes it something else): a message.
pub(super) fn is_message_schema(s: &Value) -> bool {
    let Some(o) = s.as_object() else { return false };
    let typed = match o.get("type") {
        None => true,
        Some(t) => t == "object",
    };
    typed
        && o.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty())
        && ![
            "enum", "const", "oneOf", "anyOf", "allOf", "not", "if", "$ref",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
}

/// `type: [T, "null"]` or `anyOf/oneOf: [X, {type: null}]` → the non-null schema.
pub(super) fn nullable_inner(obj: &Map<String, Value>) -> Option<Value> {
    if let Some(Value::Array(types)) = obj.get("type") {
        if types.len() == 2 && types.iter().any(|t| t == "null") {
            let other = types.iter().find(|t| *t != "null")?.clone();
            let mut m = obj.clone();
            m.insert("type".into(), other);
            return Some(Value::Object(m));
        }
        return None;
    }
    for c in ["anyOf", "oneOf"] {
        if let Some(Value::Array(v)) = obj.get(c) {
            let is_null = |s: &Value| {
                s.get("type").and_then(Value::as_str) == Some("null")
                    && s.as_object().map_or(0, Map::len) == 1
            };
            // Beside the union, only annotations (they stay on the field).
            let annotations_only = obj.keys().all(|k| {
                k == c
                    || matches!(
                        k.as_str(),
                        "description"
                            | "title"
                            | "default"
                            | "examples"
                            | "deprecated"
                            | "$comment"
                    )
            });
            if v.len() == 2 && v.iter().filter(|s| is_null(s)).count() == 1 && annotations_only {
                return v.iter().find(|s| !is_null(s)).cloned();
            }
        }
    }
    None
}

pub(super) fn string_kind(obj: &Map<String, Value>, doc: Option<String>) -> Kind {
    let mut r: Rules = Vec::new();
    if let Some(n) = obj.get("minLength").and_then(Value::as_u64) {
        r.push(("min_len", RuleValue::UInt(n)));
    }
    if let Some(n) = obj.get("maxLength").and_then(Value::as_u64) {
        r.push(("max_len", RuleValue::UInt(n)));
    }
    if let Some(p) = obj.get("pattern").and_then(Value::as_str) {
        r.push(("pattern", RuleValue::Str(p.to_owned())));
    }
    if let Some(rule) = obj
        .get("format")
        .and_then(Value::as_str)
        .and_then(format_rule)
    {
        r.push((rule, RuleValue::Bool(true)));
    }
    let mut k = Kind::plain(Ty::String, doc);
    if !r.is_empty() {
        k.rules.push(("string", RuleValue::Msg(r)));
    }
    k.format = obj
        .get("format")
        .and_then(Value::as_str)
        .filter(|f| format_rule(f).is_none())
        .map(str::to_owned);
    k
}

/// The `buf.validate` well-known string rule for a JSON Schema `format`.
pub(super) fn format_rule(f: &str) -> Option<&'static str> {
    Some(match f {
        "email" => "email",
        "hostname" => "hostname",
        "ipv4" => "ipv4",
        "ipv6" => "ipv6",
        "uri" => "uri",
        "uri-reference" => "uri_ref",
        "uuid" => "uuid",
        _ => return None,
    })
}

pub(super) fn number_kind(obj: &Map<String, Value>, doc: Option<String>, integer: bool) -> Kind {
    let mut r: Rules = Vec::new();
    let bound = |key: &str, up: bool| -> Option<RuleValue> {
        let n = obj.get(key)?;
        if integer {
            let v = match n.as_i64() {
                Some(i) => i,
                None => {
                    let f = n.as_f64()?;
                    let f = if up { f.ceil() } else { f.floor() };
                    if !(-9.2e18..9.2e18).contains(&f) {
                        return None;
                    }
                    f as i64
                }
            };
            Some(RuleValue::Int(v))
        } else {
            n.as_f64().map(RuleValue::Double)
        }
    };
    if let Some(v) = bound("exclusiveMinimum", true) {
        r.push(("gt", v));
    } else if let Some(v) = bound("minimum", true) {
        r.push(("gte", v));
    }
    if let Some(v) = bound("exclusiveMaximum", false) {
        r.push(("lt", v));
    } else if let Some(v) = bound("maximum", false) {
        r.push(("lte", v));
    }
    let mut k = Kind::plain(if integer { Ty::Int64 } else { Ty::Double }, doc);
    if !r.is_empty() {
        k.rules
            .push((if integer { "int64" } else { "double" }, RuleValue::Msg(r)));
    }
    k
}
