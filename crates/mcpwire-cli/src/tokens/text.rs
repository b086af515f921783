//! Compact text renderings of a tool list from its JSON Schemas (no protobuf involved).
//!
//! A signature carries the schema's facts in a compact notation: names, types, required
//! (`?` marks optional), nullability (`|null`), enums and consts, unions (`A|B`), nested
//! objects, maps (`{[key]: V}`), arrays (`T[]`), bounds (`<min1,max200>`, `<>=0,<=1000>`,
//! `<items1..5,unique>`), formats, patterns, defaults (`= 10`) and — with `docs` —
//! descriptions; the tool's annotations as flags (`[readOnlyHint, !destructiveHint]`) and
//! its output schema as `-> T`. `$ref`s become named shapes listed once per tool (`where
//! Task = {…}`), so recursion and sharing stay visible. Keywords it does not render are counted in
//! [`Lost`], which the report prints: the saving is then measured against what it kept.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

/// Schema keywords a signature leaves out, with how often each occurred.
pub(crate) type Lost = BTreeMap<String, usize>;

/// Keywords a signature renders (or that only structure the schema).
const RENDERED: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "$id",
    "description",
    "default",
    "format",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "uniqueItems",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "deprecated",
];

/// Deeper than this, a subschema renders as `…` (and counts as lost).
const MAX_DEPTH: usize = 16;

/// One line per tool (`NAME: DESCRIPTION`), its parameters as a signature, then the named
/// shapes its `$ref`s use. Returns the text and what it left out.
pub(super) fn signatures(tools: &[Value], docs: bool) -> (String, Lost) {
    let mut s = String::new();
    let mut lost = Lost::new();
    for t in tools {
        let _ = writeln!(
            s,
            "{}: {}",
            t["name"].as_str().unwrap_or_default(),
            t["description"].as_str().unwrap_or_default()
        );
        if let Some(tool) = t.as_object() {
            for k in tool.keys().filter(|k| !TOOL_RENDERED.contains(&k.as_str())) {
                *lost.entry(format!("tool.{k}")).or_default() += 1;
            }
        }
        let input = t.get("inputSchema").cloned().unwrap_or(json!({}));
        let mut r = Renderer {
            docs,
            root: &input,
            shapes: Vec::new(),
            lost: &mut lost,
        };
        if let Some(m) = input.as_object() {
            r.note_lost(m);
        }
        let params = r.params(&input, 0);
        let _ = writeln!(s, "  ({params})");
        r.where_lines(&mut s);
        if let Some(hints) = t.get("annotations").and_then(Value::as_object) {
            let flags: Vec<String> = hints
                .iter()
                .map(|(k, v)| match v {
                    Value::Bool(true) => k.clone(),
                    Value::Bool(false) => format!("!{k}"),
                    v => format!("{k}={v}"),
                })
                .collect();
            let _ = writeln!(s, "  [{}]", flags.join(", "));
        }
        if let Some(output) = t.get("outputSchema") {
            let mut r = Renderer {
                docs,
                root: output,
                shapes: Vec::new(),
                lost: &mut lost,
            };
            let _ = writeln!(s, "  -> {}", r.type_sig(output, 0));
            r.where_lines(&mut s);
        }
    }
    (s, lost)
}

/// Tool fields a signature renders (name, description, parameters, hints, result).
const TOOL_RENDERED: &[&str] = &[
    "name",
    "description",
    "inputSchema",
    "annotations",
    "outputSchema",
];

struct Renderer<'a> {
    docs: bool,
    /// The tool's input schema (what `$ref`s point into).
    root: &'a Value,
    /// Named shapes used so far: (name, JSON pointer), in order of first use.
    shapes: Vec<(String, String)>,
    lost: &'a mut Lost,
}

