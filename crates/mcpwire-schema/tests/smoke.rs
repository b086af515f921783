use mcpwire_schema::*;
use serde_json::json;

#[test]
fn smoke() {
    let input = json!({
        "type": "object",
        "description": "Search the web.",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "Search query"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 100},
            "mode": {"type": "string", "enum": ["fast", "deep-dive", "Exact"]},
            "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3},
            "date_range": {"type": "object", "properties": {"start": {"type": "string", "format": "email"}, "end": {"type": ["string", "null"]}}, "required": ["end"]},
            "extra": {"type": "object"},
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            "target": {"oneOf": [{"type": "string"}, {"type": "object", "title": "point", "properties": {"x": {"type": "number"}}}]},
            "any": {},
            "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
            "node": {"$ref": "#/$defs/Node"}
        },
        "required": ["query", "tags"],
        "$defs": {"Node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}}
    });
    let s = tool_schemas("web-search", &input, None).unwrap();
    println!("{}", s.proto_source());
    let args = json!({"query": "x", "max_results": 5, "mode": "deep-dive", "tags": [], "date_range": {"end": null}, "extra": {"a": [1, {"b": null}]}, "weights": {"a": 1.5}, "target": {"x": 1.0}, "any": [1, "2"], "matrix": [[1, 2], [3]], "node": {"name": "a", "children": [{"name": "b"}]}});
    let msg = s.json_to_input(&args).unwrap();
    let back = s.arguments_to_json(&msg).unwrap();
    assert_eq!(back, args);
    println!(
        "{}",
        serde_json::to_string_pretty(&message_schema(&s.input)).unwrap()
    );
}
