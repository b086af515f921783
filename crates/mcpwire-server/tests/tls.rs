//! TLS on the listeners, end to end over loopback with certificates made by rcgen at test
//! time: the crate's own client over `https://` and `mcpbs://` trusting a custom CA; a
//! plaintext (and a silent) client on a TLS listener failing alone; mutual TLS; and a
//! certificate replaced on disk serving new handshakes while an old connection goes on
//! (on the paused clock).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use mcpwire_client::{Client, ClientOptions, Target};
use mcpwire_model::types::Implementation;
use mcpwire_router::{CallCtx, NoArgs, Server, ToolError, tool};
use mcpwire_server::Service;
use mcpwire_server::http::{HttpConfig, HttpServer};
use mcpwire_server::tls::{ClientAuth, ClientTls, TlsConfig};
use mcpwire_testkit::pki::{Ca, Setup, dir, write, write_ca};
use mcpwire_testkit::serve::{self as testkit, serve};
use mcpwire_testkit::wait::wait_until_async;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `ping` answers `pong`; `whoami` the caller's subject (or `anonymous`).
fn service() -> Service {
    let ping = tool("ping", |_ctx: CallCtx, _: NoArgs| async move {
        Ok::<_, ToolError>("pong".to_owned())
    });
    let whoami = tool("whoami", |ctx: CallCtx, _: NoArgs| async move {
        let who = ctx.identity().map_or("anonymous".to_owned(), |id| {
            format!(
                "{} {}",
                id.subject(),
                serde_json::Value::Object(id.claims().clone())
            )
        });
        Ok::<_, ToolError>(who)
    });
    Service::from_server(
        Server::builder(Implementation::new("tls-test", "1"))
            .tool(ping)
            .tool(whoami)
            .build(),
    )
}

/// `service()` over `https://` (testkit's listener, serving until the test ends).
async fn serve_https(tls: TlsConfig) -> SocketAddr {
    let served = serve(service(), testkit::http_with(|h| h.tls = Some(tls))).await;
    let addr = served.addr();
    served.detach();
    addr
}

/// `service()` over `mcpbs://` (testkit's listener, serving until the test ends).
async fn serve_mcpbs(tls: TlsConfig) -> SocketAddr {
    let served = serve(service(), testkit::mcpb_with(|w| w.config.tls = Some(tls))).await;
    let addr = served.addr();
    served.detach();
    addr
}

/// The `https://` URL of an HTTP listener on `addr`.
fn https_url(addr: SocketAddr) -> String {
    format!("https://localhost:{}/mcp", addr.port())
}

/// The `{scheme}://` URL of an MCPB listener on `addr`.
fn mcpb_url(scheme: &str, addr: SocketAddr) -> String {
    format!("{scheme}://localhost:{}", addr.port())
}

/// Trusting the CA in `ca`.
fn trusting(ca: &Path) -> ClientTls {
    ClientTls {
        ca: Some(ca.to_owned()),
        ..ClientTls::default()
    }
}

/// Trusting the CA in `ca` and presenting the certificate `cert` with its `key`.
fn presenting(ca: &Path, cert: &Path, key: &Path) -> ClientTls {
    ClientTls {
        cert: Some(cert.to_owned()),
        key: Some(key.to_owned()),
        ..trusting(ca)
    }
}

/// The crate's client connected to `target` with `tls` (the error's text when it fails).
async fn connect(target: &str, tls: ClientTls) -> Result<Client, String> {
    let target = Target::parse(target).map_err(|e| e.to_string())?;
    let mut options = ClientOptions::with_handshake_timeout(Duration::from_secs(10));
    options.tls = tls;
    let (client, _events) = Client::connect(&target, &options)
        .await
        .map_err(|e| e.to_string())?;
    Ok(client)
}

