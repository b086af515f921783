//! Rough per-operation costs of the schema layer (not a benchmark harness: run it in
//! release, on an idle machine, and read the figures as orders of magnitude):
//! `cargo run --release -p mcpwire-schema --example schema_cost`.

use std::time::Instant;

use prost::Message as _;
use serde_json::json;

fn per_op(label: &str, n: u32, mut f: impl FnMut()) {
    for _ in 0..n / 10 {
        f();
    }
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(n);
    println!("{label:<55} {us:>9.2} µs");
}

fn main() {
    let input = json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "Search query"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "sort": {"type": "string", "enum": ["created", "updated", "relevance"]},
            "labels": {"type": "array", "items": {"type": "string"}},
            "created": {"type": "object", "properties": {"start": {"type": "string"}, "end": {"type": "string"}}},
            "metadata": {"type": "object"}
        },
        "required": ["query"]
    });
    let args = json!({"query": "crash on start", "limit": 20, "sort": "relevance",
        "labels": ["bug", "p1"], "created": {"start": "2026-01-01"}, "metadata": {"k": [1, "v"]}});
    per_op(
        "to_proto (JSON Schema -> .proto text, no compile)",
        20_000,
        || {
            let _ = mcpwire_schema::to_proto("search_issues", &input, None, &Default::default())
                .unwrap();
        },
    );
    per_op(
        "tool_schemas (JSON Schema -> compiled descriptors)",
        2_000,
        || {
            let _ = mcpwire_schema::tool_schemas("search_issues", &input, None).unwrap();
        },
    );
    // A catalog of 200 such tools: one by one, and in one batch (per tool).
    let names: Vec<String> = (0..200).map(|i| format!("search_{i}")).collect();
    let specs: Vec<mcpwire_schema::ToolSpec<'_>> = names
        .iter()
        .map(|name| mcpwire_schema::ToolSpec {
            name,
            input: &input,
            output: None,
        })
        .collect();
    let t = Instant::now();
    for spec in &specs {
        let _ = mcpwire_schema::tool_schemas(spec.name, spec.input, None).unwrap();
    }
    let alone = t.elapsed().as_secs_f64() * 1e6 / specs.len() as f64;
    println!(
        "{:<55} {alone:>9.2} µs",
        "200-tool catalog, one tool_schemas each (per tool)"
    );
    let t = Instant::now();
    let many = mcpwire_schema::tool_schemas_many(&specs, &Default::default());
    let batch = t.elapsed().as_secs_f64() * 1e6 / specs.len() as f64;
    assert!(many.iter().all(Result::is_ok));
    println!(
        "{:<55} {batch:>9.2} µs",
        "200-tool catalog, tool_schemas_many (per tool)"
    );
    let s = mcpwire_schema::tool_schemas("search_issues", &input, None).unwrap();
    let msg = s.json_to_input(&args).unwrap();
    let bytes = msg.encode_to_vec();
    per_op("json_to_input + encode (client side)", 200_000, || {
        let m = s.json_to_input(&args).unwrap();
        let _ = m.encode_to_vec();
    });
    per_op("decode + arguments_to_json (server side)", 200_000, || {
        let m = prost_reflect::DynamicMessage::decode(s.input.clone(), bytes.as_slice()).unwrap();
        let _ = s.arguments_to_json(&m).unwrap();
    });
    println!(
        "encoded arguments: {} bytes (JSON: {} bytes)",
        bytes.len(),
        args.to_string().len()
    );
}
