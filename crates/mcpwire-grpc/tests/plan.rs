//! The inventory service of the Python tests, compiled by protox, planned as tools.

use mcpwire_grpc::plan::plan;
use mcpwire_grpc::{Shape, pool};
use prost::Message;
use serde_json::json;

fn inventory() -> prost_reflect::DescriptorPool {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/fixtures");
    let set = protox::compile(["inventory.proto"], [dir]).expect("compiles");
    pool::from_file_set(&set.encode_to_vec()).expect("a pool")
}

#[test]
fn unary_and_server_streaming_methods_become_tools() {
    let (tools, skipped) = plan(&inventory(), &[], 100).expect("planned");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Inventory_GetItem",
            "Inventory_AddItem",
            "Inventory_ListItems",
            "Inventory_Slow",
            "Inventory_WhoAmI"
        ]
    );
    let why: Vec<&str> = skipped.iter().map(|s| s.operation.as_str()).collect();
    assert_eq!(
        why,
        [
            "shop.inventory.v1.Inventory/Restock",
            "shop.inventory.v1.Inventory/Chat"
        ]
    );
    assert!(skipped[0].reason.contains("stream of requests"));

    let get = &tools[0];
    assert_eq!(get.shape, Shape::Unary);
    // 64-bit integers: numbers or decimal strings.
    assert_eq!(
        get.input_schema["properties"]["id"]["type"],
        json!(["integer", "string"])
    );
    let item = &get.output_schema["properties"];
    assert_eq!(
        item["category"]["enum"],
        json!(["CATEGORY_UNSPECIFIED", "TOOLS", "TOYS"])
    );
    assert_eq!(item["labels"]["type"], json!("object"));
    assert_eq!(item["added"]["format"], json!("date-time"));
    assert_eq!(
        item["dimensions"]["properties"]["width"]["type"],
        json!("number")
    );

    let list = &tools[2];
    assert_eq!(list.shape, Shape::ServerStreaming);
    assert_eq!(
        list.output_schema["properties"]["messages"]["type"],
        json!("array")
    );
    // Int32Value's schema names no bound, so it is widened too (a string of digits
    // parses as proto3 JSON for any integer).
    assert_eq!(
        list.input_schema["properties"]["limit"]["type"],
        json!(["integer", "string"])
    );
    for t in &tools {
        assert!(
            jsonschema::validator_for(&t.input_schema).is_ok(),
            "{}",
            t.name
        );
        assert!(
            jsonschema::validator_for(&t.output_schema).is_ok(),
            "{}",
            t.name
        );
    }
}

#[test]
fn services_and_limits() {
    let pool = inventory();
    let (tools, _) = plan(&pool, &["no.such.Service".to_owned()], 100).expect("planned");
    assert!(tools.is_empty());
    assert!(plan(&pool, &[], 2).is_err());
    assert!(pool::from_file_set(b"\x0a\x03abc").is_err());
}
