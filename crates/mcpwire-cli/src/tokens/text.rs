//! Compact text renderings of a catalog from its JSON Schemas (no protobuf involved).

use std::fmt::Write as _;

use serde_json::{Value, json};

/// `name(a: string, b?: 1|2) — description` lines: the same facts as JSON Schema in a
/// compact notation.
pub(super) fn signatures(tools: &[Value], param_docs: bool) -> String {
    let mut s = String::new();
    for t in tools {
        let _ = writeln!(
            s,
            "{}: {}",
            t["name"].as_str().unwrap_or_default(),
            t["description"].as_str().unwrap_or_default()
        );
        let schema = t.get("inputSchema").cloned().unwrap_or(json!({}));
        let _ = writeln!(s, "  ({})", object_sig(&schema, param_docs, 1));
    }
    s
}

fn type_sig(s: &Value, docs: bool, depth: usize) -> String {
    if depth > 8 {
        return "any".into();
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("|");
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => {
            return ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| type_sig(&json!({"type": t}), docs, depth + 1))
                .collect::<Vec<_>>()
                .join("|");
        }
        _ => return "any".into(),
    };
    let mut out = match ty.as_str() {
        "integer" => "int".to_owned(),
        "array" => format!(
            "{}[]",
            s.get("items")
                .map_or("any".to_owned(), |i| type_sig(i, docs, depth + 1))
        ),
        "object" if s.get("properties").is_some() => {
            format!("{{{}}}", object_sig(s, docs, depth + 1))
        }
        "object" => "object".to_owned(),
        other => other.to_owned(),
    };
    let mut cons = Vec::new();
    for (k, label) in [
        ("minLength", "min"),
        ("maxLength", "max"),
        ("minimum", ">="),
        ("maximum", "<="),
        ("maxItems", "max"),
        ("pattern", "~"),
        ("format", ""),
    ] {
        if let Some(v) = s.get(k) {
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            cons.push(format!("{label}{v}"));
        }
    }
    if !cons.is_empty() {
        let _ = write!(out, "<{}>", cons.join(","));
    }
    out
}

fn object_sig(s: &Value, docs: bool, depth: usize) -> String {
    let required: Vec<&str> = s
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(props) = s.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let mut parts = Vec::new();
    for (k, v) in props {
        let opt = if required.contains(&k.as_str()) {
            ""
        } else {
            "?"
        };
        let mut p = format!("{k}{opt}: {}", type_sig(v, docs, depth));
        if docs && let Some(d) = v.get("description").and_then(Value::as_str) {
            let _ = write!(p, " /* {d} */");
        }
        parts.push(p);
    }
    parts.join(", ")
}

pub(super) fn strip_param_descriptions(t: &Value) -> Value {
    /// Removes `description` from schema `v` and its subschemas (not from property names).
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("description");
                for (k, x) in m.iter_mut() {
                    match (k.as_str(), x) {
                        ("properties" | "$defs" | "definitions", Value::Object(props)) => {
                            props.values_mut().for_each(strip)
                        }
                        (_, x) => strip(x),
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut t = t.clone();
    for key in ["inputSchema", "outputSchema"] {
        if let Some(s) = t.get_mut(key) {
            strip(s);
        }
    }
    t
}
