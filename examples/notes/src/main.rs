//! Serves the notes server over stdio.

use mcpwire::prelude::*;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    Service::from_server(mcpwire_example_notes::server())
        .serve_stdio()
        .await
}
