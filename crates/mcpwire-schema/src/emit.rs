//! The plan of a `.proto` file (`ir`) written as `.proto` source text.

use std::collections::HashMap;
use std::fmt::Write;

use crate::ir::{Card, Enum, Field, Message, RuleValue, Rules, Shape, Ty};

/// A generated file: its text, and the doc comment of each element by full name (to attach
/// as `SourceCodeInfo` after compiling).
pub(crate) struct Emitted {
    pub text: String,
    pub docs: HashMap<String, String>,
}

/// Writes `messages` as a proto3 file in `package`.
pub(crate) fn emit(package: &str, messages: &[Message]) -> Emitted {
    let mut uses = Uses::default();
    for m in messages {
        uses.scan(m);
    }
    let mut text = String::new();
    text.push_str("syntax = \"proto3\";\n\n");
    let _ = writeln!(text, "package {package};\n");
    let mut imports = Vec::new();
    if uses.validate {
        imports.push("buf/validate/validate.proto");
    }
    if uses.structs {
        imports.push("google/protobuf/struct.proto");
    }
    if uses.options {
        imports.push("mcpwire/schema/v1/options.proto");
    }
    for i in &imports {
        let _ = writeln!(text, "import \"{i}\";");
    }
    if !imports.is_empty() {
        text.push('\n');
    }
    let mut docs = HashMap::new();
    for (i, m) in messages.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        message(&mut text, &mut docs, package, m, 0);
    }
    Emitted { text, docs }
}

#[derive(Default)]
struct Uses {
    validate: bool,
    structs: bool,
    options: bool,
}

impl Uses {
    fn scan(&mut self, m: &Message) {
        if m.shape != Shape::Object {
            self.options = true;
        }
        for f in &m.fields {
            self.validate |= !f.rules.is_empty();
            self.structs |= matches!(f.ty, Ty::Struct | Ty::Value);
            self.options |= f.nullable
                || f.json_required
                || f.json_schema.is_some()
                || f.default.is_some()
                || f.format.is_some();
        }
        for e in &m.enums {
            self.options |= e.values.iter().any(|(n, v)| !lower_fits(e, n, v));
        }
        if !m.enums.is_empty() {
            self.options = true;
        }
        for n in &m.messages {
            self.scan(n);
        }
    }
}

