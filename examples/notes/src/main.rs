//! Serves the notes server: over stdio by default, or on the wires named by flags
//! (`--http ADDR`; `--mcpb ADDR` and `--grpc ADDR` with the crate's `mcpb` and `grpc`
//! features; several at once; `--stdio` adds stdio).

use std::net::SocketAddr;

#[cfg(feature = "mcpb")]
use mcpwire::McpbWire;
use mcpwire::ServeConfig;
use mcpwire::http::HttpConfig;
use mcpwire::prelude::*;

fn config(args: &[String]) -> Result<ServeConfig, String> {
    let mut config = ServeConfig::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut addr = || -> Result<SocketAddr, String> {
            let v = it.next().ok_or(format!("{flag} needs an address"))?;
            v.parse().map_err(|e| format!("{flag} {v}: {e}"))
        };
        match flag.as_str() {
            "--stdio" => config = config.stdio(),
            "--http" => {
                config = config.http(HttpConfig {
                    bind: addr()?,
                    ..HttpConfig::default()
                })
            }
            #[cfg(feature = "mcpb")]
            "--mcpb" => config = config.mcpb(McpbWire::new(addr()?)),
            #[cfg(feature = "grpc")]
            "--grpc" => config = config.grpc(addr()?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if config.wires.is_empty() {
        config = config.stdio();
    }
    Ok(config)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = config(&args).map_err(std::io::Error::other)?;
    mcpwire_example_notes::server().serve(config).await
}
