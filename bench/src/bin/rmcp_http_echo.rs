//! The rmcp baseline for the HTTP load driver: rmcp's `StreamableHttpService` with the same
//! single `echo` tool as `rmcp_echo` ([`Echo`]), served by axum on 127.0.0.1:PORT.
//!
//! `rmcp_http_echo PORT` serves stateful sessions (`Mcp-Session-Id`, SSE replies) for
//! 2025-11-25 clients; 2026-07-28 requests are always answered statelessly by rmcp.
//! TCP_NODELAY is set on every accepted socket: `axum::serve` leaves Nagle on, which holds
//! the tail of each chunked SSE reply until the client's delayed ACK (~40 ms per call).

use mcpwire_bench::rmcp_echo::Echo;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| std::io::Error::other("usage: rmcp_http_echo PORT"))?;
    let config = StreamableHttpServerConfig::default().with_sse_keep_alive(None);
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo::new()), Default::default(), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    eprintln!("listening on {}", listener.local_addr()?);
    loop {
        let (io, _) = listener.accept().await?;
        io.set_nodelay(true)?;
        let router = router.clone();
        tokio::spawn(async move {
            // HTTP/1.1 with keep-alive, as mcpwire serves.
            let service = hyper_util::service::TowerToHyperService::new(router);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(io), service)
                .await;
        });
    }
}
