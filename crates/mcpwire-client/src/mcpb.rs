//! The MCPB client wire (`mcpb://[TOKEN@]host:port`; `mcpbs://` or `tcps://` over TLS): a
//! TCP connection in MCPB frames
//! (`mcpwire_wire::mcpb`), run by the driver core's [`FramedDriver`] with an
//! [`McpbEndpoint`]. The connection offers its versions, then — with a token — authenticates
//! with `initialize {token}` (the gateway's own request, id `mcpb-auth`), then speaks MCP
//! through the client session (its own `initialize`, which the server takes as the real
//! handshake). The session's handshake deadline covers all three. The server's health pings
//! are answered, its shutdown notice acknowledged; with per-message auth every message
//! carries the token.

use bytes::BytesMut;
use mcpwire_model::{McpError, Message, Outbound, RequestId};
use mcpwire_session::TransmitKind;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut, VersionOffer};
use mcpwire_wire::{FramingError, Limits};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::codec::Encoder;

use crate::core::{ClientCore, CoreWake};
use crate::handle::parts;
use crate::{Client, ClientError, ClientEvents, ClientOptions};
use mcpwire_server::driver::{Endpoint, FramedDriver, Status, framed::output_full, now};

/// The id of the authenticating `initialize` (MCPB string ids are `[A-Za-z0-9_-]`).
const AUTH_ID: &str = "mcpb-auth";

/// Reaches the MCPB server at `addr` (`host:port`; over TLS when `tls`), authenticates with
/// `token` (the target's, else the options'), and negotiates within
/// `opts.limits.handshake_timeout`.
pub(crate) async fn connect(
    addr: &str,
    token: Option<&str>,
    tls: bool,
    opts: &ClientOptions,
) -> Result<(Client, ClientEvents), ClientError> {
    let url = format!("mcpb{}://{addr}", if tls { "s" } else { "" });
    let timeout = opts.limits.handshake_timeout;
    let reach = async {
        let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        if !tls {
            return Ok(Stream::Plain(tcp));
        }
        let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let stream = mcpwire_server::tls::connect_with(
            host,
            tcp,
            &opts.tls,
            mcpwire_server::tls::alpn::NONE,
        )
        .await?;
        Ok(Stream::Tls(Box::new(stream)))
    };
    let stream = match tokio::time::timeout(timeout, reach).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(reason)) => return Err(ClientError::Connect { url, reason }),
        Err(_) => {
            return Err(ClientError::Timeout {
                awaited: "connection".into(),
                peer: url,
                after: timeout,
                hint: String::new(),
            });
        }
    };
    let token = token.map(str::to_owned).or_else(|| opts.mcpb_token.clone());
    let parts = parts(opts, &url);
    let endpoint = McpbEndpoint {
        core: parts.core,
        codec: McpbCodec::client(&limits()),
        phase: Phase::Version,
        per_message: opts.mcpb_per_message_auth.then(|| token.clone()).flatten(),
        token,
        done: false,
    };
    match stream {
        Stream::Plain(tcp) => {
            let (r, w) = tcp.into_split();
            start(r, w, endpoint, opts);
        }
        Stream::Tls(tls) => {
            let (r, w) = tokio::io::split(tls);
            start(r, w, endpoint, opts);
        }
    }
    parts.pending.settle("").await
}

/// A connection to an MCPB server.
enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// Offers our versions and runs the connection on a task of its own.
fn start<R, W>(r: R, w: W, endpoint: McpbEndpoint, opts: &ClientOptions)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let mut driver =
        FramedDriver::new(r, McpbCodec::client(&limits()), w, endpoint, opts.busy_poll);
    let (ep, out) = driver.endpoint_mut();
    ep.write(out, McpbOut::Version(&VersionOffer::ours()));
    tokio::spawn(run(driver));
}

fn limits() -> Limits {
    Limits {
        max_message_bytes: mcpwire_wire::mcpb::MAX_PAYLOAD,
        ..Limits::default()
    }
}

async fn run<R, W>(mut driver: FramedDriver<R, W, McpbEndpoint>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let result = driver.drive().await;
    let mut ep = driver.into_endpoint();
    if !ep.done {
        let how = match (&result, ep.core.close_requested()) {
            (_, true) => "was closed by the client".to_owned(),
            (Err(e), _) => format!("failed ({e})"),
            (Ok(()), _) => "closed the connection".to_owned(),
        };
        ep.core.finish(McpError::ConnectionClosed(how));
    }
}

/// Where the connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// The version offer is out; waiting for the acknowledgement.
    Version,
    /// The token `initialize` is out; waiting for its answer.
    Auth,
    /// MCP flows through the session.
    Mcp,
}

