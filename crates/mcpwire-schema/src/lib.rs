//! mcpwire-schema: MCP tool schemas as protobuf.
//!
//! **Is:** JSON Schema 2020-12 → protobuf descriptors for a tool's input and output
//! ([`tool_schemas`], [`to_proto`]), descriptors → JSON Schema ([`message_schema`]), JSON ⇄
//! `DynamicMessage` by the tool's own JSON shape ([`ToolSchemas`]), and a registry of
//! `.proto` files whose messages tools reference as
//! `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}` ([`Registry`]). Sans-IO apart from
//! reading the registry directory once.
//!
//! **Is not:** a wire or a validator of arguments (JSON Schema validation stays with the
//! router); the mapping rules are in `docs/design/proto-schemas.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod batch;
mod cache;
mod compile;
mod convert;
mod emit;
mod ir;
mod json;
mod meta;
mod names;
mod raw;
mod registry;
mod reverse;

use std::sync::Arc;

use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, ReflectMessage};
use serde_json::Value;

pub use batch::{ToolSpec, tool_schemas_many};
pub use cache::SchemaCache;
pub use compile::{OPTIONS_FILE, OPTIONS_PROTO, VALIDATE_FILE, VALIDATE_PROTO};
pub use convert::Loss;
pub use raw::RawFileSet;
pub use registry::{BsrRef, Registry};
pub use reverse::message_schema;

/// Why a schema could not be converted, resolved or applied.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The JSON Schema is malformed (not an object schema, a `$ref` pointing nowhere, …).
    #[error("invalid schema: {0}")]
    Invalid(String),
    /// The schema exceeds a [`Limits`] bound.
    #[error("schema too large: {0}")]
    TooLarge(String),
    /// Generated or registry `.proto` text did not compile.
    #[error("proto compilation failed: {0}")]
    Compile(String),
    /// A value does not fit the message (wrong JSON type, unknown member, …).
    #[error("value does not match the schema: {0}")]
    Mismatch(String),
    /// A schema reference is malformed or names no message of the registry (proto-mcp
    /// answers −33000).
    #[error("schema reference not resolved: {0}")]
    Unresolved(String),
    /// Reading the registry directory failed.
    #[error("registry i/o: {0}")]
    Io(String),
}

/// Bounds on an input JSON Schema.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Deepest nesting of subschemas.
    pub max_depth: usize,
    /// Most subschemas (plus enum values) in one tool's schemas.
    pub max_nodes: usize,
    /// Most properties of one object.
    pub max_properties: usize,
    /// Most values of one `enum`.
    pub max_enum_values: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_depth: 32,
            max_nodes: 10_000,
            max_properties: 1_000,
            max_enum_values: 1_000,
        }
    }
}

/// A tool's input (and output) messages, compiled.
#[derive(Debug, Clone)]
pub struct ToolSchemas {
    /// The input message (`mcpwire.tools.<tool>.Input`).
    pub input: MessageDescriptor,
    /// The output message, when the tool declares an output schema.
    pub output: Option<MessageDescriptor>,
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    bytes: Vec<u8>,
    source: String,
    /// Option metadata of the pool (shared by the tools of one batch).
    meta: Arc<meta::Meta>,
}

impl ToolSchemas {
    /// The tool's file and the non-Google files it imports, dependencies first, decoded on
    /// each call. Google's well-known files (`struct.proto`, `descriptor.proto`) are left
    /// out: every protobuf runtime ships them. prost drops extension options when decoding,
    /// so this view lacks the `buf.validate`/`mcpwire.schema.v1` options: send
    /// [`ToolSchemas::file_set_bytes`] on the wire to keep them.
    pub fn file_set(&self) -> prost_types::FileDescriptorSet {
        compile::prost_set(&self.inner.bytes).unwrap_or_default()
    }

