//! `mcpwire list|call https://…`: a real TLS handshake on loopback. The test takes a CA and
//! a `localhost` certificate from the test PKI, terminates TLS with rustls in front of the
//! demo served in-process over HTTP, and points the client's trust store at the CA (`SSL_CERT_FILE`,
//! read by rustls-native-certs). Without that CA the handshake fails, naming the URL.

mod common;
mod peers;

use std::sync::Arc;

use mcpwire_testkit::pki::Ca;
use mcpwire_testkit::serve::{self, serve};
use tokio::net::TcpListener;

/// A CA (PEM) and a server config whose certificate it signed for `localhost`.
fn certificates() -> (String, Arc<rustls::ServerConfig>) {
    let ca = Ca::new("test CA");
    (ca.pem(), ca.leaf("localhost", 1).server_config())
}

/// Accepts TLS connections on a loopback port and forwards their bytes to `backend`.
async fn tls_proxy(config: Arc<rustls::ServerConfig>, backend: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        // bounded: the test makes a handful of connections
        for _ in 0..64 {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            let backend = backend.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return; // the client refused our certificate
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(&backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_targets_with_a_trusted_and_an_untrusted_ca() {
    let demo = serve(common::demo_service(|_| {}).await, serve::http()).await;
    let (ca_pem, config) = certificates();
    let port = tls_proxy(config, demo.host_port()).await;
    let url = format!("https://localhost:{port}/mcp");
    let dir = std::env::temp_dir().join(format!("mcpwire-https-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, &ca_pem).expect("write CA");
    let other_file = dir.join("other.pem");
    std::fs::write(&other_file, certificates().0).expect("write other CA");

    let (u, ca) = (url.clone(), ca_file.to_str().expect("utf-8").to_owned());
    let trusted = tokio::task::spawn_blocking(move || {
        let listed = peers::run_env(&["list", &u], &[("SSL_CERT_FILE", &ca)]);
        let called = peers::run_env(
            &["call", &u, "add", "--args", r#"{"a": 2, "b": 40}"#],
            &[("SSL_CERT_FILE", &ca)],
        );
        (listed, called)
    })
    .await
    .expect("runs");
    assert!(trusted.0.ok().contains("add"), "{}", trusted.0.stderr);
    assert!(trusted.1.ok().contains("42"), "{}", trusted.1.stdout);

    let (u, other) = (url.clone(), other_file.to_str().expect("utf-8").to_owned());
    let untrusted = tokio::task::spawn_blocking(move || {
        peers::run_env(&["list", &u], &[("SSL_CERT_FILE", &other)])
    })
    .await
    .expect("runs");
    untrusted.fails(
        3,
        &[
            &format!("cannot connect to {url}"),
            "TLS handshake failed",
            "certificate",
        ],
    );
    std::fs::remove_dir_all(&dir).expect("cleanup");
}
