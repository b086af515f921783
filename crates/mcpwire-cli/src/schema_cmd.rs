//! `mcpwire schema …` and `mcpwire tokens`: tool schemas as protobuf, and what a catalog
//! costs an agent's context.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use mcpwire_client::{Client, ClientError, Target};

use crate::TimeoutArg;

/// Why a schema command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaCliError {
    /// Reading a file or writing output failed.
    #[error("{0}")]
    Io(String),
    /// The input is not a JSON Schema, tool or tool list.
    #[error("{0}")]
    Input(String),
    /// Talking to the server failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// A schema did not convert or resolve.
    #[error("{tool}: {error}")]
    Schema {
        /// The tool, reference or registry.
        tool: String,
        /// What went wrong.
        error: mcpwire_schema::SchemaError,
    },
}

/// `mcpwire schema` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum SchemaCommand {
    /// Print the .proto text for a JSON Schema file (the migration tool of proto-mcp).
    ///
    /// FILE holds a tool's input JSON Schema, a tool definition ({name, inputSchema,
    /// outputSchema}) or a tools/list result ({"tools": [...]}). Defaults and formats are
    /// carried as options; every fact the .proto does not carry (titles, examples, open
    /// objects that become closed messages, …) is listed in a `// not carried:` comment
    /// (and under "lost" with --json).
    ToProto {
        /// The JSON file.
        file: PathBuf,
        /// Tool name for a bare schema (default: the file name without extension).
        #[arg(long)]
        name: Option<String>,
        /// Print {"tools": [{"name", "proto", "lost": [{"at", "keyword", "value",
        /// "effect"}]}]} instead of the .proto text.
        #[arg(long)]
        json: bool,
    },
    /// Print the FileDescriptorSet of a server's tools.
    ///
    /// Without --output, prints it in proto3 JSON; with --output FILE (or - for stdout),
    /// writes the binary FileDescriptorSet (what protoc --include_imports -o writes).
    Descriptor {
        /// Command line of a stdio MCP server, an http(s):// URL, or a JSON file of tools.
        target: String,
        #[command(flatten)]
        timeout: TimeoutArg,
        /// Write the binary FileDescriptorSet here (- for stdout). It is self-contained:
        /// every import, Google's well-known files included, precedes its importers.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Resolve a `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}` reference against a
    /// registry directory (`{dir}/{owner}/{repo}/{version}/**.proto`) and print the
    /// message's JSON Schema (or, with --proto, its file's source).
    Resolve {
        /// The registry directory.
        #[arg(long, value_name = "DIR")]
        registry: PathBuf,
        /// The reference.
        reference: String,
        /// Print the .proto source of the message's file instead of its JSON Schema.
        #[arg(long)]
        proto: bool,
    },
    /// Print N generated realistic tools as a tools/list result (the deterministic
    /// fixture behind docs/tokens.md).
    Synthetic {
        /// How many tools.
        #[arg(default_value_t = 10)]
        n: usize,
    },
}

/// `mcpwire schema` arguments.
#[derive(clap::Args, Debug)]
pub struct SchemaArgs {
    #[command(subcommand)]
    command: SchemaCommand,
}

/// `mcpwire tokens` arguments.
#[derive(clap::Args, Debug)]
pub struct TokensArgs {
    /// Command line of a stdio MCP server, an http(s):// URL, or a JSON file of tools.
    #[arg(required_unless_present = "synthetic")]
    target: Option<String>,
    #[command(flatten)]
    timeout: TimeoutArg,
    /// Count N generated realistic tools (`mcpwire schema synthetic N`) instead of a server's.
    #[arg(long, value_name = "N")]
    synthetic: Option<usize>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    /// Print the text of one rendering (e.g. `signature`) instead of the report: what is
    /// counted.
    #[arg(long, value_name = "KEY")]
    show: Option<String>,
}

/// The tools of `target`: a JSON file (a tools/list result or an array of tools), an
/// http(s) URL, or a stdio server command line.
pub async fn fetch_tools(target: &str, timeout: TimeoutArg) -> Result<Vec<Value>, SchemaCliError> {
    let path = Path::new(target);
    if target.ends_with(".json") && !target.contains(char::is_whitespace) {
        let v = read_json(path)?;
        return tools_of(&v, path);
    }
    let (client, events) = Client::connect(&Target::parse(target)?, &timeout.options()).await?;
    events.print_logs();
    let tools = client.list_tools().await?;
    client.close().await?;
    Ok(tools)
}