impl Renderer<'_> {
    /// `where Name = …` for every named shape used (shapes may use further shapes).
    fn where_lines(&mut self, s: &mut String) {
        let mut i = 0;
        while i < self.shapes.len() {
            let (name, pointer) = self.shapes[i].clone();
            let shape = self.root.pointer(&pointer).cloned().unwrap_or(Value::Null);
            let text = self.type_sig(&shape, 0);
            let _ = writeln!(s, "  where {name} = {text}");
            i += 1;
        }
    }

    /// Counts the keywords of `s` a signature does not render.
    fn note_lost(&mut self, s: &Map<String, Value>) {
        for k in s.keys() {
            let described = k == "description" && !self.docs;
            if !RENDERED.contains(&k.as_str()) && !described {
                *self.lost.entry(k.clone()).or_default() += 1;
            }
        }
    }

    /// `a: T, b?: U = 1 /* doc */` for an object schema's properties.
    fn params(&mut self, s: &Value, depth: usize) -> String {
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
            let mut p = format!("{k}{opt}: {}", self.sig(v, depth + 1, false));
            if self.docs
                && let Some(d) = v.get("description").and_then(Value::as_str)
            {
                let _ = write!(p, " /* {d} */");
            }
            parts.push(p);
        }
        match s.get("additionalProperties") {
            Some(Value::Bool(true)) => parts.push("...".into()),
            Some(extra @ Value::Object(_)) => {
                parts.push(format!("[key]: {}", self.type_sig(extra, depth + 1)))
            }
            _ => {}
        }
        parts.join(", ")
    }

    /// The type of `s` with its constraints, default and (with `docs`) description.
    fn type_sig(&mut self, s: &Value, depth: usize) -> String {
        self.sig(s, depth, true)
    }

    /// [`Renderer::type_sig`]; `own_doc` false when the caller prints the description.
    fn sig(&mut self, s: &Value, depth: usize, own_doc: bool) -> String {
        let Some(m) = s.as_object() else {
            return if s == &Value::Bool(false) {
                "never".into()
            } else {
                "any".into()
            };
        };
        if depth > MAX_DEPTH {
            *self.lost.entry("(nesting too deep)".into()).or_default() += 1;
            return "…".into();
        }
        self.note_lost(m);
        let mut out = self.base_type(m, depth);
        let cons = constraints(m);
        if !cons.is_empty() {
            let _ = write!(out, "<{}>", cons.join(","));
        }
        if m.get("deprecated") == Some(&Value::Bool(true)) {
            out.push_str(" @deprecated");
        }
        if let Some(d) = m.get("default") {
            let _ = write!(out, " = {d}");
        }
        if self.docs
            && own_doc
            && let Some(d) = m.get("description").and_then(Value::as_str)
        {
            let _ = write!(out, " /* {d} */");
        }
        out
    }

    /// The type without constraints: a named shape, a union, an enum, an object, …
    fn base_type(&mut self, m: &Map<String, Value>, depth: usize) -> String {
        if let Some(r) = m.get("$ref").and_then(Value::as_str) {
            return self.shape(r);
        }
        if let Some(c) = m.get("const") {
            return c.to_string();
        }
        if let Some(e) = m.get("enum").and_then(Value::as_array) {
            return e.iter().map(Value::to_string).collect::<Vec<_>>().join("|");
        }
        for (key, sep) in [("anyOf", "|"), ("oneOf", "|"), ("allOf", " & ")] {
            if let Some(members) = m.get(key).and_then(Value::as_array) {
                let parts: Vec<String> = members.iter().map(|x| self.member(x, depth)).collect();
                return parts.join(sep);
            }
        }
        match m.get("type") {
            Some(Value::String(t)) => self.typed(t, m, depth),
            Some(Value::Array(ts)) => ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| self.typed(t, m, depth))
                .collect::<Vec<_>>()
                .join("|"),
            _ if m.contains_key("properties") => self.typed("object", m, depth),
            _ => "any".into(),
        }
    }

    /// A union member: parenthesized when it is itself a union.
    fn member(&mut self, x: &Value, depth: usize) -> String {
        let t = self.type_sig(x, depth + 1);
        if t.contains('|') && !t.starts_with('{') {
            format!("({t})")
        } else {
            t
        }
    }

    fn typed(&mut self, t: &str, m: &Map<String, Value>, depth: usize) -> String {
        match t {
            "integer" => "int".into(),
            "array" => match m.get("items") {
                Some(items) => {
                    let it = self.type_sig(items, depth + 1);
                    if it.contains(['|', ' ', '<']) && !it.starts_with('{') {
                        format!("({it})[]")
                    } else {
                        format!("{it}[]")
                    }
                }
                None => "any[]".into(),
            },
            "object" if m.contains_key("properties") => {
                format!("{{{}}}", self.params(&Value::Object(m.clone()), depth))
            }
            "object" => match m.get("additionalProperties") {
                Some(v @ Value::Object(_)) => format!("{{[key]: {}}}", self.type_sig(v, depth + 1)),
                _ => "object".into(),
            },
            other => other.into(),
        }
    }

    /// The name of the shape `reference` points to, remembered for the `where` lines.
    fn shape(&mut self, reference: &str) -> String {
        let Some(pointer) = reference.strip_prefix('#') else {
            *self.lost.entry("$ref (remote)".into()).or_default() += 1;
            return "any".into();
        };
        let name = pointer.rsplit('/').next().unwrap_or("Shape").to_owned();
        let name = if name.is_empty() { "Root".into() } else { name };
        if !self.shapes.iter().any(|(_, p)| p == pointer) {
            self.shapes.push((name.clone(), pointer.to_owned()));
        }
        name
    }
}

