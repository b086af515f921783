//! `mcpwire tokens`: what a tool catalog costs an agent's context, counted with the
//! cl100k_base and o200k_base tokenizers (embedded in tiktoken-rs, offline).
//!
//! A binary listing never reaches a model as bytes: a host must turn it into text. So each
//! row is one way of rendering the same catalog as text (method: `docs/tokens.md`).

use std::fmt::Write as _;

use base64::Engine as _;
use prost_reflect::{DescriptorPool, DynamicMessage};
use serde_json::{Map, Value, json};

use mcpwire_schema::{ToolSchemas, tool_package};

mod text;

use text::{signatures, strip_param_descriptions};

/// One rendering of a catalog and its token counts.
#[derive(Debug, Clone)]
pub struct Row {
    /// Short key (stable, used in tests and docs).
    pub key: &'static str,
    /// What the rendering is.
    pub label: &'static str,
    /// Bytes of the rendered text.
    pub bytes: usize,
    /// Tokens with cl100k_base.
    pub cl100k: usize,
    /// Tokens with o200k_base.
    pub o200k: usize,
}

/// The report for one catalog.
#[derive(Debug, Clone)]
pub struct Report {
    /// Tools in the catalog.
    pub tools: usize,
    /// Tools whose schemas did not convert to protobuf (left out of the proto rows).
    pub unconverted: Vec<String>,
    /// Schema keywords the `signature` row leaves out, with their counts (its saving is
    /// measured against less information by exactly these).
    pub signature_lost: text::Lost,
    /// The rows, JSON-RPC first.
    pub rows: Vec<Row>,
}

/// The texts of every rendering of `tools`, the tools that did not convert to protobuf, and
/// what the signature rendering leaves out.
pub struct Renderings {
    /// (key, label, text), JSON-RPC first.
    pub texts: Vec<(&'static str, &'static str, String)>,
    /// Tools whose schemas did not convert.
    pub unconverted: Vec<String>,
    /// Keywords the `signature` row leaves out.
    pub signature_lost: text::Lost,
}

/// Every rendering of `tools` (tool definitions as `tools/list` returns them).
pub fn renderings(tools: &[Value]) -> Renderings {
    let mut schemas = Vec::new();
    let mut unconverted = Vec::new();
    let empty = json!({"type": "object"});
    let specs: Vec<mcpwire_schema::ToolSpec<'_>> = tools
        .iter()
        .map(|t| mcpwire_schema::ToolSpec {
            name: t["name"].as_str().unwrap_or_default(),
            input: t.get("inputSchema").unwrap_or(&empty),
            output: t.get("outputSchema"),
        })
        .collect();
    let converted = mcpwire_schema::tool_schemas_many(&specs, &Default::default());
    for ((t, spec), result) in tools.iter().zip(&specs).zip(converted) {
        let name = spec.name;
        match result {
            Ok(s) => schemas.push((t, s)),
            Err(e) => {
                tracing::warn!(tool = name, error = %e, "schema did not convert");
                unconverted.push(name.to_owned());
            }
        }
    }
    let list = json!({ "tools": tools });
    let mut out = vec![
        (
            "jsonrpc",
            "JSON-RPC tools/list result, compact JSON",
            list.to_string(),
        ),
        (
            "jsonrpc_pretty",
            "JSON-RPC tools/list result, pretty JSON",
            serde_json::to_string_pretty(&list).unwrap_or_default(),
        ),
    ];
    let inline = listing(&schemas, Schemas::Inline);
    let own = listing(&schemas, Schemas::InlineOwnFile);
    let refs = listing(&schemas, Schemas::Refs);
    out.push((
        "proto_inline_json",
        "proto-mcp ListToolsResponse, inline schemas, proto3 JSON",
        inline.0,
    ));
    out.push((
        "proto_inline_b64",
        "proto-mcp ListToolsResponse, inline schemas, base64 binary (spec's method)",
        inline.1,
    ));
    out.push((
        "proto_inline_own_json",
        "proto-mcp ListToolsResponse, inline schemas without the shared imports, proto3 JSON",
        own.0,
    ));
    out.push((
        "proto_refs_json",
        "proto-mcp ListToolsResponse, schema refs only, proto3 JSON",
        refs.0,
    ));
    out.push((
        "proto_refs_b64",
        "proto-mcp ListToolsResponse, schema refs only, base64 binary",
        refs.1,
    ));
    out.push((
        "proto_text",
        "name + description + generated .proto text",
        proto_text(&schemas, false),
    ));
    out.push((
        "proto_text_lean",
        "name + description + .proto text without options/imports",
        proto_text(&schemas, true),
    ));
    let (signature, signature_lost) = signatures(tools, true);
    out.push((
        "signature",
        "compact signatures with parameter descriptions",
        signature,
    ));
    out.push((
        "signature_nodesc",
        "compact signatures, tool descriptions only",
        signatures(tools, false).0,
    ));
    out.push((
        "jsonrpc_nodesc",
        "JSON-RPC compact JSON without parameter descriptions",
        json!({ "tools": tools.iter().map(strip_param_descriptions).collect::<Vec<_>>() })
            .to_string(),
    ));
    let (meta, disclosed) = search_mode_listings(tools);
    out.push((
        "search_meta",
        "search catalog mode: tools/list of the meta-tools alone, compact JSON",
        meta,
    ));
    out.push((
        "search_disclosed",
        "search catalog mode at its bounds: the meta-tools + the largest tools a session holds, compact JSON",
        disclosed,
    ));
    Renderings {
        texts: out,
        unconverted,
        signature_lost,
    }
}

