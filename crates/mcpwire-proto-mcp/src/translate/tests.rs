use std::sync::Arc;

use mcpwire_model::{Message, Outbound, RequestId, to_raw};
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use prost_types::field_descriptor_proto::{Label, Type};
use prost_types::{DescriptorProto, FieldDescriptorProto, FileDescriptorProto, FileDescriptorSet};
use serde_json::{Value, json};

use super::{Inbound, Translator};
use crate::tool_schemas::{ProtoToolSchemas, SchemaConverter, ToolProto};

/// A fixture converter: every tool takes `{a: int64, b: int64}` and returns `{sum: int64}`,
/// as messages `t.<tool>.Input` / `t.<tool>.Output` (the real conversion is mcpwire-schema's).
struct Fixed;

#[derive(Debug)]
struct FixedProto {
    fds: FileDescriptorSet,
    input: MessageDescriptor,
    output: MessageDescriptor,
}

fn field(name: &str, n: i32) -> FieldDescriptorProto {
    FieldDescriptorProto {
        name: Some(name.into()),
        number: Some(n),
        label: Some(Label::Optional as i32),
        r#type: Some(Type::Int64 as i32),
        json_name: Some(name.into()),
        proto3_optional: None,
        ..Default::default()
    }
}

impl SchemaConverter for Fixed {
    fn convert(
        &self,
        name: &str,
        _input: &Value,
        _output: Option<&Value>,
    ) -> Result<Arc<dyn ToolProto>, String> {
        if name == "broken" {
            return Err("unsupported schema".into());
        }
        let msg = |n: &str, fields: Vec<FieldDescriptorProto>| DescriptorProto {
            name: Some(n.into()),
            field: fields,
            ..Default::default()
        };
        let file = FileDescriptorProto {
            name: Some(format!("t/{name}.proto")),
            package: Some(format!("t.{name}")),
            syntax: Some("proto3".into()),
            message_type: vec![
                msg("Input", vec![field("a", 1), field("b", 2)]),
                msg("Output", vec![field("sum", 1)]),
            ],
            ..Default::default()
        };
        let fds = FileDescriptorSet { file: vec![file] };
        let pool =
            DescriptorPool::from_file_descriptor_set(fds.clone()).map_err(|e| e.to_string())?;
        let get = |m: &str| {
            pool.get_message_by_name(&format!("t.{name}.{m}"))
                .ok_or("missing")
        };
        Ok(Arc::new(FixedProto {
            input: get("Input")?,
            output: get("Output")?,
            fds,
        }))
    }
}

/// The fixture's registry: `buf.build/acme/tools/t.reg.Input:v1` is the only reference.
struct WithRegistry;

impl SchemaConverter for WithRegistry {
    fn convert(
        &self,
        name: &str,
        i: &Value,
        o: Option<&Value>,
    ) -> Result<Arc<dyn ToolProto>, String> {
        Fixed.convert(name, i, o)
    }
    fn resolve(&self, reference: &str) -> Result<Arc<dyn ToolProto>, String> {
        match reference {
            "buf.build/acme/tools/t.reg.Input:v1" => Fixed.convert("reg", &json!({}), None),
            other => Err(format!("{other} is not in the registry")),
        }
    }
    fn has_registry(&self) -> bool {
        true
    }
}

impl ToolProto for FixedProto {
    fn inline_schema(&self) -> mcpwire_wire::proto_mcp::RawFileSet {
        mcpwire_wire::proto_mcp::RawFileSet::new(prost::Message::encode_to_vec(&self.fds))
    }
    fn input(&self) -> &MessageDescriptor {
        &self.input
    }
    fn output(&self) -> Option<&MessageDescriptor> {
        Some(&self.output)
    }
    fn arguments_to_json(&self, msg: &DynamicMessage) -> Result<Value, String> {
        let opts = prost_reflect::SerializeOptions::new().stringify_64_bit_integers(false);
        msg.serialize_with_options(serde_json::value::Serializer, &opts)
            .map_err(|e| e.to_string())
    }
    fn structured_to_message(&self, value: &Value) -> Result<DynamicMessage, String> {
        DynamicMessage::deserialize(self.output.clone(), value).map_err(|e| e.to_string())
    }
}

