//! A listener's load as the console shows it (`ListenerLoad`): the transport connections
//! open on each network wire — an HTTP or gRPC listener's TCP connections, MCPB
//! connections, upgraded WebSocket connections — counted while open and given back when
//! they close.

use std::sync::Arc;
use std::time::Duration;

use mcpwire_model::types::Implementation;
use mcpwire_router::Server;
use mcpwire_server::{ListenerLoad, Service, Wire};
use mcpwire_testkit::serve;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Waits (at most 5 s) until `what` of `load` is `want`.
async fn until(load: &ListenerLoad, what: fn(&ListenerLoad) -> usize, want: usize) {
    for _ in 0..500 {
        if what(load) == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("still {} rather than {want}", what(load));
}

/// Serves an empty server on `wire`, counted in a fresh load named `name`.
async fn served(wire: Wire, name: &str) -> (serve::Served, Arc<ListenerLoad>) {
    let server = Server::builder(Implementation::new("t", "1")).build();
    let mut service = Service::from_server(server);
    let load = Arc::new(ListenerLoad::new(name));
    service.load = Some(load.clone());
    (serve::serve(service, wire).await, load)
}

#[tokio::test]
async fn tcp_connections_are_counted_on_http_grpc_and_mcpb() {
    for (wire, name) in [
        (serve::http(), "http"),
        (serve::grpc(), "grpc"),
        (serve::mcpb(), "mcpb"),
    ] {
        let (served, load) = served(wire, name).await;
        let a = TcpStream::connect(served.addr()).await.expect("connect");
        let b = TcpStream::connect(served.addr()).await.expect("connect");
        until(&load, ListenerLoad::connections, 2).await;
        drop(a);
        until(&load, ListenerLoad::connections, 1).await;
        drop(b);
        until(&load, ListenerLoad::connections, 0).await;
        assert_eq!(load.stateless_requests(), 0, "{name}: no request was made");
        assert_eq!(&**load.listener(), name);
    }
}

#[tokio::test]
async fn an_upgraded_websocket_is_a_connection_and_a_session() {
    let (served, load) = served(serve::ws(), "ws").await;
    let mut s = TcpStream::connect(served.addr()).await.expect("connect");
    let upgrade = "GET /mcp HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n\
        Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
        Sec-WebSocket-Version: 13\r\n\r\n";
    s.write_all(upgrade.as_bytes()).await.expect("sent");
    let mut head = [0u8; 12];
    s.read_exact(&mut head).await.expect("answered");
    assert_eq!(&head, b"HTTP/1.1 101", "{}", String::from_utf8_lossy(&head));
    until(&load, ListenerLoad::connections, 1).await;
    assert_eq!(load.sessions(), 1);
    drop(s);
    until(&load, ListenerLoad::connections, 0).await;
    until(&load, ListenerLoad::sessions, 0).await;
}
