//! The stdio wire: one client over a byte stream — this process's stdin/stdout, a pipe, a
//! socket — speaking JSON-RPC lines or proto-mcp frames, whichever its first byte announces.

mod connection;
mod pipes;

pub use connection::StdioConnection;
pub use pipes::{StdinReader, StdoutWriter, stdio};

use crate::Service;

impl Service {
    /// Serves one client over this process's stdin/stdout until stdin closes: JSON-RPC
    /// lines or (with the `proto-mcp` feature) proto-mcp frames, whichever the first byte
    /// announces.
    pub async fn serve_stdio(&self) -> std::io::Result<()> {
        #[cfg(feature = "proto-mcp")]
        crate::proto_schemas::keep_tool_schemas(self.router.clone(), self.proto.clone()).await;
        let (r, w) = stdio();
        StdioConnection::new(self, r, w).run().await
    }
}