/// Connects to `target`, calls `ping` and closes.
async fn ping(target: &str, tls: ClientTls) -> Result<(), String> {
    let client = connect(target, tls).await?;
    let tools = client.list_tools().await.map_err(|e| e.to_string())?;
    assert_eq!(tools.len(), 2);
    let result = client
        .request("tools/call", json!({"name": "ping", "arguments": {}}))
        .await
        .map_err(|e| e.to_string())?;
    assert_eq!(result["content"][0]["text"], "pong", "{result}");
    client.close().await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_and_mcpbs_serve_a_client_trusting_their_ca() {
    let Setup {
        ca_file, cert, key, ..
    } = Setup::new("custom-ca");
    let http = serve_https(TlsConfig::new(&cert, &key)).await;
    let mcpb = serve_mcpbs(TlsConfig::new(&cert, &key)).await;

    let https = https_url(http);
    ping(&https, trusting(&ca_file)).await.expect("https");
    for scheme in ["mcpbs", "tcps"] {
        let url = mcpb_url(scheme, mcpb);
        ping(&url, trusting(&ca_file)).await.expect(scheme);
    }

    // Without the CA (the system's roots) the handshake fails, and says so.
    let refused = ping(&https, ClientTls::default()).await.unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
    let mcpbs = mcpb_url("mcpbs", mcpb);
    let refused = ping(&mcpbs, ClientTls::default()).await.unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
}

/// An `https://` listener on threads of its own (`HttpConfig::threads`): each thread's copy
/// of the listening socket terminates TLS with the one certificate, and clients connecting
/// again and again (each on whichever thread accepts it) are served; an untrusting client
/// is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_on_threads_of_its_own_serves_every_connection() {
    let Setup {
        ca_file, cert, key, ..
    } = Setup::new("threads");
    let tls = TlsConfig::new(&cert, &key);
    let served = serve(
        service(),
        testkit::http_with(|h| {
            h.tls = Some(tls);
            h.threads = 2;
        }),
    )
    .await;
    let https = https_url(served.addr());
    for _ in 0..6 {
        ping(&https, trusting(&ca_file)).await.expect("https");
    }
    let refused = ping(&https, ClientTls::default()).await.unwrap_err();
    assert!(refused.contains("certificate"), "{refused}");
    served.shutdown().await.expect("drained");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plaintext_and_silent_clients_on_a_tls_listener_fail_alone() {
    let Setup {
        ca_file, cert, key, ..
    } = Setup::new("plaintext");
    let http = serve_https(TlsConfig::new(&cert, &key)).await;
    let mcpb = serve_mcpbs(TlsConfig::new(&cert, &key)).await;

    for (addr, hello) in [
        (
            http,
            &b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Length: 2\r\n\r\n{}"[..],
        ),
        (
            mcpb,
            &b"\x4d\x43\x50\x42\x00\x01\x00\x01\x00\x00\x00\x02{}"[..],
        ),
    ] {
        // A client that never speaks holds a handshake slot, not the listener.
        let _silent = TcpStream::connect(addr).await.expect("connect");
        let mut plain = TcpStream::connect(addr).await.expect("connect");
        plain.write_all(hello).await.expect("write");
        let mut answer = Vec::new();
        let read = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut answer))
            .await
            .expect("the plaintext connection is closed");
        // Closed, at most with a TLS alert (content type 21), never an answer in plaintext.
        assert!(
            read.is_err() || answer.is_empty() || answer[0] == 21,
            "{answer:?}"
        );
        assert!(!answer.starts_with(b"HTTP/"), "{answer:?}");
    }
    // Meanwhile TLS clients are served.
    let https = https_url(http);
    ping(&https, trusting(&ca_file)).await.expect("https");
    let mcpbs = mcpb_url("mcpbs", mcpb);
    ping(&mcpbs, trusting(&ca_file)).await.expect("mcpbs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_refuses_clients_without_a_good_certificate() {
    let Setup {
        dir: d,
        ca_file,
        cert,
        key,
        ..
    } = Setup::new("mtls");
    let clients = Ca::new("client CA");
    let clients_file = write_ca(&d, "clients", &clients);
    let (good_cert, good_key) = write(&d, "alice", &clients.leaf("alice", 7));
    let (bad_cert, bad_key) = write(&d, "mallory", &Ca::new("other CA").leaf("mallory", 8));
    let required = TlsConfig {
        client_ca: Some(clients_file.clone()),
        ..TlsConfig::new(&cert, &key)
    };
    let optional = TlsConfig {
        client_auth: ClientAuth::Optional,
        ..required.clone()
    };
    let with_cert = |c: &Path, k: &Path| presenting(&ca_file, c, k);

    let mcpb = serve_mcpbs(required.clone()).await;
    let http = serve_https(required).await;
    for url in [mcpb_url("mcpbs", mcpb), https_url(http)] {
        assert!(
            ping(&url, trusting(&ca_file)).await.is_err(),
            "{url}: no certificate"
        );
        assert!(
            ping(&url, with_cert(&bad_cert, &bad_key)).await.is_err(),
            "{url}: a certificate of another CA"
        );
        ping(&url, with_cert(&good_cert, &good_key))
            .await
            .unwrap_or_else(|e| panic!("{url}: a good certificate: {e}"));
    }

    // Optional: no certificate is served, a bad one still refused.
    let http = serve_https(optional).await;
    let url = https_url(http);
    ping(&url, trusting(&ca_file))
        .await
        .expect("optional: none");
    assert!(ping(&url, with_cert(&bad_cert, &bad_key)).await.is_err());
    ping(&url, with_cert(&good_cert, &good_key))
        .await
        .expect("optional: a good certificate");
}

