//! Each tool's protobuf schema, converted once from its JSON Schema and shared by every
//! connection of a service.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, RwLock};

use mcpwire_wire::proto_mcp::RawFileSet;
use prost_reflect::{DynamicMessage, MessageDescriptor};
use serde_json::Value;

/// A tool's schemas as protobuf: what a proto-mcp client needs to build its arguments and
/// read its structured result, and the conversions between them and JSON.
pub trait ToolProto: Send + Sync + std::fmt::Debug {
    /// A self-contained set holding the input (and output) message and what they import,
    /// encoded with every option kept (`buf.validate` rules, enum JSON values).
    fn inline_schema(&self) -> RawFileSet;
    /// The input message (the `Any` type of `call_tool` arguments).
    fn input(&self) -> &MessageDescriptor;
    /// The output message, when the tool declares an output schema.
    fn output(&self) -> Option<&MessageDescriptor>;
    /// Arguments decoded as the input message → the JSON the tool's validator checks.
    fn arguments_to_json(&self, msg: &DynamicMessage) -> Result<Value, String>;
    /// Structured content → the output message, for an `Any`-packed result.
    fn structured_to_message(&self, value: &Value) -> Result<DynamicMessage, String>;
}

/// Converts a tool's JSON Schemas to protobuf, and resolves schema-registry references
/// (implemented over `mcpwire-schema`).
pub trait SchemaConverter: Send + Sync {
    /// The protobuf schemas of tool `name`.
    fn convert(
        &self,
        name: &str,
        input: &Value,
        output: Option<&Value>,
    ) -> Result<Arc<dyn ToolProto>, String>;

    /// [`SchemaConverter::convert`] for many tools (name, input, output), in order; an
    /// implementation may convert them together, more cheaply than one by one.
    fn convert_many(
        &self,
        tools: &[(&str, &Value, Option<&Value>)],
    ) -> Vec<Result<Arc<dyn ToolProto>, String>> {
        tools
            .iter()
            .map(|(name, input, output)| self.convert(name, input, *output))
            .collect()
    }

    /// The schemas a `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}` reference names.
    fn resolve(&self, reference: &str) -> Result<Arc<dyn ToolProto>, String> {
        Err(format!(
            "no schema registry is configured to resolve {reference}"
        ))
    }

    /// Whether references can be resolved at all (`supports_bsr_refs`).
    fn has_registry(&self) -> bool {
        false
    }
}

/// One tool in the table.
#[derive(Debug)]
pub struct ToolEntry {
    /// The tool's name.
    pub name: String,
    /// Hash of the JSON Schemas the entry was converted from (a changed tool is reconverted).
    hash: u64,
    /// The schemas, or why they could not be converted.
    pub proto: Result<Arc<dyn ToolProto>, String>,
}

#[derive(Debug, Default)]
struct Snapshot {
    by_name: HashMap<String, Arc<ToolEntry>>,
    /// Input message full name → tool name.
    by_input: HashMap<String, String>,
}

/// Tool name → protobuf schemas, swapped as a whole when the tool list changes.
pub struct ProtoToolSchemas {
    converter: Arc<dyn SchemaConverter>,
    snap: RwLock<Arc<Snapshot>>,
}

impl std::fmt::Debug for ProtoToolSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProtoToolSchemas").finish_non_exhaustive()
    }
}

