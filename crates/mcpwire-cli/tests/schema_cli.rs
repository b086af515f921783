//! `mcpwire schema` and `mcpwire tokens` end to end: golden `.proto` output, the
//! FileDescriptorSet of a real server, and golden token counts for a fixed catalog.

use std::path::{Path, PathBuf};
use std::process::Command;

use prost::Message as _;

mod peers;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcpwire")
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schema_golden")
}

/// `mcpwire schema to-proto` prints exactly the checked-in `.proto` for each fixture.
/// Set MCPWIRE_UPDATE_GOLDEN=1 to rewrite the snapshots after an intended change.
#[test]
fn to_proto_matches_snapshots() {
    let mut checked = 0;
    let mut entries: Vec<_> = std::fs::read_dir(golden_dir())
        .expect("golden dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for json in entries {
        let out = Command::new(bin())
            .args(["schema", "to-proto"])
            .arg(&json)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}: {}",
            json.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).expect("utf-8");
        let golden = json.with_extension("proto");
        if std::env::var_os("MCPWIRE_UPDATE_GOLDEN").is_some() {
            std::fs::write(&golden, &got).expect("write golden");
        }
        let want = std::fs::read_to_string(&golden).expect("golden file");
        assert_eq!(got, want, "{} differs from its snapshot", json.display());
        checked += 1;
    }
    assert!(checked >= 3, "fixtures missing");
}