fn read_json(path: &Path) -> Result<Value, SchemaCliError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| SchemaCliError::Io(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| SchemaCliError::Input(format!("{}: {e}", path.display())))
}

/// Tool definitions in a JSON document: `{"tools": [...]}`, `[...]`, one tool, or a bare
/// input schema (named after the file).
fn tools_of(v: &Value, path: &Path) -> Result<Vec<Value>, SchemaCliError> {
    if let Some(list) = v.get("tools").and_then(Value::as_array) {
        return Ok(list.clone());
    }
    if let Some(list) = v.as_array() {
        return Ok(list.clone());
    }
    if v.get("inputSchema").is_some() {
        return Ok(vec![v.clone()]);
    }
    if v.is_object() {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().trim_end_matches(".schema").to_owned())
            .unwrap_or_else(|| "tool".into());
        return Ok(vec![json!({ "name": name, "inputSchema": v })]);
    }
    Err(SchemaCliError::Input(format!(
        "{}: expected a JSON Schema, a tool or a tools/list result",
        path.display()
    )))
}

fn convert(t: &Value) -> Result<mcpwire_schema::ToolSchemas, SchemaCliError> {
    let name = t["name"].as_str().unwrap_or("tool");
    let empty = json!({"type": "object"});
    mcpwire_schema::tool_schemas(
        name,
        t.get("inputSchema").unwrap_or(&empty),
        t.get("outputSchema"),
    )
    .map_err(|error| SchemaCliError::Schema {
        tool: name.to_owned(),
        error,
    })
}

/// Prints a line; a closed stdout ends the program quietly.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    if out.write_all(text.as_bytes()).is_err() || out.flush().is_err() {
        std::process::exit(0);
    }
}

/// Runs `mcpwire schema …`.
pub async fn run_schema(args: SchemaArgs) -> Result<(), SchemaCliError> {
    match args.command {
        SchemaCommand::ToProto { file, name, json } => {
            let v = read_json(&file)?;
            let mut tools = tools_of(&v, &file)?;
            if let (Some(n), [t]) = (name, tools.as_mut_slice()) {
                t["name"] = n.into();
            }
            let mut out = String::new();
            let mut listed = Vec::new();
            for (i, t) in tools.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                let name = t["name"].as_str().unwrap_or("tool");
                let empty = json!({"type": "object"});
                let (text, lost) = mcpwire_schema::to_proto_with_losses(
                    name,
                    t.get("inputSchema").unwrap_or(&empty),
                    t.get("outputSchema"),
                    &mcpwire_schema::Limits::default(),
                )
                .map_err(|error| SchemaCliError::Schema {
                    tool: name.to_owned(),
                    error,
                })?;
                if tools.len() > 1 {
                    out.push_str(&format!("// tool {name}\n"));
                }
                for l in &lost {
                    out.push_str(&format!(
                        "// not carried: {}: {} = {} ({})\n",
                        l.at, l.keyword, l.value, l.effect
                    ));
                }
                out.push_str(&text);
                listed.push(json!({
                    "name": name,
                    "proto": text,
                    "lost": lost.iter().map(|l| json!({
                        "at": l.at, "keyword": l.keyword, "value": l.value, "effect": l.effect,
                    })).collect::<Vec<_>>(),
                }));
            }
            if json {
                let text = serde_json::to_string_pretty(&json!({ "tools": listed }))
                    .map_err(|e| SchemaCliError::Io(e.to_string()))?;
                emit(&format!("{text}\n"));
            } else {
                emit(&out);
            }
        }
        SchemaCommand::Resolve {
            registry,
            reference,
            proto,
        } => {
            let reg = mcpwire_schema::Registry::load(&registry).map_err(|error| {
                SchemaCliError::Schema {
                    tool: registry.display().to_string(),
                    error,
                }
            })?;
            let s = reg
                .resolve(&reference)
                .map_err(|error| SchemaCliError::Schema {
                    tool: reference.clone(),
                    error,
                })?;
            if proto {
                emit(s.proto_source());
            } else {
                let schema = mcpwire_schema::message_schema(&s.input);
                let text = serde_json::to_string_pretty(&schema)
                    .map_err(|e| SchemaCliError::Io(e.to_string()))?;
                emit(&format!("{text}\n"));
            }
        }
        SchemaCommand::Synthetic { n } => {
            let tools = crate::synthetic_tools::synthetic_tools(n);
            let text = serde_json::to_string_pretty(&json!({ "tools": tools }))
                .map_err(|e| SchemaCliError::Io(e.to_string()))?;
            emit(&format!("{text}\n"));
        }
        SchemaCommand::Descriptor {
            target,
            timeout,
            output,
        } => {
            let tools = fetch_tools(&target, timeout).await?;
            let mut seen = HashSet::new();
            let mut files: Vec<Vec<u8>> = Vec::new();
            let mut pool = None;
            for t in &tools {
                let s = convert(t)?;
                for (name, file) in mcpwire_schema::split_file_set(s.file_set_bytes()) {
                    if seen.insert(name) {
                        files.push(file.to_vec());
                    }
                }
                pool.get_or_insert_with(|| s.pool().clone());
            }
            let pool = pool.unwrap_or_else(prost_reflect::DescriptorPool::global);
            let bytes = self_contained(&files, &pool)?;
            match output {
                Some(p) if p.as_os_str() == "-" => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(&bytes)
                        .and_then(|_| out.flush())
                        .map_err(|e| SchemaCliError::Io(e.to_string()))?;
                }
                Some(p) => std::fs::write(&p, &bytes)
                    .map_err(|e| SchemaCliError::Io(format!("{}: {e}", p.display())))?,
                None => {
                    let desc = pool
                        .get_message_by_name("google.protobuf.FileDescriptorSet")
                        .ok_or_else(|| SchemaCliError::Io("descriptor.proto missing".into()))?;
                    let msg = prost_reflect::DynamicMessage::decode(desc, bytes.as_slice())
                        .map_err(|e| SchemaCliError::Io(e.to_string()))?;
                    let json = serde_json::to_string_pretty(&msg)
                        .map_err(|e| SchemaCliError::Io(e.to_string()))?;
                    emit(&format!("{json}\n"));
                }
            }
        }
    }
    Ok(())
}