/// The client session over an MCPB connection.
struct McpbEndpoint {
    core: ClientCore,
    codec: McpbCodec,
    phase: Phase,
    token: Option<String>,
    /// The token every message carries (per-message auth).
    per_message: Option<String>,
    done: bool,
}

impl McpbEndpoint {
    fn write(&mut self, out: &mut BytesMut, frame: McpbOut<'_>) -> bool {
        let before = out.len();
        if let Err(e) = self.codec.encode(frame, out) {
            tracing::debug!(error = %e, "an MCPB frame could not be encoded");
        }
        out.len() > before
    }

    fn finish(&mut self, error: McpError) {
        if !self.done {
            self.done = true;
            self.core.finish(error);
        }
    }

    /// The version is agreed: authenticate, or (no token) go straight to MCP.
    fn after_version(&mut self, out: &mut BytesMut) {
        let Some(token) = self.token.clone() else {
            self.phase = Phase::Mcp;
            return;
        };
        self.phase = Phase::Auth;
        let auth = Outbound::Request {
            id: RequestId::Str(AUTH_ID.into()),
            method: "initialize".into(),
            params: Some(mcpwire_model::to_raw(&json!({ "token": token }))),
        };
        self.write(out, McpbOut::Mcp(&auth));
    }

    fn on_auth_answer(&mut self, msg: Message) {
        match msg {
            Message::Response(r) if r.id == RequestId::Str(AUTH_ID.into()) => match r.outcome {
                Ok(_) => self.phase = Phase::Mcp,
                Err(e) => self.finish(McpError::Wire(e)),
            },
            other => tracing::debug!(?other, "an MCPB message before authentication ended"),
        }
    }
}

impl Endpoint for McpbEndpoint {
    type Codec = McpbCodec;
    type Wake = CoreWake;

    fn on_frame(&mut self, frame: Option<Result<McpbFrame, FramingError>>, out: &mut BytesMut) {
        let frame = match frame {
            Some(Ok(f)) => f,
            Some(Err(e)) => {
                return self.finish(McpError::ConnectionClosed(format!(
                    "broke the framing ({e})"
                )));
            }
            None => return self.finish(McpError::ConnectionClosed("closed the connection".into())),
        };
        match frame {
            McpbFrame::VersionAck(_) if self.phase == Phase::Version => self.after_version(out),
            McpbFrame::Mcp { msg: Ok(m), .. } if self.phase == Phase::Auth => {
                self.on_auth_answer(m)
            }
            McpbFrame::Mcp { msg, .. } => self.core.session.handle_inbound(now(), msg),
            McpbFrame::Health(_) => {
                self.write(out, McpbOut::Health(None));
            }
            McpbFrame::Control(v) if v["command"] == "shutdown" => {
                tracing::info!(target: "mcpwire::mcpb", "the server is shutting down");
                self.write(out, McpbOut::Control(&json!({ "command": "shutdown_ack" })));
            }
            McpbFrame::PeerError(text) => {
                self.finish(McpError::ConnectionClosed(format!(
                    "reported an error: {text}"
                )));
            }
            other => tracing::debug!(?other, "MCPB frame ignored"),
        }
    }

    fn poll_ready(&mut self, out: &mut BytesMut) -> bool {
        if self.done {
            return false;
        }
        let mut did = self.core.poll_ready(now(), !output_full(out));
        if self.phase != Phase::Mcp {
            return did;
        }
        while !output_full(out)
            && let Some(t) = self.core.session.poll_transmit()
        {
            did = true;
            let token = self.per_message.clone();
            let sent = match &token {
                Some(tok) => self.write(out, McpbOut::AuthMcp(&t.msg, tok)),
                None => self.write(out, McpbOut::Mcp(&t.msg)),
            };
            if !sent && let TransmitKind::Request(id) = t.kind {
                let e = ClientError::Invalid(format!(
                    "the request is larger than MCPB's {} MiB frame limit",
                    mcpwire_wire::mcpb::MAX_PAYLOAD >> 20
                ));
                self.core.fail_request(now(), id, e);
            }
        }
        did
    }

    async fn wait(&mut self, paused: bool) -> CoreWake {
        if self.done {
            return std::future::pending().await;
        }
        self.core.wait(!paused).await
    }

    fn apply(&mut self, wake: CoreWake, _out: &mut BytesMut) {
        self.core.apply(now(), wake);
    }

    fn status(&mut self) -> Status {
        if self.done || self.core.close_requested() || self.core.session.is_finished() {
            Status::Close
        } else {
            Status::Open
        }
    }
}
