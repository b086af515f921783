//! MCPB's timers on tokio's paused clock: idle pings, the unanswered-ping close and session
//! expiry after `session_ttl` — exact in virtual time, with no sleeping. The server runs in
//! process over loopback TCP; a client built on the wire crate's `McpbCodec` drives it.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use mcpwire_model::types::Implementation;
use mcpwire_model::{Message, Outbound, RequestId, to_raw};
use mcpwire_router::Server;
use mcpwire_server::Service;
use mcpwire_server::mcpb::{McpbConfig, McpbServer};
use mcpwire_wire::Limits;
use mcpwire_wire::mcpb::{McpbCodec, McpbFrame, McpbOut, VersionOffer};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::codec::Framed;
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "t0ken";
const IDLE_PING: Duration = Duration::from_secs(60);
const TTL: Duration = Duration::from_secs(3600);

type Client = Framed<TcpStream, McpbCodec>;

/// Serves an empty server over MCPB with a token, the idle ping and the session TTL above.
async fn serve() -> std::net::SocketAddr {
    let server = Server::builder(Implementation::new("t", "1")).build();
    let config = McpbConfig {
        tokens: vec![TOKEN.into()],
        session_ttl: TTL,
        idle_ping: IDLE_PING,
        ..McpbConfig::default()
    };
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let listener = McpbServer::bind(
        Service::from_server(server),
        addr,
        config,
        CancellationToken::new(),
    )
    .await
    .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(listener.serve());
    addr
}

/// Connects, negotiates the version and authenticates.
async fn ready(addr: std::net::SocketAddr) -> Client {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let mut c = Framed::new(stream, McpbCodec::client(&Limits::default()));
    c.send(McpbOut::Version(&VersionOffer::ours()))
        .await
        .expect("send");
    assert!(matches!(c.next().await, Some(Ok(McpbFrame::VersionAck(_)))));
    let init = Outbound::Request {
        id: RequestId::Int(1),
        method: "initialize".into(),
        params: Some(to_raw(&serde_json::json!({ "token": TOKEN }))),
    };
    c.send(McpbOut::Mcp(&init)).await.expect("send");
    match c.next().await {
        Some(Ok(McpbFrame::Mcp {
            msg: Ok(Message::Response(r)),
            ..
        })) => assert!(r.outcome.is_ok()),
        other => panic!("expected the authentication answer, got {other:?}"),
    }
    c
}

#[tokio::test(start_paused = true)]
async fn answered_pings_keep_the_connection_until_the_session_expires() {
    let addr = serve().await;
    let mut c = ready(addr).await;
    let authenticated = Instant::now();
    let mut pings = 0;
    let closing = loop {
        match c.next().await {
            Some(Ok(McpbFrame::Health(None))) => {
                // The server pings after each quiet minute; an answer keeps the connection.
                assert_eq!(
                    Instant::now() - authenticated,
                    IDLE_PING * (pings + 1),
                    "ping {pings}"
                );
                pings += 1;
                c.send(McpbOut::Health(None)).await.expect("pong");
            }
            Some(Ok(McpbFrame::PeerError(text))) => break text,
            other => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(closing, "session expired");
    assert_eq!(Instant::now() - authenticated, TTL);
    assert_eq!(pings, 59, "one ping per quiet minute before the hour is up");
    assert!(matches!(c.next().await, None | Some(Err(_))), "closed");
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_ping_closes_the_connection_after_another_quiet_period() {
    let addr = serve().await;
    let mut c = ready(addr).await;
    let authenticated = Instant::now();
    assert!(matches!(c.next().await, Some(Ok(McpbFrame::Health(None)))));
    assert_eq!(Instant::now() - authenticated, IDLE_PING);
    // No answer: the next frame is the end of the connection, one quiet period later.
    assert!(matches!(c.next().await, None | Some(Err(_))), "closed");
    assert_eq!(Instant::now() - authenticated, IDLE_PING * 2);
}
