//! [`StdioConnection`]: one client over a byte stream, served by the framed driver. The
//! stream is NDJSON JSON-RPC, or — when its first byte says so ([`AnyCodec`]) — proto-mcp
//! frames, translated to and from the session's JSON-RPC by a per-connection [`Translator`].

#[cfg(feature = "proto-mcp")]
use std::sync::Arc;

use bytes::BytesMut;
#[cfg(feature = "proto-mcp")]
use mcpwire_proto_mcp::{Inbound, ProtoToolSchemas, Translator};
use mcpwire_session::{ServerSession, Transmit};
#[cfg(feature = "proto-mcp")]
use mcpwire_wire::proto_mcp::{ProtoDecoded, ProtoMcpCodec, pb::McpMessage};
use mcpwire_wire::{AnyCodec, FramingError, NdjsonCodec, WireItem};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::codec::Encoder;

use crate::Service;
use crate::driver::framed::output_full;
use crate::driver::{Calls, Endpoint, FramedDriver, ServerCore, Status, Wake};
use crate::observe::WireLabel;

/// Serves one client reading `R` and writing `W` until the client closes its input and
/// every accepted call has been answered (or the grace period passed).
#[must_use = "a connection does nothing until run"]
pub struct StdioConnection<R, W> {
    driver: FramedDriver<R, W, StdioServerEndpoint>,
}

impl<R, W> StdioConnection<R, W>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    /// A connection serving `service` to the client on `reader`/`writer`: JSON-RPC lines,
    /// or proto-mcp frames read with the service's tool schemas.
    pub fn new(service: &Service, reader: R, writer: W) -> Self {
        let endpoint = StdioServerEndpoint {
            core: ServerCore::new(
                ServerSession::new(service.config.clone()),
                Calls::new(service.router.clone(), WireLabel::Stdio),
            )
            .counted_connection(service.load.as_ref()),
            json: NdjsonCodec::new(&service.limits),
            #[cfg(feature = "proto-mcp")]
            proto: ProtoSide {
                codec: ProtoMcpCodec::new(&service.limits),
                schemas: service.proto.clone(),
                translator: None,
            },
        };
        // JSON-RPC lines come undecoded: a plain `tools/call` may be relayed as it came.
        // proto-mcp detection only with the feature that serves it.
        let codec = AnyCodec::new(&service.limits, cfg!(feature = "proto-mcp")).with_raw_lines();
        StdioConnection {
            driver: FramedDriver::new(reader, codec, writer, endpoint, service.busy_poll),
        }
    }

    /// Runs until the client closed its input and the accepted calls are answered, then
    /// flushes and returns.
    pub async fn run(self) -> std::io::Result<()> {
        self.driver.run().await
    }
}

/// The server side of a stdio connection.
struct StdioServerEndpoint {
    core: ServerCore,
    json: NdjsonCodec,
    #[cfg(feature = "proto-mcp")]
    proto: ProtoSide,
}

/// What a connection speaking proto-mcp frames needs (feature `proto-mcp`).
#[cfg(feature = "proto-mcp")]
struct ProtoSide {
    codec: ProtoMcpCodec,
    /// The tool schemas proto-mcp arguments are read with.
    schemas: Arc<ProtoToolSchemas>,
    /// Set once the first proto-mcp frame arrived.
    translator: Option<Translator>,
}

#[cfg(feature = "proto-mcp")]
impl StdioServerEndpoint {
    fn on_proto(&mut self, item: ProtoDecoded, out: &mut BytesMut) {
        let proto = &mut self.proto;
        let msg = match item {
            Ok(msg) => msg,
            Err(reply) => return write_proto(&mut proto.codec, &reply, out),
        };
        let translator = proto
            .translator
            .get_or_insert_with(|| Translator::new(proto.schemas.clone()));
        match translator.inbound(msg) {
            Inbound::Forward(m) => self.core.inbound(Ok(m)),
            Inbound::Reply(reply, _) => write_proto(&mut proto.codec, &reply, out),
        }
    }
}

impl Endpoint for StdioServerEndpoint {
    type Codec = AnyCodec;
    type Wake = Wake;

    fn on_frame(&mut self, frame: Option<Result<WireItem, FramingError>>, out: &mut BytesMut) {
        #[cfg(not(feature = "proto-mcp"))]
        let _ = &out;
        match frame {
            Some(Ok(WireItem::Line(Ok(line)))) => {
                if !self.core.try_relay(&line, self.json.max_depth()) {
                    self.core.inbound(self.json.decode_body(&line));
                }
            }
            Some(Ok(WireItem::Line(Err(refused)))) => self.core.inbound(Err(refused)),
            Some(Ok(WireItem::Json(decoded))) => self.core.inbound(decoded),
            #[cfg(feature = "proto-mcp")]
            Some(Ok(WireItem::Proto(item))) => self.on_proto(item, out),
            // Another crate may turn on `mcpwire-wire/proto-mcp` without this crate's
            // `proto-mcp`: the codec then never detects proto-mcp (see `new`).
            #[cfg(not(feature = "proto-mcp"))]
            #[allow(unreachable_patterns)]
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::debug!(error = %e, "input failed");
                self.core.input_closed();
            }
            None => self.core.input_closed(),
        }
    }

    fn poll_ready(&mut self, out: &mut BytesMut) -> bool {
        let json = &mut self.json;
        #[cfg(feature = "proto-mcp")]
        let proto = &mut self.proto;
        let mut encode = |out: &mut BytesMut, t: Transmit| {
            #[cfg(feature = "proto-mcp")]
            let r = match &mut proto.translator {
                None => json.encode(&t.msg, out),
                Some(tr) => match tr.outbound(&t.msg) {
                    Some(m) => proto.codec.encode(&m, out),
                    None => Ok(()),
                },
            };
            #[cfg(not(feature = "proto-mcp"))]
            let r = json.encode(&t.msg, out);
            if let Err(e) = r {
                tracing::error!(error = %e, "could not encode a message");
            }
        };
        let relayed = !output_full(out) && self.core.take_relayed(out, &mut encode);
        self.core.poll_ready(out, output_full, encode) | relayed
    }

    async fn wait(&mut self, paused: bool) -> Wake {
        self.core.wait(paused).await
    }

    fn apply(&mut self, wake: Wake, _out: &mut BytesMut) {
        self.core.apply(wake);
    }

    fn status(&mut self) -> Status {
        if self.core.finished() {
            Status::Close
        } else {
            Status::Open
        }
    }
}

#[cfg(feature = "proto-mcp")]
fn write_proto(codec: &mut ProtoMcpCodec, msg: &McpMessage, out: &mut BytesMut) {
    if let Err(e) = codec.encode(msg, out) {
        tracing::error!(error = %e, "could not encode a message");
    }
}