fn translator() -> (Translator, Arc<ProtoToolSchemas>) {
    let catalog = Arc::new(ProtoToolSchemas::new(Arc::new(Fixed)));
    catalog.replace(&[
        json!({"name": "add", "inputSchema": {"type": "object"}}),
        json!({"name": "mul", "inputSchema": {"type": "object"}}),
        json!({"name": "broken", "inputSchema": {"type": "object"}}),
    ]);
    (Translator::new(catalog.clone()), catalog)
}

fn forward(t: &mut Translator, msg: McpMessage) -> (RequestId, Value) {
    match t.inbound(msg) {
        Inbound::Forward(Message::Request(r)) => {
            let p = serde_json::from_str(r.params.as_ref().unwrap().get()).unwrap();
            (r.id, p)
        }
        other => panic!("not forwarded: {other:?}"),
    }
}

fn reply(t: &mut Translator, msg: McpMessage) -> McpMessage {
    match t.inbound(msg) {
        Inbound::Reply(m) => m,
        other => panic!("not answered: {other:?}"),
    }
}

fn call(id: u64, tool: &str, type_url: &str, value: Vec<u8>) -> McpMessage {
    McpMessage::new(
        id,
        Payload::CallToolRequest(pb::CallToolRequest {
            name: tool.into(),
            arguments: Some(prost_types::Any {
                type_url: type_url.into(),
                value,
            }),
            metadata: Default::default(),
        }),
    )
}

fn args(tool: &str, a: i64, b: i64) -> Vec<u8> {
    let p = Fixed.convert(tool, &json!({}), None).unwrap();
    let v = json!({"a": a, "b": b});
    DynamicMessage::deserialize(p.input().clone(), &v)
        .unwrap()
        .encode_to_vec()
}

fn call_error_code(m: &McpMessage) -> i32 {
    match &m.payload {
        Some(Payload::CallToolResponse(pb::CallToolResponse {
            result: Some(pb::call_tool_response::Result::Error(e)),
            ..
        })) => e.code,
        other => panic!("not a call error: {other:?}"),
    }
}

#[test]
fn initialize_carries_the_version_and_client_name() {
    let (mut t, _) = translator();
    let msg = McpMessage::new(
        1,
        Payload::InitializeRequest(pb::InitializeRequest {
            protocol_version: "1.2.0".into(),
            capabilities: None,
            metadata: [("name".to_owned(), "py".to_owned())].into(),
        }),
    );
    let (id, p) = forward(&mut t, msg);
    assert_eq!(p["protocolVersion"], "proto-mcp/1.2.0");
    assert_eq!(p["clientInfo"]["name"], "py");
    let result = json!({"protocolVersion": "1.0.0", "capabilities": {"tools": {"listChanged": true}},
        "serverInfo": {"name": "s", "version": "9"}});
    let out = t
        .outbound(&Outbound::Response {
            id,
            result: to_raw(&result),
        })
        .unwrap();
    assert_eq!(out.id, 1);
    let Some(Payload::InitializeResponse(r)) = out.payload else {
        panic!()
    };
    assert_eq!(r.protocol_version, "1.0.0");
    assert_eq!(r.metadata["name"], "s");
    let caps = r.capabilities.unwrap();
    assert_eq!(
        caps.tools,
        Some(pb::ToolCapabilities {
            supports_list_changed: false
        })
    );
}

