//! JSON Schema 2020-12 → the plan of a `.proto` file (`ir`). The rules are in
//! `docs/design/proto-schemas.md`; in short: objects with properties → messages, arrays →
//! `repeated`, string enums → enums, `oneOf`/`anyOf` → union messages, free-form objects →
//! `google.protobuf.Struct`, anything protobuf cannot type exactly → `google.protobuf.Value`
//! with the subschema kept verbatim.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Map, Value};

use crate::ir::{Card, Enum, Field, Message, RuleValue, Rules, Shape, Ty};
use crate::names::{Scope, default_json_name, identifier, pascal, upper_snake};
use crate::{Limits, SchemaError};

/// A converted subschema: what its field looks like.
struct Kind {
    ty: Ty,
    card: Card,
    rules: Rules,
    nullable: bool,
    json_schema: Option<String>,
    doc: Option<String>,
}

impl Kind {
    fn plain(ty: Ty, doc: Option<String>) -> Kind {
        Kind {
            ty,
            card: Card::Optional,
            rules: Vec::new(),
            nullable: false,
            json_schema: None,
            doc,
        }
    }
}

/// A message under construction with the names taken in its scope.
struct Builder {
    msg: Message,
    scope: Scope,
}

/// The converter of one tool's schemas.
pub(crate) struct Converter<'l> {
    limits: &'l Limits,
    nodes: usize,
    /// Top-level messages made from `$ref` targets.
    pub top: Vec<Message>,
    top_scope: Scope,
    /// Top-level names every nested scope must avoid (so simple names never shadow).
    reserved: Vec<String>,
    /// (document, JSON pointer) → message name, for `$ref`s to object schemas.
    defs: HashMap<(usize, String), String>,
    doc: usize,
}

const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$defs",
    "definitions",
    "format",
    "contentMediaType",
    "contentEncoding",
];

impl<'l> Converter<'l> {
    pub(crate) fn new(limits: &'l Limits, docs: &[&Value]) -> Converter<'l> {
        let mut top_scope = Scope::default();
        let mut reserved = vec!["Input".to_owned(), "Output".to_owned()];
        for r in &reserved {
            top_scope.reserve(r);
        }
        let mut defs = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            for key in ["$defs", "definitions"] {
                if let Some(m) = d.get(key).and_then(Value::as_object) {
                    for (name, s) in m {
                        if is_message_schema(s) {
                            let n = top_scope.claim(&pascal(name));
                            reserved.push(n.clone());
                            let ptr = format!("#/{key}/{}", escape_pointer(name));
                            defs.insert((i, ptr), n);
                        }
                    }
                }
            }
        }
        Converter {
            limits,
            nodes: 0,
            top: Vec::new(),
            top_scope,
            reserved,
            defs,
            doc: 0,
        }
    }

    /// The top-level message `name` of document `doc` (`root`), which must be an object schema.
    pub(crate) fn root_message(
        &mut self,
        doc: usize,
        root: &Value,
        name: &str,
    ) -> Result<Message, SchemaError> {
        self.doc = doc;
        let resolved;
        let mut s = root;
        if let Some(r) = root.get("$ref").and_then(Value::as_str) {
            resolved = self.resolve(root, r)?.clone();
            s = &resolved;
        }
        let obj = s
            .as_object()
            .ok_or_else(|| SchemaError::Invalid(format!("{name}: the schema must be an object")))?;
        match obj.get("type") {
            None => {}
            Some(Value::String(t)) if t == "object" => {}
            Some(t) => {
                return Err(SchemaError::Invalid(format!(
                    "{name}: the schema's type must be \"object\", not {t}"
                )));
            }
        }
        let mut msg = self.object_message(root, name, obj, 0)?;
        msg.doc = doc_of(obj);
        Ok(msg)
    }

    fn builder(&self, name: String, shape: Shape) -> Builder {
        let mut scope = Scope::default();
        for r in &self.reserved {
            scope.reserve(r);
        }
        Builder {
            msg: Message::new(name, shape),
            scope,
        }
    }

