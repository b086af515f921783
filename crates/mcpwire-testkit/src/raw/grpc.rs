//! The gRPC wire's client: a unary call of `buf.mcp.v1.MCPService/{rpc}` over HTTP/2
//! (hyper's client; TLS with ALPN `h2` too), the length-prefixed message written by hand,
//! the `grpc-status` and `grpc-status-details-bin` (an encoded `ErrorResponse`) read from
//! the trailers. [`arguments`] and [`structured`] build and read a tool's messages from the
//! inline schema `ListTools` attaches (`include_schemas`).

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use mcpwire_wire::proto_mcp::pb;
use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};
use serde_json::Value;

use super::{RECV_WITHIN, connect};

/// A unary call's failure: the gRPC status code and the `ErrorResponse` in its details.
#[derive(Debug, Clone)]
pub struct GrpcError {
    /// The `grpc-status`.
    pub status: i32,
    /// The decoded `grpc-status-details-bin`, when there is one.
    pub details: Option<pb::ErrorResponse>,
}

/// Calls `buf.mcp.v1.MCPService/{rpc}` at `addr` with `request`; the decoded answer or the
/// gRPC error.
pub async fn call<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
) -> Result<R, GrpcError> {
    call_over(addr, rpc, request, &[], None).await
}

/// [`call`] with request `metadata` (e.g. `authorization`, `grpc-timeout`).
pub async fn call_with<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
) -> Result<R, GrpcError> {
    call_over(addr, rpc, request, metadata, None).await
}

/// [`call_with`], over TLS with `tls` when given (to `localhost` at `addr`'s port; ALPN
/// `h2`).
pub async fn call_over<R: prost::Message + Default>(
    addr: &str,
    rpc: &str,
    request: &impl prost::Message,
    metadata: &[(&str, &str)],
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<R, GrpcError> {
    let addr = addr.split_once("://").map_or(addr, |(_, a)| a);
    let scheme = if tls.is_some() { "https" } else { "http" };
    let stream = connect(addr, tls.clone()).await;
    let io = hyper_util::rt::TokioIo::new(stream);
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
            .await
            .expect("an HTTP/2 handshake");
    tokio::spawn(conn);
    let msg = request.encode_to_vec();
    let mut body = Vec::with_capacity(5 + msg.len());
    body.push(0);
    body.extend_from_slice(&u32::try_from(msg.len()).expect("length").to_be_bytes());
    body.extend_from_slice(&msg);
    let mut req = hyper::Request::post(format!("{scheme}://{addr}/buf.mcp.v1.MCPService/{rpc}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in metadata {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::from(body))).expect("a request");
    let exchange = async {
        let resp = send.send_request(req).await.expect("a response");
        let headers = resp.headers().clone();
        let collected = resp.into_body().collect().await.expect("a body");
        let trailers = collected.trailers().cloned().unwrap_or_default();
        (headers, trailers, collected.to_bytes())
    };
    let (headers, trailers, data) = tokio::time::timeout(RECV_WITHIN, exchange)
        .await
        .unwrap_or_else(|_| panic!("no gRPC answer within {RECV_WITHIN:?}"));
    let field = |name: &str| {
        trailers
            .get(name)
            .or_else(|| headers.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let status: i32 = field("grpc-status")
        .and_then(|s| s.parse().ok())
        .expect("a grpc-status");
    if status != 0 {
        let details = field("grpc-status-details-bin").map(|b64| {
            let raw = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(b64.trim_end_matches('='))
                .expect("base64 details");
            pb::ErrorResponse::decode(&raw[..]).expect("ErrorResponse details")
        });
        return Err(GrpcError { status, details });
    }
    assert!(data.len() >= 5, "a length-prefixed message");
    Ok(R::decode(&data[5..]).expect("the answer message"))
}

/// The descriptors of `tool`'s inline schema and the message named by its metadata `key`
/// (`input_type`, `output_type`).
fn message(tool: &pb::Tool, key: &str) -> Option<MessageDescriptor> {
    let Some(pb::tool::SchemaSource::InlineSchema(set)) = &tool.schema_source else {
        panic!(
            "tool {} has no inline schema (list with include_schemas)",
            tool.name
        )
    };
    // The global pool holds the well-known types the set imports (`descriptor.proto`).
    let mut pool = DescriptorPool::global();
    pool.decode_file_descriptor_set(set.as_bytes())
        .expect("a descriptor set");
    let name = tool.metadata.get(key)?;
    Some(
        pool.get_message_by_name(name)
            .unwrap_or_else(|| panic!("{name} is not in {}'s schema", tool.name)),
    )
}

/// `args` as `tool`'s input message, packed (the `arguments` of a `CallToolRequest`).
pub fn arguments(tool: &pb::Tool, args: &Value) -> prost_types::Any {
    let input = message(tool, "input_type").expect("an input_type");
    let msg = DynamicMessage::deserialize(input.clone(), args)
        .unwrap_or_else(|e| panic!("{args} as {}: {e}", input.full_name()));
    prost_types::Any {
        type_url: format!("type.googleapis.com/{}", input.full_name()),
        value: msg.encode_to_vec(),
    }
}

/// A structured result packed as `tool`'s output message, as JSON (`None` when the tool
/// declares no output message).
pub fn structured(tool: &pb::Tool, data: &prost_types::Any) -> Option<Value> {
    let output = message(tool, "output_type")?;
    let msg = DynamicMessage::decode(output, data.value.as_slice()).expect("the output message");
    Some(serde_json::to_value(&msg).expect("JSON"))
}
