//! Compiles `proto/envelope.proto` with protox (pure Rust; no system `protoc`) and prost.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/envelope.proto");
    let fds = protox::compile(["proto/envelope.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