#[tokio::test]
async fn unusable_files_are_refused_at_bind_naming_the_file() {
    let d = dir("bind");
    let ca = Ca::new("CA");
    let (cert, key) = write(&d, "a", &ca.leaf("a", 1));
    let (_, other_key) = write(&d, "b", &ca.leaf("b", 2));
    let missing = d.join("missing.crt");
    for (tls, says) in [
        (TlsConfig::new(&missing, &key), "missing.crt"),
        (TlsConfig::new(&key, &key), "a.key"),
        (TlsConfig::new(&cert, &cert), "private key"),
        (TlsConfig::new(&cert, &other_key), "b.key"),
    ] {
        let config = HttpConfig {
            tls: Some(tls),
            ..HttpConfig::default()
        };
        let e = HttpServer::bind(service(), config)
            .await
            .err()
            .expect("refused");
        assert!(e.to_string().contains(says), "{says}: {e}");
    }
}

/// A TLS connection to `addr` trusting `ca`, and the certificate the server presented.
async fn handshake(
    addr: SocketAddr,
    ca: &Ca,
) -> (tokio_rustls::client::TlsStream<TcpStream>, Vec<u8>) {
    let config = ca.client_config(&[], None);
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(name, tcp)
        .await
        .expect("handshake");
    let presented = tls.get_ref().1.peer_certificates().expect("a certificate")[0].to_vec();
    (tls, presented)
}

