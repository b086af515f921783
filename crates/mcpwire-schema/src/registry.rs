//! The schema registry: a directory of `.proto` files compiled once at start-up, whose
//! messages tools reference as `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}`.
//!
//! Layout: `{dir}/{owner}/{repo}/{version}/` is one module, an include root compiled into
//! its own pool (two versions may define the same names). Files may import each other
//! within a module, Google's well-known files, and `buf/validate/validate.proto` (the
//! embedded subset unless the module has its own).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use prost_reflect::DescriptorPool;
use protox::file::{ChainFileResolver, IncludeFileResolver};

use crate::compile::Embedded;
use crate::{SchemaError, ToolSchemas};

/// A parsed `buf.build/{owner}/{repo}/{pkg}.{Msg}:{version}` reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BsrRef {
    /// The BSR owner (`acme`).
    pub owner: String,
    /// The repository (`tools`).
    pub repo: String,
    /// The message's full name (`acme.tools.v1.WebSearchRequest`).
    pub message: String,
    /// The version label (`v1`).
    pub version: String,
}

impl BsrRef {
    /// Parses a reference; a malformed one is [`SchemaError::Unresolved`].
    pub fn parse(s: &str) -> Result<BsrRef, SchemaError> {
        let bad = || SchemaError::Unresolved(format!("malformed schema reference {s:?}"));
        let rest = s.strip_prefix("buf.build/").ok_or_else(bad)?;
        let (path, version) = rest.rsplit_once(':').ok_or_else(bad)?;
        let mut parts = path.splitn(3, '/');
        let (owner, repo, message) = (
            parts.next().ok_or_else(bad)?,
            parts.next().ok_or_else(bad)?,
            parts.next().ok_or_else(bad)?,
        );
        let segment = |x: &str| {
            !x.is_empty()
                && x.len() <= 128
                && x.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                && x != "."
                && x != ".."
        };
        let ident = |x: &str| {
            x.split('.').all(|p| {
                p.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        };
        let ok = segment(owner)
            && segment(repo)
            && segment(version)
            && message.contains('.')
            && ident(message);
        if !ok {
            return Err(bad());
        }
        Ok(BsrRef {
            owner: owner.into(),
            repo: repo.into(),
            message: message.into(),
            version: version.into(),
        })
    }
}

impl std::fmt::Display for BsrRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "buf.build/{}/{}/{}:{}",
            self.owner, self.repo, self.message, self.version
        )
    }
}

/// Bounds on what a registry directory may hold.
const MAX_FILES: usize = 10_000;
const MAX_FILE_BYTES: u64 = 4 << 20;
const MAX_CACHED: usize = 10_000;

/// Compiled modules and a cache of resolved references.
#[derive(Debug, Default)]
pub struct Registry {
    modules: HashMap<(String, String, String), Module>,
    cache: Mutex<HashMap<String, ToolSchemas>>,
}

#[derive(Debug)]
struct Module {
    pool: DescriptorPool,
    sources: HashMap<String, String>,
}

impl Registry {
    /// An empty registry (every reference is unresolved).
    pub fn empty() -> Registry {
        Registry::default()
    }

    /// Compiles every module under `dir` (see the module docs for the layout).
    pub fn load(dir: &Path) -> Result<Registry, SchemaError> {
        let io = |p: &Path, e: std::io::Error| SchemaError::Io(format!("{}: {e}", p.display()));
        let mut reg = Registry::default();
        let mut total = 0usize;
        for owner in subdirs(dir).map_err(|e| io(dir, e))? {
            for repo in subdirs(&owner).map_err(|e| io(&owner, e))? {
                for version in subdirs(&repo).map_err(|e| io(&repo, e))? {
                    let mut files = Vec::new();
                    collect_protos(&version, &version, &mut files, &mut total)?;
                    if files.is_empty() {
                        continue;
                    }
                    let module = compile_module(&version, &files)?;
                    let key = (name_of(&owner), name_of(&repo), name_of(&version));
                    tracing::debug!(module = ?key, files = files.len(), "schema module compiled");
                    reg.modules.insert(key, module);
                }
            }
        }
        Ok(reg)
    }

