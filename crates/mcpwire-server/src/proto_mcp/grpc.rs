//! The gRPC `MCPService` (tonic): unary RPCs, one session per RPC.
//!
//! gRPC requests carry no id and no connection identity survives load balancers, and
//! proto-mcp keeps no per-client state, so each RPC runs on its own session:
//! `Initialize` on a fresh one (the same negotiation, −33002 included, as stdio),
//! every other RPC on one created initialized in proto-mcp 1. Failures — request errors
//! and `CallToolResponse.error` alike — are gRPC statuses whose details hold the encoded
//! `ErrorResponse` (the MCP code). A cancelled RPC drops its exchange and so its call.
//!
//! When the service authenticates, every RPC needs `authorization: Bearer …` metadata the
//! service's authenticator accepts; otherwise it ends `UNAUTHENTICATED` (a missing scope:
//! `PERMISSION_DENIED`) with the encoded `ErrorResponse` in its details, before any session.
//!
//! A client deadline (`grpc-timeout`) bounds the exchange: shortly before it passes (a tenth
//! of it, at most 100 ms, so the answer reaches a busy client in time) the call is dropped and the
//! RPC ends DEADLINE_EXCEEDED with −33003 in its details. tonic's own deadline layer would
//! answer CANCELLED without an MCP code.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::{GrpcCode, McpError, Message, Outbound, Revision};
use mcpwire_proto_mcp::{Inbound, Translator};
use mcpwire_router::Identity;
use mcpwire_session::ServerSession;
use mcpwire_wire::proto_mcp::pb::{self, McpMessage, mcp_message::Payload};
use prost::Message as _;
use tonic::{Request, Response, Status};

use super::grpc_conn::{GrpcConn, GrpcConnInfo};
use crate::Service;
use crate::driver::Exchange;
use crate::driver::exchange::{Hears, RequestFrom};
use crate::limits::ConnectionLimits;
use crate::observe::{TraceParent, WireLabel};

/// The generated tonic server glue.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod service {
    include!(concat!(env!("OUT_DIR"), "/buf.mcp.v1.rs"));
}

use service::mcp_service_server::{McpService, McpServiceServer};

/// Serves `MCPService` for a [`Service`].
#[derive(Clone, Debug)]
pub struct GrpcMcp {
    service: Service,
}

impl GrpcMcp {
    /// The gRPC face of `service` (tool arguments are read with its tool schemas).
    pub fn new(service: Service) -> GrpcMcp {
        GrpcMcp { service }
    }

