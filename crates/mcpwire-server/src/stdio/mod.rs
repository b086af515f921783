//! The stdio wire: one client over a byte stream — this process's stdin/stdout, a pipe, a
//! socket — speaking JSON-RPC lines or proto-mcp frames, whichever its first byte announces.

mod connection;
mod pipes;

pub use connection::StdioConnection;
pub use pipes::{StdinReader, StdoutWriter, stdio};
