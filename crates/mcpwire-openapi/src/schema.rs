//! OpenAPI schemas → self-contained JSON Schema 2020-12: local `$ref`s inlined (a
//! recursive or too deep reference becomes `{}`, any value), 3.0's `nullable`, boolean
//! `exclusiveMinimum`/`exclusiveMaximum` and `example` rewritten, OpenAPI-only keywords
//! (`discriminator`, `xml`, `externalDocs`, `x-…`) dropped.

use serde_json::{Map, Value, json};

use crate::OpenApiError;
use crate::document::{Document, Limits, Version};

/// Keywords whose value is one schema.
const ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
const MANY: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const MAP: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// Keywords that mean nothing to a JSON Schema validator.
const DROPPED: &[&str] = &[
    "discriminator",
    "xml",
    "externalDocs",
    "nullable",
    "example",
];

/// Follows `$ref`s within one document, bounded by its [`Limits`].
pub struct Resolver<'a> {
    doc: &'a Document,
    limits: &'a Limits,
}

impl<'a> Resolver<'a> {
    /// A resolver for `doc`.
    pub fn new(doc: &'a Document, limits: &'a Limits) -> Resolver<'a> {
        Resolver { doc, limits }
    }

    /// The object `value` is, or refers to with `$ref` (for parameters, request bodies,
    /// responses, path items), references followed at most `max_ref_depth` times.
    pub fn object(&self, value: &'a Value) -> Result<&'a Value, OpenApiError> {
        let mut v = value;
        for _ in 0..=self.limits.max_ref_depth {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => v = self.lookup(r)?,
                None => return Ok(v),
            }
        }
        Err(OpenApiError::Ref {
            reference: value
                .get("$ref")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            reason: format!("more than {} references deep", self.limits.max_ref_depth),
        })
    }

    /// The JSON Schema `schema` stands for, self-contained.
    pub fn schema(&self, schema: &Value) -> Result<Value, OpenApiError> {
        let mut budget = self.limits.max_schema_nodes;
        let mut stack = Vec::new();
        self.convert(schema, &mut stack, &mut budget)
    }

    fn lookup(&self, reference: &str) -> Result<&'a Value, OpenApiError> {
        let bad = |reason: &str| OpenApiError::Ref {
            reference: reference.to_owned(),
            reason: reason.to_owned(),
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return Err(bad(
                "only references within the document (`#/…`) are followed",
            ));
        };
        let pointer = percent_encoding::percent_decode_str(pointer)
            .decode_utf8()
            .map_err(|_| bad("not UTF-8 once decoded"))?;
        self.doc
            .root
            .pointer(&pointer)
            .ok_or_else(|| bad("nothing there"))
    }

    fn convert(
        &self,
        schema: &Value,
        stack: &mut Vec<String>,
        budget: &mut usize,
    ) -> Result<Value, OpenApiError> {
        if *budget == 0 {
            return Err(OpenApiError::SchemaTooLarge(self.limits.max_schema_nodes));
        }
        *budget -= 1;
        let Some(obj) = schema.as_object() else {
            // `true`, `false` (3.1) or something meaningless: kept as it is.
            return Ok(schema.clone());
        };
        if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
            if stack.iter().any(|r| r == reference) || stack.len() >= self.limits.max_ref_depth {
                return Ok(json!({}));
            }
            let target = self.lookup(reference)?;
            stack.push(reference.to_owned());
            let resolved = self.convert(target, stack, budget);
            stack.pop();
            let mut resolved = resolved?;
            // 3.1 allows keywords beside `$ref`: they narrow (a description, say).
            if obj.len() > 1
                && let Some(r) = resolved.as_object_mut()
            {
                for (k, v) in obj {
                    if k != "$ref" && !DROPPED.contains(&k.as_str()) && !k.starts_with("x-") {
                        r.insert(k.clone(), self.convert(v, stack, budget)?);
                    }
                }
            }
            return Ok(resolved);
        }
        let mut out = Map::new();
        for (k, v) in obj {
            let key = k.as_str();
            if DROPPED.contains(&key) || key.starts_with("x-") {
                continue;
            }
            let converted = if ONE.contains(&key) {
                self.convert(v, stack, budget)?
            } else if MANY.contains(&key) {
                match v.as_array() {
                    Some(items) => Value::Array(
                        items
                            .iter()
                            .map(|s| self.convert(s, stack, budget))
                            .collect::<Result<_, _>>()?,
                    ),
                    None => v.clone(),
                }
            } else if MAP.contains(&key) {
                match v.as_object() {
                    Some(m) => {
                        let mut props = Map::new();
                        for (name, s) in m {
                            props.insert(name.clone(), self.convert(s, stack, budget)?);
                        }
                        Value::Object(props)
                    }
                    None => v.clone(),
                }
            } else {
                v.clone()
            };
            out.insert(k.clone(), converted);
        }
        if self.doc.version == Version::V30 {
            from_30(obj, &mut out);
        }
        Ok(Value::Object(out))
    }
}