    /// [`ToolSchemas::file_set`] encoded with every option kept (what `Tool.inline_schema`
    /// should carry).
    pub fn file_set_bytes(&self) -> &[u8] {
        &self.inner.bytes
    }

    /// `file_set_bytes` as a prost message that keeps them verbatim (for a
    /// `FileDescriptorSet` field of a prost-generated type, see [`RawFileSet`]).
    pub fn raw_file_set(&self) -> RawFileSet {
        RawFileSet::new(self.inner.bytes.clone())
    }

    /// The generated `.proto` source text.
    pub fn proto_source(&self) -> &str {
        &self.inner.source
    }

    /// The pool holding the messages (and Google's well-known files).
    pub fn pool(&self) -> &DescriptorPool {
        self.input.parent_pool()
    }

    /// Arguments as a proto message → the JSON the tool's JSON Schema accepts (enum values
    /// back to their JSON strings, original member names, 64-bit integers as numbers).
    pub fn arguments_to_json(&self, msg: &DynamicMessage) -> Result<Value, SchemaError> {
        if msg.descriptor() != self.input {
            return Err(SchemaError::Mismatch(format!(
                "expected {}, got {}",
                self.input.full_name(),
                msg.descriptor().full_name()
            )));
        }
        json::to_json(&self.inner.meta, msg)
    }

    /// A tool result's `structuredContent` → the output message.
    pub fn structured_to_message(&self, value: &Value) -> Result<DynamicMessage, SchemaError> {
        let out = self
            .output
            .as_ref()
            .ok_or_else(|| SchemaError::Mismatch("the tool has no output schema".into()))?;
        json::to_message(&self.inner.meta, out, value, &json::Path::Root)
    }

    /// JSON arguments → the input message (for clients and tests).
    pub fn json_to_input(&self, value: &Value) -> Result<DynamicMessage, SchemaError> {
        json::to_message(&self.inner.meta, &self.input, value, &json::Path::Root)
    }

    /// Schemas whose input is `desc`, a message of `pool` (a registry module): the file set
    /// holds its file and every non-Google file it imports, transitively.
    pub(crate) fn from_pool_message(
        pool: &DescriptorPool,
        desc: &MessageDescriptor,
        source: String,
    ) -> Result<ToolSchemas, SchemaError> {
        let bytes = compile::pack_closure(pool, desc.parent_file().name());
        Ok(ToolSchemas {
            input: desc.clone(),
            output: None,
            inner: Arc::new(Inner {
                meta: Arc::new(meta::Meta::build(pool)),
                bytes,
                source,
            }),
        })
    }

    /// An output message → JSON (the inverse of [`ToolSchemas::structured_to_message`]).
    pub fn output_to_json(&self, msg: &DynamicMessage) -> Result<Value, SchemaError> {
        json::to_json(&self.inner.meta, msg)
    }
}

/// The files of an encoded `FileDescriptorSet` as (file name, encoded
/// `FileDescriptorProto`) pairs, without decoding them into prost types (which would drop
/// extension options). Stops at the first malformed entry.
pub fn split_file_set(set: &[u8]) -> Vec<(String, &[u8])> {
    use prost::Message as _;
    let mut out = Vec::new();
    let mut buf = set;
    while !buf.is_empty() {
        let Ok((tag, wire)) = prost::encoding::decode_key(&mut buf) else {
            break;
        };
        let Ok(len) = prost::encoding::decode_varint(&mut buf) else {
            break;
        };
        let Ok(len) = usize::try_from(len) else { break };
        if tag != 1 || wire != prost::encoding::WireType::LengthDelimited || len > buf.len() {
            break;
        }
        let (file, rest) = buf.split_at(len);
        buf = rest;
        let name = prost_types::FileDescriptorProto::decode(file)
            .ok()
            .and_then(|f| f.name)
            .unwrap_or_default();
        out.push((name, file));
    }
    out
}

