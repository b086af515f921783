//! TLS on the WebSocket and gRPC wires of the binary, with testkit's clients, which share no
//! code with the server: tungstenite over rustls (`wss://`, JSON-RPC text messages) and
//! hyper's HTTP/2 client over tokio-rustls with ALPN `h2` (`grpcs://`). The listeners come from `serve
//! --listen wss://… --listen grpcs://… --tls-cert … --tls-key …` and from `demo --transport
//! ws --tls-cert …`; certificates come from the test PKI. And the gateway fronting
//! TLS upstreams: an mTLS `https://` one and an `mcpbs://` one, trusted through `ca`.

mod common;
mod peers;

use std::sync::Arc;

use common::listen;
use common::wires::{Conversation, Peer, Ws, grpc_call_over};
use mcpwire_testkit::pki::{self, Ca, Setup, write, write_ca};
use mcpwire_wire::proto_mcp::pb;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_mcpwire");

/// A client configuration trusting only `ca`, offering `alpn`.
fn client_config(ca: &Ca, alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    ca.client_config(alpn, None)
}

/// A `wss://` connection (tungstenite over rustls) to `addr` at `path`, trusting `ca`,
/// speaking JSON-RPC text messages.
fn wss_to(addr: &str, path: &str, ca: &Ca) -> Ws {
    wss_with(addr, path, client_config(ca, &[b"http/1.1"]))
}

/// [`wss_to`] with its own client configuration.
fn wss_with(addr: &str, path: &str, config: Arc<rustls::ClientConfig>) -> Ws {
    Ws::connect_tls(&format!("{addr}{path}"), &[], config).expect("a wss upgrade")
}

fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-06-18", "capabilities": {},
           "clientInfo": {"name": "wss-test", "version": "1"}})
}

/// `initialize`, then a tool call over `peer`.
fn echo_over(peer: impl Peer) {
    let mut c = Conversation::new(peer);
    let init = c.request(1, "initialize", initialize_params());
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    c.notify("notifications/initialized", json!({}));
    let r = c.request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "over TLS"}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "over TLS", "{r}");
}

#[test]
fn serve_terminates_tls_on_websocket_and_grpc() {
    let setup = Setup::new("cli-wss-grpcs");
    let (ca, flags) = (&setup.ca, setup.flags());
    let mut args = vec!["serve", "--demo", "--listen", "wss://127.0.0.1:0/mcp"];
    args.extend(["--listen", "grpcs://127.0.0.1:0"]);
    let mut l = listen(
        BIN,
        &[args, flags.iter().map(String::as_str).collect()].concat(),
        "warn",
        &[
            "mcpwire: listening on wss://",
            "mcpwire: listening on grpcs://",
        ],
        false,
    );
    let wss = l.addrs[0].trim_end_matches("/mcp").to_owned();
    let grpcs = l.addrs[1].clone();

    echo_over(wss_to(&wss, "/mcp", ca));

    let tools: pb::ListToolsResponse = grpc_call_over(
        &grpcs,
        "ListTools",
        &pb::ListToolsRequest::default(),
        &[],
        Some(client_config(ca, &[b"h2"])),
    )
    .expect("ListTools over grpcs");
    assert!(tools.tools.iter().any(|t| t.name == "echo"), "{tools:?}");

    // A plaintext gRPC client on the TLS port fails; the TLS one is still served after it.
    let plain = std::panic::catch_unwind(|| {
        grpc_call_over::<pb::ListToolsResponse>(
            &grpcs,
            "ListTools",
            &pb::ListToolsRequest::default(),
            &[],
            None,
        )
    });
    assert!(
        !matches!(plain, Ok(Ok(_))),
        "a plaintext call is not answered"
    );
    let again: pb::ListToolsResponse = grpc_call_over(
        &grpcs,
        "ListTools",
        &pb::ListToolsRequest::default(),
        &[],
        Some(client_config(ca, &[b"h2"])),
    )
    .expect("still served");
    assert_eq!(again.tools.len(), tools.tools.len());
    let _ = l.child.kill();
    let _ = l.child.wait();
}

/// `mcpwire demo --transport TRANSPORT --port 0` with `setup`'s certificate and `extra`
/// flags, once it printed `mcpwire: listening on {scheme}://127.0.0.1:`; `addrs[0]` is what
/// follows (the port and path).
fn demo_tls(setup: &Setup, transport: &str, scheme: &str, extra: &[&str]) -> common::Listening {
    let flags = setup.flags();
    let mut args = vec!["demo", "--transport", transport, "--port", "0"];
    args.extend(flags.iter().map(String::as_str));
    args.extend(extra);
    let prefix = format!("mcpwire: listening on {scheme}://127.0.0.1:");
    listen(BIN, &args, "warn", &[prefix.as_str()], false)
}

#[test]
fn demo_transport_ws_with_a_certificate_is_wss() {
    let setup = Setup::new("cli-demo-wss");
    let mut l = demo_tls(&setup, "ws", "wss", &[]);
    let addr = format!("127.0.0.1:{}", l.addrs[0].trim_end_matches("/mcp"));
    echo_over(wss_to(&addr, "/mcp", &setup.ca));
    let _ = l.child.kill();
    let _ = l.child.wait();
}

