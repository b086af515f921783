//! Converting a whole catalog at once ([`tool_schemas_many`]): one protox compile, one
//! descriptor pool and one option-metadata pass for every tool, so the shared imports
//! (`buf/validate/validate.proto`, `descriptor.proto`, mcpwire's options) are linked, decoded
//! and described once instead of once per tool.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

use crate::{Inner, Limits, SchemaError, ToolSchemas, compile, emit, join_file_set, meta, plan};

/// One tool to convert: its name and JSON Schemas.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec<'a> {
    /// The tool's name.
    pub name: &'a str,
    /// Its input schema.
    pub input: &'a Value,
    /// Its output schema, if it declares one.
    pub output: Option<&'a Value>,
}

struct Planned<'a> {
    index: usize,
    spec: ToolSpec<'a>,
    package: String,
    file: String,
    emitted: emit::Emitted,
}

/// [`crate::tool_schemas_with`] for many tools, in order. The result for each tool is the
/// same as converting it alone; only the cost differs. If the batch does not compile as a
/// whole, each tool is converted alone, so one bad tool cannot fail the others.
pub fn tool_schemas_many(
    tools: &[ToolSpec<'_>],
    limits: &Limits,
) -> Vec<Result<ToolSchemas, SchemaError>> {
    let mut out: Vec<Option<Result<ToolSchemas, SchemaError>>> = vec![None; tools.len()];
    let mut planned = Vec::new();
    let mut files = HashSet::new();
    for (index, spec) in tools.iter().enumerate() {
        match plan(spec.name, spec.input, spec.output, limits) {
            Err(e) => out[index] = Some(Err(e)),
            Ok((package, emitted)) => {
                let file = crate::file_of(&package);
                if files.insert(file.clone()) {
                    planned.push(Planned {
                        index,
                        spec: *spec,
                        package,
                        file,
                        emitted,
                    });
                } else {
                    // The same tool twice: converted on its own.
                    out[index] = Some(alone(spec, limits));
                }
            }
        }
    }
    match together(&planned) {
        Some(done) => {
            for (p, r) in planned.iter().zip(done) {
                out[p.index] = Some(r);
            }
        }
        None => {
            for p in &planned {
                out[p.index] = Some(alone(&p.spec, limits));
            }
        }
    }
    out.into_iter()
        .map(|r| r.unwrap_or_else(|| Err(SchemaError::Compile("tool was not converted".into()))))
        .collect()
}

fn alone(spec: &ToolSpec<'_>, limits: &Limits) -> Result<ToolSchemas, SchemaError> {
    crate::tool_schemas_with(spec.name, spec.input, spec.output, limits)
}

/// Compiles every planned tool into one pool; `None` if the batch fails as a whole.
fn together(planned: &[Planned<'_>]) -> Option<Vec<Result<ToolSchemas, SchemaError>>> {
    if planned.is_empty() {
        return Some(Vec::new());
    }
    let sources: Vec<(String, String)> = planned
        .iter()
        .map(|p| (p.file.clone(), p.emitted.text.clone()))
        .collect();
    let compiled = compile::compile_many(&sources).ok()?;
    // Each tool's own file set, and every file once for the shared pool.
    let mut shared: Vec<Vec<u8>> = Vec::new();
    let mut seen = HashSet::new();
    let mut sets = Vec::with_capacity(planned.len());
    for p in planned {
        let files = compile::pack_files(&compiled, &p.file, &p.emitted.docs);
        for (name, bytes) in &files {
            if seen.insert(name.clone()) {
                shared.push(bytes.clone());
            }
        }
        sets.push(join_file_set(files.iter().map(|(_, b)| b.as_slice())));
    }
    let pool = compile::pool_from(&join_file_set(shared.iter().map(Vec::as_slice))).ok()?;
    let meta = Arc::new(meta::Meta::build(&pool));
    let mut done = Vec::with_capacity(planned.len());
    for (p, bytes) in planned.iter().zip(sets) {
        let message = |m: &str| {
            pool.get_message_by_name(&format!("{}.{m}", p.package))
                .ok_or_else(|| SchemaError::Compile(format!("{m} message missing")))
        };
        let built = (|| {
            Ok(ToolSchemas {
                input: message("Input")?,
                output: p.spec.output.map(|_| message("Output")).transpose()?,
                inner: Arc::new(Inner {
                    meta: meta.clone(),
                    bytes,
                    source: p.emitted.text.clone(),
                }),
            })
        })();
        done.push(built);
    }
    Some(done)
}