/// Whether the JSON value of enum value `name` is its name without the enum's prefix,
/// lowercased (then no `json_value` option is needed).
fn lower_fits(e: &Enum, name: &str, json: &str) -> bool {
    let prefix = e.unspecified.trim_end_matches("UNSPECIFIED");
    name.strip_prefix(prefix)
        .is_some_and(|rest| rest.to_ascii_lowercase() == json)
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

fn comment(out: &mut String, level: usize, doc: &Option<String>) {
    if let Some(d) = doc {
        for line in d.lines() {
            indent(out, level);
            let line = line.trim_end_matches('\r');
            if line.is_empty() {
                out.push_str("//\n");
            } else {
                let _ = writeln!(out, "// {line}");
            }
        }
    }
}

fn message(
    out: &mut String,
    docs: &mut HashMap<String, String>,
    scope: &str,
    m: &Message,
    level: usize,
) {
    let full = format!("{scope}.{}", m.name);
    if let Some(d) = &m.doc {
        docs.insert(full.clone(), d.clone());
    }
    comment(out, level, &m.doc);
    indent(out, level);
    let _ = writeln!(out, "message {} {{", m.name);
    match m.shape {
        Shape::Object => {}
        Shape::OneOf | Shape::AnyOf => {
            indent(out, level + 1);
            let v = if m.shape == Shape::OneOf {
                "MESSAGE_SHAPE_ONE_OF"
            } else {
                "MESSAGE_SHAPE_ANY_OF"
            };
            let _ = writeln!(out, "option (mcpwire.schema.v1.shape) = {v};");
        }
    }
    for e in &m.enums {
        enumeration(out, e, level + 1);
    }
    for n in &m.messages {
        message(out, docs, &full, n, level + 1);
    }
    let (members, plain): (Vec<&Field>, Vec<&Field>) =
        m.fields.iter().partition(|f| f.card == Card::OneofMember);
    for f in plain {
        field(out, docs, &full, f, level + 1);
    }
    if !members.is_empty() {
        indent(out, level + 1);
        out.push_str("oneof value {\n");
        for f in members {
            field(out, docs, &full, f, level + 2);
        }
        indent(out, level + 1);
        out.push_str("}\n");
    }
    indent(out, level);
    out.push_str("}\n");
}

fn enumeration(out: &mut String, e: &Enum, level: usize) {
    indent(out, level);
    let _ = writeln!(out, "enum {} {{", e.name);
    let lower = e.values.iter().any(|(n, v)| lower_fits(e, n, v));
    if lower {
        indent(out, level + 1);
        out.push_str("option (mcpwire.schema.v1.json_lowercase) = true;\n");
    }
    indent(out, level + 1);
    let _ = writeln!(out, "{} = 0;", e.unspecified);
    for (i, (name, json)) in e.values.iter().enumerate() {
        indent(out, level + 1);
        if lower && lower_fits(e, name, json) {
            let _ = writeln!(out, "{name} = {};", i + 1);
        } else {
            let _ = writeln!(
                out,
                "{name} = {} [(mcpwire.schema.v1.json_value) = {}];",
                i + 1,
                quote(json)
            );
        }
    }
    indent(out, level);
    out.push_str("}\n");
}

fn type_name(ty: &Ty) -> &str {
    match ty {
        Ty::String => "string",
        Ty::Int64 => "int64",
        Ty::Double => "double",
        Ty::Bool => "bool",
        Ty::Enum(n) | Ty::Message(n) => n,
        Ty::Struct => "google.protobuf.Struct",
        Ty::Value => "google.protobuf.Value",
    }
}

fn field(
    out: &mut String,
    docs: &mut HashMap<String, String>,
    scope: &str,
    f: &Field,
    level: usize,
) {
    if let Some(d) = &f.doc {
        docs.insert(format!("{scope}.{}", f.name), d.clone());
    }
    comment(out, level, &f.doc);
    indent(out, level);
    let ty = type_name(&f.ty);
    match f.card {
        Card::Optional => {
            // Messages always have presence; `optional` only matters for scalars.
            if matches!(f.ty, Ty::Message(_) | Ty::Struct | Ty::Value) {
                let _ = write!(out, "{ty} {} = {}", f.name, f.number);
            } else {
                let _ = write!(out, "optional {ty} {} = {}", f.name, f.number);
            }
        }
        Card::Repeated => {
            let _ = write!(out, "repeated {ty} {} = {}", f.name, f.number);
        }
        Card::Map => {
            let _ = write!(out, "map<string, {ty}> {} = {}", f.name, f.number);
        }
        Card::OneofMember => {
            let _ = write!(out, "{ty} {} = {}", f.name, f.number);
        }
    }
    let mut opts: Vec<String> = Vec::new();
    if let Some(j) = &f.json_name {
        opts.push(format!("json_name = {}", quote(j)));
    }
    if !f.rules.is_empty() {
        let mut s = String::from("(buf.validate.field) = ");
        rules(&mut s, &f.rules);
        opts.push(s);
    }
    if f.nullable {
        opts.push("(mcpwire.schema.v1.nullable) = true".into());
    }
    if f.json_required {
        opts.push("(mcpwire.schema.v1.json_required) = true".into());
    }
    if let Some(js) = &f.json_schema {
        opts.push(format!("(mcpwire.schema.v1.json_schema) = {}", quote(js)));
    }
    if let Some(f) = &f.format {
        opts.push(format!("(mcpwire.schema.v1.format) = {}", quote(f)));
    }
    if let Some(d) = &f.default {
        opts.push(format!("(mcpwire.schema.v1.json_default) = {}", quote(d)));
    }
    if !opts.is_empty() {
        let _ = write!(out, " [{}]", opts.join(", "));
    }
    out.push_str(";\n");
}

fn rules(out: &mut String, r: &Rules) {
    out.push('{');
    for (i, (k, v)) in r.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{k}: ");
        rule_value(out, v);
    }
    out.push('}');
}

fn rule_value(out: &mut String, v: &RuleValue) {
    match v {
        RuleValue::Bool(b) => {
            let _ = write!(out, "{b}");
        }
        RuleValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        RuleValue::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        RuleValue::Double(d) => {
            let _ = write!(out, "{d:?}");
        }
        RuleValue::Str(s) => out.push_str(&quote(s)),
        RuleValue::List(l) => {
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                rule_value(out, x);
            }
            out.push(']');
        }
        RuleValue::Msg(m) => rules(out, m),
    }
}

/// A protobuf string literal: printable ASCII as is, everything else escaped (UTF-8 bytes
/// as octal escapes).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}
