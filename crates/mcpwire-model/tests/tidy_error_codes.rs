//! Tidy: every JSON-RPC error code on a wire comes from the one table in this crate
//! (`McpError::to_wire`). This scans the workspace's Rust sources outside `mcpwire-model`
//! and fails on an error code literal (−32xxx, −33xxx) or a `codes::` constant anywhere but
//! in a comparison (reading a peer's answer), so a new error has to become a variant.
//!
//! Test code is exempt (files under `tests/`, files named `tests.rs`, and everything after a
//! file's `#[cfg(test)]`): tests check the table from the outside with literal codes.
//! Comments are exempt too.

use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if matches!(&*name, "target" | ".git" | "node_modules" | "tests") {
                continue;
            }
            rust_files(&path, out);
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// The line without its `//` comment (a `//` inside a string literal is kept).
fn code_part(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// An error code literal: `-32` or `-33` followed by exactly three more digits.
fn has_code_literal(code: &str) -> bool {
    let b = code.as_bytes();
    (0..b.len()).any(|i| {
        b[i] == b'-'
            && b.get(i + 1) == Some(&b'3')
            && matches!(b.get(i + 2), Some(b'2' | b'3'))
            && b.len() >= i + 6
            && b[i + 3..i + 6].iter().all(u8::is_ascii_digit)
            && !b.get(i + 6).is_some_and(u8::is_ascii_digit)
            && !(i > 0 && b[i - 1].is_ascii_alphanumeric())
    })
}

/// A `codes::` constant outside a comparison.
fn builds_from_constant(code: &str) -> bool {
    code.contains("codes::") && !(code.contains("==") || code.contains("!="))
}

fn offences(source: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in source.lines().enumerate() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            break;
        }
        let code = code_part(line);
        if has_code_literal(code) || builds_from_constant(code) {
            found.push((n + 1, line.trim().to_owned()));
        }
    }
    found
}

#[test]
fn no_error_code_is_built_outside_the_model() {
    let root = workspace();
    let mut files = Vec::new();
    for dir in ["crates", "examples", "bench", "fuzz"] {
        rust_files(&root.join(dir), &mut files);
    }
    let model = root.join("crates/mcpwire-model");
    assert!(
        files.len() > 50,
        "the scan found only {} files under {}",
        files.len(),
        root.display()
    );
    let mut report = String::new();
    for file in files.iter().filter(|f| !f.starts_with(&model)) {
        let source = std::fs::read_to_string(file).expect("readable source");
        for (line, text) in offences(&source) {
            let rel = file.strip_prefix(&root).unwrap_or(file);
            report.push_str(&format!("{}:{line}: {text}\n", rel.display()));
        }
    }
    assert!(
        report.is_empty(),
        "JSON-RPC error codes built outside McpError::to_wire (give the failure a variant):\n{report}"
    );
}

#[test]
fn the_scanner_sees_what_it_must() {
    let bad = [
        r#"    error: ErrorObject::new(-32601, "x"),"#,
        r#"    "error": { "code": -32601, "message": "Method not found" }"#,
        "    code: codes::PROTO_TIMEOUT as i32,",
        "    let e = (codes::INVALID_PARAMS, msg);",
        "    codes::PARSE_ERROR | codes::INVALID_REQUEST => INVALID_ARGUMENT,",
        r#"    let url = "http://x"; let c = -33001;"#,
    ];
    for line in bad {
        assert_eq!(offences(line).len(), 1, "missed: {line}");
    }
    let fine = [
        "    if e.code == codes::METHOD_NOT_FOUND {",
        "    // answers -32601 when the method is unknown",
        "    /// −32602 in every revision",
        "    let port = 32601; let big = -3260100; let id = x-32601;",
        "#[cfg(test)]\nmod tests { const C: i64 = -32601; }",
    ];
    for line in fine {
        assert!(offences(line).is_empty(), "flagged: {line}");
    }
}