#[test]
fn tls_flags_without_a_tls_listener_are_refused() {
    let out = std::process::Command::new(BIN)
        .args(["serve", "--demo", "--listen", "https://127.0.0.1:0/mcp"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tls = { cert"), "{err}");
    let out = std::process::Command::new(BIN)
        .args(["serve", "--demo", "--listen", "http://127.0.0.1:0/mcp"])
        .args(["--tls-cert", "c.pem", "--tls-key", "k.pem"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--listen https://"), "{err}");
}

#[test]
fn the_gateway_fronts_tls_upstreams_over_tls() {
    let setup = Setup::new("cli-gateway");
    let d = &setup.dir;
    let clients = Ca::new("client CA");
    let clients_file = write_ca(d, "clients", &clients);
    write(d, "gateway", &clients.leaf("gateway", 2));
    let clients_file = clients_file.to_str().expect("utf-8");

    // An upstream requiring client certificates, and an MCPB one over TLS.
    let mut https_up = demo_tls(&setup, "http", "https", &["--tls-client-ca", clients_file]);
    let mut mcpbs_up = demo_tls(&setup, "mcpb", "mcpbs", &[]);
    let https_port = https_up.addrs[0].trim_end_matches("/mcp").to_owned();
    let config = d.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[server]
prefix = "always"

[[listen]]
url = "https://127.0.0.1:0/mcp"
tls = {{ cert = "server.crt", key = "server.key", client_ca = "clients.pem" }}

[backends.web]
url = "https://localhost:{https_port}/mcp"
ca = "ca.pem"
client_cert = "gateway.crt"
client_key = "gateway.key"

[backends.bin]
mcpb = "tcps://localhost:{}"
ca = "ca.pem"
"#,
            mcpbs_up.addrs[0]
        ),
    )
    .expect("config");
    let mut gateway = listen(
        BIN,
        &["serve", "--config", config.to_str().expect("utf-8")],
        "warn",
        &["mcpwire: listening on https://127.0.0.1:"],
        false,
    );
    // The gateway's own listener wants a client certificate too: `call` presents one.
    let url = format!("https://localhost:{}", gateway.addrs[0]);
    let path = |name: &str| d.join(name).to_str().expect("utf-8").to_owned();
    let (ca, cert, key) = (path("ca.pem"), path("gateway.crt"), path("gateway.key"));
    let args = r#"{"text":"through TLS"}"#;
    let without = peers::run_env(
        &["call", &url, "web_echo", "--args", args, "--ca", &ca],
        &[],
    );
    assert_eq!(
        without.code,
        Some(3),
        "no client certificate: {}",
        without.stderr
    );
    for tool in ["web_echo", "bin_echo"] {
        let called = peers::run_env(
            &[
                "call",
                &url,
                tool,
                "--args",
                args,
                "--ca",
                &ca,
                "--client-cert",
                &cert,
                "--client-key",
                &key,
            ],
            &[],
        );
        assert_eq!(called.code, Some(0), "{tool}: {}", called.stderr);
        assert!(
            called.stdout.contains("through TLS"),
            "{tool}: {}",
            called.stdout
        );
    }
    for child in [&mut gateway.child, &mut https_up.child, &mut mcpbs_up.child] {
        let _ = child.kill();
        let _ = child.wait();
    }
}

#[test]
fn client_certificates_name_callers_for_the_policy_on_websocket_and_grpc() {
    let setup = Setup::new("cli-cert-policy");
    let clients = Ca::new("client CA");
    write_ca(&setup.dir, "clients", &clients);
    let alice = clients.client("spiffe://test/alice", 5);
    let config = setup.dir.join("gateway.toml");
    let tls = r#"tls = { cert = "server.crt", key = "server.key", client_ca = "clients.pem", client_auth = "optional" }"#;
    std::fs::write(
        &config,
        format!(
            r#"
[[listen]]
url = "wss://127.0.0.1:0/mcp"
{tls}

[[listen]]
url = "grpcs://127.0.0.1:0"
{tls}

[backends.demo]
native = "demo"

[[policy.rules]]
effect = "allow"
subjects = ["cert:spiffe://test/alice"]

[[policy.rules]]
effect = "deny"
tools = ["echo"]
"#
        ),
    )
    .expect("config");
    let mut l = listen(
        BIN,
        &["serve", "--config", config.to_str().expect("utf-8")],
        "warn",
        &[
            "mcpwire: listening on wss://",
            "mcpwire: listening on grpcs://",
        ],
        false,
    );
    let wss = l.addrs[0].trim_end_matches("/mcp").to_owned();
    let grpcs = l.addrs[1].clone();
    let sees_echo = |certificate: Option<&pki::Leaf>| {
        let config = setup.ca.client_config(&[b"http/1.1"], certificate);
        let mut c = Conversation::new(wss_with(&wss, "/mcp", config));
        c.request(1, "initialize", initialize_params());
        c.notify("notifications/initialized", json!({}));
        let listed = c.request(2, "tools/list", json!({}));
        let over_ws = listed["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "echo");
        let tools: pb::ListToolsResponse = grpc_call_over(
            &grpcs,
            "ListTools",
            &pb::ListToolsRequest::default(),
            &[],
            Some(setup.ca.client_config(&[b"h2"], certificate)),
        )
        .expect("ListTools");
        let over_grpc = tools.tools.iter().any(|t| t.name == "echo");
        (over_ws, over_grpc)
    };
    assert_eq!(
        sees_echo(Some(&alice)),
        (true, true),
        "alice, by her certificate"
    );
    assert_eq!(sees_echo(None), (false, false), "no certificate: anonymous");
    let _ = l.child.kill();
    let _ = l.child.wait();
}
