//! Benchmarks for mcpwire.
//!
//! - `benches/codec.rs`: criterion benches of JSON-RPC decode/encode, mcpwire vs rmcp's model.
//! - `src/bin/loadgen.rs`: an end-to-end stdio load driver that measures calls/s, latency
//!   percentiles and peak RSS of any set of stdio MCP servers serving an `echo` tool.
//! - `src/bin/rmcp_echo.rs`, `src/bin/rmcp_http_echo.rs`: the rmcp baseline servers (stdio,
//!   Streamable HTTP) around [`rmcp_echo::Echo`].
//! - `run.sh`: builds everything in release mode and runs mcpwire against rmcp.

pub mod jwt_fixture;
pub mod notes_rmcp;
pub mod rmcp_echo;