    /// Serves on `listener` until the process ends. Per connection at most `max_in_flight`
    /// RPCs run at once; messages are capped at `max_message_bytes` (tonic answers OUT_OF_RANGE).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
    ) -> Result<(), tonic::transport::Error> {
        let never = tokio_util::sync::CancellationToken::new();
        let listener = crate::tls::Incoming::plain(listener);
        self.serve_until(listener, never, Duration::ZERO).await
    }

    /// Serves on `listener` until `shutdown` is cancelled, then drains: HTTP/2 `GOAWAY`, no
    /// new connection or RPC, the RPCs in flight answered; after `grace` the rest is dropped.
    pub(crate) async fn serve_until(
        self,
        listener: crate::tls::Incoming,
        shutdown: tokio_util::sync::CancellationToken,
        grace: Duration,
    ) -> Result<(), tonic::transport::Error> {
        let max = self.service.limits.max_message_bytes;
        let in_flight = self.service.config.limits.max_in_flight;
        let connections = self.service.connections.clone();
        let load = self.service.load.clone();
        let svc = McpServiceServer::new(self)
            .max_decoding_message_size(max)
            .max_encoding_message_size(max.saturating_mul(4));
        let incoming = accepted(listener, connections, load);
        let serving = tonic::transport::Server::builder()
            .concurrency_limit_per_connection(in_flight)
            .max_concurrent_streams(u32::try_from(in_flight).ok())
            .http2_keepalive_interval(Some(std::time::Duration::from_secs(60)))
            .http2_keepalive_timeout(Some(std::time::Duration::from_secs(20)))
            .add_service(svc)
            .serve_with_incoming_shutdown(incoming, shutdown.clone().cancelled_owned());
        let overdue = async {
            shutdown.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        tokio::select! {
            served = serving => served,
            _ = overdue => {
                tracing::warn!("gRPC calls still running after the shutdown grace period");
                Ok(())
            }
        }
    }

    /// Runs one request on a fresh session and returns its one answer (with the gRPC code
    /// of the error it is, if it is one), or −33003 when the client's deadline (see the
    /// module docs) comes first.
    async fn exchange(
        &self,
        payload: Payload,
        deadline: Option<Duration>,
        from: RequestFrom,
    ) -> Answer {
        let Some(d) = deadline else {
            return self.run(payload, from).await;
        };
        let early = (d / 10).min(Duration::from_millis(100));
        match tokio::time::timeout(d - early, self.run(payload, from)).await {
            Ok(answer) => answer,
            Err(_) => {
                tracing::debug!(deadline = ?d, "gRPC deadline passed; call dropped");
                refusal(&McpError::Timeout)
            }
        }
    }

    /// The caller of an RPC: its address, and its identity from its `authorization`
    /// metadata (`None` when the service does not authenticate). A connection over the
    /// per-IP limit answers `RESOURCE_EXHAUSTED`.
    async fn admit<T>(&self, req: &Request<T>) -> Result<RequestFrom, Status> {
        let conn = req.extensions().get::<GrpcConnInfo>();
        if let Some(refused) = conn.and_then(|c| c.refused.as_ref()) {
            return Err(error_status(refused));
        }
        let ip = conn.and_then(|c| c.remote).map(|a| a.ip());
        let certificate = conn.and_then(|c| c.certificate.clone());
        let trace = TraceParent::from_metadata(req.metadata());
        Ok(RequestFrom {
            identity: self.authenticate(req, certificate).await?,
            ip,
            trace,
        })
    }

    /// The caller's identity from its `authorization` metadata; when the service does not
    /// authenticate, the one its TLS client certificate names, if any.
    async fn authenticate<T>(
        &self,
        req: &Request<T>,
        certificate: Option<Identity>,
    ) -> Result<Option<Identity>, Status> {
        let Some(auth) = &self.service.auth else {
            return Ok(certificate);
        };
        let header = req.metadata().get("authorization").map(|v| v.as_bytes());
        match auth.verify_header(header).await {
            Ok(id) => Ok(Some(id)),
            Err(failure) => {
                tracing::debug!(%failure, "gRPC authentication refused");
                Err(error_status(&failure.to_mcp_error()))
            }
        }
    }

    /// Runs one request on a fresh session and returns its one answer.
    async fn run(&self, payload: Payload, from: RequestFrom) -> Answer {
        let initialize = matches!(payload, Payload::InitializeRequest(_));
        let config = self.service.config.clone();
        let session = if initialize {
            ServerSession::new(config)
        } else {
            ServerSession::preinitialized(config, Revision::ProtoMcp1)
        };
        let mut tr = Translator::new(self.service.proto.clone());
        let req = match tr.inbound(McpMessage::new(1, payload)) {
            Inbound::Reply(m, code) => return (m, code),
            Inbound::Forward(Message::Request(req)) => req,
            Inbound::Forward(_) => return internal("the request did not translate to a request"),
        };
        // Unary RPCs have no use for catalog changes: no backend event subscription.
        let core = Exchange::core(
            &self.service,
            session,
            WireLabel::Grpc,
            Hears::Nothing,
            from,
        );
        let exchange = Exchange::new(core, req);
        let Some(response) = exchange.response().await else {
            return internal("the request ended without an answer");
        };
        // The error table's gRPC code travels with the session's error object.
        let code = match &response {
            Outbound::Error { error, .. } => error.grpc_code(),
            _ => GrpcCode::Unknown,
        };
        match tr.outbound(&response) {
            Some(answer) => (answer, code),
            None => internal("the request ended without an answer"),
        }
    }
}

/// One RPC's answer and, when it is an error, its gRPC status code.
type Answer = (McpMessage, GrpcCode);

/// An answer that is only error `e`.
fn refusal(e: &McpError) -> Answer {
    (McpMessage::error(1, e), e.grpc_code())
}

/// An internal-error answer (a broken invariant, not the client's fault).
fn internal(message: &str) -> Answer {
    refusal(&McpError::Internal(message.to_owned()))
}

/// A gRPC status for an MCP error: `code` from the error table (the variant's), details =
/// the encoded `ErrorResponse`.
fn status(e: pb::ErrorResponse, code: GrpcCode) -> Status {
    let code = tonic::Code::from_i32(code.as_i32());
    let message = e.message.clone();
    Status::with_details(code, message, e.encode_to_vec().into())
}

/// The status of an error refused before any session (authentication).
fn error_status(e: &McpError) -> Status {
    match McpMessage::error(1, e).payload {
        Some(Payload::ErrorResponse(r)) => status(r, e.grpc_code()),
        _ => Status::internal(e.to_string()),
    }
}

fn call_error_status(e: pb::Error, code: GrpcCode) -> Status {
    let data = mcpwire_proto_mcp::json_to_struct(&serde_json::Value::Object(
        e.data
            .into_iter()
            .map(|(k, v)| (k, serde_json::Value::String(v)))
            .collect(),
    ));
    status(
        pb::ErrorResponse {
            code: e.code,
            message: e.message,
            data,
        },
        code,
    )
}

