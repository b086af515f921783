//! `tool_schemas_many` converts a catalog in one compile with exactly the results of
//! converting each tool alone, and keeps one bad tool from failing the others.

use mcpwire_schema::{Limits, ToolSpec, tool_schemas, tool_schemas_many};
use serde_json::{Value, json};

fn catalog() -> Vec<(String, Value, Option<Value>)> {
    let mut tools = vec![
        (
            "search".to_owned(),
            json!({"type": "object", "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What to find"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "mode": {"enum": ["fast", "deep"]},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5}
            }, "required": ["query"]}),
            Some(json!({"type": "object", "properties": {
                "hits": {"type": "array", "items": {"type": "object", "properties": {
                    "title": {"type": "string"}, "score": {"type": "number"}}}}
            }})),
        ),
        (
            "tree".to_owned(),
            json!({"$defs": {"node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
                "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}}),
            None,
        ),
        (
            "odd name!".to_owned(),
            json!({"type": "object", "properties": {"x": {"type": ["string", "null"]},
                "any": {}}}),
            None,
        ),
    ];
    for i in 0..40 {
        tools.push((
            format!("tool_{i}"),
            json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}),
            None,
        ));
    }
    tools
}

fn specs(tools: &[(String, Value, Option<Value>)]) -> Vec<ToolSpec<'_>> {
    tools
        .iter()
        .map(|(name, input, output)| ToolSpec {
            name,
            input,
            output: output.as_ref(),
        })
        .collect()
}

#[test]
fn a_batch_equals_converting_each_tool_alone() {
    let tools = catalog();
    let many = tool_schemas_many(&specs(&tools), &Limits::default());
    assert_eq!(many.len(), tools.len());
    for ((name, input, output), got) in tools.iter().zip(&many) {
        let got = got.as_ref().expect("converts");
        let alone = tool_schemas(name, input, output.as_ref()).expect("converts alone");
        assert_eq!(got.file_set_bytes(), alone.file_set_bytes(), "{name}");
        assert_eq!(got.proto_source(), alone.proto_source(), "{name}");
        assert_eq!(got.input.full_name(), alone.input.full_name());
        assert_eq!(
            got.output.as_ref().map(|o| o.full_name().to_owned()),
            alone.output.as_ref().map(|o| o.full_name().to_owned())
        );
        // The conversions behave the same through the shared pool.
        let value = match name.as_str() {
            "search" => json!({"query": "rust", "limit": 3, "mode": "deep", "tags": ["a"]}),
            "tree" => json!({"root": {"name": "a", "children": [{"name": "b"}]}}),
            "odd name!" => json!({"x": null, "any": [1, {"k": true}]}),
            _ => json!({"n": 7, "s": "seven"}),
        };
        let through = |s: &mcpwire_schema::ToolSchemas| {
            let msg = s.json_to_input(&value).expect("to message");
            s.arguments_to_json(&msg).expect("back")
        };
        assert_eq!(through(got), through(&alone), "{name}");
    }
}

#[test]
fn a_bad_tool_fails_alone_and_the_rest_convert() {
    let mut tools = catalog();
    tools.insert(1, ("broken".into(), json!({"type": "string"}), None));
    tools.push(("search".into(), tools[0].1.clone(), None)); // the same name twice
    let many = tool_schemas_many(&specs(&tools), &Limits::default());
    assert!(many[1].is_err(), "a non-object input schema is refused");
    let ok = many.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, tools.len() - 1);
    let last = many
        .last()
        .and_then(|r| r.as_ref().ok())
        .expect("converted");
    assert!(last.output.is_none());
}