    /// Whether any module was loaded.
    pub fn is_empty(&self) -> bool {
        self.modules.is_empty()
    }

    /// The input schemas a reference names (cached): `input` is the referenced message,
    /// `file_set` its file and imports.
    pub fn resolve(&self, reference: &str) -> Result<ToolSchemas, SchemaError> {
        if let Ok(cache) = self.cache.lock()
            && let Some(hit) = cache.get(reference)
        {
            return Ok(hit.clone());
        }
        let r = BsrRef::parse(reference)?;
        let module = self
            .modules
            .get(&(r.owner.clone(), r.repo.clone(), r.version.clone()))
            .ok_or_else(|| {
                SchemaError::Unresolved(format!(
                    "no module buf.build/{}/{} at version {}",
                    r.owner, r.repo, r.version
                ))
            })?;
        let desc = module.pool.get_message_by_name(&r.message).ok_or_else(|| {
            SchemaError::Unresolved(format!("{} has no message {}", reference, r.message))
        })?;
        let file = desc.parent_file().name().to_owned();
        let source = module.sources.get(&file).cloned().unwrap_or_default();
        let schemas = ToolSchemas::from_pool_message(&module.pool, &desc, source)?;
        if let Ok(mut cache) = self.cache.lock()
            && cache.len() < MAX_CACHED
        {
            cache.insert(reference.to_owned(), schemas.clone());
        }
        Ok(schemas)
    }
}

fn name_of(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn subdirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            out.push(e.path());
        }
    }
    out.sort();
    Ok(out)
}

fn collect_protos(
    root: &Path,
    dir: &Path,
    out: &mut Vec<(String, PathBuf)>,
    total: &mut usize,
) -> Result<(), SchemaError> {
    let io = |e: std::io::Error| SchemaError::Io(format!("{}: {e}", dir.display()));
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .map_err(io)?
        .collect::<Result<_, _>>()
        .map_err(io)?;
    entries.sort_by_key(|e| e.path());
    for e in entries {
        let path = e.path();
        let ft = e.file_type().map_err(io)?;
        if ft.is_dir() {
            collect_protos(root, &path, out, total)?;
        } else if ft.is_file() && path.extension().is_some_and(|x| x == "proto") {
            *total += 1;
            if *total > MAX_FILES {
                return Err(SchemaError::TooLarge(format!(
                    "the registry holds more than {MAX_FILES} .proto files"
                )));
            }
            let len = e.metadata().map_err(io)?.len();
            if len > MAX_FILE_BYTES {
                return Err(SchemaError::TooLarge(format!(
                    "{} is {len} bytes (limit {MAX_FILE_BYTES})",
                    path.display()
                )));
            }
            let rel = path
                .strip_prefix(root)
                .map_err(|e| SchemaError::Io(e.to_string()))?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, path));
        }
    }
    Ok(())
}

fn compile_module(root: &Path, files: &[(String, PathBuf)]) -> Result<Module, SchemaError> {
    let mut chain = ChainFileResolver::new();
    chain.add(IncludeFileResolver::new(root.to_path_buf()));
    chain.add(Embedded::new(Vec::new()));
    let mut c = protox::Compiler::with_file_resolver(chain);
    c.include_imports(true).include_source_info(true);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    c.open_files(names)
        .map_err(|e| SchemaError::Compile(format!("{}: {e:?}", root.display())))?;
    let mut sources = HashMap::new();
    for (name, path) in files {
        if let Ok(s) = std::fs::read_to_string(path) {
            sources.insert(name.clone(), s);
        }
    }
    Ok(Module {
        pool: c.descriptor_pool(),
        sources,
    })
}