/// 3.0's differences from JSON Schema, rewritten in `out` (converted from `orig`).
fn from_30(orig: &Map<String, Value>, out: &mut Map<String, Value>) {
    for (flag, bound) in [
        ("exclusiveMinimum", "minimum"),
        ("exclusiveMaximum", "maximum"),
    ] {
        if let Some(Value::Bool(on)) = orig.get(flag) {
            out.remove(flag);
            if *on && let Some(b) = out.remove(bound) {
                out.insert(flag.to_owned(), b);
            }
        }
    }
    if let Some(example) = orig.get("example") {
        out.entry("examples")
            .or_insert_with(|| Value::Array(vec![example.clone()]));
    }
    if orig.get("nullable") == Some(&Value::Bool(true)) {
        match out.get("type").cloned() {
            Some(Value::String(t)) => {
                out.insert("type".into(), json!([t, "null"]));
                if let Some(Value::Array(e)) = out.get_mut("enum")
                    && !e.contains(&Value::Null)
                {
                    e.push(Value::Null);
                }
            }
            _ => {
                let inner = Value::Object(std::mem::take(out));
                out.insert("anyOf".into(), json!([inner, {"type": "null"}]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(yaml: &str) -> Document {
        Document::parse(yaml.as_bytes(), &Limits::default()).expect("a document")
    }

    #[test]
    fn refs_are_inlined_and_recursion_is_cut() {
        let d = doc(
            "openapi: 3.1.0\npaths: {}\ncomponents:\n  schemas:\n    Node:\n      type: object\n      properties:\n        name: {type: string}\n        next: {$ref: '#/components/schemas/Node'}\n",
        );
        let l = Limits::default();
        let r = Resolver::new(&d, &l);
        let s = r
            .schema(&json!({"$ref": "#/components/schemas/Node"}))
            .expect("resolved");
        assert_eq!(s["properties"]["name"], json!({"type": "string"}));
        assert_eq!(s["properties"]["next"], json!({}));
    }

    #[test]
    fn openapi_30_keywords_become_json_schema() {
        let d = doc("openapi: 3.0.3\npaths: {}\n");
        let l = Limits::default();
        let r = Resolver::new(&d, &l);
        let s = r
            .schema(&json!({"type": "integer", "nullable": true, "minimum": 1,
                "exclusiveMinimum": true, "example": 3, "x-internal": 1}))
            .expect("converted");
        assert_eq!(
            s,
            json!({"type": ["integer", "null"], "exclusiveMinimum": 1, "examples": [3]})
        );
        let s = r
            .schema(&json!({"allOf": [{"type": "string"}], "nullable": true}))
            .expect("converted");
        assert_eq!(
            s,
            json!({"anyOf": [{"allOf": [{"type": "string"}]}, {"type": "null"}]})
        );
    }

    #[test]
    fn external_and_dangling_refs_are_refused() {
        let d = doc("openapi: 3.1.0\npaths: {}\n");
        let l = Limits::default();
        let r = Resolver::new(&d, &l);
        assert!(r.schema(&json!({"$ref": "other.yaml#/A"})).is_err());
        assert!(
            r.schema(&json!({"$ref": "#/components/schemas/Nope"}))
                .is_err()
        );
    }

    #[test]
    fn node_budget_is_enforced() {
        let d = doc(
            "openapi: 3.1.0\npaths: {}\ncomponents:\n  schemas:\n    A: {type: object, properties: {a: {$ref: '#/components/schemas/B'}, b: {$ref: '#/components/schemas/B'}}}\n    B: {type: object, properties: {a: {$ref: '#/components/schemas/C'}, b: {$ref: '#/components/schemas/C'}}}\n    C: {type: object, properties: {a: {type: string}, b: {type: string}}}\n",
        );
        let l = Limits {
            max_schema_nodes: 5,
            ..Limits::default()
        };
        let r = Resolver::new(&d, &l);
        assert_eq!(
            r.schema(&json!({"$ref": "#/components/schemas/A"})),
            Err(OpenApiError::SchemaTooLarge(5))
        );
    }
}
