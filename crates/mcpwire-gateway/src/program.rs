//! Whether a command backend's program can be started at all: found (as a path, or on
//! `PATH`) and executable. Checked before anything starts, so a mistyped or missing
//! program is a configuration error naming its key or flag (exit status 2), not a
//! backend that is "down".

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Finds `program` as the child would: a name with a `/` relative to `cwd` (or ours), else
/// on the `PATH` the child gets (`env`'s, else ours). Says why not, in words.
pub(crate) fn find(
    program: &str,
    cwd: Option<&Path>,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = match cwd {
            Some(dir) if Path::new(program).is_relative() => dir.join(program),
            _ => PathBuf::from(program),
        };
        return match executable(&path) {
            Ok(()) => Ok(path),
            Err(why) => Err(format!("cannot run `{program}`: {why}")),
        };
    }
    let path = env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    let mut found_not_executable = None;
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(program);
        match executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(why) if candidate.exists() => found_not_executable = Some((candidate, why)),
            Err(_) => {}
        }
    }
    Err(match found_not_executable {
        Some((at, why)) => format!("cannot run `{program}` ({}): {why}", at.display()),
        None => format!("`{program}` was not found on PATH: install it, or give its full path"),
    })
}

/// Whether `path` is a file we may execute.
fn executable(path: &Path) -> Result<(), &'static str> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file",
        std::io::ErrorKind::PermissionDenied => "permission denied",
        _ => "it cannot be read",
    })?;
    if !meta.is_file() {
        return Err("not a file");
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("not executable");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_or_refused() {
        let none = BTreeMap::new();
        assert!(find("sh", None, &none).is_ok());
        assert!(find("/bin/sh", None, &none).is_ok());
        let e = find("/nonexistent/x", None, &none).unwrap_err();
        assert_eq!(e, "cannot run `/nonexistent/x`: no such file");
        let e = find("no-such-program-mcpwire", None, &none).unwrap_err();
        assert!(e.contains("was not found on PATH"), "{e}");
        assert!(find("/", None, &none).unwrap_err().contains("not a file"));
        let only_bin: BTreeMap<_, _> = [("PATH".to_owned(), "/nonexistent".to_owned())].into();
        assert!(find("sh", None, &only_bin).is_err(), "the child's PATH");
        assert!(
            find("./sh", Some(Path::new("/bin")), &none).is_ok(),
            "its cwd"
        );
    }
}
