//! Compiling `.proto` text with protox (no system `protoc`), with the embedded
//! `buf/validate/validate.proto` subset and mcpwire's options, and packing the result as a
//! `FileDescriptorSet` that keeps extension options and doc comments.

use std::collections::HashMap;
use std::sync::OnceLock;

use prost::Message as _;
use prost_reflect::DescriptorPool;
use protox::file::{File, FileResolver, GoogleFileResolver};

use crate::SchemaError;

/// protovalidate's rules, the subset mcpwire writes (real names and numbers).
pub const VALIDATE_PROTO: &str = include_str!("../proto/buf/validate/validate.proto");
/// mcpwire's descriptor options (`mcpwire.schema.v1`).
pub const OPTIONS_PROTO: &str = include_str!("../proto/mcpwire/schema/v1/options.proto");
/// The file name of [`VALIDATE_PROTO`].
pub const VALIDATE_FILE: &str = "buf/validate/validate.proto";
/// The file name of [`OPTIONS_PROTO`].
pub const OPTIONS_FILE: &str = "mcpwire/schema/v1/options.proto";

fn embedded(name: &str) -> Option<&'static File> {
    static FILES: OnceLock<Vec<File>> = OnceLock::new();
    let files = FILES.get_or_init(|| {
        [
            (VALIDATE_FILE, VALIDATE_PROTO),
            (OPTIONS_FILE, OPTIONS_PROTO),
        ]
        .into_iter()
        .filter_map(|(n, src)| match File::from_source(n, src) {
            Ok(f) => Some(f),
            Err(e) => {
                tracing::error!(file = n, error = %e, "embedded proto does not parse");
                None
            }
        })
        .collect()
    });
    files.iter().find(|f| f.name() == name)
}

/// Resolves the embedded files, the well-known Google files, and extra in-memory files
/// (name, source).
pub(crate) struct Embedded {
    extra: HashMap<String, String>,
    google: GoogleFileResolver,
}

impl Embedded {
    pub(crate) fn new(extra: Vec<(String, String)>) -> Embedded {
        Embedded {
            extra: extra.into_iter().collect(),
            google: GoogleFileResolver::new(),
        }
    }
}

impl FileResolver for Embedded {
    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        if let Some(src) = self.extra.get(name) {
            return File::from_source(name, src);
        }
        if let Some(f) = embedded(name) {
            return Ok(f.clone());
        }
        self.google.open_file(name)
    }
}

/// Compiles the in-memory file `name` with `source`.
pub(crate) fn compile(name: &str, source: &str) -> Result<DescriptorPool, SchemaError> {
    compile_many(&[(name.to_owned(), source.to_owned())])
}

/// Compiles several in-memory files (name, source) into one pool: their shared imports are
/// read and linked once.
pub(crate) fn compile_many(files: &[(String, String)]) -> Result<DescriptorPool, SchemaError> {
    let mut c = protox::Compiler::with_file_resolver(Embedded::new(files.to_vec()));
    c.include_imports(true).include_source_info(false);
    for (name, _) in files {
        c.open_file(name)
            .map_err(|e| SchemaError::Compile(format!("{e:?}")))?;
    }
    Ok(c.descriptor_pool())
}

/// File `main` of `pool` and its non-Google imports (transitively, dependencies first) as
/// (name, encoded `FileDescriptorProto`) pairs, keeping extension options; `docs` (full
/// name → comment) become `SourceCodeInfo` of `main`.
pub(crate) fn pack_files(
    pool: &DescriptorPool,
    main: &str,
    docs: &HashMap<String, String>,
) -> Vec<(String, Vec<u8>)> {
    let want = closure(pool, main);
    let mut out = Vec::new();
    for file in pool.files().filter(|f| want.contains(f.name())) {
        let mut bytes = file.encode_to_vec();
        if file.name() == main && !docs.is_empty() {
            let info = source_info(pool, main, docs);
            prost::encoding::message::encode(9, &info, &mut bytes);
        }
        out.push((file.name().to_owned(), bytes));
    }
    out
}

/// `FileDescriptorSet` bytes of [`pack_files`].
pub(crate) fn pack(pool: &DescriptorPool, main: &str, docs: &HashMap<String, String>) -> Vec<u8> {
    let mut out = Vec::new();
    for (_, bytes) in pack_files(pool, main, docs) {
        frame(&mut out, &bytes);
    }
    out
}

