//! Conversion cases: the spec's example, unions, fallbacks, `$ref`s, limits, the registry.

use mcpwire_schema::{
    BsrRef, Limits, Registry, SchemaError, message_schema, to_proto, tool_schemas,
    tool_schemas_with,
};
use serde_json::json;

#[test]
fn spec_example_maps_to_optional_fields_with_validate_rules() {
    let schema = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "max_results": {"type": "integer", "minimum": 1}
        },
        "required": ["query"]
    });
    let text = to_proto("web_search", &schema, None, &Limits::default()).unwrap();
    assert!(text.contains("package mcpwire.tools.web_search;"), "{text}");
    assert!(
        text.contains("optional int64 max_results = 1 [(buf.validate.field) = {int64: {gte: 1}}];"),
        "{text}"
    );
    assert!(
        text.contains("optional string query = 2 [(buf.validate.field) = {required: true}];"),
        "{text}"
    );
    let s = tool_schemas("web_search", &schema, None).unwrap();
    assert_eq!(s.input.full_name(), "mcpwire.tools.web_search.Input");
    // required "" and 0 survive (explicit presence)
    let v = json!({"query": "", "max_results": 0});
    let m = s.json_to_input(&v).unwrap();
    assert_eq!(s.arguments_to_json(&m).unwrap(), v);
    // the lossy prost view still names the files; the full bytes keep the options
    let names: Vec<_> = s
        .file_set()
        .file
        .iter()
        .filter_map(|f| f.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "buf/validate/validate.proto",
            "mcpwire/tools/web_search.proto"
        ]
    );
    assert!(s.file_set_bytes().len() > 100);
}

#[test]
fn wrong_values_are_mismatches() {
    let schema = json!({"type": "object", "properties": {
        "n": {"type": "integer"},
        "mode": {"enum": ["a", "b"]},
        "o": {"type": "object", "properties": {"x": {"type": "string"}}}
    }});
    let s = tool_schemas("t", &schema, None).unwrap();
    for bad in [
        json!({"n": "x"}),
        json!({"n": 1.5}),
        json!({"n": 1e300}),
        json!({"mode": "c"}),
        json!({"o": {"y": 1}}),
        json!({"unknown": 1}),
        json!([1]),
    ] {
        assert!(
            matches!(s.json_to_input(&bad), Err(SchemaError::Mismatch(_))),
            "{bad}"
        );
    }
    assert!(
        s.structured_to_message(&json!({})).is_err(),
        "no output schema"
    );
}