/// A `FileDescriptorSet` of `files` (encoded `FileDescriptorProto`s, options kept) preceded
/// by every Google file they import, directly or not, in dependency order: what `protoc
/// --include_imports -o` writes, loadable into an empty pool. The Google files come from
/// `pool` (the one the tools were compiled in).
fn self_contained(
    files: &[Vec<u8>],
    pool: &prost_reflect::DescriptorPool,
) -> Result<Vec<u8>, SchemaCliError> {
    use prost::Message as _;
    fn add(
        file: &prost_reflect::FileDescriptor,
        seen: &mut HashSet<String>,
        out: &mut Vec<Vec<u8>>,
    ) {
        if !seen.insert(file.name().to_owned()) {
            return;
        }
        for dep in file.dependencies() {
            add(&dep, seen, out);
        }
        out.push(file.file_descriptor_proto().encode_to_vec());
    }
    let mut seen = HashSet::new();
    let mut google = Vec::new();
    for f in files {
        let proto = prost_types::FileDescriptorProto::decode(f.as_slice())
            .map_err(|e| SchemaCliError::Io(format!("a generated file does not decode: {e}")))?;
        for dep in proto
            .dependency
            .iter()
            .filter(|d| d.starts_with("google/protobuf/"))
        {
            let file = pool.get_file_by_name(dep).ok_or_else(|| {
                SchemaCliError::Io(format!("{dep} is missing from the schema pool"))
            })?;
            add(&file, &mut seen, &mut google);
        }
    }
    Ok(mcpwire_schema::join_file_set(
        google.iter().chain(files).map(Vec::as_slice),
    ))
}

/// Runs `mcpwire tokens`.
pub async fn run_tokens(args: TokensArgs) -> Result<(), SchemaCliError> {
    let tools = match (args.synthetic, &args.target) {
        (Some(n), _) => crate::synthetic_tools::synthetic_tools(n),
        (None, Some(t)) => fetch_tools(t, args.timeout).await?,
        (None, None) => {
            return Err(SchemaCliError::Input(
                "give a target or --synthetic N".into(),
            ));
        }
    };
    if let Some(key) = &args.show {
        let r = crate::tokens::renderings(&tools);
        let Some((_, _, text)) = r.texts.iter().find(|(k, _, _)| k == key) else {
            let keys: Vec<&str> = r.texts.iter().map(|(k, _, _)| *k).collect();
            return Err(SchemaCliError::Input(format!(
                "no rendering `{key}`; there are: {}",
                keys.join(", ")
            )));
        };
        emit(text);
        return Ok(());
    }
    let report = crate::tokens::report(&tools);
    if args.json {
        emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        ));
    } else {
        emit(&report.to_markdown());
    }
    Ok(())
}