#[test]
fn call_arguments_are_unpacked_to_json_and_results_packed() {
    let (mut t, _) = translator();
    let (id, p) = forward(
        &mut t,
        call(
            7,
            "add",
            "type.googleapis.com/t.add.Input",
            args("add", 2, 3),
        ),
    );
    assert_eq!(p, json!({"name": "add", "arguments": {"a": 2, "b": 3}}));
    let result = json!({"content": [{"type": "text", "text": "{\"sum\":5}"}], "structuredContent": {"sum": 5}});
    let out = t
        .outbound(&Outbound::Response {
            id,
            result: to_raw(&result),
        })
        .unwrap();
    assert_eq!(out.id, 7);
    let Some(Payload::CallToolResponse(pb::CallToolResponse {
        result: Some(pb::call_tool_response::Result::Success(r)),
        ..
    })) = out.payload
    else {
        panic!()
    };
    assert_eq!(
        r.content.len(),
        1,
        "the text twin of structured content is dropped"
    );
    let Some(pb::tool_content::Content::Data(any)) = &r.content[0].content else {
        panic!()
    };
    assert_eq!(any.type_url, "type.googleapis.com/t.add.Output");
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn wrong_or_unknown_argument_types_are_33001_and_33000() {
    let (mut t, _) = translator();
    let m = reply(
        &mut t,
        call(
            1,
            "add",
            "type.googleapis.com/t.mul.Input",
            args("mul", 1, 1),
        ),
    );
    assert_eq!(call_error_code(&m), -33001);
    let m = reply(&mut t, call(2, "add", "type.googleapis.com/x.Nope", vec![]));
    assert_eq!(call_error_code(&m), -33000);
    let m = reply(
        &mut t,
        call(
            3,
            "add",
            "type.googleapis.com/t.add.Input",
            vec![0xff, 0xff],
        ),
    );
    assert_eq!(call_error_code(&m), -33001);
    let m = reply(
        &mut t,
        call(4, "broken", "type.googleapis.com/t.broken.Input", vec![]),
    );
    assert_eq!(call_error_code(&m), -33000);
    assert_eq!(m.id, 4);
    assert_eq!(t.in_flight(), 0);
}

#[test]
fn unknown_tools_reach_the_router_and_errors_come_back_as_call_errors() {
    let (mut t, _) = translator();
    let (id, p) = forward(&mut t, call(9, "nope", "x/y", vec![]));
    assert_eq!(p["name"], "nope");
    let err = mcpwire_model::ErrorObject::new(-32602, "Unknown tool: nope");
    let out = t
        .outbound(&Outbound::Error {
            id: Some(id),
            error: err,
        })
        .unwrap();
    assert_eq!((out.id, call_error_code(&out)), (9, -32602));
}

#[test]
fn ids_are_echoed_pipelined_and_duplicates_refused() {
    let (mut t, _) = translator();
    let list = |id| {
        McpMessage::new(
            id,
            Payload::ListResourcesRequest(pb::ListResourcesRequest::default()),
        )
    };
    let (a, _) = forward(&mut t, list(u64::MAX));
    let (b, _) = forward(&mut t, list(5));
    let dup = reply(&mut t, list(5));
    assert!(matches!(dup.payload, Some(Payload::ErrorResponse(ref e)) if e.code == -32600));
    let empty = to_raw(&json!({"resources": [{"uri": "u://x", "name": "x"}]}));
    let out_b = t
        .outbound(&Outbound::Response {
            id: b,
            result: empty.clone(),
        })
        .unwrap();
    let out_a = t
        .outbound(&Outbound::Response {
            id: a,
            result: empty,
        })
        .unwrap();
    assert_eq!((out_b.id, out_a.id), (5, u64::MAX));
}

#[test]
fn listing_inlines_schemas_and_filters_by_reference() {
    let mut t = Translator::new(Arc::new(ProtoToolSchemas::new(Arc::new(WithRegistry))));
    let req = |refs: Vec<String>| {
        McpMessage::new(
            3,
            Payload::ListToolsRequest(pb::ListToolsRequest {
                bsr_refs: refs,
                include_schemas: true,
                cursor: String::new(),
            }),
        )
    };
    let result = to_raw(&json!({"tools": [
        {"name": "add", "description": "adds", "inputSchema": {"type": "object"},
         "_meta": {"io.mcpwire/bsrRef": "buf.build/acme/tools/t.reg.Input:v1"}},
        {"name": "broken", "inputSchema": {"type": "object"}}
    ], "nextCursor": "c2"}));
    let (id, _) = forward(&mut t, req(vec![]));
    let out = t
        .outbound(&Outbound::Response {
            id,
            result: result.clone(),
        })
        .unwrap();
    let Some(Payload::ListToolsResponse(r)) = out.payload else {
        panic!()
    };
    assert_eq!(r.next_cursor, "c2");
    assert_eq!(r.tools.len(), 2);
    assert_eq!(r.tools[0].metadata["input_type"], "t.reg.Input");
    assert!(matches!(
        r.tools[0].schema_source,
        Some(pb::tool::SchemaSource::InlineSchema(_))
    ));
    assert!(r.tools[1].metadata.contains_key("schema_error"));
    let (id, _) = forward(
        &mut t,
        req(vec!["buf.build/acme/tools/t.reg.Input:v1".into()]),
    );
    let out = t.outbound(&Outbound::Response { id, result }).unwrap();
    let Some(Payload::ListToolsResponse(r)) = out.payload else {
        panic!()
    };
    assert_eq!(r.tools.len(), 1);
}

#[test]
fn payloadless_and_response_messages_are_refused() {
    let (mut t, _) = translator();
    let m = reply(
        &mut t,
        McpMessage {
            id: 4,
            payload: None,
        },
    );
    assert!(matches!(m.payload, Some(Payload::ErrorResponse(ref e)) if e.code == -32600));
    let m = reply(
        &mut t,
        McpMessage::new(
            5,
            Payload::ListToolsResponse(pb::ListToolsResponse::default()),
        ),
    );
    assert_eq!(m.id, 5);
    assert!(
        t.outbound(&Outbound::Notification {
            method: "x".into(),
            params: None
        })
        .is_none()
    );
}

#[test]
fn registry_references_pick_the_message_and_unresolved_ones_are_33000() {
    let catalog = Arc::new(ProtoToolSchemas::new(Arc::new(WithRegistry)));
    let tools = [
        json!({"name": "search", "inputSchema": {"type": "object"},
               "_meta": {"io.mcpwire/bsrRef": "buf.build/acme/tools/t.reg.Input:v1"}}),
        json!({"name": "lost", "inputSchema": {"type": "object"},
               "_meta": {"io.mcpwire/bsrRef": "buf.build/acme/tools/t.gone.Input:v1"}}),
    ];
    catalog.replace(&tools);
    assert!(catalog.has_registry());
    let mut t = Translator::new(catalog);
    let (_, p) = forward(
        &mut t,
        call(
            1,
            "search",
            "type.googleapis.com/t.reg.Input",
            args("reg", 4, 5),
        ),
    );
    assert_eq!(p["arguments"], json!({"a": 4, "b": 5}));
    let m = reply(
        &mut t,
        call(2, "lost", "type.googleapis.com/t.gone.Input", vec![]),
    );
    assert_eq!(call_error_code(&m), -33000);
    let (id, _) = forward(
        &mut t,
        McpMessage::new(
            3,
            Payload::ListToolsRequest(pb::ListToolsRequest::default()),
        ),
    );
    let result = to_raw(&json!({ "tools": tools }));
    let out = t.outbound(&Outbound::Response { id, result }).unwrap();
    let Some(Payload::ListToolsResponse(r)) = out.payload else {
        panic!()
    };
    assert_eq!(
        r.tools[0].schema_source,
        Some(pb::tool::SchemaSource::BsrRef(
            "buf.build/acme/tools/t.reg.Input:v1".into()
        ))
    );
    assert_eq!(r.tools[0].metadata["input_type"], "t.reg.Input");
    assert!(r.tools[1].metadata["schema_error"].contains("unresolved"));
}