#[test]
fn unsupported_keywords_become_value_with_the_schema_kept() {
    let sub = json!({"allOf": [{"type": "string"}, {"minLength": 2}]});
    let schema = json!({"type": "object", "properties": {"x": sub, "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}}});
    let s = tool_schemas("t", &schema, None).unwrap();
    let back = message_schema(&s.input);
    assert_eq!(back["properties"]["x"], sub);
    assert_eq!(
        back["properties"]["pair"]["prefixItems"][1],
        json!({"type": "integer"})
    );
    let v = json!({"x": "ab", "pair": ["a", 1]});
    assert_eq!(
        s.arguments_to_json(&s.json_to_input(&v).unwrap()).unwrap(),
        v
    );
}

#[test]
fn nullable_any_of_and_integer_enums() {
    let schema = json!({"type": "object", "properties": {
        "a": {"anyOf": [{"type": "integer", "maximum": 5}, {"type": "null"}], "description": "maybe"},
        "level": {"type": "integer", "enum": [1, 2, 3]},
    }, "required": ["a"]});
    let s = tool_schemas("t", &schema, None).unwrap();
    let text = s.proto_source();
    assert!(
        text.contains("(mcpwire.schema.v1.nullable) = true"),
        "{text}"
    );
    assert!(text.contains("int64: {in: [1, 2, 3]}"), "{text}");
    let v = json!({"a": null, "level": 2});
    assert_eq!(
        s.arguments_to_json(&s.json_to_input(&v).unwrap()).unwrap(),
        v
    );
    let back = message_schema(&s.input);
    assert_eq!(back["properties"]["a"]["type"], json!(["integer", "null"]));
    assert_eq!(back["properties"]["level"]["enum"], json!([1, 2, 3]));
}

#[test]
fn recursive_refs_become_recursive_messages() {
    let schema = json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/tree"}},
        "$defs": {"tree": {"type": "object", "properties": {
            "label": {"type": "string"},
            "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}}
        }}}
    });
    let s = tool_schemas("t", &schema, None).unwrap();
    assert!(s.proto_source().contains("repeated Tree kids = 1;"));
    let v = json!({"root": {"label": "a", "kids": [{"label": "b", "kids": [{"label": "c"}]}]}});
    assert_eq!(
        s.arguments_to_json(&s.json_to_input(&v).unwrap()).unwrap(),
        v
    );
    let back = message_schema(&s.input);
    assert!(back["$defs"].is_object(), "{back}");
}

#[test]
fn malformed_schemas_are_invalid() {
    for bad in [
        json!("string"),
        json!({"type": "string"}),
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/missing"}}}),
        json!({"type": "object", "properties": {"x": {"$ref": "http://example.com/s.json"}}}),
        json!({"type": "object", "properties": 3}),
    ] {
        assert!(
            matches!(tool_schemas("t", &bad, None), Err(SchemaError::Invalid(_))),
            "{bad}"
        );
    }
}

#[test]
fn limits_bound_depth_size_properties_and_enums() {
    let mut deep = json!({"type": "string"});
    for _ in 0..100 {
        deep = json!({"type": "object", "properties": {"x": deep}});
    }
    assert!(matches!(
        tool_schemas("t", &deep, None),
        Err(SchemaError::TooLarge(_))
    ));
    let limits = Limits {
        max_properties: 10,
        max_enum_values: 5,
        max_nodes: 50,
        ..Limits::default()
    };
    let wide: serde_json::Map<_, _> = (0..11)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let wide = json!({"type": "object", "properties": wide});
    assert!(matches!(
        tool_schemas_with("t", &wide, None, &limits),
        Err(SchemaError::TooLarge(_))
    ));
    let en =
        json!({"type": "object", "properties": {"e": {"enum": ["a", "b", "c", "d", "e", "f"]}}});
    assert!(matches!(
        tool_schemas_with("t", &en, None, &limits),
        Err(SchemaError::TooLarge(_))
    ));
    // a self-referencing non-object $ref cannot expand forever
    let cyc = json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/a"}}]}}});
    assert!(matches!(
        tool_schemas("t", &cyc, None),
        Err(SchemaError::TooLarge(_))
    ));
}

#[test]
fn tool_names_become_distinct_packages() {
    let schema = json!({"type": "object"});
    let a = tool_schemas("get-weather", &schema, None).unwrap();
    let b = tool_schemas("get_weather", &schema, None).unwrap();
    assert_ne!(a.input.full_name(), b.input.full_name());
    assert_eq!(b.input.full_name(), "mcpwire.tools.get_weather.Input");
}

#[test]
fn bsr_refs_parse_strictly() {
    let r = BsrRef::parse("buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v1").unwrap();
    assert_eq!(r.owner, "acme");
    assert_eq!(r.message, "acme.tools.v1.WebSearchRequest");
    assert_eq!(
        r.to_string(),
        "buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v1"
    );
    for bad in [
        "acme/tools/a.B:v1",
        "buf.build/acme/tools/a.B",
        "buf.build/../tools/a.B:v1",
        "buf.build/acme/tools/NoPackage:v1",
        "buf.build/acme/tools/a.B:",
        "buf.build/acme/tools/a..B:v1",
    ] {
        assert!(
            matches!(BsrRef::parse(bad), Err(SchemaError::Unresolved(_))),
            "{bad}"
        );
    }
}

#[test]
fn registry_compiles_a_directory_and_resolves_refs() {
    let dir = std::env::temp_dir().join(format!("mcpwire-registry-{}", std::process::id()));
    let module = dir.join("acme/tools/v1/acme/tools/v1");
    std::fs::create_dir_all(&module).unwrap();
    std::fs::write(
        module.join("search.proto"),
        r#"syntax = "proto3";
package acme.tools.v1;
import "buf/validate/validate.proto";
import "acme/tools/v1/common.proto";
import "google/protobuf/timestamp.proto";
// Web search arguments.
message WebSearchRequest {
  // Search query
  string query = 1 [(buf.validate.field).string.min_len = 1];
  int32 max_results = 2 [(buf.validate.field).int32.gte = 1, (buf.validate.field).int32.lte = 100];
  DateRange date_range = 3;
  Kind kind = 4;
  google.protobuf.Timestamp since = 5;
}
enum Kind { KIND_UNSPECIFIED = 0; KIND_NEWS = 1; }
"#,
    )
    .unwrap();
    std::fs::write(
        module.join("common.proto"),
        "syntax = \"proto3\";\npackage acme.tools.v1;\nmessage DateRange { string start = 1; string end = 2; }\n",
    )
    .unwrap();
    let reg = Registry::load(&dir).unwrap();
    let r = "buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v1";
    let s = reg.resolve(r).unwrap();
    assert_eq!(s.input.full_name(), "acme.tools.v1.WebSearchRequest");
    let names: Vec<_> = s
        .file_set()
        .file
        .iter()
        .filter_map(|f| f.name.clone())
        .collect();
    assert!(
        names.contains(&"acme/tools/v1/common.proto".to_owned()),
        "{names:?}"
    );
    assert!(s.proto_source().contains("message WebSearchRequest"));
    // canonical proto3 JSON names and enum names for foreign messages
    let v = json!({"query": "rust", "max_results": 5, "date_range": {"start": "2025"}, "kind": "KIND_NEWS", "since": "2026-01-02T03:04:05Z"});
    let m = s.json_to_input(&v).unwrap();
    assert_eq!(s.arguments_to_json(&m).unwrap(), v);
    let js = message_schema(&s.input);
    assert_eq!(js["properties"]["query"]["minLength"], 1);
    assert_eq!(js["properties"]["max_results"]["maximum"], 100);
    assert_eq!(js["description"], "Web search arguments.");
    assert_eq!(js["properties"]["since"]["format"], "date-time");
    // cached: the same descriptor comes back
    assert_eq!(reg.resolve(r).unwrap().input, s.input);
    for missing in [
        "buf.build/acme/tools/acme.tools.v1.Nope:v1",
        "buf.build/acme/tools/acme.tools.v1.WebSearchRequest:v2",
        "buf.build/other/tools/acme.tools.v1.WebSearchRequest:v1",
        "not a ref",
    ] {
        assert!(
            matches!(reg.resolve(missing), Err(SchemaError::Unresolved(_))),
            "{missing}"
        );
    }
    // a broken file fails start-up with a compile error
    std::fs::write(
        module.join("broken.proto"),
        "syntax = \"proto3\"; message {",
    )
    .unwrap();
    assert!(matches!(Registry::load(&dir), Err(SchemaError::Compile(_))));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(Registry::load(&dir), Err(SchemaError::Io(_))));
}

