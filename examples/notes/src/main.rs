//! Serves the notes server: over stdio by default, or on the wires named by flags
//! (`--http ADDR`, `--mcpb ADDR`, `--grpc ADDR`, several at once; `--stdio` adds stdio).

use std::net::SocketAddr;

use mcpwire::http::HttpConfig;
use mcpwire::prelude::*;
use mcpwire::{McpbWire, ServeConfig};

fn config(args: &[String]) -> Result<ServeConfig, String> {
    let mut config = ServeConfig::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut addr = || -> Result<SocketAddr, String> {
            let v = it.next().ok_or(format!("{flag} needs an address"))?;
            v.parse().map_err(|e| format!("{flag} {v}: {e}"))
        };
        match flag.as_str() {
            "--stdio" => config.stdio = true,
            "--http" => {
                config.http = Some(HttpConfig {
                    bind: addr()?,
                    ..HttpConfig::default()
                })
            }
            "--mcpb" => config.mcpb = Some(McpbWire::new(addr()?)),
            "--grpc" => config.grpc = Some(addr()?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if config.http.is_none() && config.mcpb.is_none() && config.grpc.is_none() {
        config.stdio = true;
    }
    Ok(config)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = config(&args).map_err(std::io::Error::other)?;
    mcpwire_example_notes::server().serve(config).await
}