/// `min1`, `max200`, `>=0`, `<1`, `*0.5`, `items1..5`, `unique`, `~^a+$`, `date-time`, …
fn constraints(m: &Map<String, Value>) -> Vec<String> {
    let mut cons = Vec::new();
    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    for (k, label) in [
        ("minLength", "min"),
        ("maxLength", "max"),
        ("minimum", ">="),
        ("maximum", "<="),
        ("exclusiveMinimum", ">"),
        ("exclusiveMaximum", "<"),
        ("multipleOf", "*"),
        ("minItems", "items>="),
        ("maxItems", "items<="),
        ("minProperties", "keys>="),
        ("maxProperties", "keys<="),
        ("pattern", "~"),
        ("format", ""),
    ] {
        if let Some(v) = m.get(k) {
            cons.push(format!("{label}{}", text(v)));
        }
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
        cons.push("unique".into());
    }
    cons
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::signatures;

    /// FastMCP-style: `$defs` + `$ref`, `anyOf` with null, nested models, recursion,
    /// bounds, formats, defaults.
    #[test]
    fn refs_unions_and_bounds_are_rendered() {
        let tool = json!({
            "name": "create_task",
            "description": "Create a task.",
            "inputSchema": {
                "$defs": {
                    "Person": {"properties": {"name": {"minLength": 1, "type": "string"}},
                               "required": ["name"], "type": "object"},
                    "Step": {"properties": {"children": {"items": {"$ref": "#/$defs/Step"}, "type": "array"}},
                             "type": "object", "title": "Step"},
                    "Task": {"properties": {
                        "title": {"type": "string", "maxLength": 200, "description": "Short."},
                        "due": {"anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}], "default": null},
                        "assignee": {"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}]},
                        "steps": {"items": {"$ref": "#/$defs/Step"}, "type": "array", "minItems": 1},
                        "hours": {"type": "number", "minimum": 0, "default": 1.0},
                        "metadata": {"anyOf": [{"additionalProperties": true, "type": "object"}, {"type": "null"}]}
                    }, "required": ["title"], "type": "object"}
                },
                "properties": {
                    "task": {"$ref": "#/$defs/Task"},
                    "notify": {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": null}
                },
                "required": ["task"], "type": "object", "additionalProperties": false
            }
        });
        let (text, lost) = signatures(std::slice::from_ref(&tool), true);
        let want = "create_task: Create a task.\n  \
            (notify?: boolean|null = null, task: Task)\n  \
            where Task = {assignee?: Person|null, due?: string<date-time>|null = null, \
            hours?: number<>=0> = 1.0, metadata?: object|null, steps?: Step[]<items>=1>, \
            title: string<max200> /* Short. */}\n  \
            where Person = {name: string<min1>}\n  \
            where Step = {children?: Step[]}\n";
        assert_eq!(text, want);
        assert_eq!(lost.get("title"), Some(&1), "{lost:?}");
        let (nodesc, lost) = signatures(&[tool], false);
        assert!(!nodesc.contains("Short."));
        assert!(!lost.contains_key("description"));
    }
}
