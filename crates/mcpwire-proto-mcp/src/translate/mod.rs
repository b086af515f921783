//! The per-connection translator: `MCPMessage` requests in, JSON-RPC requests to the session;
//! the session's JSON-RPC answers in, `MCPMessage` responses out.
//!
//! Every proto-mcp message is a request (v1 has no notifications), so each one gets exactly
//! one answer: the session's (translated by the kind of request it answers, kept in
//! `pending`), or an immediate one when the request cannot reach the session (no payload, a
//! response sent as a request, a duplicate id, arguments that fail their schema).

use std::collections::HashMap;
use std::sync::Arc;

use mcpwire_model::{
    McpError, Message, Method, Outbound, PROTO_MCP_PREFIX, Request, RequestId, Revision, codes,
    to_raw,
};
use mcpwire_wire::proto_mcp::clamp_code;
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use prost_reflect::DynamicMessage;
use serde_json::{Value, json};

use crate::json::{data_map, json_to_struct};
use crate::tool_schemas::ProtoToolSchemas;

mod results;

/// What to do with an inbound `MCPMessage`.
#[derive(Debug)]
pub enum Inbound {
    /// Hand this JSON-RPC request to the session.
    Forward(Message),
    /// Send this answer now; the session is not involved.
    Reply(McpMessage),
}

#[derive(Debug)]
enum Kind {
    Initialize,
    ListTools {
        bsr_refs: Vec<String>,
        include_schemas: bool,
    },
    CallTool {
        tool: String,
    },
    ListResources,
    ReadResource,
}

#[derive(Debug)]
struct Pending {
    id: u64,
    kind: Kind,
}

/// One connection's translation state: the requests the session has not answered yet.
#[derive(Debug)]
pub struct Translator {
    catalog: Arc<ProtoToolSchemas>,
    pending: HashMap<RequestId, Pending>,
}

impl Translator {
    /// A translator resolving tool schemas in `catalog`.
    pub fn new(catalog: Arc<ProtoToolSchemas>) -> Translator {
        Translator {
            catalog,
            pending: HashMap::new(),
        }
    }