#[test]
fn to_proto_reports_bad_input() {
    let dir = std::env::temp_dir().join(format!("mcpwire-to-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"type": "string"}"#).unwrap();
    let out = Command::new(bin())
        .args(["schema", "to-proto"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be \"object\""));
    std::fs::write(&bad, "{not json").unwrap();
    let out = Command::new(bin())
        .args(["schema", "to-proto"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The FileDescriptorSet of the demo server's tools, over stdio, decodes and holds one
/// file per tool plus one shared copy of each dependency.
#[test]
fn descriptor_of_a_stdio_server() {
    let target = format!("{} demo", bin());
    let out = Command::new(bin())
        .args(["schema", "descriptor", &target, "-o", "-"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let set = prost_types::FileDescriptorSet::decode(out.stdout.as_slice()).expect("decodes");
    let names: Vec<String> = set.file.iter().filter_map(|f| f.name.clone()).collect();
    assert!(
        names.contains(&"mcpwire/tools/echo.proto".to_owned()),
        "{names:?}"
    );
    assert!(
        names.contains(&"mcpwire/tools/add.proto".to_owned()),
        "{names:?}"
    );
    let validate = names
        .iter()
        .filter(|n| *n == "buf/validate/validate.proto")
        .count();
    assert!(validate <= 1, "{names:?}");
    // the set is self-contained: it loads into an empty pool
    let mut pool = prost_reflect::DescriptorPool::new();
    pool.decode_file_descriptor_set(out.stdout.as_slice())
        .expect("a self-contained set");
    assert_eq!(
        names.first().map(String::as_str),
        Some("google/protobuf/descriptor.proto")
    );
    assert!(
        pool.get_message_by_name("mcpwire.tools.add.Input")
            .is_some()
    );

    let out = Command::new(bin())
        .args(["schema", "descriptor", &target])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON form");
    assert!(
        json["file"]
            .as_array()
            .is_some_and(|f| f.len() >= names.len())
    );
}

/// The descriptor of a FastMCP server with rich types (nested models, free-form dicts →
/// `Struct`) loads into an empty `DescriptorPool` of Google's Python protobuf runtime, file
/// by file in the order written (imports first), as `protoc --include_imports` output does.
#[test]
fn descriptor_loads_into_an_empty_python_pool() {
    let (Some(server), Some(python)) = (peers::fastmcp_server(), peers::venv_python()) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("mcpwire-descriptor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.pb");
    let r = peers::run(&[
        "schema",
        "descriptor",
        &server,
        "-o",
        file.to_str().unwrap(),
    ]);
    r.ok();
    let check = r#"
import sys
from google.protobuf import descriptor_pb2, descriptor_pool
s = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], "rb").read())
pool = descriptor_pool.DescriptorPool()
for f in s.file:
    pool.Add(f)
names = [f.name for f in s.file]
assert "google/protobuf/struct.proto" in names, names
m = pool.FindMessageTypeByName("mcpwire.tools.create_task.Input")
print(sorted(m.fields_by_name))
"#;
    let out = Command::new(python)
        .args(["-c", check])
        .arg(&file)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "['notify', 'task']"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `schema to-proto` on a FastMCP server's tools carries defaults, formats, `Optional[...]`
/// and `Optional[dict]` as typed fields with options, and lists what it does not carry.
#[test]
fn to_proto_of_a_fastmcp_server_carries_defaults_and_formats() {
    let Some(server) = peers::fastmcp_server() else {
        return;
    };
    let tools = peers::run(&["list", "--json", &server]);
    let dir = std::env::temp_dir().join(format!("mcpwire-fm-proto-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tools.json");
    std::fs::write(&file, tools.ok()).unwrap();
    let out = peers::run(&["schema", "to-proto", "--json", file.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(out.ok()).expect("JSON");
    let create = &report["tools"][0];
    assert_eq!(create["name"], "create_task");
    let proto = create["proto"].as_str().unwrap();
    for want in [
        "optional string due = 2 [(mcpwire.schema.v1.nullable) = true, (mcpwire.schema.v1.format) = \"date-time\", (mcpwire.schema.v1.json_default) = \"null\"];",
        "google.protobuf.Struct metadata = 4 [(mcpwire.schema.v1.nullable) = true",
        "optional Priority priority = 5 [(mcpwire.schema.v1.json_default) = \"\\\"normal\\\"\"];",
        "optional double estimate_hours = 3 [(buf.validate.field) = {double: {gte: 0.0, lte: 1000.0}}, (mcpwire.schema.v1.json_default) = \"1.0\"];",
        "optional string created = 1 [(buf.validate.field) = {required: true}, (mcpwire.schema.v1.format) = \"date-time\"];",
    ] {
        assert!(proto.contains(want), "missing {want}\n{proto}");
    }
    assert!(!proto.contains("google.protobuf.Value"), "{proto}");
    // FastMCP's schemas hold nothing the .proto leaves out, save the output's wrap marker
    let mut lost = 0;
    for t in report["tools"].as_array().unwrap() {
        for l in t["lost"].as_array().unwrap() {
            assert_eq!(l["keyword"], "x-fastmcp-wrap-result", "{l}");
            lost += 1;
        }
    }
    assert_eq!(lost, 2, "{report}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Golden token counts for a small fixed tool list (the generator, the converter and the
/// tokenizers are all deterministic; a change here is a change to docs/tokens.md).
#[test]
fn token_counts_for_a_fixed_catalog() {
    let out = Command::new(bin())
        .args(["tokens", "--synthetic", "5", "--json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let got: Vec<(String, u64, u64)> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let key = r["key"].as_str().unwrap_or_default().to_owned();
            (
                key,
                r["cl100k"].as_u64().unwrap_or(0),
                r["o200k"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let want: Vec<(String, u64, u64)> = GOLDEN_5
        .iter()
        .map(|(k, a, b)| ((*k).to_owned(), *a, *b))
        .collect();
    assert_eq!(got, want, "token counts changed: {got:?}");
    assert_eq!(report["unconverted"], serde_json::json!([]));
    assert_eq!(report["signature_lost"], serde_json::json!({}));
}

/// The signature rendering of a FastMCP server keeps what Pydantic wrote: `$ref`s as named
/// shapes (recursion included), `Optional[...]` as `|null`, bounds, formats, defaults and
/// the output type; what it leaves out is reported, and none of it is a schema keyword.
#[test]
fn signature_of_a_fastmcp_server_keeps_refs_and_unions() {
    let Some(server) = peers::fastmcp_server() else {
        return;
    };
    let text = peers::run(&["tokens", &server, "--show", "signature"]);
    let text = text.ok();
    for want in [
        "create_task: Create a task and return its record.\n  (notify?: boolean|null = null, task: Task)\n",
        "  where Task = {assignee?: Person|null = null, due?: string<date-time>|null = null",
        "estimate_hours?: number<>=0,<=1000> = 1.0",
        "metadata?: object|null = null",
        "tags?: string[]<items>=0,items<=10>",
        "title: string<min1,max200> /* Short summary. */} /* A unit of work. */",
        "  where Subtask = {children?: Subtask[] /* Nested steps (recursive). */, done?: boolean = false, title: string}",
        "  -> {created: string<date-time>, id: int, state?: \"open\"|\"done\" = \"open\", task: Task}",
        "labels?: string[]<items>=1>",
        "priority?: (\"low\"|\"normal\"|\"urgent\")|null = null",
        "(people: {email?: string|null = null",
    ] {
        assert!(text.contains(want), "missing {want:?} in:\n{text}");
    }
    assert!(!text.contains("any"), "{text}");
    let report = peers::run(&["tokens", &server, "--json"]);
    let report: serde_json::Value = serde_json::from_str(report.ok()).expect("JSON");
    let lost: Vec<&str> = report["signature_lost"]
        .as_object()
        .expect("signature_lost")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(lost, ["tool._meta", "tool.title", "x-fastmcp-wrap-result"]);
}

const GOLDEN_5: &[(&str, u64, u64)] = &[
    ("jsonrpc", 866, 914),
    ("jsonrpc_pretty", 1555, 1561),
    ("proto_inline_json", 67750, 68079),
    ("proto_inline_b64", 55001, 51619),
    ("proto_inline_own_json", 10695, 10783),
    ("proto_refs_json", 345, 353),
    ("proto_refs_b64", 1264, 1182),
    ("proto_text", 1385, 1394),
    ("proto_text_lean", 955, 957),
    ("signature", 621, 625),
    ("signature_nodesc", 367, 371),
    ("jsonrpc_nodesc", 601, 649),
    ("search_meta", 192, 202),
    ("search_disclosed", 1054, 1111),
];

/// `mcpwire schema resolve` compiles a registry directory and answers references; an
/// unknown reference fails with the resolution error.
#[test]
fn resolve_against_a_registry_directory() {
    let dir = std::env::temp_dir().join(format!("mcpwire-resolve-{}", std::process::id()));
    let module = dir.join("acme/tools/v1/acme/tools/v1");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(
        module.join("search.proto"),
        "syntax = \"proto3\";\npackage acme.tools.v1;\n// Search.\nmessage WebSearchRequest {\n  string query = 1;\n}\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(bin())
            .args(["schema", "resolve", "--registry"])
            .arg(&dir)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["properties"]["query"]["type"], "string");
    assert_eq!(schema["description"], "Search.");
    let out = run(&[
        "--proto",
        "buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v1",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("message WebSearchRequest"));
    let out = run(&["buf.build/acme/tools/acme.tools.v1.Missing:v1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("schema reference not resolved"));
    std::fs::remove_dir_all(&dir).unwrap();
}