    fn count(&mut self, depth: usize) -> Result<(), SchemaError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes {
            return Err(SchemaError::TooLarge(format!(
                "more than {} subschemas",
                self.limits.max_nodes
            )));
        }
        if depth > self.limits.max_depth {
            return Err(SchemaError::TooLarge(format!(
                "nested deeper than {} levels",
                self.limits.max_depth
            )));
        }
        Ok(())
    }

    fn object_message(
        &mut self,
        root: &Value,
        name: &str,
        obj: &Map<String, Value>,
        depth: usize,
    ) -> Result<Message, SchemaError> {
        let mut b = self.builder(name.to_owned(), Shape::Object);
        let empty = Map::new();
        let props = match obj.get("properties") {
            None => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Err(SchemaError::Invalid("properties must be an object".into())),
        };
        if props.len() > self.limits.max_properties {
            return Err(SchemaError::TooLarge(format!(
                "{} properties in one object (limit {})",
                props.len(),
                self.limits.max_properties
            )));
        }
        let required: BTreeSet<&str> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Properties whose names are already identifiers keep them; the others are renamed
        // around them. Field numbers follow the (sorted) property order either way.
        let mut order: Vec<(usize, &String, &Value)> = props
            .iter()
            .enumerate()
            .map(|(i, (k, v))| (i, k, v))
            .collect();
        order.sort_by_key(|(i, k, _)| (identifier(k) != **k, *i));
        for (i, key, sub) in order {
            let mut want = identifier(key);
            if want != *key && default_json_name(&want) == *key {
                // The JSON name would look implicit: make the rename visible.
                want.insert_str(0, "f_");
            }
            let fname = b.scope.claim_field(&want, Some(key)).ok_or_else(|| {
                SchemaError::Invalid(format!(
                    "property {key:?} clashes with another property's protobuf name"
                ))
            })?;
            let kind = self.classify(root, sub, key, &mut b, depth + 1)?;
            let number = u32::try_from(i + 1).map_err(|_| SchemaError::TooLarge(key.clone()))?;
            let mut field = field_of(fname, key, number, kind);
            if required.contains(key.as_str()) {
                if field.card == Card::Optional && !field.nullable {
                    field.rules.insert(0, ("required", RuleValue::Bool(true)));
                } else {
                    field.json_required = true;
                }
            }
            b.msg.fields.push(field);
        }
        b.msg.fields.sort_by_key(|f| f.number);
        Ok(b.msg)
    }

    fn resolve<'v>(&self, root: &'v Value, r: &str) -> Result<&'v Value, SchemaError> {
        let ptr = r
            .strip_prefix('#')
            .ok_or_else(|| SchemaError::Invalid(format!("only local $refs are supported: {r}")))?;
        root.pointer(ptr)
            .ok_or_else(|| SchemaError::Invalid(format!("$ref {r} points nowhere")))
    }

    /// The message a `$ref` to an object schema stands for, converting it once.
    fn def_message(
        &mut self,
        root: &Value,
        r: &str,
        target: &Map<String, Value>,
        depth: usize,
    ) -> Result<String, SchemaError> {
        let key = (self.doc, r.to_owned());
        if let Some(n) = self.defs.get(&key)
            && (self.top.iter().any(|m| &m.name == n) || self.in_progress(n))
        {
            return Ok(n.clone());
        }
        let name = match self.defs.get(&key) {
            Some(n) => n.clone(),
            None => {
                let last = r.rsplit('/').next().unwrap_or("Ref");
                let n = self.top_scope.claim(&pascal(last));
                self.reserved.push(n.clone());
                self.defs.insert(key, n.clone());
                n
            }
        };
        // Mark as in progress with a placeholder so recursive refs resolve to the name.
        self.top
            .push(Message::new(format!("\0{name}"), Shape::Object));
        let mut msg = self.object_message(root, &name, target, depth)?;
        msg.doc = doc_of(target);
        let slot = self
            .top
            .iter_mut()
            .find(|m| m.name == format!("\0{name}"))
            .ok_or_else(|| SchemaError::Invalid("internal: lost a $ref placeholder".into()))?;
        *slot = msg;
        Ok(name)
    }

    fn in_progress(&self, name: &str) -> bool {
        self.top.iter().any(|m| m.name == format!("\0{name}"))
    }

    /// Converts the subschema of a field (or list item, map value, union member).
    fn classify(
        &mut self,
        root: &Value,
        s: &Value,
        hint: &str,
        b: &mut Builder,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
        self.count(depth)?;
        let obj = match s {
            Value::Bool(true) => return Ok(Kind::plain(Ty::Value, None)),
            Value::Object(o) => o,
            _ => return self.fallback(root, s, None, depth),
        };
        let doc = doc_of(obj);
        if let Some(r) = obj.get("$ref").and_then(Value::as_str) {
            let target = self.resolve(root, r)?;
            if is_message_schema(target)
                && let Value::Object(t) = target
            {
                let name = self.def_message(root, r, t, depth)?;
                let doc = doc.or_else(|| doc_of(t));
                return Ok(Kind::plain(Ty::Message(name), doc));
            }
            let mut merged = target.as_object().cloned().unwrap_or_default();
            for (k, v) in obj {
                if k != "$ref" {
                    merged.insert(k.clone(), v.clone());
                }
            }
            if !target.is_object() {
                return self.fallback(root, target, doc, depth);
            }
            return self.classify(root, &Value::Object(merged), hint, b, depth + 1);
        }
        if let Some(inner) = nullable_inner(obj) {
            let mut k = self.classify(root, &inner, hint, b, depth + 1)?;
            if k.card != Card::Optional || k.nullable || k.ty == Ty::Value {
                return self.fallback(root, s, doc, depth);
            }
            k.nullable = true;
            k.doc = doc.or(k.doc);
            return Ok(k);
        }
        if let Some(e) = obj.get("enum") {
            return self.enumeration(root, s, e, hint, b, doc, depth);
        }
        if let Some(c) = obj.get("const") {
            let (ty, rules) = match c {
                Value::String(v) => (Ty::String, ("string", RuleValue::Str(v.clone()))),
                Value::Number(n) if n.as_i64().is_some() && is_type(obj, "integer") => (
                    Ty::Int64,
                    ("int64", RuleValue::Int(n.as_i64().unwrap_or_default())),
                ),
                Value::Number(n) if n.as_f64().is_some() && !is_type(obj, "integer") => (
                    Ty::Double,
                    ("double", RuleValue::Double(n.as_f64().unwrap_or_default())),
                ),
                _ => return self.fallback(root, s, doc, depth),
            };
            let mut k = Kind::plain(ty, doc);
            k.rules
                .push((rules.0, RuleValue::Msg(vec![("const", rules.1)])));
            return Ok(k);
        }
        let combinator = ["oneOf", "anyOf"]
            .into_iter()
            .find(|c| obj.contains_key(*c));
        const UNSUPPORTED: &[&str] = &[
            "allOf",
            "not",
            "if",
            "then",
            "else",
            "prefixItems",
            "patternProperties",
            "propertyNames",
            "dependentSchemas",
            "dependentRequired",
            "unevaluatedProperties",
            "unevaluatedItems",
            "contains",
            "multipleOf",
        ];
        if UNSUPPORTED.iter().any(|k| obj.contains_key(*k))
            || (combinator.is_some() && (obj.contains_key("type") || obj.len() > 2))
            || (obj.contains_key("oneOf") && obj.contains_key("anyOf"))
        {
            return self.fallback(root, s, doc, depth);
        }
        if let Some(c) = combinator {
            return self.union(root, s, obj, c, hint, b, doc, depth);
        }
        let ty = match obj.get("type") {
            Some(Value::String(t)) => t.as_str(),
            None if obj.contains_key("properties") => "object",
            None if obj.contains_key("items") => "array",
            None if obj.keys().all(|k| ANNOTATIONS.contains(&k.as_str())) => {
                return Ok(Kind::plain(Ty::Value, doc));
            }
            _ => return self.fallback(root, s, doc, depth),
        };
        match ty {
            "string" => Ok(string_kind(obj, doc)),
            "integer" => Ok(number_kind(obj, doc, true)),
            "number" => Ok(number_kind(obj, doc, false)),
            "boolean" => Ok(Kind::plain(Ty::Bool, doc)),
            "array" => self.array(root, s, obj, hint, b, doc, depth),
            "object" => self.object(root, s, obj, hint, b, doc, depth),
            _ => self.fallback(root, s, doc, depth),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn enumeration(
        &mut self,
        root: &Value,
        s: &Value,
        e: &Value,
        hint: &str,
        b: &mut Builder,
        doc: Option<String>,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
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

    #[allow(clippy::too_many_arguments)]
    fn union(
        &mut self,
        root: &Value,
        s: &Value,
        obj: &Map<String, Value>,
        combinator: &str,
        hint: &str,
        b: &mut Builder,
        doc: Option<String>,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
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

    #[allow(clippy::too_many_arguments)]
    fn array(
        &mut self,
        root: &Value,
        s: &Value,
        obj: &Map<String, Value>,
        hint: &str,
        b: &mut Builder,
        doc: Option<String>,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
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
        };
        if !rep.is_empty() {
            k.rules.push(("repeated", RuleValue::Msg(rep)));
        }
        Ok(k)
    }

    #[allow(clippy::too_many_arguments)]
    fn object(
        &mut self,
        root: &Value,
        s: &Value,
        obj: &Map<String, Value>,
        hint: &str,
        b: &mut Builder,
        doc: Option<String>,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
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
    fn fallback(
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

    fn expand(&mut self, root: &Value, s: &Value, depth: usize) -> Result<Value, SchemaError> {
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

fn field_of(name: String, key: &str, number: u32, k: Kind) -> Field {
    Field {
        json_name: (name != key && !key.is_empty()).then(|| key.to_owned()),
        name,
        number,
        doc: k.doc,
        ty: k.ty,
        card: k.card,
        rules: k.rules,
        nullable: k.nullable,
        json_required: false,
        json_schema: k.json_schema,
    }
}

fn doc_of(obj: &Map<String, Value>) -> Option<String> {
    obj.get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_owned)
}

fn is_type(obj: &Map<String, Value>, t: &str) -> bool {
    obj.get("type").and_then(Value::as_str) == Some(t)
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

/// An object schema with properties (and nothing that makes it something else): a message.
fn is_message_schema(s: &Value) -> bool {
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
fn nullable_inner(obj: &Map<String, Value>) -> Option<Value> {
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
            if v.len() == 2 && v.iter().filter(|s| is_null(s)).count() == 1 && obj.len() <= 2 {
                return v.iter().find(|s| !is_null(s)).cloned();
            }
        }
    }
    None
}

fn string_kind(obj: &Map<String, Value>, doc: Option<String>) -> Kind {
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
    k
}

/// The `buf.validate` well-known string rule for a JSON Schema `format`.
pub(crate) fn format_rule(f: &str) -> Option<&'static str> {
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

fn number_kind(obj: &Map<String, Value>, doc: Option<String>, integer: bool) -> Kind {
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
