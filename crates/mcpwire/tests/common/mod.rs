//! Helpers shared by the library's integration tests.

#[allow(dead_code)] // each test binary uses its own part
pub mod tasks;

use mcpwire::Service;
use mcpwire::http::{HttpConfig, HttpServer};

/// Serves `service` over Streamable HTTP on a free loopback port; its URL.
#[allow(dead_code)] // not every test binary serves HTTP this way
pub async fn serve_http(service: Service) -> String {
    let server = HttpServer::bind(service, HttpConfig::default())
        .await
        .expect("bind");
    let url = format!("http://{}/mcp", server.local_addr().expect("addr"));
    tokio::spawn(server.serve());
    url
}
