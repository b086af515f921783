//! Generates the gRPC `MCPService` server (tonic) from the proto-mcp file that
//! `mcpwire-wire` owns; its messages are that crate's prost types. No system `protoc`.

fn main() {
    generate();
}

#[cfg(feature = "proto-mcp")]
fn generate() {
    let dir = "../mcpwire-wire/proto";
    println!("cargo:rerun-if-changed={dir}");
    let fds = match protox::compile(["buf/mcp/v1/mcp.proto"], [dir]) {
        Ok(fds) => fds,
        Err(e) => panic!("compiling buf/mcp/v1/mcp.proto: {e:?}"),
    };
    let built = tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .build_transport(false)
        .extern_path(".buf.mcp.v1", "::mcpwire_wire::proto_mcp::pb")
        .compile_fds(fds);
    if let Err(e) = built {
        panic!("generating the MCPService server: {e}");
    }
}

/// Nothing to generate without the `proto-mcp` feature.
#[cfg(not(feature = "proto-mcp"))]
fn generate() {}