impl ProtoToolSchemas {
    /// An empty table converting with `converter`.
    pub fn new(converter: Arc<dyn SchemaConverter>) -> ProtoToolSchemas {
        ProtoToolSchemas {
            converter,
            snap: RwLock::new(Arc::default()),
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        match self.snap.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// The entry of tool `name`, if known.
    pub fn get(&self, name: &str) -> Option<Arc<ToolEntry>> {
        self.snapshot().by_name.get(name).cloned()
    }

    /// The tool whose input message is `full_name`, if any.
    pub fn tool_of_input(&self, full_name: &str) -> Option<String> {
        self.snapshot().by_input.get(full_name).cloned()
    }

    /// The entry for a tool as `tools/list` describes it (`{name, inputSchema,
    /// outputSchema?}`), converting it when new or changed. The table keeps it.
    pub fn entry_for(&self, tool: &Value) -> Option<Arc<ToolEntry>> {
        let name = tool.get("name")?.as_str()?;
        let hash = schema_hash(tool);
        if let Some(e) = self.get(name).filter(|e| e.hash == hash) {
            return Some(e);
        }
        let entry = Arc::new(self.convert(name, tool, hash));
        self.update(|s| insert(s, entry.clone()));
        Some(entry)
    }

    /// Replaces the whole table with `tools` (a complete `tools/list`), reusing the
    /// conversions of unchanged tools and converting the others in one batch.
    pub fn replace(&self, tools: &[Value]) {
        let old = self.snapshot();
        let mut next = Snapshot::default();
        let empty = serde_json::json!({ "type": "object" });
        // (name, hash, tool) of the tools whose JSON Schemas must be converted.
        let mut fresh = Vec::new();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let hash = schema_hash(tool);
            match old.by_name.get(name).filter(|e| e.hash == hash) {
                Some(e) => insert(&mut next, e.clone()),
                None if bsr_ref(tool).is_some() => {
                    insert(&mut next, Arc::new(self.convert(name, tool, hash)))
                }
                None => fresh.push((name, hash, tool)),
            }
        }
        let specs: Vec<(&str, &Value, Option<&Value>)> = fresh
            .iter()
            .map(|(name, _, tool)| {
                let input = tool.get("inputSchema").unwrap_or(&empty);
                (*name, input, tool.get("outputSchema"))
            })
            .collect();
        let converted = self.converter.convert_many(&specs);
        for ((name, hash, _), proto) in fresh.into_iter().zip(converted) {
            insert(&mut next, Arc::new(entry(name, hash, proto)));
        }
        self.update(|s| *s = next);
    }

    /// Whether tools may reference registry schemas (a registry is configured).
    pub fn has_registry(&self) -> bool {
        self.converter.has_registry()
    }

    /// A tool declaring `_meta["io.mcpwire/bsrRef"]` takes the referenced registry message
    /// (an unresolvable reference makes its calls −33000); any other tool's JSON Schemas
    /// are converted.
    fn convert(&self, name: &str, tool: &Value, hash: u64) -> ToolEntry {
        let empty = serde_json::json!({ "type": "object" });
        let input = tool.get("inputSchema").unwrap_or(&empty);
        let output = tool.get("outputSchema");
        let proto = match bsr_ref(tool) {
            Some(r) => self
                .converter
                .resolve(r)
                .map_err(|e| format!("schema reference {r} is unresolved: {e}")),
            None => self.converter.convert(name, input, output),
        };
        entry(name, hash, proto)
    }

    fn update(&self, f: impl FnOnce(&mut Snapshot)) {
        let mut guard = match self.snap.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let mut next = Snapshot {
            by_name: guard.by_name.clone(),
            by_input: guard.by_input.clone(),
        };
        f(&mut next);
        *guard = Arc::new(next);
    }
}

fn entry(name: &str, hash: u64, proto: Result<Arc<dyn ToolProto>, String>) -> ToolEntry {
    if let Err(e) = &proto {
        tracing::warn!(tool = name, error = %e, "no protobuf schema for this tool");
    }
    ToolEntry {
        name: name.to_owned(),
        hash,
        proto,
    }
}

fn insert(s: &mut Snapshot, entry: Arc<ToolEntry>) {
    if let Some(old) = s.by_name.get(&entry.name)
        && let Ok(p) = &old.proto
    {
        s.by_input.remove(p.input().full_name());
    }
    if let Ok(p) = &entry.proto {
        s.by_input
            .insert(p.input().full_name().to_owned(), entry.name.clone());
    }
    s.by_name.insert(entry.name.clone(), entry);
}

/// The registry reference a tool declares, if any.
pub(crate) fn bsr_ref(tool: &Value) -> Option<&str> {
    tool.get("_meta")?.get(crate::BSR_REF_META)?.as_str()
}

fn schema_hash(tool: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    bsr_ref(tool).hash(&mut h);
    tool.get("inputSchema").map(Value::to_string).hash(&mut h);
    tool.get("outputSchema").map(Value::to_string).hash(&mut h);
    h.finish()
}
