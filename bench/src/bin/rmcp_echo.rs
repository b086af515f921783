//! The rmcp baseline for the load driver: an rmcp stdio server with one `echo` tool
//! ([`mcpwire_bench::rmcp_echo::Echo`]), on rmcp's fastest stdio transport (`stdio_pipes()`,
//! non-blocking FIFOs on Linux).

use mcpwire_bench::rmcp_echo::Echo;
use rmcp::{ServiceExt, transport::stdio_pipes};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Echo::new().serve(stdio_pipes()).await?;
    service.waiting().await?;
    Ok(())
}
