//! `RawFileSet` inside a prost message keeps extension options that `prost_types` drops.

use mcpwire_schema::{RawFileSet, tool_schemas};
use prost::Message as _;
use prost_reflect::Value;
use serde_json::json;

/// The shape of proto-mcp's `Tool` (name = 1, inline_schema = 4), with the raw set.
#[derive(Clone, PartialEq, prost::Message)]
struct Tool {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "4")]
    inline_schema: Option<RawFileSet>,
}

/// The same with prost's own type.
#[derive(Clone, PartialEq, prost::Message)]
struct LossyTool {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "4")]
    inline_schema: Option<prost_types::FileDescriptorSet>,
}

fn json_value_option_survives(set: &[u8]) -> bool {
    let mut pool = prost_reflect::DescriptorPool::global();
    pool.decode_file_descriptor_set(set).expect("set decodes");
    let Some(ext) = pool.get_extension_by_name("mcpwire.schema.v1.json_value") else {
        return false;
    };
    let e = pool
        .get_enum_by_name("mcpwire.tools.t.Input.Mode")
        .expect("enum");
    let v = e.get_value(1).expect("value");
    let opts = v.options();
    opts.has_extension(&ext) && *opts.get_extension(&ext) == Value::String("Fast-Lane".into())
}

#[test]
fn raw_file_set_round_trips_with_options() {
    let schema = json!({"type": "object", "properties": {"mode": {"enum": ["Fast-Lane", "slow"]}}});
    let s = tool_schemas("t", &schema, None).unwrap();
    assert!(json_value_option_survives(s.file_set_bytes()));

    let tool = Tool {
        name: "t".into(),
        inline_schema: Some(s.raw_file_set()),
    };
    let bytes = tool.encode_to_vec();
    let back = Tool::decode(bytes.as_slice()).unwrap();
    assert_eq!(back, tool);
    let raw = back.inline_schema.unwrap();
    assert_eq!(raw.as_bytes(), s.file_set_bytes());
    assert!(json_value_option_survives(raw.as_bytes()));
    assert!(format!("{raw:?}").contains("mcpwire/tools/t.proto"));

    // prost_types loses the options on the same bytes
    let lossy = LossyTool::decode(bytes.as_slice()).unwrap();
    let reencoded = lossy.inline_schema.unwrap().encode_to_vec();
    assert!(!json_value_option_survives(&reencoded));
}

#[test]
fn raw_file_set_skips_unknown_fields_and_rejects_truncation() {
    let s = tool_schemas("t", &json!({"type": "object"}), None).unwrap();
    let mut bytes = s.file_set_bytes().to_vec();
    bytes.extend([0x10, 0x01]); // field 2, varint 1: not part of FileDescriptorSet
    let raw = RawFileSet::decode(bytes.as_slice()).unwrap();
    assert_eq!(raw.as_bytes(), s.file_set_bytes());
    let cut = &s.file_set_bytes()[..s.file_set_bytes().len() - 3];
    assert!(RawFileSet::decode(cut).is_err());
}