/// Encodes (name, encoded `FileDescriptorProto`) pairs as a `FileDescriptorSet`.
pub fn join_file_set<'a>(files: impl IntoIterator<Item = &'a [u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    for f in files {
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(f.len() as u64, &mut out);
        out.extend_from_slice(f);
    }
    out
}

/// The protobuf package of a tool's messages: `mcpwire.tools.<name>`, with a hash suffix
/// when the name is not already an identifier (so distinct tools never share a package).
pub fn tool_package(tool_name: &str) -> String {
    let id = names::identifier(tool_name);
    if id == tool_name {
        format!("mcpwire.tools.{id}")
    } else {
        format!("mcpwire.tools.{id}_{:08x}", names::fnv32(tool_name))
    }
}

/// The `.proto` text for a tool's input (and output) JSON Schemas, without compiling it.
pub fn to_proto(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
    limits: &Limits,
) -> Result<String, SchemaError> {
    Ok(plan(tool_name, input, output, limits)?.1.text)
}

/// [`to_proto`], and every fact of the JSON Schemas the protobuf form does not carry
/// (annotations such as `title` and `examples`; `additionalProperties` on objects that
/// become closed messages). Defaults and formats are carried (`json_default`, `format`),
/// and subschemas kept verbatim (`json_schema`) lose nothing.
pub fn to_proto_with_losses(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
    limits: &Limits,
) -> Result<(String, Vec<Loss>), SchemaError> {
    let (_, emitted, lost) = plan_with_losses(tool_name, input, output, limits)?;
    Ok((emitted.text, lost))
}

/// The `.proto` file name of a package's generated file.
fn file_of(package: &str) -> String {
    format!("{}.proto", package.replace('.', "/"))
}

fn plan(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
    limits: &Limits,
) -> Result<(String, emit::Emitted), SchemaError> {
    let (package, emitted, _) = plan_with_losses(tool_name, input, output, limits)?;
    Ok((package, emitted))
}

fn plan_with_losses(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
    limits: &Limits,
) -> Result<(String, emit::Emitted, Vec<Loss>), SchemaError> {
    let package = tool_package(tool_name);
    let mut docs = vec![input];
    docs.extend(output);
    let mut conv = convert::Converter::new(limits, &docs);
    let mut messages = vec![conv.root_message(0, input, "Input")?];
    if let Some(o) = output {
        messages.push(conv.root_message(1, o, "Output")?);
    }
    messages.append(&mut conv.top);
    Ok((
        package.clone(),
        emit::emit(&package, &messages),
        std::mem::take(&mut conv.lost),
    ))
}

/// Converts a tool's JSON Schemas to compiled protobuf messages, with default [`Limits`].
pub fn tool_schemas(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
) -> Result<ToolSchemas, SchemaError> {
    tool_schemas_with(tool_name, input, output, &Limits::default())
}

/// [`tool_schemas`] with explicit limits.
pub fn tool_schemas_with(
    tool_name: &str,
    input: &Value,
    output: Option<&Value>,
    limits: &Limits,
) -> Result<ToolSchemas, SchemaError> {
    let (package, emitted) = plan(tool_name, input, output, limits)?;
    let file = file_of(&package);
    let compiled = compile::compile(&file, &emitted.text)?;
    let bytes = compile::pack(&compiled, &file, &emitted.docs);
    let pool = compile::pool_from(&bytes)?;
    let input = pool
        .get_message_by_name(&format!("{package}.Input"))
        .ok_or_else(|| SchemaError::Compile("Input message missing".into()))?;
    let output = match output {
        Some(_) => Some(
            pool.get_message_by_name(&format!("{package}.Output"))
                .ok_or_else(|| SchemaError::Compile("Output message missing".into()))?,
        ),
        None => None,
    };
    Ok(ToolSchemas {
        input,
        output,
        inner: Arc::new(Inner {
            meta: Arc::new(meta::Meta::build(&pool)),
            bytes,
            source: emitted.text,
        }),
    })
}
