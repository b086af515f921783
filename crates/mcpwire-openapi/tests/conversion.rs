//! The Petstore document and a 3.1 document full of name clashes, converted to tools.

use mcpwire_openapi::{Body, Document, Limits, Location, Output, plan};
use serde_json::json;

fn read(name: &str) -> Document {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let bytes = std::fs::read(&path).expect("the fixture");
    Document::parse(&bytes, &Limits::default()).expect("a document")
}

#[test]
fn petstore_operations_become_tools() {
    let doc = read("petstore.yaml");
    let catalog = plan(&doc, &Limits::default(), &|_| true).expect("planned");
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "updatePet",
            "addPet",
            "findPetsByStatus",
            "findPetsByTags",
            "getPetById",
            "updatePetWithForm",
            "deletePet",
            "getInventory",
            "placeOrder",
            "getOrderById",
            "deleteOrder",
            "createUser",
            "createUsersWithListInput",
            "loginUser",
            "logoutUser",
            "getUserByName",
            "updateUser",
            "deleteUser",
        ]
    );
    // The octet-stream upload is refused, saying why.
    assert_eq!(catalog.skipped.len(), 1);
    assert_eq!(
        catalog.skipped[0].operation,
        "POST /pet/{petId}/uploadImage"
    );
    assert!(
        catalog.skipped[0]
            .reason
            .contains("application/octet-stream")
    );

    let tool = |n: &str| catalog.tools.iter().find(|t| t.name == n).expect("a tool");
    // A required object body is merged: the Pet's fields are the arguments.
    let add = tool("addPet");
    assert_eq!(
        add.op.body,
        Body::Merged(vec![
            "category".into(),
            "id".into(),
            "name".into(),
            "photoUrls".into(),
            "status".into(),
            "tags".into()
        ])
    );
    assert_eq!(add.input_schema["required"], json!(["name", "photoUrls"]));
    assert_eq!(
        add.input_schema["properties"]["category"]["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(
        add.input_schema["properties"]["id"]["examples"],
        json!([10])
    );
    assert_eq!(
        add.output_schema.as_ref().map(|s| &s["type"]),
        Some(&json!("object"))
    );
    assert_eq!(add.op.output, Output::Object);
    // An array answer is wrapped in `result`.
    let by_status = tool("findPetsByStatus");
    assert_eq!(by_status.op.output, Output::Wrapped);
    assert_eq!(
        by_status
            .output_schema
            .as_ref()
            .map(|s| &s["properties"]["result"]["type"]),
        Some(&json!("array"))
    );
    assert_eq!(
        by_status.input_schema["properties"]["status"]["enum"],
        json!(["available", "pending", "sold"])
    );
    assert_eq!(
        by_status.description,
        "Finds Pets by status.\n\nMultiple status values can be provided with comma separated strings."
    );
    // An optional body goes whole under `body`.
    let order = tool("placeOrder");
    assert_eq!(order.op.body, Body::Whole("body".into()));
    assert!(order.input_schema.get("required").is_none());
    // Path and header parameters, the path one required.
    let delete = tool("deletePet");
    assert_eq!(delete.input_schema["required"], json!(["petId"]));
    assert_eq!(delete.op.params[1].location, Location::Header);
    assert_eq!(
        delete.op.params[0].name, "petId",
        "path parameters come first"
    );
    // No 2xx schema: no output schema.
    assert!(tool("logoutUser").output_schema.is_none());
    assert_eq!(tool("loginUser").op.output, Output::Wrapped);
    // Every input schema is closed and compiles.
    for t in &catalog.tools {
        assert_eq!(
            t.input_schema["additionalProperties"],
            json!(false),
            "{}",
            t.name
        );
        assert!(
            jsonschema::validator_for(&t.input_schema).is_ok(),
            "{}",
            t.name
        );
    }
}

#[test]
fn clashes_resolve_deterministically() {
    let doc = read("clashes.json");
    let catalog = plan(&doc, &Limits::default(), &|_| true).expect("planned");
    let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
    // No operationId: method and path.
    assert_eq!(names, ["put_things_id", "patch_things_id", "get_tree"]);
    let patch = &catalog.tools[1];
    let props: Vec<&str> = patch
        .op
        .params
        .iter()
        .map(|p| p.property.as_str())
        .collect();
    assert_eq!(props, ["id", "id_query", "id_header"]);
    // The body's `id` clashes with the path's: the body goes whole, under `body`.
    assert_eq!(patch.op.body, Body::Whole("body".into()));
    assert_eq!(
        patch.op.content_type.as_deref(),
        Some("application/merge-patch+json")
    );
    // 3.1 type arrays pass through; a body without a clash is merged.
    let put = &catalog.tools[0];
    assert_eq!(put.op.body, Body::Merged(vec!["name".into()]));
    assert_eq!(
        put.input_schema["properties"]["name"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(put.input_schema["required"], json!(["id", "name"]));
    // A recursive schema is cut where it recurses.
    let tree = &catalog.tools[2];
    let schema = tree.output_schema.as_ref().expect("an output schema");
    assert_eq!(schema["properties"]["children"]["items"], json!({}));
}

#[test]
fn selection_and_limits() {
    let doc = read("petstore.yaml");
    let only_store = plan(&doc, &Limits::default(), &|op| {
        op.tags.iter().any(|t| t == "store")
    })
    .expect("planned");
    assert_eq!(only_store.tools.len(), 4);
    let by_path = plan(&doc, &Limits::default(), &|op| {
        op.path.starts_with("/user") && op.method == "GET"
    })
    .expect("planned");
    assert_eq!(by_path.tools.len(), 3);
    let small = Limits {
        max_operations: 3,
        ..Limits::default()
    };
    assert!(plan(&doc, &small, &|_| true).is_err());
}