/// The `tools/list` of the gateway's `search` catalog mode: the meta-tools alone (before
/// any search), and with the largest tools a session's list can hold (within the
/// disclosure bounds on tools and bytes: the most a session's listing can cost here).
fn search_mode_listings(tools: &[Value]) -> (String, String) {
    use mcpwire_federation::{MAX_DISCLOSED_BYTES, MAX_DISCLOSED_PER_SESSION};
    let meta = mcpwire_federation::SearchCatalog::meta_tools();
    let mut by_size: Vec<(usize, &Value)> =
        tools.iter().map(|t| (t.to_string().len(), t)).collect();
    by_size.sort_by_key(|(size, _)| std::cmp::Reverse(*size));
    let mut held: Vec<&Value> = meta.iter().collect();
    let mut bytes = 0;
    for (size, tool) in by_size {
        let first = held.len() == meta.len();
        if held.len() - meta.len() == MAX_DISCLOSED_PER_SESSION {
            break;
        }
        if first || bytes + size <= MAX_DISCLOSED_BYTES {
            held.push(tool);
            bytes += size;
        }
    }
    (
        json!({ "tools": meta }).to_string(),
        json!({ "tools": held }).to_string(),
    )
}

/// Counts every rendering of `tools`.
pub fn report(tools: &[Value]) -> Report {
    let Renderings {
        texts,
        unconverted,
        signature_lost,
    } = renderings(tools);
    let cl = tiktoken_rs::cl100k_base_singleton();
    let o2 = tiktoken_rs::o200k_base_singleton();
    let rows = texts
        .into_iter()
        .map(|(key, label, text)| Row {
            key,
            label,
            bytes: text.len(),
            cl100k: cl.encode_ordinary(&text).len(),
            o200k: o2.encode_ordinary(&text).len(),
        })
        .collect();
    Report {
        tools: tools.len(),
        unconverted,
        signature_lost,
        rows,
    }
}