/// Sends `initialize` over an HTTP/1.1 connection; its status.
async fn initialize(
    send: &mut hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    port: u16,
) -> u16 {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let request = hyper::Request::post("/mcp")
        .header("host", format!("localhost:{port}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = send.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    response.into_body().collect().await.expect("body");
    status
}

#[tokio::test(start_paused = true)]
async fn a_replaced_certificate_serves_new_handshakes_and_old_connections_go_on() {
    let d = dir("reload");
    let ca = Ca::new("CA");
    let first = ca.leaf("first", 1);
    let (cert, key) = write(&d, "server", &first);
    let http = serve_https(TlsConfig::new(&cert, &key)).await;
    let every = mcpwire_server::tls::DEFAULT_RELOAD_EVERY;

    let (old, presented) = handshake(http, &ca).await;
    assert_eq!(presented, first.der);
    let (mut old, conn) = hyper::client::conn::http1::handshake(TokioIo::new(old))
        .await
        .expect("http1");
    tokio::spawn(conn);
    assert_eq!(initialize(&mut old, http.port()).await, 200);

    // Replaced on disk: new handshakes see the new certificate after the next check.
    let second = ca.leaf("second", 2);
    write(&d, "server", &second);
    tokio::time::advance(every + Duration::from_secs(1)).await;
    let (_, presented) = handshake(http, &ca).await;
    assert_eq!(presented, second.der, "the new certificate");
    assert_eq!(
        initialize(&mut old, http.port()).await,
        200,
        "the old connection"
    );

    // A bad replacement (the key of another certificate) is refused: the second keeps serving.
    let third = ca.leaf("third", 3);
    std::fs::write(&cert, &third.cert_pem).expect("write");
    tokio::time::advance(every + Duration::from_secs(1)).await;
    let (_, presented) = handshake(http, &ca).await;
    assert_eq!(presented, second.der, "the refused pair is not used");

    // Its key arrives: the pair is complete and used.
    std::fs::write(&key, &third.key_pem).expect("write");
    tokio::time::advance(every + Duration::from_secs(1)).await;
    let (_, presented) = handshake(http, &ca).await;
    assert_eq!(presented, third.der, "the completed pair");
    assert_eq!(
        initialize(&mut old, http.port()).await,
        200,
        "the old connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_clients_of_one_address_hold_only_their_share_of_handshakes() {
    let Setup {
        ca_file, cert, key, ..
    } = Setup::new("per-ip");
    let http = serve_https(TlsConfig::new(&cert, &key)).await;
    let https = https_url(http);

    let mut silent = Vec::new();
    for _ in 0..mcpwire_server::tls::MAX_HANDSHAKES_PER_IP {
        silent.push(TcpStream::connect(http).await.expect("connect"));
    }
    // One more handshake from the same address is closed at once, not queued.
    let refused = ping(&https, trusting(&ca_file)).await.unwrap_err();
    assert!(refused.contains("TLS handshake failed"), "{refused}");

    // Once they go, the address may handshake again (the server notices their closes
    // asynchronously: a bounded number of attempts).
    drop(silent);
    let served = async || ping(&https, trusting(&ca_file)).await.is_ok();
    let what = "served again once the silent connections went";
    wait_until_async(Duration::from_secs(10), what, served).await;
}

/// Who `whoami` says the caller is, over `target`.
async fn whoami(target: &str, tls: ClientTls) -> String {
    let client = connect(target, tls).await.expect("connect");
    let result = client
        .request("tools/call", json!({"name": "whoami", "arguments": {}}))
        .await
        .expect("whoami");
    client.close().await.expect("close");
    result["content"][0]["text"]
        .as_str()
        .expect("text")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_names_the_caller_when_nothing_else_does() {
    let Setup {
        dir: d,
        ca_file,
        cert,
        key,
        ..
    } = Setup::new("mtls-identity");
    let clients = Ca::new("client CA");
    let (alice_cert, alice_key) = write(&d, "alice", &clients.client("spiffe://test/alice", 9));
    let tls = TlsConfig {
        client_ca: Some(write_ca(&d, "clients", &clients)),
        client_auth: ClientAuth::Optional,
        ..TlsConfig::new(&cert, &key)
    };
    let alice = presenting(&ca_file, &alice_cert, &alice_key);
    let http = serve_https(tls.clone()).await;
    let mcpb = serve_mcpbs(tls).await;
    for url in [https_url(http), mcpb_url("mcpbs", mcpb)] {
        let who = whoami(&url, alice.clone()).await;
        assert_eq!(
            who, r#"cert:spiffe://test/alice {"dns":[],"uri":["spiffe://test/alice"]}"#,
            "{url}"
        );
        assert_eq!(whoami(&url, trusting(&ca_file)).await, "anonymous", "{url}");
    }
}
