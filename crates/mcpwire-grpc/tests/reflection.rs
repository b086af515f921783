//! Server reflection against tonic's reflection service: v1, and v1alpha when the server
//! offers only that (the fallback grpcio-reflection servers need).

use std::time::Duration;

use mcpwire_grpc::{connect, pool};
use mcpwire_server::tls::ClientTls;
use prost::Message;
use tokio_stream::wrappers::TcpListenerStream;

fn inventory_set() -> Vec<u8> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/fixtures");
    protox::compile(["inventory.proto"], [dir])
        .expect("compiles")
        .encode_to_vec()
}

async fn serve(v1: bool) -> String {
    let set = inventory_set();
    let builder =
        tonic_reflection::server::Builder::configure().register_encoded_file_descriptor_set(&set);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let incoming = TcpListenerStream::new(listener);
    let mut server = tonic::transport::Server::builder();
    let router = if v1 {
        server.add_service(builder.build_v1().expect("v1"))
    } else {
        server.add_service(builder.build_v1alpha().expect("v1alpha"))
    };
    tokio::spawn(router.serve_with_incoming(incoming));
    format!("http://{addr}")
}

#[tokio::test]
async fn v1_and_the_v1alpha_fallback() {
    for v1 in [true, false] {
        let url = serve(v1).await;
        let channel =
            connect::channel(&url, &ClientTls::default(), Duration::from_secs(5)).expect("channel");
        let (pool, services) = pool::from_reflection(channel, Duration::from_secs(10))
            .await
            .expect("reflected");
        assert_eq!(services, ["shop.inventory.v1.Inventory"], "v1: {v1}");
        let item = pool
            .get_message_by_name("shop.inventory.v1.Item")
            .expect("Item");
        assert!(item.get_field_by_name("added").is_some());
        assert!(
            pool.get_message_by_name("google.protobuf.Timestamp")
                .is_some()
        );
    }
}

#[tokio::test]
async fn nobody_there_is_a_clear_error() {
    let channel = connect::channel(
        "http://127.0.0.1:1",
        &ClientTls::default(),
        Duration::from_secs(2),
    )
    .expect("channel");
    let e = pool::from_reflection(channel, Duration::from_secs(5))
        .await
        .expect_err("refused");
    assert!(e.to_string().contains("reflection"), "{e}");
    assert!(connect::channel("ftp://x", &ClientTls::default(), Duration::from_secs(1)).is_err());
}