/// The names of `main` and the non-Google files it imports, transitively.
fn closure(pool: &DescriptorPool, main: &str) -> std::collections::HashSet<String> {
    let mut want = std::collections::HashSet::new();
    let mut todo = vec![main.to_owned()];
    while let Some(n) = todo.pop() {
        if n.starts_with("google/protobuf/") || !want.insert(n.clone()) {
            continue;
        }
        if let Some(f) = pool.get_file_by_name(&n) {
            todo.extend(f.dependencies().map(|d| d.name().to_owned()));
        }
    }
    want
}

/// `FileDescriptorSet` bytes of file `main` of `pool` and its non-Google imports
/// (transitively, dependencies first), keeping options and source info.
pub(crate) fn pack_closure(pool: &DescriptorPool, main: &str) -> Vec<u8> {
    let want = closure(pool, main);
    let mut out = Vec::new();
    for file in pool.files().filter(|f| want.contains(f.name())) {
        frame(&mut out, &file.encode_to_vec());
    }
    out
}

fn frame(out: &mut Vec<u8>, bytes: &[u8]) {
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

fn location(path: &[i32], doc: &str) -> prost_types::source_code_info::Location {
    let mut comment = String::new();
    for line in doc.lines() {
        comment.push(' ');
        comment.push_str(line.trim_end_matches('\r'));
        comment.push('\n');
    }
    prost_types::source_code_info::Location {
        path: path.to_vec(),
        span: vec![0, 0, 0],
        leading_comments: Some(comment),
        trailing_comments: None,
        leading_detached_comments: Vec::new(),
    }
}

fn source_info(
    pool: &DescriptorPool,
    main: &str,
    docs: &HashMap<String, String>,
) -> prost_types::SourceCodeInfo {
    let mut location = Vec::new();
    let Some(file) = pool.get_file_by_name(main) else {
        return prost_types::SourceCodeInfo { location };
    };
    // The file's messages in definition order, nested ones after their parent (not the whole
    // pool: a batch holds many files).
    fn visit(
        m: prost_reflect::MessageDescriptor,
        docs: &HashMap<String, String>,
        out: &mut Vec<prost_types::source_code_info::Location>,
    ) {
        if let Some(d) = docs.get(m.full_name()) {
            out.push(self::location(m.path(), d));
        }
        for f in m.fields() {
            if let Some(d) = docs.get(f.full_name()) {
                out.push(self::location(f.path(), d));
            }
        }
        for child in m.child_messages() {
            visit(child, docs, out);
        }
    }
    for m in file.messages() {
        visit(m, docs, &mut location);
    }
    prost_types::SourceCodeInfo { location }
}

/// The doc comment of each element of `pool`'s files, by full name, from `SourceCodeInfo`.
pub(crate) fn docs_of(pool: &DescriptorPool) -> HashMap<String, String> {
    let mut by_path: HashMap<(String, Vec<i32>), String> = HashMap::new();
    for file in pool.files() {
        if let Some(info) = &file.file_descriptor_proto().source_code_info {
            for loc in &info.location {
                if let Some(c) = &loc.leading_comments {
                    let text: Vec<&str> = c
                        .lines()
                        .map(|l| l.strip_prefix(' ').unwrap_or(l).trim_end())
                        .collect();
                    let text = text.join("\n").trim().to_owned();
                    if !text.is_empty() {
                        by_path.insert((file.name().to_owned(), loc.path.clone()), text);
                    }
                }
            }
        }
    }
    let mut docs = HashMap::new();
    if by_path.is_empty() {
        return docs;
    }
    for m in pool.all_messages() {
        let file = m.parent_file().name().to_owned();
        if let Some(d) = by_path.get(&(file.clone(), m.path().to_vec())) {
            docs.insert(m.full_name().to_owned(), d.clone());
        }
        for f in m.fields() {
            if let Some(d) = by_path.get(&(file.clone(), f.path().to_vec())) {
                docs.insert(f.full_name().to_owned(), d.clone());
            }
        }
    }
    docs
}

/// A pool of the well-known Google files plus the files in `set` (encoded).
pub(crate) fn pool_from(set: &[u8]) -> Result<DescriptorPool, SchemaError> {
    let mut pool = DescriptorPool::global();
    pool.decode_file_descriptor_set(set)
        .map_err(|e| SchemaError::Compile(e.to_string()))?;
    Ok(pool)
}

/// The lossy `prost_types` view of encoded set bytes (extension options are dropped by prost).
pub(crate) fn prost_set(set: &[u8]) -> Result<prost_types::FileDescriptorSet, SchemaError> {
    prost_types::FileDescriptorSet::decode(set).map_err(|e| SchemaError::Compile(e.to_string()))
}
