//! proto-mcp through the stdio driver, in process (testkit's stdio wire): the first byte picks the protocol, `Any`
//! arguments are unpacked with the tool's schema, structured results come back packed.

use std::time::Duration;

use bytes::BytesMut;
use futures::StreamExt;
use mcpwire_testkit::serve::{self, serve};
use mcpwire_wire::Limits;
use mcpwire_wire::proto_mcp::ProtoMcpCodec;
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::codec::{Encoder, FramedRead};

fn frames(msgs: &[McpMessage]) -> Vec<u8> {
    let mut buf = BytesMut::new();
    let mut c = ProtoMcpCodec::new(&Limits::default());
    for m in msgs {
        c.encode(m, &mut buf).unwrap();
    }
    buf.to_vec()
}

#[tokio::test(flavor = "current_thread")]
async fn proto_frames_on_stdio_reach_the_tools() {
    // testkit's stdio listener keeps the tool schemas, as `serve_stdio` does.
    let mut served = serve(mcpwire_example_everything::server(), serve::stdio()).await;
    let (cr, mut cw) = tokio::io::split(served.take_pipe());
    let mut replies = FramedRead::new(cr, ProtoMcpCodec::new(&Limits::default()));
    let mut next = async || {
        let item = tokio::time::timeout(Duration::from_secs(10), replies.next()).await;
        item.unwrap().unwrap().unwrap().unwrap()
    };

    let init = McpMessage::new(
        1,
        Payload::InitializeRequest(pb::InitializeRequest {
            protocol_version: "1.0.0".into(),
            ..Default::default()
        }),
    );
    let list = McpMessage::new(
        2,
        Payload::ListToolsRequest(pb::ListToolsRequest {
            include_schemas: true,
            ..Default::default()
        }),
    );
    cw.write_all(&frames(&[init, list])).await.unwrap();
    assert!(matches!(
        next().await.payload,
        Some(Payload::InitializeResponse(_))
    ));
    let Some(Payload::ListToolsResponse(l)) = next().await.payload else {
        panic!("no tool list")
    };
    let add = l.tools.iter().find(|t| t.name == "add").unwrap();
    let Some(pb::tool::SchemaSource::InlineSchema(fds)) = &add.schema_source else {
        panic!("no inline schema")
    };
    // Inline schemas keep their options (`buf.validate` rules): prost's own
    // `FileDescriptorSet` would drop them, so a re-encode through it is shorter.
    let keeps_options = l.tools.iter().any(|t| match &t.schema_source {
        Some(pb::tool::SchemaSource::InlineSchema(f)) => {
            let lossy = prost_types::FileDescriptorSet::decode(f.as_bytes()).unwrap();
            f.file_names().iter().any(|n| n.contains("buf/validate"))
                && lossy.encode_to_vec().len() < f.as_bytes().len()
        }
        _ => false,
    });
    assert!(
        keeps_options,
        "no inline schema carried its buf.validate options"
    );
    let mut pool = DescriptorPool::global();
    pool.decode_file_descriptor_set(fds.as_bytes()).unwrap();
    let input = pool
        .get_message_by_name(&add.metadata["input_type"])
        .unwrap();
    let output = pool
        .get_message_by_name(&add.metadata["output_type"])
        .unwrap();
    let args =
        DynamicMessage::deserialize(input, &serde_json::json!({"a": 2.0, "b": 0.5})).unwrap();
    let call = McpMessage::new(
        3,
        Payload::CallToolRequest(pb::CallToolRequest {
            name: "add".into(),
            arguments: Some(prost_types::Any {
                type_url: format!("type.googleapis.com/{}", add.metadata["input_type"]),
                value: args.encode_to_vec(),
            }),
            metadata: Default::default(),
        }),
    );
    cw.write_all(&frames(&[call])).await.unwrap();
    let reply = next().await;
    assert_eq!(reply.id, 3);
    let Some(Payload::CallToolResponse(pb::CallToolResponse {
        result: Some(pb::call_tool_response::Result::Success(r)),
        ..
    })) = reply.payload
    else {
        panic!("call failed: {reply:?}")
    };
    let Some(pb::tool_content::Content::Data(any)) = &r.content[0].content else {
        panic!("no structured data")
    };
    let sum = DynamicMessage::decode(output, any.value.as_slice()).unwrap();
    assert_eq!(
        serde_json::to_value(&sum).unwrap(),
        serde_json::json!({"sum": 2.5})
    );
    cw.shutdown().await.unwrap();
    served.ended().await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn json_lines_still_work_on_a_proto_enabled_driver() {
    let mut served = serve(mcpwire_example_everything::server(), serve::stdio()).await;
    let (mut cr, mut cw) = tokio::io::split(served.take_pipe());
    cw.write_all(b" {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n")
        .await
        .unwrap();
    cw.shutdown().await.unwrap();
    let mut out = String::new();
    cr.read_to_string(&mut out).await.unwrap();
    assert_eq!(out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
    served.ended().await.unwrap();
}
