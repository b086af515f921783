//! Compiles `proto/buf/mcp/v1/mcp.proto` with protox (no system `protoc`) into prost types.

fn main() {
    generate();
}

/// Nothing to generate without the `proto-mcp` feature (and no protox to build).
#[cfg(not(feature = "proto-mcp"))]
fn generate() {}

#[cfg(feature = "proto-mcp")]
fn generate() {
    println!("cargo:rerun-if-changed=proto");
    let fds = match protox::compile(["buf/mcp/v1/mcp.proto"], ["proto"]) {
        Ok(fds) => fds,
        Err(e) => panic!("compiling proto/buf/mcp/v1/mcp.proto: {e:?}"),
    };
    let mut config = prost_build::Config::new();
    config.btree_map(["."]);
    // prost's own `FileDescriptorSet` drops extension options (the `buf.validate` rules,
    // mcpwire's enum options) when decoding; this type keeps the encoded bytes.
    config.extern_path(
        ".google.protobuf.FileDescriptorSet",
        "::mcpwire_schema::RawFileSet",
    );
    if let Err(e) = config.compile_fds(fds) {
        panic!("generating buf.mcp.v1: {e}");
    }
}