#[test]
fn schemas_and_registry_are_shareable_across_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<mcpwire_schema::ToolSchemas>();
    shareable::<Registry>();
    shareable::<SchemaError>();
}

#[test]
fn cache_converts_each_schema_once_and_stays_bounded() {
    let cache = mcpwire_schema::SchemaCache::new(2);
    let a = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    let b = json!({"type": "object", "properties": {"y": {"type": "integer"}}});
    let first = cache.get("t", &a, None).unwrap();
    let again = cache.get("t", &a, None).unwrap();
    assert_eq!(
        first.input, again.input,
        "the same descriptor, not a new compile"
    );
    let changed = cache.get("t", &b, None).unwrap();
    assert!(changed.input.get_field_by_name("y").is_some());
    assert_eq!(cache.len(), 2);
    assert!(cache.get("bad", &json!({"type": "string"}), None).is_err());
    assert!(cache.len() <= 2);
}

/// Found by probing the `schema` fuzz target's slow inputs (`fuzz/`): every message scope
/// copied the name of every `$defs` message, and claiming a name retried every suffix
/// already taken, so thousands of `$defs` (which `Limits` does not count until referenced)
/// made conversion quadratic: 12 s for a 660 KB schema. Both are now linear; this schema
/// took seconds before and takes milliseconds now, so the bound is generous.
#[test]
fn many_defs_convert_in_linear_time() {
    let defs: serde_json::Map<_, _> = (0..8000)
        .map(|i| {
            // Names that all want the same identifier, and plain ones.
            let name = if i % 2 == 0 {
                format!("d{i}")
            } else {
                format!("x{}", "_".repeat(i % 50))
            };
            (
                name,
                json!({"type": "object", "properties": {"x": {"type": "string"}}}),
            )
        })
        .collect();
    let props: serde_json::Map<_, _> = (0..900)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            )
        })
        .collect();
    let schema = json!({"type": "object", "$defs": defs, "properties": props});
    let start = std::time::Instant::now();
    let text = to_proto("many_defs", &schema, None, &Limits::default()).expect("converts");
    let took = start.elapsed();
    assert!(text.contains("message P899"), "{}", &text[..200]);
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
}

