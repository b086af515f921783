//! `mcpwire_schema::to_proto` / `tool_schemas` on arbitrary JSON Schemas.
//!
//! Input: `tool name \n JSON`. The JSON is the input schema, or `[input, output, args]`
//! (output may be `null`, args optional). Non-JSON inputs are skipped.
//!
//! Invariants: no panic or hang (libFuzzer's `-timeout` catches slow inputs); `to_proto`
//! and `tool_schemas` agree on whether a schema is convertible; the generated `.proto`
//! always compiles (a `SchemaError::Compile` on a schema `to_proto` accepted is a bug);
//! for a converted schema, `{}` and the fuzzed arguments go through `json_to_input` →
//! `arguments_to_json` → `json_to_input` without panicking, and the second conversion
//! accepts what the first produced, giving the same JSON again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpwire_schema::{Limits, to_proto, tool_schemas};
use serde_json::{Value, json};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (name, json_text) = text.split_once('\n').unwrap_or(("fuzz_tool", text));
    let Ok(value) = serde_json::from_str::<Value>(json_text) else {
        return;
    };
    let (input, output, args) = match &value {
        Value::Array(parts) if (2..=3).contains(&parts.len()) => (
            &parts[0],
            Some(&parts[1]).filter(|o| !o.is_null()),
            parts.get(2),
        ),
        _ => (&value, None, None),
    };

    let planned = to_proto(name, input, output, &Limits::default());
    let compiled = tool_schemas(name, input, output);
    match (&planned, &compiled) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "different refusals"),
        (Ok(source), Err(e)) => {
            panic!("to_proto accepted but tool_schemas failed: {e}\n--- source ---\n{source}")
        }
        (Err(e), Ok(_)) => panic!("tool_schemas accepted what to_proto refused: {e}"),
    }
    let Ok(schemas) = compiled else { return };

    let empty = json!({});
    for args in std::iter::once(&empty).chain(args) {
        let Ok(msg) = schemas.json_to_input(args) else {
            continue;
        };
        let back = schemas
            .arguments_to_json(&msg)
            .unwrap_or_else(|e| panic!("arguments_to_json of an accepted message: {e}"));
        // proto3 cannot tell an empty list from an absent one, and a required member is
        // written in its empty form, so the messages may differ in presence only: the
        // JSON is the fixed point to compare.
        let again = schemas.json_to_input(&back).unwrap_or_else(|e| {
            panic!("arguments_to_json produced {back}, which json_to_input refuses: {e}")
        });
        let back_again = schemas
            .arguments_to_json(&again)
            .unwrap_or_else(|e| panic!("arguments_to_json of {back}: {e}"));
        assert_eq!(
            back, back_again,
            "JSON → message → JSON is not a fixed point"
        );
    }
});
