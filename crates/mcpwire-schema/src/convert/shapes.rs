//! Enums, unions, arrays and objects: the subschemas that become more than a scalar.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::{Builder, Converter, Kind, Sub, field_of};
use crate::SchemaError;
use crate::ir::{Card, Enum, RuleValue, Rules, Shape, Ty};
use crate::names::{identifier, pascal, upper_snake};

impl Converter<'_> {
    pub(super) fn enumeration(
        &mut self,
        sub: Sub<'_>,
        e: &Value,
        b: &mut Builder,
    ) -> Result<Kind, SchemaError> {
        let Sub {
            root,
            s,
            hint,
            doc,
            depth,
            ..
        } = sub;
        let Some(vals) = e.as_array().filter(|v| !v.is_empty()) else {
            return self.fallback(root, s, doc, depth);
        };
        if vals.len() > self.limits.max_enum_values {
            return Err(SchemaError::TooLarge(format!(
                "{} enum values (limit {})",
                vals.len(),
                self.limits.max_enum_values
            )));
        }
        self.nodes += vals.len();
        let nullable = vals.iter().any(Value::is_null);
        let non_null: Vec<&Value> = vals.iter().filter(|v| !v.is_null()).collect();
        let unique: BTreeSet<String> = non_null.iter().map(|v| v.to_string()).collect();
        if non_null.is_empty() || unique.len() != non_null.len() {
            return self.fallback(root, s, doc, depth);
        }
        if non_null.iter().all(|v| v.is_string()) {
            let name = b.scope.claim(&pascal(hint));
            let prefix = upper_snake(&name);
            let unspecified = b.scope.claim(&format!("{prefix}_UNSPECIFIED"));
            let values = non_null
                .iter()
                .filter_map(|v| v.as_str())
                .map(|v| {
                    let n = b.scope.claim(&format!("{prefix}_{}", upper_snake(v)));
                    (n, v.to_owned())
                })
                .collect();
            b.msg.enums.push(Enum {
                name: name.clone(),
                values,
                unspecified,
            });
            let mut k = Kind::plain(Ty::Enum(name), doc);
            k.nullable = nullable;
            return Ok(k);
        }
        let ints: Option<Vec<i64>> = non_null.iter().map(|v| v.as_i64()).collect();
        let (ty, rule) = match ints {
            Some(ints) if non_null.iter().all(|v| v.is_i64() || v.is_u64()) => (
                Ty::Int64,
                ("int64", ints.into_iter().map(RuleValue::Int).collect()),
            ),
            _ => {
                let floats: Option<Vec<f64>> = non_null.iter().map(|v| v.as_f64()).collect();
                match floats {
                    Some(f) if non_null.iter().all(|v| v.is_f64()) => (
                        Ty::Double,
                        ("double", f.into_iter().map(RuleValue::Double).collect()),
                    ),
                    _ => return self.fallback(root, s, doc, depth),
                }
            }
        };
        let mut k = Kind::plain(ty, doc);
        k.nullable = nullable;
        k.rules.push((
            rule.0,
            RuleValue::Msg(vec![("in", RuleValue::List(rule.1))]),
        ));
        Ok(k)
    }

    pub(super) fn union(
        &mut self,
        sub: Sub<'_>,
        combinator: &str,
        b: &mut Builder,
    ) -> Result<Kind, SchemaError> {
        let Sub {
            root,
            s,
            obj,
            hint,
            doc,
            depth,
        } = sub;
        let Some(variants) = obj[combinator].as_array().filter(|v| !v.is_empty()) else {
            return self.fallback(root, s, doc, depth);
        };
        let shape = if combinator == "oneOf" {
            Shape::OneOf
        } else {
            Shape::AnyOf
        };
        let name = b.scope.claim(&pascal(hint));
        let mut ub = self.builder(name.clone(), shape);
        ub.scope.claim("value");
        let mut nullable = false;
        let mut number = 0u32;
        for (i, v) in variants.iter().enumerate() {
            if v.get("type").and_then(Value::as_str) == Some("null")
                && v.as_object().map_or(0, Map::len) == 1
            {
                nullable = true;
                continue;
            }
            let vhint = v
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("variant_{}", i + 1));
            let k = self.classify(root, v, &vhint, &mut ub, depth + 1)?;
            if k.card != Card::Optional || k.nullable {
                return self.fallback(root, s, doc, depth);
            }
            let want = match v.get("title").and_then(Value::as_str) {
                Some(t) => identifier(t),
                None => match k.ty {
                    Ty::String => "string_value",
                    Ty::Int64 => "integer_value",
                    Ty::Double => "number_value",
                    Ty::Bool => "boolean_value",
                    Ty::Enum(_) => "enum_value",
                    Ty::Message(_) | Ty::Struct => "object_value",
                    Ty::Value => "json_value",
                }
                .to_owned(),
            };
            let fname = ub.scope.claim_field(&want, None).ok_or_else(|| {
                SchemaError::Invalid(format!("union member {want:?} cannot be named"))
            })?;
            number += 1;
            let mut f = field_of(fname, "", number, k);
            f.json_name = None;
            f.card = Card::OneofMember;
            ub.msg.fields.push(f);
        }
        if ub.msg.fields.is_empty() {
            return self.fallback(root, s, doc, depth);
        }
        b.msg.messages.push(ub.msg);
        let mut k = Kind::plain(Ty::Message(name), doc);
        k.nullable = nullable;
        Ok(k)
    }

    pub(super) fn array(&mut self, sub: Sub<'_>, b: &mut Builder) -> Result<Kind, SchemaError> {
        let Sub {
            root,
            s,
            obj,
            hint,
            doc,
            depth,
        } = sub;
        let item = match obj.get("items") {
            None => Kind::plain(Ty::Value, None),
            Some(i) => self.classify(root, i, hint, b, depth + 1)?,
        };
        if item.card != Card::Optional || item.nullable {
            return self.fallback(root, s, doc, depth);
        }
        let mut rep: Rules = Vec::new();
        if let Some(n) = obj.get("minItems").and_then(Value::as_u64) {
            rep.push(("min_items", RuleValue::UInt(n)));
        }
        if let Some(n) = obj.get("maxItems").and_then(Value::as_u64) {
            rep.push(("max_items", RuleValue::UInt(n)));
        }
        if obj.get("uniqueItems") == Some(&Value::Bool(true)) {
            rep.push(("unique", RuleValue::Bool(true)));
        }
        if !item.rules.is_empty() {
            rep.push(("items", RuleValue::Msg(item.rules)));
        }
        let mut k = Kind {
            ty: item.ty,
            card: Card::Repeated,
            rules: Vec::new(),
            nullable: false,
            json_schema: item.json_schema,
            doc,
            default: None,
            format: item.format,
        };
        if !rep.is_empty() {
            k.rules.push(("repeated", RuleValue::Msg(rep)));
        }
        Ok(k)
    }

    pub(super) fn object(&mut self, sub: Sub<'_>, b: &mut Builder) -> Result<Kind, SchemaError> {
        let Sub {
            root,
            s,
            obj,
            hint,
            doc,
            depth,
        } = sub;
        let has_props = obj
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|p| !p.is_empty());
        if has_props {
            let name = b.scope.claim(&pascal(hint));
            let msg = self.object_message(root, &name, obj, depth)?;
            b.msg.messages.push(msg);
            return Ok(Kind::plain(Ty::Message(name), doc));
        }
        match obj.get("additionalProperties") {
            Some(ap @ Value::Object(m)) if !m.is_empty() => {
                let v = self.classify(root, ap, &format!("{hint}_value"), b, depth + 1)?;
                if v.card != Card::Optional || v.nullable || v.json_schema.is_some() {
                    return self.fallback(root, s, doc, depth);
                }
                let mut map: Rules = Vec::new();
                if let Some(n) = obj.get("minProperties").and_then(Value::as_u64) {
                    map.push(("min_pairs", RuleValue::UInt(n)));
                }
                if let Some(n) = obj.get("maxProperties").and_then(Value::as_u64) {
                    map.push(("max_pairs", RuleValue::UInt(n)));
                }
                if !v.rules.is_empty() {
                    map.push(("values", RuleValue::Msg(v.rules)));
                }
                let mut k = Kind::plain(v.ty, doc);
                k.card = Card::Map;
                k.format = v.format;
                if !map.is_empty() {
                    k.rules.push(("map", RuleValue::Msg(map)));
                }
                Ok(k)
            }
            Some(Value::Bool(false)) => self.fallback(root, s, doc, depth),
            _ if obj.contains_key("minProperties") || obj.contains_key("maxProperties") => {
                self.fallback(root, s, doc, depth)
            }
            _ => Ok(Kind::plain(Ty::Struct, doc)),
        }
    }

    /// `google.protobuf.Value` carrying the subschema verbatim (with local `$ref`s expanded).
    pub(super) fn fallback(
        &mut self,
        root: &Value,
        s: &Value,
        doc: Option<String>,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
        let expanded = self.expand(root, s, depth)?;
        let mut k = Kind::plain(Ty::Value, doc);
        let mut kept = expanded;
        if let Value::Object(m) = &mut kept {
            m.remove("description");
        }
        k.json_schema = Some(kept.to_string());
        Ok(k)
    }

    pub(super) fn expand(
        &mut self,
        root: &Value,
        s: &Value,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        self.count(depth)?;
        Ok(match s {
            Value::Object(m) => {
                let mut out = Map::new();
                if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                    let t = self.resolve(root, r)?.clone();
                    if let Value::Object(t) = self.expand(root, &t, depth + 1)? {
                        out.extend(t);
                    }
                }
                for (k, v) in m {
                    if k == "$ref" || k == "$defs" || k == "definitions" {
                        continue;
                    }
                    out.insert(k.clone(), self.expand(root, v, depth + 1)?);
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(
                a.iter()
                    .map(|v| self.expand(root, v, depth + 1))
                    .collect::<Result<_, _>>()?,
            ),
            other => other.clone(),
        })
    }
}