    /// Requests forwarded and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.pending.len()
    }

    /// Translates one decoded `MCPMessage`.
    pub fn inbound(&mut self, msg: McpMessage) -> Inbound {
        let id = msg.id;
        let Some(payload) = msg.payload else {
            return Inbound::Reply(McpMessage::error(
                id,
                codes::INVALID_REQUEST,
                "Invalid Request: MCPMessage without a payload",
            ));
        };
        let rid = request_id(id);
        if self.pending.contains_key(&rid) {
            let e = McpError::InvalidRequest("a request with this id is already in flight".into());
            let call = matches!(payload, Payload::CallToolRequest(_));
            return Inbound::Reply(error_reply(id, call, &e));
        }
        let (kind, method, params) = match payload {
            Payload::InitializeRequest(r) => {
                let mut p = json!({
                    "protocolVersion": format!("{PROTO_MCP_PREFIX}{}", r.protocol_version),
                    "capabilities": {},
                });
                if let Some(name) = r.metadata.get("name") {
                    let version = r.metadata.get("version").cloned().unwrap_or_default();
                    p["clientInfo"] = json!({ "name": name, "version": version });
                }
                (Kind::Initialize, Method::Initialize, p)
            }
            Payload::ListToolsRequest(r) => (
                Kind::ListTools {
                    bsr_refs: r.bsr_refs,
                    include_schemas: r.include_schemas,
                },
                Method::ToolsList,
                cursor_params(r.cursor),
            ),
            Payload::CallToolRequest(r) => {
                let arguments = match self.arguments(&r) {
                    Ok(a) => a,
                    Err(e) => return Inbound::Reply(error_reply(id, true, &e)),
                };
                let p = json!({ "name": r.name, "arguments": arguments });
                (Kind::CallTool { tool: r.name }, Method::ToolsCall, p)
            }
            Payload::ListResourcesRequest(r) => (
                Kind::ListResources,
                Method::ResourcesList,
                cursor_params(r.cursor),
            ),
            Payload::ReadResourceRequest(r) => (
                Kind::ReadResource,
                Method::ResourcesRead,
                json!({ "uri": r.uri }),
            ),
            _ => {
                return Inbound::Reply(McpMessage::error(
                    id,
                    codes::INVALID_REQUEST,
                    "Invalid Request: a proto-mcp client sends requests only",
                ));
            }
        };
        self.pending.insert(rid.clone(), Pending { id, kind });
        Inbound::Forward(Message::Request(Request {
            id: rid,
            method,
            params: Some(to_raw(&params)),
        }))
    }

    /// Translates one message the session sends; `None` for what proto-mcp cannot carry
    /// (notifications, server→client requests) and answers nobody is waiting for.
    pub fn outbound(&mut self, msg: &Outbound) -> Option<McpMessage> {
        match msg {
            Outbound::Response { id, result } => {
                let Some(p) = self.pending.remove(id) else {
                    tracing::debug!(%id, "a response to no proto-mcp request");
                    return None;
                };
                let v: Value = serde_json::from_str(result.get()).unwrap_or(Value::Null);
                Some(McpMessage::new(p.id, self.result_payload(p.kind, &v)))
            }
            Outbound::Error { id, error } => {
                let pending = id.as_ref().and_then(|id| self.pending.remove(id));
                let (wire_id, call) = match (&pending, id) {
                    (Some(p), _) => (p.id, matches!(p.kind, Kind::CallTool { .. })),
                    (None, Some(RequestId::Int(n))) => (u64::try_from(*n).unwrap_or(0), false),
                    (None, Some(RequestId::Str(s))) => (s.parse().unwrap_or(0), false),
                    (None, None) => (0, false),
                };
                let data = error
                    .data
                    .as_ref()
                    .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
                    .unwrap_or(Value::Null);
                Some(if call {
                    call_error(wire_id, error.code, &error.message, &data)
                } else {
                    McpMessage::new(
                        wire_id,
                        Payload::ErrorResponse(pb::ErrorResponse {
                            code: clamp_code(error.code),
                            message: error.message.clone(),
                            data: json_to_struct(&data),
                        }),
                    )
                })
            }
            Outbound::Notification { .. } | Outbound::Request { .. } => None,
        }
    }

    fn result_payload(&self, kind: Kind, v: &Value) -> Payload {
        match kind {
            Kind::Initialize => {
                Payload::InitializeResponse(results::initialize(v, self.catalog.has_registry()))
            }
            Kind::ListTools {
                bsr_refs,
                include_schemas,
            } => Payload::ListToolsResponse(results::list_tools(
                v,
                &self.catalog,
                &bsr_refs,
                include_schemas,
            )),
            Kind::CallTool { tool } => {
                Payload::CallToolResponse(results::call_tool(v, self.catalog.get(&tool).as_deref()))
            }
            Kind::ListResources => Payload::ListResourcesResponse(results::list_resources(v)),
            Kind::ReadResource => Payload::ReadResourceResponse(results::read_resource(v)),
        }
    }

    /// The JSON arguments of a call: its `Any` unpacked with the tool's input message.
    fn arguments(&self, r: &pb::CallToolRequest) -> Result<Value, McpError> {
        let Some(entry) = self.catalog.get(&r.name) else {
            // Unknown here: the router answers (unknown tool), with no arguments to check.
            return Ok(json!({}));
        };
        let proto = entry.proto.as_ref().map_err(|e| {
            McpError::SchemaUnresolved(format!("tool {} has no protobuf schema: {e}", r.name))
        })?;
        let input = proto.input();
        let msg = match &r.arguments {
            None => DynamicMessage::new(input.clone()),
            Some(any) => {
                let full = any.type_url.rsplit('/').next().unwrap_or_default();
                if full != input.full_name() {
                    return Err(match self.catalog.tool_of_input(full) {
                        Some(other) => McpError::InvalidToolParams {
                            tool: r.name.clone(),
                            message: format!(
                                "arguments are {full} (the input of tool {other}), not {}",
                                input.full_name()
                            ),
                        },
                        None => McpError::SchemaUnresolved(format!(
                            "unknown argument type {:?}; tool {} takes {}",
                            any.type_url,
                            r.name,
                            input.full_name()
                        )),
                    });
                }
                DynamicMessage::decode(input.clone(), any.value.as_slice()).map_err(|e| {
                    McpError::InvalidToolParams {
                        tool: r.name.clone(),
                        message: format!("arguments are not a valid {full}: {e}"),
                    }
                })?
            }
        };
        proto
            .arguments_to_json(&msg)
            .map_err(|message| McpError::InvalidToolParams {
                tool: r.name.clone(),
                message,
            })
    }
}

/// The JSON-RPC id standing for proto-mcp id `id`.
fn request_id(id: u64) -> RequestId {
    match i64::try_from(id) {
        Ok(n) => RequestId::Int(n),
        Err(_) => RequestId::Str(id.to_string().into()),
    }
}

fn cursor_params(cursor: String) -> Value {
    if cursor.is_empty() {
        json!({})
    } else {
        json!({ "cursor": cursor })
    }
}

/// An immediate error answer: `CallToolResponse.error` for calls, `ErrorResponse` otherwise.
fn error_reply(id: u64, call: bool, e: &McpError) -> McpMessage {
    let obj = e.to_wire(Revision::ProtoMcp1);
    let data = obj
        .data
        .as_ref()
        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
        .unwrap_or(Value::Null);
    if call {
        call_error(id, obj.code, &obj.message, &data)
    } else {
        McpMessage::new(
            id,
            Payload::ErrorResponse(pb::ErrorResponse {
                code: clamp_code(obj.code),
                message: obj.message,
                data: json_to_struct(&data),
            }),
        )
    }
}

fn call_error(id: u64, code: i64, message: &str, data: &Value) -> McpMessage {
    McpMessage::new(
        id,
        Payload::CallToolResponse(pb::CallToolResponse {
            result: Some(pb::call_tool_response::Result::Error(pb::Error {
                code: clamp_code(code),
                message: message.to_owned(),
                data: data_map(data),
            })),
            metadata: Default::default(),
        }),
    )
}

#[cfg(test)]
mod tests;