impl Report {
    /// The report as a Markdown table (percentages against the compact JSON-RPC row).
    pub fn to_markdown(&self) -> String {
        let base = self.rows.first().map_or(1, |r| r.cl100k.max(1)) as f64;
        let base_o = self.rows.first().map_or(1, |r| r.o200k.max(1)) as f64;
        let mut s = String::new();
        let _ = writeln!(s, "{} tools", self.tools);
        if !self.unconverted.is_empty() {
            let _ = writeln!(
                s,
                "not convertible to protobuf (left out of proto rows): {}",
                self.unconverted.join(", ")
            );
        }
        let _ = writeln!(s, "signature rows leave out: {}", self.lost_summary());
        let _ = writeln!(
            s,
            "\n| rendering | bytes | cl100k | vs JSON-RPC | o200k | vs JSON-RPC |"
        );
        let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "| `{}` {} | {} | {} | {:+.1}% | {} | {:+.1}% |",
                r.key,
                r.label,
                r.bytes,
                r.cl100k,
                (r.cl100k as f64 / base - 1.0) * 100.0,
                r.o200k,
                (r.o200k as f64 / base_o - 1.0) * 100.0,
            );
        }
        s
    }

    /// `title ×3, examples ×1`, or `nothing`.
    fn lost_summary(&self) -> String {
        if self.signature_lost.is_empty() {
            return "nothing".into();
        }
        let parts: Vec<String> = self
            .signature_lost
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        parts.join(", ")
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Value {
        json!({
            "tools": self.tools,
            "unconverted": self.unconverted,
            "signature_lost": self.signature_lost,
            "rows": self.rows.iter().map(|r| json!({
                "key": r.key, "label": r.label, "bytes": r.bytes,
                "cl100k": r.cl100k, "o200k": r.o200k,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The schema reference mcpwire gives a generated input message.
pub fn input_ref(tool: &str) -> String {
    format!("buf.build/mcpwire/tools/{}.Input:v1", tool_package(tool))
}

fn put_str(buf: &mut Vec<u8>, tag: u32, s: &[u8]) {
    prost::encoding::encode_key(tag, prost::encoding::WireType::LengthDelimited, buf);
    prost::encoding::encode_varint(s.len() as u64, buf);
    buf.extend_from_slice(s);
}

/// What a listing carries for each tool's schema.
#[derive(Clone, Copy, PartialEq)]
enum Schemas {
    /// `inline_schema`: the tool's file and its imports, as `ToolSchemas` gives them.
    Inline,
    /// `inline_schema` with the tool's own file only (imports sent once, elsewhere).
    InlineOwnFile,
    /// `bsr_ref` only.
    Refs,
}

/// (proto3 JSON, base64 of binary) of a `ListToolsResponse` with inline schemas or refs.
fn listing(schemas: &[(&Value, ToolSchemas)], mode: Schemas) -> (String, String) {
    let mut json_tools = Vec::new();
    let mut bin = Vec::new();
    for (t, s) in schemas {
        let name = t["name"].as_str().unwrap_or_default();
        let desc = t["description"].as_str().unwrap_or_default();
        let mut obj = Map::new();
        obj.insert("name".into(), name.into());
        if !desc.is_empty() {
            obj.insert("description".into(), desc.into());
        }
        let mut tool = Vec::new();
        put_str(&mut tool, 1, name.as_bytes());
        if !desc.is_empty() {
            put_str(&mut tool, 2, desc.as_bytes());
        }
        let mut metadata = vec![("input_type", s.input.full_name().to_owned())];
        if let Some(o) = &s.output {
            metadata.push(("output_type", o.full_name().to_owned()));
        }
        if mode != Schemas::Refs {
            let set = if mode == Schemas::Inline {
                s.file_set_bytes().to_vec()
            } else {
                let files = mcpwire_schema::split_file_set(s.file_set_bytes());
                mcpwire_schema::join_file_set(
                    files
                        .into_iter()
                        .filter(|(n, _)| n.starts_with("mcpwire/tools/"))
                        .map(|(_, f)| f),
                )
            };
            put_str(&mut tool, 4, &set);
            obj.insert("inlineSchema".into(), file_set_json(s.pool(), &set));
        } else {
            let r = input_ref(name);
            put_str(&mut tool, 3, r.as_bytes());
            obj.insert("bsrRef".into(), r.into());
        }
        let mut md = Map::new();
        for (k, v) in &metadata {
            let mut entry = Vec::new();
            put_str(&mut entry, 1, k.as_bytes());
            put_str(&mut entry, 2, v.as_bytes());
            put_str(&mut tool, 5, &entry);
            md.insert((*k).into(), v.clone().into());
        }
        obj.insert("metadata".into(), Value::Object(md));
        put_str(&mut bin, 1, &tool);
        json_tools.push(Value::Object(obj));
    }
    (
        json!({ "tools": json_tools }).to_string(),
        base64::engine::general_purpose::STANDARD.encode(&bin),
    )
}

/// A `FileDescriptorSet` in proto3 JSON, decoded with `pool` so extension options show.
fn file_set_json(pool: &DescriptorPool, bytes: &[u8]) -> Value {
    let Some(desc) = pool.get_message_by_name("google.protobuf.FileDescriptorSet") else {
        return Value::Null;
    };
    match DynamicMessage::decode(desc, bytes) {
        Ok(m) => serde_json::to_value(&m).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

fn proto_text(schemas: &[(&Value, ToolSchemas)], lean: bool) -> String {
    let mut s = String::new();
    for (t, sc) in schemas {
        let _ = writeln!(
            s,
            "tool {}: {}",
            t["name"].as_str().unwrap_or_default(),
            t["description"].as_str().unwrap_or_default()
        );
        for line in sc.proto_source().lines() {
            if lean {
                let l = line.trim_start();
                if l.starts_with("syntax ")
                    || l.starts_with("import ")
                    || l.starts_with("option (")
                    || l.is_empty()
                {
                    continue;
                }
                match (line.find(" ["), line.ends_with("];")) {
                    (Some(i), true) => {
                        s.push_str(&line[..i]);
                        s.push_str(";\n");
                    }
                    _ => {
                        s.push_str(line);
                        s.push('\n');
                    }
                }
            } else {
                s.push_str(line);
                s.push('\n');
            }
        }
        s.push('\n');
    }
    s
}