/// What Pydantic (FastMCP) writes: `Optional[...]` as `anyOf` with null beside a default and
/// a description, formats without `buf.validate` rules, defaults, `Optional[dict]`. All of
/// it is typed and carried (`nullable`, `format`, `json_default`, `Struct`); what is not
/// carried is reported.
#[test]
fn pydantic_shapes_are_typed_and_their_facts_carried() {
    let schema = json!({
        "type": "object",
        "title": "create_taskArguments",
        "properties": {
            "due": {"anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}],
                    "default": null, "description": "Deadline."},
            "start_on": {"anyOf": [{"format": "date", "type": "string"}, {"type": "null"}], "default": null},
            "email": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null, "description": "Contact."},
            "metadata": {"anyOf": [{"additionalProperties": true, "type": "object"}, {"type": "null"}],
                         "default": null},
            "hours": {"type": "number", "minimum": 0, "default": 1.0, "title": "Hours"},
            "level": {"enum": ["low", "high"], "type": "string", "default": "low"},
            "days": {"type": "array", "items": {"type": "string", "format": "date"}},
            "person": {"type": "object", "properties": {"name": {"type": "string"}},
                       "additionalProperties": true}
        }
    });
    let (text, lost) =
        mcpwire_schema::to_proto_with_losses("t", &schema, None, &Limits::default()).unwrap();
    for want in [
        "optional string due = 2 [(mcpwire.schema.v1.nullable) = true, (mcpwire.schema.v1.format) = \"date-time\", (mcpwire.schema.v1.json_default) = \"null\"];",
        "google.protobuf.Struct metadata = 6 [(mcpwire.schema.v1.nullable) = true, (mcpwire.schema.v1.json_default) = \"null\"];",
        "optional double hours = 4 [(buf.validate.field) = {double: {gte: 0.0}}, (mcpwire.schema.v1.json_default) = \"1.0\"];",
        "repeated string days = 1 [(mcpwire.schema.v1.format) = \"date\"];",
        "optional string email = 3 [(mcpwire.schema.v1.nullable) = true, (mcpwire.schema.v1.json_default) = \"null\"];",
    ] {
        assert!(text.contains(want), "missing {want}\n{text}");
    }
    assert!(!text.contains("google.protobuf.Value"), "{text}");
    let lost: Vec<(String, String)> = lost.into_iter().map(|l| (l.at, l.keyword)).collect();
    assert_eq!(
        lost,
        [
            ("Input".to_owned(), "title".to_owned()),
            ("Input.hours".to_owned(), "title".to_owned()),
            ("Input.person".to_owned(), "additionalProperties".to_owned()),
        ]
    );

    let s = tool_schemas("t", &schema, None).unwrap();
    for v in [
        json!({"due": "2026-01-01T10:00:00+02:00", "start_on": "2026-01-01", "metadata": {"a": [1, {"b": null}]},
               "email": null, "days": ["2026-02-02"], "level": "high", "person": {"name": "Ada"}}),
        json!({"due": null, "metadata": null, "hours": 0.5}),
    ] {
        let m = s.json_to_input(&v).unwrap();
        let back = s.arguments_to_json(&m).unwrap();
        let want: serde_json::Value = v
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, x)| !x.is_null())
            .map(|(k, x)| (k.clone(), x.clone()))
            .collect::<serde_json::Map<_, _>>()
            .into();
        assert_eq!(back, want);
    }
    // the reverse schema gets the formats and defaults back
    let back = message_schema(&s.input);
    assert_eq!(back["properties"]["due"]["format"], "date-time", "{back}");
    assert_eq!(
        back["properties"]["due"]["default"],
        serde_json::Value::Null
    );
    assert!(back["properties"]["due"].get("default").is_some());
    assert_eq!(back["properties"]["hours"]["default"], 1.0);
    assert_eq!(back["properties"]["level"]["default"], "low");
    assert_eq!(back["properties"]["days"]["items"]["format"], "date");
}