fn unexpected() -> Status {
    Status::internal("mcpwire answered with an unexpected proto-mcp message")
}

/// The client's deadline: the `grpc-timeout` header (at most 8 digits and a unit, per the
/// gRPC HTTP/2 protocol); a malformed value is ignored, as tonic does.
fn deadline<T>(req: &Request<T>) -> Option<Duration> {
    let v = req.metadata().get("grpc-timeout")?.to_str().ok()?;
    let unit = v.chars().last()?;
    let digits = &v[..v.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        'H' => Duration::from_secs(n * 3600),
        'M' => Duration::from_secs(n * 60),
        'S' => Duration::from_secs(n),
        'm' => Duration::from_millis(n),
        'u' => Duration::from_micros(n),
        'n' => Duration::from_nanos(n),
        _ => return None,
    })
}

macro_rules! rpc {
    ($self:ident, $req:ident, $in:ident, $out:ident) => {{
        let deadline = deadline(&$req);
        let caller = $self.admit(&$req).await?;
        let (answer, code) = $self
            .exchange(Payload::$in($req.into_inner()), deadline, caller)
            .await;
        match answer.payload {
            Some(Payload::$out(r)) => Ok(Response::new(r)),
            Some(Payload::ErrorResponse(e)) => Err(status(e, code)),
            _ => Err(unexpected()),
        }
    }};
}

#[tonic::async_trait]
impl McpService for GrpcMcp {
    async fn initialize(
        &self,
        req: Request<pb::InitializeRequest>,
    ) -> Result<Response<pb::InitializeResponse>, Status> {
        rpc!(self, req, InitializeRequest, InitializeResponse)
    }

    async fn list_tools(
        &self,
        req: Request<pb::ListToolsRequest>,
    ) -> Result<Response<pb::ListToolsResponse>, Status> {
        rpc!(self, req, ListToolsRequest, ListToolsResponse)
    }

    async fn call_tool(
        &self,
        req: Request<pb::CallToolRequest>,
    ) -> Result<Response<pb::CallToolResponse>, Status> {
        let deadline = deadline(&req);
        let caller = self.admit(&req).await?;
        let (answer, code) = self
            .exchange(Payload::CallToolRequest(req.into_inner()), deadline, caller)
            .await;
        match answer.payload {
            Some(Payload::CallToolResponse(pb::CallToolResponse {
                result: Some(pb::call_tool_response::Result::Error(e)),
                ..
            })) => Err(call_error_status(e, code)),
            Some(Payload::CallToolResponse(r)) => Ok(Response::new(r)),
            Some(Payload::ErrorResponse(e)) => Err(status(e, code)),
            _ => Err(unexpected()),
        }
    }

    async fn list_resources(
        &self,
        req: Request<pb::ListResourcesRequest>,
    ) -> Result<Response<pb::ListResourcesResponse>, Status> {
        rpc!(self, req, ListResourcesRequest, ListResourcesResponse)
    }

    async fn read_resource(
        &self,
        req: Request<pb::ReadResourceRequest>,
    ) -> Result<Response<pb::ReadResourceResponse>, Status> {
        rpc!(self, req, ReadResourceRequest, ReadResourceResponse)
    }
}

/// Accepted connections as the stream tonic serves, each under the connections per IP
/// limit when there is one, and counted among the listener's (`load`).
fn accepted(
    listener: crate::tls::Incoming,
    limits: Option<Arc<ConnectionLimits>>,
    load: Option<Arc<crate::serve::ListenerLoad>>,
) -> impl futures::Stream<Item = std::io::Result<GrpcConn>> {
    futures::stream::unfold(listener, move |mut l| {
        let (limits, load) = (limits.clone(), load.clone());
        async move {
            let (s, peer) = l.next().await;
            Some((
                Ok(GrpcConn::admit(s, peer, limits.as_ref(), load.as_ref())),
                l,
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_timeout(v: &str) -> Request<()> {
        let mut r = Request::new(());
        if let Ok(v) = v.parse() {
            r.metadata_mut().insert("grpc-timeout", v);
        }
        r
    }

    #[test]
    fn grpc_timeout_values_parse_strictly() {
        assert_eq!(
            deadline(&with_timeout("250m")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(deadline(&with_timeout("3S")), Some(Duration::from_secs(3)));
        assert_eq!(
            deadline(&with_timeout("2H")),
            Some(Duration::from_secs(7200))
        );
        assert_eq!(
            deadline(&with_timeout("99999999n")),
            Some(Duration::from_nanos(99_999_999))
        );
        for bad in ["", "m", "123456789m", "12x", "-1S", "1.5S", "ñS"] {
            assert_eq!(deadline(&with_timeout(bad)), None, "{bad:?}");
        }
        assert_eq!(deadline(&Request::new(())), None);
    }
}
