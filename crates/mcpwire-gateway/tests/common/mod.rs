//! Helpers shared by the library's integration tests.

#[allow(dead_code)] // each test binary uses its own part
pub mod cluster;
#[allow(dead_code)] // each test binary uses its own part
pub mod http;
#[allow(dead_code)] // each test binary uses its own part
pub mod tasks;

use mcpwire_server::Service;
use mcpwire_server::http::{HttpConfig, HttpServer};

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

/// A native server `name` with tools `{name}_one` and `{name}_two`.
#[allow(dead_code)] // the reload tests' backends
pub fn native(name: &'static str) -> std::sync::Arc<mcpwire_router::Server> {
    use mcpwire_model::types::Implementation;
    use mcpwire_router::{CallCtx, NoArgs, Server, ToolError, tool};
    let t = |tool_name: String| {
        tool(tool_name, move |_: CallCtx, _: NoArgs| async move {
            Ok::<_, ToolError>(name.to_string())
        })
    };
    Server::builder(Implementation::new(name, "1"))
        .tool(t(format!("{name}_one")))
        .tool(t(format!("{name}_two")))
        .build()
}
