//! JSON Schema 2020-12 → the plan of a `.proto` file (`ir`). The rules are in
//! `docs/design/proto-schemas.md`; in short: objects with properties → messages, arrays →
//! `repeated`, string enums → enums, `oneOf`/`anyOf` → union messages, free-form objects →
//! `google.protobuf.Struct`, anything protobuf cannot type exactly → `google.protobuf.Value`
//! with the subschema kept verbatim.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::ir::{Card, Field, Message, RuleValue, Rules, Shape, Ty};
use crate::names::{Scope, default_json_name, identifier, pascal};
use crate::{Limits, SchemaError};

mod keywords;
mod shapes;

use keywords::{
    doc_of, escape_pointer, is_message_schema, is_type, nullable_inner, number_kind, string_kind,
};

/// A converted subschema: what its field looks like.
struct Kind {
    ty: Ty,
    card: Card,
    rules: Rules,
    nullable: bool,
    json_schema: Option<String>,
    doc: Option<String>,
    /// The `default`, as JSON text.
    default: Option<String>,
    /// A string format without a `buf.validate` rule.
    format: Option<String>,
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
            default: None,
            format: None,
        }
    }
}

/// A fact of a JSON Schema that its protobuf form does not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Loss {
    /// Where: `Input`/`Output`, then property names and `$defs` names, dot-separated.
    pub at: String,
    /// The keyword.
    pub keyword: String,
    /// Its value.
    pub value: Value,
    /// What its absence means for values.
    pub effect: &'static str,
}

/// Keywords a typed conversion carries (as types, rules or options) or that only structure
/// the document.
const KNOWN: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "const",
    "anyOf",
    "oneOf",
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
    "minItems",
    "maxItems",
    "uniqueItems",
    "additionalProperties",
    "minProperties",
    "maxProperties",
];

/// Keywords dropped without changing which values convert.
const DROPPED: &[&str] = &[
    "title",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "contentMediaType",
    "contentEncoding",
    "$anchor",
];

/// The subschema being converted and where it sits.
struct Sub<'v> {
    root: &'v Value,
    s: &'v Value,
    obj: &'v Map<String, Value>,
    hint: &'v str,
    doc: Option<String>,
    depth: usize,
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
    /// Top-level names every nested scope must avoid (so simple names never shadow), shared
    /// by all of them.
    reserved: Rc<RefCell<HashSet<String>>>,
    /// (document, JSON pointer) → message name, for `$ref`s to object schemas.
    defs: HashMap<(usize, String), String>,
    doc: usize,
    /// Where the converter is (for [`Loss::at`]).
    path: Vec<String>,
    /// What was not carried.
    pub lost: Vec<Loss>,
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
        let mut reserved = HashSet::from(["Input".to_owned(), "Output".to_owned()]);
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
                            reserved.insert(n.clone());
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
            reserved: Rc::new(RefCell::new(reserved)),
            defs,
            doc: 0,
            path: Vec::new(),
            lost: Vec::new(),
        }
    }

    /// Records the keywords of `obj` (a subschema converted to a typed field or message)
    /// that the protobuf form does not carry.
    fn note_losses(&mut self, obj: &Map<String, Value>) {
        let at = self.path.join(".");
        for (k, v) in obj {
            if self
                .lost
                .iter()
                .any(|l| l.at == at && &l.keyword == k && &l.value == v)
            {
                continue; // a nullable's inner copy of the same schema
            }
            let effect = match k.as_str() {
                k if DROPPED.contains(&k) => "annotation only",
                k if !KNOWN.contains(&k) => "not a keyword mcpwire knows: ignored",
                "format" if !obj.get("type").is_some_and(|t| t == "string") => "annotation only",
                "additionalProperties"
                    if obj
                        .get("properties")
                        .is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()))
                        && v != &Value::Bool(false) =>
                {
                    "the message is closed: members not in properties are refused"
                }
                "additionalProperties" if v == &Value::Bool(true) && at.split('.').count() == 1 => {
                    "the top-level message has no fields: every member is refused"
                }
                _ => continue,
            };
            self.lost.push(Loss {
                at: at.clone(),
                keyword: k.clone(),
                value: v.clone(),
                effect,
            });
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
        self.path = vec![name.to_owned()];
        self.note_losses(obj);
        let mut msg = self.object_message(root, name, obj, 0)?;
        msg.doc = doc_of(obj);
        Ok(msg)
    }

    fn builder(&self, name: String, shape: Shape) -> Builder {
        Builder {
            msg: Message::new(name, shape),
            scope: Scope::within(Rc::clone(&self.reserved)),
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
            self.path.push(key.clone());
            let kind = self.classify(root, sub, key, &mut b, depth + 1);
            self.path.pop();
            let kind = kind?;
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
                self.reserved.borrow_mut().insert(n.clone());
                self.defs.insert(key, n.clone());
                n
            }
        };
        // Mark as in progress with a placeholder so recursive refs resolve to the name.
        self.top
            .push(Message::new(format!("\0{name}"), Shape::Object));
        let outer = std::mem::replace(&mut self.path, vec![name.clone()]);
        self.note_losses(target);
        let msg = self.object_message(root, &name, target, depth);
        self.path = outer;
        let mut msg = msg?;
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

    /// Converts the subschema of a field (or list item, map value, union member), carrying
    /// its `default` and recording what a typed conversion leaves out.
    fn classify(
        &mut self,
        root: &Value,
        s: &Value,
        hint: &str,
        b: &mut Builder,
        depth: usize,
    ) -> Result<Kind, SchemaError> {
        let mut k = self.classify_kind(root, s, hint, b, depth)?;
        if k.json_schema.is_none()
            && let Value::Object(obj) = s
        {
            if k.default.is_none() {
                k.default = obj.get("default").map(Value::to_string);
            }
            self.note_losses(obj);
        }
        Ok(k)
    }

    fn classify_kind(
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
            return self.enumeration(
                Sub {
                    root,
                    s,
                    obj,
                    hint,
                    doc,
                    depth,
                },
                e,
                b,
            );
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
            let sub = Sub {
                root,
                s,
                obj,
                hint,
                doc,
                depth,
            };
            return self.union(sub, c, b);
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
        let sub = |doc| Sub {
            root,
            s,
            obj,
            hint,
            doc,
            depth,
        };
        match ty {
            "string" => Ok(string_kind(obj, doc)),
            "integer" => Ok(number_kind(obj, doc, true)),
            "number" => Ok(number_kind(obj, doc, false)),
            "boolean" => Ok(Kind::plain(Ty::Bool, doc)),
            "array" => self.array(sub(doc), b),
            "object" => self.object(sub(doc), b),
            _ => self.fallback(root, s, doc, depth),
        }
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
        default: k.default,
        format: k.format,
    }
}
