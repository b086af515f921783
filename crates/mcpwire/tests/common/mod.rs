//! Helpers shared by the library's integration tests.

use mcpwire::Service;
use mcpwire::http::{HttpConfig, HttpServer};

/// Serves `service` over Streamable HTTP on a free loopback port; its URL.
pub async fn serve_http(service: Service) -> String {
    let server = HttpServer::bind(service, HttpConfig::default())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", server.local_addr().expect("addr"));
    tokio::spawn(server.serve());
    url
}
